/**
 * Nearest-rank percentile (the convention of docs/benchmarks.md): the smallest value with at least
 * p % of the values at or below it. `sorted` ascending, `p` in 0..100; NaN when empty.
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = p <= 0 ? 1 : Math.min(sorted.length, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] ?? NaN;
}

/** The q-quantile (q in 0..1) of ascending `sorted`, linear interpolation between closest ranks; NaN when empty. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const position = (sorted.length - 1) * q;
  const lower = Math.floor(position);
  const upper = Math.ceil(position);
  const low = sorted[lower] ?? NaN;
  return low + ((sorted[upper] ?? NaN) - low) * (position - lower);
}

/** The median of `values` (any order; the mean of the two middle values when their number is even); NaN when empty. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const upper = sorted[mid] ?? NaN;
  return sorted.length % 2 === 1 ? upper : ((sorted[mid - 1] ?? NaN) + upper) / 2;
}
