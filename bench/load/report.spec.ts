import { describe, expect, it } from '@jest/globals';
import { seededRandom } from '@engram/testing';
import {
  admissionReport,
  arrivalGapMs,
  checkMixed,
  checkOverload,
  checkTarget,
  distribution,
  gaugeValue,
  seedCountProblems,
  seedParamDifferences,
  seedProgress,
  cpuPercent,
  histogramTotals,
  memoryVerdict,
  onlyMix,
  parseMix,
  pickRpc,
  positiveInt,
  summarise,
  type CallRecord,
} from './report.js';

describe('parseMix', () => {
  it('parses and normalises the weights', () => {
    expect(parseMix('search=0.6,append=0.2,context=0.2')).toEqual({ search: 0.6, append: 0.2, context: 0.2 });
    expect(parseMix('search=3, append=1')).toEqual({ search: 0.75, append: 0.25 });
    expect(parseMix('search=1,append=0')).toEqual({ search: 1 });
  });

  it('rejects unknown names, bad weights, duplicates and an empty mix', () => {
    expect(() => parseMix('chat=1')).toThrow(/unknown RPC "chat"/);
    expect(() => parseMix('search=-1')).toThrow(/non-negative/);
    expect(() => parseMix('search=x')).toThrow(/non-negative/);
    expect(() => parseMix('search')).toThrow(/non-negative/);
    expect(() => parseMix('search=1,search=2')).toThrow(/twice/);
    expect(() => parseMix('search=0')).toThrow(/positive weight/);
    expect(() => parseMix('')).toThrow(/positive weight/);
  });

  it('--only is a mix of one', () => {
    expect(onlyMix('search')).toEqual({ search: 1 });
    expect(() => onlyMix('all')).toThrow(/unknown RPC/);
  });
});

describe('pickRpc', () => {
  it('splits [0, 1) cumulatively in RPC order', () => {
    const mix = parseMix('search=0.6,append=0.2,context=0.2');
    expect(pickRpc(mix, 0)).toBe('search');
    expect(pickRpc(mix, 0.59)).toBe('search');
    expect(pickRpc(mix, 0.61)).toBe('append');
    expect(pickRpc(mix, 0.81)).toBe('context');
    expect(pickRpc(mix, 0.9999999999)).toBe('context');
    expect(pickRpc({ search: 1 }, 0.5)).toBe('search');
  });

  it('follows the mix over many draws', () => {
    const mix = parseMix('search=0.6,append=0.2,context=0.2');
    const random = seededRandom(7);
    const counts: Record<string, number> = {};
    for (let i = 0; i < 10_000; i++) {
      const rpc = pickRpc(mix, random());
      counts[rpc] = (counts[rpc] ?? 0) + 1;
    }
    expect(counts['search']! / 10_000).toBeCloseTo(0.6, 1);
    expect(counts['append']! / 10_000).toBeCloseTo(0.2, 1);
    expect(counts['context']! / 10_000).toBeCloseTo(0.2, 1);
  });
});

describe('positiveInt', () => {
  it('parses or names the option', () => {
    expect(positiveInt('clients', '32', 1)).toBe(32);
    expect(positiveInt('clients', undefined, 8)).toBe(8);
    expect(() => positiveInt('clients', '0', 1)).toThrow(/--clients/);
    expect(() => positiveInt('clients', '2.5', 1)).toThrow(/--clients/);
  });
});

