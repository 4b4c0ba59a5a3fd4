/**
 * Retrieval-quality metrics over evidence turns (bench/retrieval/README.md). A ranked result is
 * given as the list of turn ids it derives from: one turn for a turn-level unit, the user turn and
 * the reply for a round, a memory's evidence turns for a memory. Pure functions, no I/O.
 */

import { quantile, seededRandom } from '@engram/testing';

/** The turn ids of one ranked result. */
export type ResultTurns = readonly string[];

/**
 * Evidence recall@k: the fraction of the question's (distinct) evidence turns covered by the turn
 * ids of the top-k results. 0 when there is no evidence.
 */
export function recallAtK(evidence: readonly string[], results: readonly ResultTurns[], k: number): number {
  const wanted = new Set(evidence);
  if (wanted.size === 0) return 0;
  const covered = new Set<string>();
  for (const turns of results.slice(0, k)) {
    for (const turn of turns) if (wanted.has(turn)) covered.add(turn);
  }
  return covered.size / wanted.size;
}

/**
 * Binary gains of the top-k results: a result is relevant (gain 1) when it covers at least one
 * evidence turn that no higher-ranked result covered; a result repeating already-covered evidence
 * gains 0, so duplicates (the same turn as a round and as a memory) are not rewarded twice.
 */
export function gains(evidence: readonly string[], results: readonly ResultTurns[], k: number): number[] {
  const wanted = new Set(evidence);
  const covered = new Set<string>();
  return results.slice(0, k).map((turns) => {
    let fresh = false;
    for (const turn of turns) {
      if (wanted.has(turn) && !covered.has(turn)) {
        covered.add(turn);
        fresh = true;
      }
    }
    return fresh ? 1 : 0;
  });
}

/**
 * NDCG@k with the binary gains above: DCG = Σ gain_i / log2(i + 1) over ranks i = 1..k; the ideal
 * DCG puts a relevant result at each of the first min(k, |evidence|) ranks (one evidence turn per
 * result). A result covering several evidence turns counts once, so a ranking whose single first
 * result covers all the evidence scores 1 / IDCG (< 1 when there are two or more evidence turns).
 */
export function ndcgAtK(evidence: readonly string[], results: readonly ResultTurns[], k = 10): number {
  const ideal = Math.min(k, new Set(evidence).size);
  if (ideal === 0) return 0;
  let idcg = 0;
  for (let i = 1; i <= ideal; i++) idcg += 1 / Math.log2(i + 1);
  let dcg = 0;
  for (const [index, gain] of gains(evidence, results, k).entries()) dcg += gain / Math.log2(index + 2);
  return dcg / idcg;
}

/**
 * Whether the newer statement wins (the recency set): 1 when a result covering an evidence turn
 * ranks above every result covering a superseded turn (a superseded turn absent from the results
 * ranks last), 0 otherwise — including when no result covers the evidence.
 */
export function newerFirst(
  evidence: readonly string[],
  superseded: readonly string[],
  results: readonly ResultTurns[],
): number {
  const first = (wanted: readonly string[]) => {
    const index = results.findIndex((turns) => turns.some((t) => wanted.includes(t)));
    return index === -1 ? Infinity : index;
  };
  const newer = first(evidence);
  return newer !== Infinity && newer < first(superseded) ? 1 : 0;
}

export interface ScoredQuestion {
  readonly category?: string | undefined;
  /** Metric name → value for this question, e.g. `{ 'R@5': 0.5, 'NDCG@10': 0.63 }`. */
  readonly values: Readonly<Record<string, number>>;
}

export interface Aggregate {
  readonly n: number;
  readonly mean: Readonly<Record<string, number>>;
}

function meanOf(rows: readonly ScoredQuestion[]): Aggregate {
  const sums: Record<string, number> = {};
  for (const row of rows) {
    for (const [metric, value] of Object.entries(row.values)) sums[metric] = (sums[metric] ?? 0) + value;
  }
  const mean: Record<string, number> = {};
  for (const [metric, sum] of Object.entries(sums)) mean[metric] = sum / rows.length;
  return { n: rows.length, mean };
}

/**
 * Macro over questions: the mean of each metric over all questions, and over the questions of each
 * category (questions without one under `(none)`). Categories are sorted by name.
 */
export function aggregate(rows: readonly ScoredQuestion[]): {
  overall: Aggregate;
  byCategory: Readonly<Record<string, Aggregate>>;
} {
  const groups = new Map<string, ScoredQuestion[]>();
  for (const row of rows) {
    const key = row.category ?? '(none)';
    const group = groups.get(key) ?? [];
    group.push(row);
    groups.set(key, group);
  }
  const byCategory: Record<string, Aggregate> = {};
  for (const key of [...groups.keys()].sort()) byCategory[key] = meanOf(groups.get(key)!);
  return { overall: meanOf(rows), byCategory };
}

export interface Interval {
  readonly mean: number;
  readonly low: number;
  readonly high: number;
}

export interface BootstrapOptions {
  /** Resamples; 1,000 by default. */
  readonly resamples?: number;
  /** PRNG seed; 42 by default, so a report is reproducible. */
  readonly seed?: number;
  /** Two-sided confidence level; 0.95 by default. */
  readonly confidence?: number;
}

/**
 * Percentile bootstrap interval of the mean: resample the per-question values with replacement
 * (same size), take the mean each time, report the (1 − c)/2 and (1 + c)/2 quantiles of the means.
 */
export function bootstrapCi(values: readonly number[], options: BootstrapOptions = {}): Interval {
  const { resamples = 1000, seed = 42, confidence = 0.95 } = options;
  const n = values.length;
  if (n === 0) return { mean: NaN, low: NaN, high: NaN };
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const random = seededRandom(seed);
  const means: number[] = [];
  for (let r = 0; r < resamples; r++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += values[Math.floor(random() * n)]!;
    means.push(sum / n);
  }
  means.sort((a, b) => a - b);
  return { mean, low: quantile(means, (1 - confidence) / 2), high: quantile(means, (1 + confidence) / 2) };
}

/**
 * Paired bootstrap interval of mean(a − b) over the same questions (e.g. hybrid minus dense-only):
 * an interval entirely above 0 says a beats b beyond resampling noise.
 */
export function pairedBootstrapCi(
  a: readonly number[],
  b: readonly number[],
  options: BootstrapOptions = {},
): Interval {
  if (a.length !== b.length)
    throw new Error(`paired bootstrap needs equal lengths (${a.length} ≠ ${b.length})`);
  return bootstrapCi(
    a.map((value, i) => value - b[i]!),
    options,
  );
}
