/**
 * Pure helpers of the performance benchmark (bench/perf/run.ts): latency summaries (the
 * interpolated quantile of @engram/testing), ratios to a floor, target verdicts and the printed table. No I/O.
 */
import { quantile } from '@engram/testing';

/** Median and tail of individually timed calls, in milliseconds. */
export interface Summary {
  readonly n: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly mean: number;
  readonly max: number;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** p50/p95/p99 (linear interpolation between closest ranks), mean and max of `values`. */
export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return { n: 0, p50: NaN, p95: NaN, p99: NaN, mean: NaN, max: NaN };
  return {
    n,
    p50: round3(quantile(sorted, 0.5)),
    p95: round3(quantile(sorted, 0.95)),
    p99: round3(quantile(sorted, 0.99)),
    mean: round3(sorted.reduce((a, b) => a + b, 0) / n),
    max: round3(sorted[n - 1]!),
  };
}

/** `value / floor`, rounded to 0.01; NaN when there is no positive floor. */
export function ratio(value: number, floor: number): number {
  if (!(floor > 0) || !Number.isFinite(value)) return NaN;
  return Math.round((value / floor) * 100) / 100;
}

/** A target: `measured` compared with `limit` (`max`: at most; `min`: at least). */
export interface Target {
  readonly name: string;
  readonly measured: number;
  readonly limit: number;
  readonly kind: 'max' | 'min';
  readonly unit: string;
}

export interface Verdict extends Target {
  readonly pass: boolean;
  /** measured / limit (≤ 1 passes a `max` target, ≥ 1 a `min` target). */
  readonly ratio: number;
}

/** PASS when `measured` is within the limit; a NaN measurement never passes. */
export function verdict(target: Target): Verdict {
  const pass = Number.isFinite(target.measured)
    ? target.kind === 'max'
      ? target.measured <= target.limit
      : target.measured >= target.limit
    : false;
  return { ...target, pass, ratio: ratio(target.measured, target.limit) };
}

/** One printed line: a figure, its distribution, the floor measured in the same run and the ratio. */
export interface Row {
  readonly backend: string;
  readonly size: number | string;
  readonly figure: string;
  readonly value: Summary;
  readonly floorName?: string;
  readonly floor?: Summary;
}

function fmt(x: number | undefined, digits = 2): string {
  return x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits);
}

/** Renders rows as a fixed-width text table (p50/p95/p99 in ms, floor p50 and the p50 ratio). */
export function formatTable(rows: readonly Row[]): string {
  const header = [
    'backend',
    'size',
    'figure',
    'n',
    'p50',
    'p95',
    'p99',
    'floor',
    'floor p50',
    'floor p99',
    'x floor',
  ];
  const lines = rows.map((r) => [
    r.backend,
    String(r.size),
    r.figure,
    String(r.value.n),
    fmt(r.value.p50),
    fmt(r.value.p95),
    fmt(r.value.p99),
    r.floorName ?? '-',
    fmt(r.floor?.p50),
    fmt(r.floor?.p99),
    r.floor === undefined ? '-' : fmt(ratio(r.value.p50, r.floor.p50)),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const left = new Set([0, 2, 7]);
  const render = (cells: readonly string[]) =>
    cells.map((c, i) => (left.has(i) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [render(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(render)].join('\n');
}

/** Renders verdicts as `PASS|MISS  name  measured unit (limit …, ratio …)` lines. */
export function formatVerdicts(verdicts: readonly Verdict[]): string {
  return verdicts
    .map(
      (v) =>
        `${v.pass ? 'PASS' : 'MISS'}  ${v.name}: ${fmt(v.measured)} ${v.unit} (${v.kind === 'max' ? '≤' : '≥'} ${v.limit} ${v.unit}, ratio ${fmt(v.ratio)})`,
    )
    .join('\n');
}

/** Parses `--sizes 10000,100000` (positive integers, `_` allowed as a separator). */
export function parseSizes(text: string): number[] {
  const sizes = text.split(',').map((s) => Number(s.trim().replace(/_/g, '')));
  if (sizes.length === 0 || sizes.some((n) => !Number.isInteger(n) || n <= 0)) {
    throw new Error(`--sizes: expected positive integers separated by commas, got "${text}"`);
  }
  return sizes;
}
