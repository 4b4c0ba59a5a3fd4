import { describe, expect, it } from '@jest/globals';
import { seededRandom } from '@engram/testing';
import {
  checkTarget,
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
