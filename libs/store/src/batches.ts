/**
 * Splits `items` into runs of at most `maxCount` items and, when weighed, at most `maxWeight` in
 * total (a single heavier item still makes a run of its own): the statements of a multi-row write
 * or of a long `IN (…)` list stay within the engines' parameter and packet limits.
 */
export function batches<T>(
  items: readonly T[],
  maxCount: number,
  maxWeight = Infinity,
  weigh: (item: T) => number = () => 0,
): T[][] {
  const result: T[][] = [];
  let current: T[] = [];
  let weight = 0;
  for (const item of items) {
    const w = weigh(item);
    if (current.length > 0 && (current.length >= maxCount || weight + w > maxWeight)) {
      result.push(current);
      current = [];
      weight = 0;
    }
    current.push(item);
    weight += w;
  }
  if (current.length > 0) result.push(current);
  return result;
}