describe('summarise', () => {
  const records: CallRecord[] = [
    ...Array.from({ length: 10 }, (_, i): CallRecord => ({ rpc: 'search', ms: i + 1, outcome: 'OK' })),
    { rpc: 'search', ms: 500, outcome: 'DEADLINE_EXCEEDED' },
    { rpc: 'append', ms: 20, outcome: 'OK' },
    { rpc: 'append', ms: 30, outcome: 'ABORTED/CONFLICT' },
    { rpc: 'append', ms: 31, outcome: 'ABORTED/CONFLICT' },
  ];

  it('reports per RPC and overall, latency of successful calls only', () => {
    const report = summarise(records, 2_000);
    expect(report['search']).toMatchObject({
      calls: 11,
      ok: 10,
      errors: 1,
      okPerSecond: 5,
      latencyMs: { p50: 5, p95: 10, p99: 10, max: 10, mean: 5.5 },
      errorsByCode: { DEADLINE_EXCEEDED: 1 },
    });
    expect(report['append']).toMatchObject({
      calls: 3,
      ok: 1,
      errors: 2,
      errorsByCode: { 'ABORTED/CONFLICT': 2 },
    });
    expect(report['all']).toMatchObject({
      calls: 14,
      ok: 11,
      errors: 3,
      errorsByCode: { DEADLINE_EXCEEDED: 1, 'ABORTED/CONFLICT': 2 },
    });
    expect(report['context']).toBeUndefined();
  });

  it('is empty without records', () => {
    expect(summarise([], 1000)).toEqual({});
  });
});

describe('memoryVerdict', () => {
  it('compares the medians of the first and last quarter, within max(32 MiB, 10 %)', () => {
    expect(memoryVerdict([400, 410, 405, 420, 480, 430, 425, 440])).toEqual({
      firstMib: 400,
      lastMib: 440,
      startMib: 405, // median of 400, 410
      endMib: 432.5, // median of 425, 440
      peakMib: 480,
      growthMib: 27.5,
      flat: true,
    });
    expect(memoryVerdict([400, 400, 441, 441])?.flat).toBe(false); // +41 > 40 (10 %)
    expect(memoryVerdict([100, 130])?.flat).toBe(true); // +30 ≤ 32 MiB
    expect(memoryVerdict([100, 133])?.flat).toBe(false);
    expect(memoryVerdict([500, 300])?.flat).toBe(true);
    // A GC sawtooth that returns to its level is flat despite a high peak.
    expect(memoryVerdict([460, 520, 580, 505, 484, 522, 488, 470])?.flat).toBe(true);
    expect(memoryVerdict([])).toBeUndefined();
  });
});

describe('checkTarget', () => {
  const ok = (n: number, ms: number): CallRecord[] =>
    Array.from({ length: n }, () => ({ rpc: 'search', ms, outcome: 'OK' }));

  it('passes at the target and says by how much', () => {
    const lines = checkTarget(summarise(ok(9_600, 100), 60_000), { retrieval: memoryVerdict([400, 410]) });
    expect(lines.map((l) => l.pass)).toEqual([true, true, true, true]);
    expect(lines[0]).toMatchObject({ measured: '160/s', margin: '+6.7 % (10/s)' });
    expect(lines[2]).toMatchObject({ measured: '100 ms', margin: '-50 % (-100 ms)' });
  });

  it('misses on throughput, errors, p99 and memory growth', () => {
    const records = [...ok(6_000, 250), { rpc: 'search' as const, ms: 10_000, outcome: 'DEADLINE_EXCEEDED' }];
    const lines = checkTarget(summarise(records, 60_000), {
      retrieval: memoryVerdict([400, 520]),
      context: memoryVerdict([300, 301]),
    });
    expect(lines.map((l) => l.pass)).toEqual([false, false, false, false]);
    expect(lines[0]).toMatchObject({ measured: '100/s', margin: '-33.3 % (-50/s)' });
    expect(lines[1]).toMatchObject({ measured: '1 of 6001', margin: '{"DEADLINE_EXCEEDED":1}' });
    expect(lines[2]).toMatchObject({ measured: '250 ms', margin: '+25 % (50 ms)' });
    expect(lines[3]).toMatchObject({
      measured: 'largest growth retrieval +120 MiB',
      margin: 'grew: retrieval',
    });
    expect(checkTarget(summarise([], 1), {})[3]).toMatchObject({ measured: 'no samples', pass: false });
  });
});

describe('cpuPercent', () => {
  it('is % of one core at 100 ticks per second', () => {
    expect(cpuPercent(1_000, 1_500, 5)).toBe(100);
    expect(cpuPercent(0, 150, 1)).toBe(150);
    expect(cpuPercent(0, 1, 0)).toBeNaN();
  });
});

