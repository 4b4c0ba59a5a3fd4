/**
 * Pure helpers of the sustained-load benchmark (bench/load/run.ts): the option parsers, the RPC
 * picker, the open-loop arrival gaps, the per-RPC report (nearest-rank latency percentiles), the
 * admitted/refused split of an open-loop run, gauge parsing and distributions (indexer lag), the
 * memory verdict, the target checks of issues #11 and #19, and the seed manifest comparison. No I/O.
 */

import { median, percentile } from '@engram/testing';

/** The RPCs the generator mixes (`ingest`: IngestDocument of a small document). */
export const RPCS = ['search', 'append', 'context', 'ingest'] as const;
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

/** `_sum`-less gauge: the sum of every series of `name` in a text exposition, undefined if absent. */
export function gaugeValue(text: string, name: string): number | undefined {
  let total: number | undefined;
  for (const line of text.split('\n')) {
    const match = new RegExp(`^${name}(\\{[^}]*\\})?\\s+(\\S+)`).exec(line);
    if (match === null) continue;
    const value = Number(match[2]);
    if (Number.isFinite(value)) total = (total ?? 0) + value;
  }
  return total;
}

/** Nearest-rank summary of a sample (e.g. the indexer lag sampled each tick). */
export interface Distribution {
  readonly n: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return {
    n: sorted.length,
    p50: r(percentile(sorted, 50)),
    p95: r(percentile(sorted, 95)),
    p99: r(percentile(sorted, 99)),
    max: r(sorted.at(-1) ?? NaN),
  };
}

/** The gap before the next arrival of an open loop at `rate` per second: Poisson (exponential gaps) or fixed. */
export function arrivalGapMs(rate: number, arrivals: 'poisson' | 'fixed', u: number): number {
  if (!(rate > 0)) throw new Error('rate must be positive');
  const mean = 1000 / rate;
  return arrivals === 'fixed' ? mean : -Math.log(1 - Math.min(u, 1 - 1e-12)) * mean;
}

/** Admitted (OK) and refused (RESOURCE_EXHAUSTED, the admission control) calls of one RPC in an open loop. */
export interface AdmissionReport {
  readonly offered: number;
  readonly offeredPerSecond: number;
  readonly admitted: Distribution & { readonly perSecond: number };
  readonly refused: Distribution;
  /** Not admitted for another reason: outcome → count (not started for the bound on outstanding calls: `SHED_BY_GENERATOR`). */
  readonly otherErrors: Readonly<Record<string, number>>;
}

/** Outcome of a call the server refused for load (RESOURCE_EXHAUSTED with or without a reason). */
export const isRefusal = (outcome: string) =>
  outcome === 'RESOURCE_EXHAUSTED' || outcome.startsWith('RESOURCE_EXHAUSTED/');

/** Per RPC (and `all`): the offered rate, admitted calls' and refusals' latency, other outcomes. */
export function admissionReport(
  records: readonly CallRecord[],
  windowMs: number,
): Record<string, AdmissionReport> {
  const groups = new Map<string, CallRecord[]>([['all', [...records]]]);
  for (const r of records) groups.set(r.rpc, [...(groups.get(r.rpc) ?? []), r]);
  const out: Record<string, AdmissionReport> = {};
  const perSecond = (n: number) => (windowMs > 0 ? round1((n * 1000) / windowMs) : NaN);
  for (const [name, group] of groups) {
    if (group.length === 0) continue;
    const admitted = group.filter((r) => r.outcome === 'OK').map((r) => r.ms);
    const refused = group.filter((r) => isRefusal(r.outcome)).map((r) => r.ms);
    const otherErrors: Record<string, number> = {};
    for (const r of group)
      if (r.outcome !== 'OK' && !isRefusal(r.outcome))
        otherErrors[r.outcome] = (otherErrors[r.outcome] ?? 0) + 1;
    out[name] = {
      offered: group.length,
      offeredPerSecond: perSecond(group.length),
      admitted: { ...distribution(admitted), perSecond: perSecond(admitted.length) },
      refused: distribution(refused),
      otherErrors,
    };
  }
  return out;
}

/**
 * The issue #19 check of a mixed run at its sustainable rate: no errors, indexer lag p99 ≤ `maxLagS`
 * (the sampled `engram_index_lag_seconds`), and a p99 for every RPC of the mix.
 */
export function checkMixed(
  report: Readonly<Record<string, RpcReport>>,
  lag: Distribution | undefined,
  rpcs: readonly string[],
  { maxLagS = 2 }: { maxLagS?: number } = {},
): TargetLine[] {
  const all = report['all'];
  const errors = all?.errors ?? 0;
  const lines: TargetLine[] = [
    {
      what: 'errors (all RPCs)',
      target: '0',
      measured: `${errors} of ${all?.calls ?? 0}`,
      pass: errors === 0 && (all?.calls ?? 0) > 0,
      margin: errors === 0 ? 'none' : JSON.stringify(all?.errorsByCode ?? {}),
    },
  ];
  const p99 = lag?.p99 ?? NaN;
  lines.push({
    what: 'indexer lag p99 (engram_index_lag_seconds, sampled)',
    target: `≤ ${maxLagS} s`,
    measured:
      lag === undefined || lag.n === 0 ? 'not sampled' : `${p99} s (max ${lag.max} s, ${lag.n} samples)`,
    pass: p99 <= maxLagS,
    margin: Number.isNaN(p99) ? 'no samples' : `${round1(p99 - maxLagS)} s`,
  });
  const missing = rpcs.filter((rpc) => !Number.isFinite(report[rpc]?.latencyMs.p99 ?? NaN));
  lines.push({
    what: "every RPC's p99 reported",
    target: rpcs.join(', '),
    measured: rpcs.map((rpc) => `${rpc} ${report[rpc]?.latencyMs.p99 ?? '–'} ms`).join(', '),
    pass: missing.length === 0,
    margin: missing.length === 0 ? 'all' : `no successful call: ${missing.join(', ')}`,
  });
  return lines;
}

