/** A uniform random number generator: every call returns the next float in [0, 1). */
export type Random = () => number;

/**
 * mulberry32: a small, fast, seeded generator, so a test or a benchmark run is reproducible from its
 * seed (the same seed gives the same sequence in every process). The seed is taken as an unsigned
 * 32-bit integer.
 */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One item of a non-empty list, uniformly (one draw). */
export function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)] as T;
}

/** Random choices over one generator (each function consumes the draws named in its doc). */
export interface Choices {
  /** True with probability `p` (one draw). */
  readonly chance: (p: number) => boolean;
  /** One item of a non-empty list (one draw). */
  readonly pick: <T>(items: readonly T[]) => T;
  /** Each item kept with probability `p`, in order (one draw per item). */
  readonly subset: <T>(items: readonly T[], p?: number) => T[];
  /** `n` distinct items (fewer when the list is shorter), in the order drawn (one draw each). */
  readonly pickN: <T>(items: readonly T[], n: number) => T[];
}

/** {@link Choices} drawing from `random`. */
export function choices(random: Random): Choices {
  const chance = (p: number) => random() < p;
  return {
    chance,
    pick: (items) => pick(random, items),
    subset: (items, p = 0.5) => items.filter(() => chance(p)),
    pickN: <T>(items: readonly T[], n: number) => {
      const copy = [...items];
      const out: T[] = [];
      while (out.length < n && copy.length > 0)
        out.push(copy.splice(Math.floor(random() * copy.length), 1)[0] as T);
      return out;
    },
  };
}