describe('histogramTotals', () => {
  it('reads _sum and _count per label set', () => {
    const text = [
      '# HELP engram_rpc_duration_seconds x',
      'engram_rpc_duration_seconds_bucket{method="Search",code="OK",le="0.1"} 3',
      'engram_rpc_duration_seconds_sum{method="Search",code="OK"} 1.5',
      'engram_rpc_duration_seconds_count{method="Search",code="OK"} 10',
      'engram_embedding_batch_duration_seconds_sum 0.2',
      'engram_embedding_batch_duration_seconds_count 4',
    ].join('\n');
    expect(histogramTotals(text, 'engram_rpc_duration_seconds')).toEqual({
      'method="Search",code="OK"': { sum: 1.5, count: 10 },
    });
    expect(histogramTotals(text, 'engram_embedding_batch_duration_seconds')).toEqual({
      '': { sum: 0.2, count: 4 },
    });
  });
});

describe('gaugeValue', () => {
  const text = [
    '# HELP engram_outbox_depth Outbox rows not yet indexed.',
    '# TYPE engram_outbox_depth gauge',
    'engram_outbox_depth{state="pending"} 12',
    'engram_outbox_depth{state="retrying"} 3',
    'engram_outbox_depth{state="parked"} 0',
    'engram_index_lag_seconds 0.75',
    'engram_index_lag_seconds_other 9',
  ].join('\n');

  it('sums the series of a gauge, and tells an absent one', () => {
    expect(gaugeValue(text, 'engram_outbox_depth')).toBe(15);
    expect(gaugeValue(text, 'engram_index_lag_seconds')).toBe(0.75);
    expect(gaugeValue(text, 'engram_index_dense_pending')).toBeUndefined();
    expect(gaugeValue('', 'engram_index_lag_seconds')).toBeUndefined();
  });
});

describe('distribution', () => {
  it('nearest-rank percentiles, ignoring missing samples', () => {
    const values = [...Array.from({ length: 100 }, (_, i) => i + 1), NaN];
    expect(distribution(values)).toEqual({ n: 100, p50: 50, p95: 95, p99: 99, max: 100 });
    expect(distribution([])).toMatchObject({ n: 0, p99: NaN });
  });
});

describe('arrivalGapMs', () => {
  it('fixed gaps are 1/rate, Poisson gaps average 1/rate', () => {
    expect(arrivalGapMs(200, 'fixed', 0.3)).toBe(5);
    const random = seededRandom(11);
    let total = 0;
    for (let i = 0; i < 20_000; i++) total += arrivalGapMs(100, 'poisson', random());
    expect(total / 20_000).toBeCloseTo(10, 0);
    expect(Number.isFinite(arrivalGapMs(100, 'poisson', 1))).toBe(true);
    expect(() => arrivalGapMs(0, 'fixed', 0.5)).toThrow(/positive/);
  });
});

describe('admissionReport and checkOverload', () => {
  const records: CallRecord[] = [
    ...Array.from({ length: 100 }, (_, i): CallRecord => ({ rpc: 'search', ms: i + 1, outcome: 'OK' })),
    ...Array.from({ length: 50 }, (_, i): CallRecord => ({
      rpc: 'search',
      ms: 1 + i / 10,
      outcome: i % 2 === 0 ? 'RESOURCE_EXHAUSTED' : 'RESOURCE_EXHAUSTED/OVERLOADED',
    })),
    { rpc: 'append', ms: 0, outcome: 'SHED_BY_GENERATOR' },
  ];

  it('splits admitted from refused calls, with the offered rate', () => {
    const report = admissionReport(records, 10_000);
    expect(report['search']).toMatchObject({
      offered: 150,
      offeredPerSecond: 15,
      admitted: { n: 100, perSecond: 10, p50: 50, p99: 99, max: 100 },
      refused: { n: 50, max: 5.9 },
      otherErrors: {},
    });
    expect(report['all']!.otherErrors).toEqual({ SHED_BY_GENERATOR: 1 });
    expect(report['append']!.admitted.n).toBe(0);
  });

  it('passes when admitted p99 and refusals are fast, and says why it misses', () => {
    const lines = checkOverload(admissionReport(records.slice(0, 150), 10_000));
    expect(lines.map((l) => l.pass)).toEqual([true, true, true]);
    const slow = checkOverload(admissionReport(records, 10_000), { maxAdmittedP99Ms: 50, maxRefusedMs: 2 });
    expect(slow.map((l) => l.pass)).toEqual([false, false, false]);
    const none = checkOverload(admissionReport(records.slice(0, 100), 10_000));
    expect(none[1]).toMatchObject({ pass: false, measured: 'none refused' });
  });
});

