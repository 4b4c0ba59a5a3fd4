import { describe, expect, it } from '@jest/globals';
import { formatTable, formatVerdicts, parseSizes, ratio, summarize, verdict } from './stats.js';

describe('perf stats', () => {
  it('summarizes latencies with interpolated percentiles', () => {
    const values = Array.from({ length: 101 }, (_, i) => 100 - i); // 0..100, unsorted
    expect(summarize(values)).toEqual({ n: 101, p50: 50, p95: 95, p99: 99, mean: 50, max: 100 });
    expect(summarize([]).n).toBe(0);
    expect(Number.isNaN(summarize([]).p50)).toBe(true);
  });

  it('computes ratios to a floor, NaN without one', () => {
    expect(ratio(15, 10)).toBe(1.5);
    expect(Number.isNaN(ratio(1, 0))).toBe(true);
  });

  it('judges targets both ways and never passes a missing measurement', () => {
    expect(verdict({ name: 'p50', measured: 12, limit: 15, kind: 'max', unit: 'ms' })).toMatchObject({
      pass: true,
      ratio: 0.8,
    });
    expect(verdict({ name: 'tput', measured: 0.8, limit: 0.85, kind: 'min', unit: '' }).pass).toBe(false);
    expect(verdict({ name: 'x', measured: NaN, limit: 1, kind: 'max', unit: '' }).pass).toBe(false);
    expect(formatVerdicts([verdict({ name: 'p50', measured: 20, limit: 15, kind: 'max', unit: 'ms' })])).toBe(
      'MISS  p50: 20.00 ms (≤ 15 ms, ratio 1.33)',
    );
  });

  it('renders a table with the floor ratio', () => {
    const s = summarize([10, 10, 10]);
    const f = summarize([5, 5, 5]);
    const table = formatTable([
      { backend: 'embedded', size: 10000, figure: 'search', value: s, floorName: 'embed+index', floor: f },
      { backend: 'embedded', size: 10000, figure: 'health', value: s },
    ]);
    const lines = table.split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[2]).toMatch(/search .* 10\.00 .*embed\+index .* 5\.00 .* 2\.00$/);
    expect(lines[3]).toMatch(/-$/);
  });

  it('parses sizes', () => {
    expect(parseSizes('10000,100_000')).toEqual([10000, 100000]);
    expect(() => parseSizes('10k')).toThrow('--sizes');
  });
});
