/**
 * Pure helpers of the sustained-load benchmark (bench/load/run.ts): the option parsers, the RPC
 * picker, the per-RPC report (nearest-rank latency percentiles), the memory verdict and the target
 * check. No I/O.
 */

import { median, percentile } from '@engram/testing';

/** The RPCs the generator mixes. */
export const RPCS = ['search', 'append', 'context'] as const;
export type Rpc = (typeof RPCS)[number];

/** Fraction of the calls per RPC; the fractions of the RPCs present sum to 1. */
export type Mix = Readonly<Partial<Record<Rpc, number>>>;

/**
 * `search=0.6,append=0.2,context=0.2` → the normalised mix. Unknown names, negative or non-numeric
 * weights, duplicates and an all-zero mix are errors; the weights are normalised to sum to 1, so
 * `search=3,append=1` means 75 % / 25 %.
 */
export function parseMix(text: string): Mix {
  const weights: Partial<Record<Rpc, number>> = {};
  for (const entry of text.split(',')) {
    if (entry.trim() === '') continue;
    const [name = '', value = '', ...rest] = entry.split('=').map((s) => s.trim());
    if (!(RPCS as readonly string[]).includes(name))
      throw new Error(`--mix: unknown RPC "${name}" (expected ${RPCS.join(', ')})`);
    if (rest.length > 0 || value === '' || !Number.isFinite(Number(value)) || Number(value) < 0)
      throw new Error(`--mix: ${name} needs a non-negative number, e.g. ${name}=0.5`);
    if (weights[name as Rpc] !== undefined) throw new Error(`--mix: ${name} given twice`);
    weights[name as Rpc] = Number(value);
  }
  const total = Object.values(weights).reduce((a, b) => a + b, 0);
  if (total <= 0) throw new Error('--mix: at least one RPC needs a positive weight');
  const mix: Partial<Record<Rpc, number>> = {};
  for (const rpc of RPCS) {
    const w = weights[rpc];
    if (w !== undefined && w > 0) mix[rpc] = w / total;
  }
  return mix;
}

/** `--only search` → `{ search: 1 }`. */
export function onlyMix(name: string): Mix {
  if (!(RPCS as readonly string[]).includes(name))
    throw new Error(`--only: unknown RPC "${name}" (expected ${RPCS.join(', ')})`);
  return { [name]: 1 };
}

/** The RPC for a uniform random number `u` in [0, 1): cumulative over RPCS order. */
export function pickRpc(mix: Mix, u: number): Rpc {
  let cumulative = 0;
  let last: Rpc | undefined;
  for (const rpc of RPCS) {
    const share = mix[rpc];
    if (share === undefined || share <= 0) continue;
    cumulative += share;
    last = rpc;
    if (u < cumulative) return rpc;
  }
  if (last === undefined) throw new Error('empty mix');
  return last; // rounding: u close to 1
}