describe('checkMixed', () => {
  const report = summarise(
    [
      { rpc: 'search', ms: 10, outcome: 'OK' },
      { rpc: 'append', ms: 20, outcome: 'OK' },
      { rpc: 'context', ms: 30, outcome: 'OK' },
    ],
    1000,
  );

  it('needs no errors, a lag p99 within bound and a p99 for every RPC of the mix', () => {
    const lag = distribution([0, 0.5, 1, 1.5]);
    expect(checkMixed(report, lag, ['search', 'append', 'context']).every((l) => l.pass)).toBe(true);
    const lines = checkMixed(report, distribution([3, 4]), ['search', 'append', 'context', 'ingest']);
    expect(lines.map((l) => l.pass)).toEqual([true, false, false]);
    expect(lines[2]!.margin).toMatch(/ingest/);
    expect(checkMixed(report, undefined, ['search'])[1]).toMatchObject({
      pass: false,
      measured: 'not sampled',
    });
  });
});

describe('seed manifest checks', () => {
  it('lists every parameter that differs', () => {
    const stored = { items: 100_000, users: 1000, orgs: 10, store: 'mysql' };
    expect(seedParamDifferences(stored, { ...stored })).toEqual([]);
    expect(seedParamDifferences(stored, { ...stored, users: 50, orgs: 5 })).toEqual([
      'orgs: seeded with 10, asked 5',
      'users: seeded with 1000, asked 50',
    ]);
    expect(seedParamDifferences(stored, { items: 100_000, users: 1000, orgs: 10 })).toEqual([
      'store: seeded with "mysql", asked undefined',
    ]);
  });

  it('accepts a state that grew, refuses one that shrank or is not fully indexed', () => {
    const recorded = { MEMORY: 100, CHUNK: 300, ROUND: 600 };
    expect(
      seedCountProblems(recorded, {
        MEMORY: { rows: 100, points: 100 },
        CHUNK: { rows: 310, points: 310 },
        ROUND: { rows: 640, points: undefined },
      }),
    ).toEqual([]);
    expect(
      seedCountProblems(recorded, { MEMORY: { rows: 90, points: 90 }, CHUNK: { rows: 300, points: 250 } }),
    ).toEqual([
      'MEMORY: recorded 100 rows, 90 now',
      'CHUNK: 300 rows but 250 indexed points',
      'ROUND: recorded 600 rows, none now',
    ]);
  });
});

describe('seedProgress', () => {
  it('collects the users done and the time of every run, skipping a cut line', () => {
    const text = [
      '{"run":"2026-12-01T10:00:00Z","t":1000}',
      '{"user":0,"t":3000}',
      '{"user":1,"t":6000}',
      '{"t":8000}',
      '{"run":"2026-12-01T11:00:00Z","t":100000}',
      '{"user":2,"t":104000}',
      '{"user":3,"t"',
    ].join('\n');
    const progress = seedProgress(text);
    expect([...progress.done]).toEqual([0, 1, 2]);
    expect(progress.runs).toBe(2);
    expect(progress.priorMs).toBe(7000 + 4000);
    expect(seedProgress('')).toEqual({ done: new Set(), runs: 0, priorMs: 0 });
  });
});