/**
 * The issue #19 overload check of an open-loop run: admitted calls' p99 ≤ `maxAdmittedP99Ms`, and
 * the refused ones (RESOURCE_EXHAUSTED) answered in < `maxRefusedMs` (their p99).
 */
export function checkOverload(
  admission: Readonly<Record<string, AdmissionReport>>,
  { maxAdmittedP99Ms = 300, maxRefusedMs = 20 }: { maxAdmittedP99Ms?: number; maxRefusedMs?: number } = {},
): TargetLine[] {
  const all = admission['all'];
  const admittedP99 = all?.admitted.p99 ?? NaN;
  const refusedP99 = all?.refused.p99 ?? NaN;
  return [
    {
      what: "admitted calls' p99",
      target: `≤ ${maxAdmittedP99Ms} ms`,
      measured: `${admittedP99} ms (${all?.admitted.n ?? 0} admitted of ${all?.offered ?? 0})`,
      pass: admittedP99 <= maxAdmittedP99Ms,
      margin: Number.isNaN(admittedP99) ? 'nothing admitted' : `${round1(admittedP99 - maxAdmittedP99Ms)} ms`,
    },
    {
      what: 'refused calls (RESOURCE_EXHAUSTED) p99',
      target: `< ${maxRefusedMs} ms`,
      measured:
        (all?.refused.n ?? 0) === 0
          ? 'none refused'
          : `${refusedP99} ms (${all?.refused.n} refused, max ${all?.refused.max} ms)`,
      pass: (all?.refused.n ?? 0) > 0 && refusedP99 < maxRefusedMs,
      margin:
        (all?.refused.n ?? 0) === 0
          ? 'no refusal: not overloaded, or no admission control'
          : `${round1(refusedP99 - maxRefusedMs)} ms`,
    },
    {
      what: 'other errors',
      target: '0',
      measured: JSON.stringify(all?.otherErrors ?? {}),
      pass: Object.keys(all?.otherErrors ?? {}).length === 0,
      margin: Object.keys(all?.otherErrors ?? {}).length === 0 ? 'none' : 'see errors by code',
    },
  ];
}

/** The parameters a seeded state is reused under: the same ones, or refuse. */
export type SeedParams = Readonly<Record<string, string | number>>;

/** What differs between the parameters a seed was made with and those asked for now (empty: reusable). */
export function seedParamDifferences(stored: SeedParams, asked: SeedParams): string[] {
  const keys = [...new Set([...Object.keys(stored), ...Object.keys(asked)])].sort();
  return keys
    .filter((k) => stored[k] !== asked[k])
    .map((k) => `${k}: seeded with ${JSON.stringify(stored[k])}, asked ${JSON.stringify(asked[k])}`);
}

/**
 * Problems of a reused seed: per kind, fewer source rows than the manifest recorded (the mixed
 * workload only adds), or rows not all indexed. Empty when the state is intact.
 */
export function seedCountProblems(
  recorded: Readonly<Record<string, number>>,
  now: Readonly<Record<string, { rows: number; points: number | undefined }>>,
): string[] {
  const problems: string[] = [];
  for (const [kind, rows] of Object.entries(recorded)) {
    const current = now[kind];
    if (current === undefined) problems.push(`${kind}: recorded ${rows} rows, none now`);
    else if (current.rows < rows) problems.push(`${kind}: recorded ${rows} rows, ${current.rows} now`);
    else if (current.points !== undefined && current.points < current.rows)
      problems.push(`${kind}: ${current.rows} rows but ${current.points} indexed points`);
  }
  return problems;
}

/**
 * Where an interrupted seed stands, from its progress log (one JSON object a line: `{"run": iso,
 * "t": ms}` when a seeding run starts, `{"user": u, "t": ms}` when a user's writes are done, `{"t": ms}`
 * while waiting for the index): the users done, the runs so far and the seeding time they spent
 * (from each run's start to its last line). Unparsable lines (a line cut by a kill) are skipped.
 */
export function seedProgress(text: string): { done: Set<number>; runs: number; priorMs: number } {
  const done = new Set<number>();
  let runs = 0;
  let priorMs = 0;
  let runStart: number | undefined;
  let last: number | undefined;
  const close = () => {
    if (runStart !== undefined && last !== undefined) priorMs += last - runStart;
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let entry: { run?: string; user?: number; t?: number };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    if (typeof entry.t !== 'number') continue;
    if (entry.run !== undefined) {
      close();
      runs++;
      runStart = entry.t;
      last = entry.t;
    } else {
      if (typeof entry.user === 'number') done.add(entry.user);
      last = entry.t;
    }
  }
  close();
  return { done, runs, priorMs };
}