/** A positive integer option, or an error naming it. */
export function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--${name}: expected a positive integer, got "${value}"`);
  return n;
}

/** One finished call. */
export interface CallRecord {
  readonly rpc: Rpc;
  /** Wall time of the call, ms. */
  readonly ms: number;
  /** `OK`, or the gRPC code name (with the ErrorInfo reason when there is one, e.g. `UNAVAILABLE/DEPENDENCY_UNAVAILABLE`). */
  readonly outcome: string;
}

export interface RpcReport {
  readonly calls: number;
  readonly ok: number;
  readonly errors: number;
  /** Successful calls per second over the measured window. */
  readonly okPerSecond: number;
  /** Latency of the successful calls, ms (nearest rank). */
  readonly latencyMs: {
    readonly p50: number;
    readonly p95: number;
    readonly p99: number;
    readonly max: number;
    readonly mean: number;
  };
  /** Error outcome → count. */
  readonly errorsByCode: Readonly<Record<string, number>>;
}

const round1 = (x: number) => Math.round(x * 10) / 10;

/** Per RPC (and `all`): counts, throughput over `windowMs`, latency percentiles and errors by code. */
export function summarise(records: readonly CallRecord[], windowMs: number): Record<string, RpcReport> {
  const groups = new Map<string, CallRecord[]>([['all', []]]);
  for (const record of records) {
    groups.get('all')!.push(record);
    const group = groups.get(record.rpc) ?? [];
    group.push(record);
    groups.set(record.rpc, group);
  }
  const out: Record<string, RpcReport> = {};
  for (const [name, group] of groups) {
    if (name === 'all' && group.length === 0) continue;
    const okMs = group
      .filter((r) => r.outcome === 'OK')
      .map((r) => r.ms)
      .sort((a, b) => a - b);
    const errorsByCode: Record<string, number> = {};
    for (const r of group)
      if (r.outcome !== 'OK') errorsByCode[r.outcome] = (errorsByCode[r.outcome] ?? 0) + 1;
    out[name] = {
      calls: group.length,
      ok: okMs.length,
      errors: group.length - okMs.length,
      okPerSecond: windowMs > 0 ? round1((okMs.length * 1000) / windowMs) : NaN,
      latencyMs: {
        p50: round1(percentile(okMs, 50)),
        p95: round1(percentile(okMs, 95)),
        p99: round1(percentile(okMs, 99)),
        max: round1(okMs.at(-1) ?? NaN),
        mean: round1(okMs.reduce((a, b) => a + b, 0) / Math.max(1, okMs.length)),
      },
      errorsByCode,
    };
  }
  return out;
}

/** RSS of one process over the measured window, MiB. */
export interface MemoryVerdict {
  /** First and last sample of the window. */
  readonly firstMib: number;
  readonly lastMib: number;
  /** Median of the first and of the last quarter of the samples (RSS saws with garbage collection). */
  readonly startMib: number;
  readonly endMib: number;
  /** Highest sample in the window. */
  readonly peakMib: number;
  /** endMib − startMib. */
  readonly growthMib: number;
  /** growth ≤ max(toleranceMib, tolerancePct of start). */
  readonly flat: boolean;
}

/**
 * Flat memory: the median RSS of the last quarter of the window is within max(32 MiB, 10 %) of the
 * median of its first quarter (medians, because RSS rises and falls with garbage collection).
 */
export function memoryVerdict(
  samplesMib: readonly number[],
  { toleranceMib = 32, tolerancePct = 10 }: { toleranceMib?: number; tolerancePct?: number } = {},
): MemoryVerdict | undefined {
  if (samplesMib.length === 0) return undefined;
  const quarter = Math.max(1, Math.floor(samplesMib.length / 4));
  const startMib = median(samplesMib.slice(0, quarter));
  const endMib = median(samplesMib.slice(-quarter));
  const growthMib = endMib - startMib;
  return {
    firstMib: round1(samplesMib[0]!),
    lastMib: round1(samplesMib.at(-1)!),
    startMib: round1(startMib),
    endMib: round1(endMib),
    peakMib: round1(Math.max(...samplesMib)),
    growthMib: round1(growthMib),
    flat: growthMib <= Math.max(toleranceMib, (startMib * tolerancePct) / 100),
  };
}

/** One line of the target check. */
export interface TargetLine {
  readonly what: string;
  readonly target: string;
  readonly measured: string;
  readonly pass: boolean;
  /** By how much it passed or missed, in words. */
  readonly margin: string;
}

const pct = (x: number) => `${x >= 0 ? '+' : ''}${Math.round(x * 10) / 10} %`;

/**
 * The issue #11 target for the Search run: ≥ `minPerSecond` Search/s, zero errors (all RPCs),
 * Search p99 ≤ `maxP99Ms`, flat memory in every process.
 */
export function checkTarget(
  report: Readonly<Record<string, RpcReport>>,
  memory: Readonly<Record<string, MemoryVerdict | undefined>>,
  { minPerSecond = 150, maxP99Ms = 200 }: { minPerSecond?: number; maxP99Ms?: number } = {},
): TargetLine[] {
  const search = report['search'];
  const all = report['all'];
  const lines: TargetLine[] = [];
  const rate = search?.okPerSecond ?? 0;
  lines.push({
    what: 'Search throughput',
    target: `≥ ${minPerSecond}/s`,
    measured: `${rate}/s`,
    pass: rate >= minPerSecond,
    margin: `${pct(((rate - minPerSecond) / minPerSecond) * 100)} (${round1(rate - minPerSecond)}/s)`,
  });
  const errors = all?.errors ?? 0;
  lines.push({
    what: 'errors (all RPCs)',
    target: '0',
    measured: `${errors} of ${all?.calls ?? 0}`,
    pass: errors === 0,
    margin: errors === 0 ? 'none' : JSON.stringify(all?.errorsByCode ?? {}),
  });
  const p99 = search?.latencyMs.p99 ?? NaN;
  lines.push({
    what: 'Search p99',
    target: `≤ ${maxP99Ms} ms`,
    measured: `${p99} ms`,
    pass: p99 <= maxP99Ms,
    margin: Number.isNaN(p99)
      ? 'no successful Search'
      : `${pct(((p99 - maxP99Ms) / maxP99Ms) * 100)} (${round1(p99 - maxP99Ms)} ms)`,
  });
  const grew = Object.entries(memory).filter(([, v]) => v !== undefined && !v.flat);
  const worst = Object.entries(memory)
    .filter((e): e is [string, MemoryVerdict] => e[1] !== undefined)
    .sort((a, b) => b[1].growthMib - a[1].growthMib)[0];
  lines.push({
    what: 'flat memory (RSS, median of the last quarter − of the first)',
    target: '≤ max(32 MiB, 10 %) per process',
    measured:
      worst === undefined
        ? 'no samples'
        : `largest growth ${worst[0]} ${worst[1].growthMib >= 0 ? '+' : ''}${worst[1].growthMib} MiB`,
    pass: worst !== undefined && grew.length === 0,
    margin: grew.length === 0 ? 'all flat' : `grew: ${grew.map(([n]) => n).join(', ')}`,
  });
  return lines;
}

/** CPU use of a process between two samples of its ticks, in % of one core. */
export function cpuPercent(
  ticksBefore: number,
  ticksAfter: number,
  seconds: number,
  clockTicks = 100,
): number {
  if (seconds <= 0) return NaN;
  return round1(((ticksAfter - ticksBefore) / clockTicks / seconds) * 100);
}

/** A fixed-width text table. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}

/**
 * `_sum` and `_count` of a Prometheus histogram per label set, from a text exposition, e.g.
 * `engram_rpc_duration_seconds` → `{ 'method="Search",…': { sum, count } }`.
 */
export function histogramTotals(text: string, name: string): Record<string, { sum: number; count: number }> {
  const out: Record<string, { sum: number; count: number }> = {};
  for (const line of text.split('\n')) {
    const match = new RegExp(`^${name}_(sum|count)(\\{[^}]*\\})?\\s+(\\S+)`).exec(line);
    if (match === null) continue;
    const labels = (match[2] ?? '{}').slice(1, -1);
    const entry = (out[labels] ??= { sum: 0, count: 0 });
    entry[match[1] as 'sum' | 'count'] = Number(match[3]);
  }
  return out;
}
