import { describe, expect, it } from '@jest/globals';
import { tokenize } from '@engram/lexical';
import { seededRandom } from '@engram/testing';
import {
  freshnessTarget,
  gaugeValue,
  generateDocument,
  histogramDelta,
  histogramSeries,
  isOneTerm,
  markerSource,
  markersIn,
  roundMessages,
  sampleChunks,
  spreadOrdinals,
  summariseDelays,
  type ChunkText,
} from './plan.js';

describe('markerSource', () => {
  it('returns distinct words that the tokenizer keeps as one unchanged term', () => {
    const source = markerSource(seededRandom(7));
    const words = Array.from({ length: 2000 }, () => source.next());
    expect(new Set(words).size).toBe(words.length);
    for (const w of words) expect(tokenize(w)).toEqual([w]);
    // and inside a sentence it is still one term, found by markersIn
    expect(tokenize(`Reference ${words[0]}: the plan.`)).toContain(words[0]);
    expect(markersIn(`a ${words[0]}, b ${words[1]}; ${words[0]}`)).toEqual([words[0], words[1]]);
  });

  it('is deterministic for a seed', () => {
    const a = markerSource(seededRandom(3));
    const b = markerSource(seededRandom(3));
    expect([a.next(), a.next()]).toEqual([b.next(), b.next()]);
  });

  it('isOneTerm rejects words the stemmer or the splitter changes', () => {
    expect(isOneTerm('answers')).toBe(false);
    expect(isOneTerm('gpt-4o')).toBe(false);
    expect(isOneTerm('zqbcdfghjkm')).toBe(true);
  });
});

describe('roundMessages', () => {
  it('puts the marker in the user message only', () => {
    const { user, assistant } = roundMessages(seededRandom(4), 'zqbcdfghjkm');
    expect(markersIn(user)).toEqual(['zqbcdfghjkm']);
    expect(markersIn(assistant)).toEqual([]);
  });
});

describe('generateDocument', () => {
  it('stays under the size, carries one marker per paragraph and mixes both languages', () => {
    const doc = generateDocument(64 * 1024, seededRandom(1), markerSource(seededRandom(2)));
    expect(doc.bytes).toBeLessThanOrEqual(64 * 1024);
    expect(doc.bytes).toBe(new TextEncoder().encode(doc.text).length);
    expect(doc.bytes).toBeGreaterThan(60 * 1024);
    expect(doc.paragraphs).toBe(doc.markers.length);
    expect(markersIn(doc.text)).toEqual(doc.markers);
    expect(doc.text).toMatch(/[\u4e00-\u9fff]/);
    expect(doc.text).toMatch(/Reference zq/);
    expect(doc.text.startsWith('# Freshness benchmark document\n\n## Section 1\n\n')).toBe(true);
  });

  it('is deterministic for its seeds', () => {
    const one = generateDocument(8 * 1024, seededRandom(5), markerSource(seededRandom(6)));
    const two = generateDocument(8 * 1024, seededRandom(5), markerSource(seededRandom(6)));
    expect(one.text).toBe(two.text);
  });
});

describe('spreadOrdinals', () => {
  it('spreads the ordinals evenly with the first and the last', () => {
    expect(spreadOrdinals(10, 4)).toEqual([0, 3, 6, 9]);
    expect(spreadOrdinals(3, 8)).toEqual([0, 1, 2]);
    expect(spreadOrdinals(5, 1)).toEqual([4]);
    expect(spreadOrdinals(0, 4)).toEqual([]);
  });
});

describe('sampleChunks', () => {
  const chunk = (ordinal: number, text: string): ChunkText => ({
    name: `documents/d/chunks/c${ordinal}`,
    ordinal,
    text,
  });

  it("uses a marker of the target chunk alone, not one its neighbour's overlap repeats", () => {
    const chunks = Array.from({ length: 10 }, (_, i) =>
      // each chunk starts with the previous chunk's last marker (the overlap), then its own two
      chunk(
        i,
        `${i > 0 ? `zqdddddddd${'bcdfghjkmn'[i - 1]} ` : ''}text zqcccccccc${'bcdfghjkmn'[i]} zqdddddddd${'bcdfghjkmn'[i]}`,
      ),
    );
    const sample = sampleChunks(chunks.reverse(), [9, 0, 3, 6]);
    expect(sample.map((s) => s.ordinal)).toEqual([0, 3, 6, 9]);
    expect(sample[3]).toEqual({ name: 'documents/d/chunks/c9', ordinal: 9, marker: 'zqccccccccn' });
  });

  it('drops targets that are missing or have no marker of their own', () => {
    const chunks = [
      chunk(0, 'heading only'),
      chunk(1, 'zqbcdfghjkm'),
      chunk(2, 'zqbcdfghjkm'),
      chunk(3, 'zqddddddddd'),
    ];
    expect(sampleChunks(chunks, [0, 1, 2, 3, 7])).toEqual([
      { name: 'documents/d/chunks/c3', ordinal: 3, marker: 'zqddddddddd' },
    ]);
  });
});

describe('summariseDelays', () => {
  it('gives nearest-rank percentiles of the found delays', () => {
    const s = summariseDelays(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(s).toMatchObject({
      count: 100,
      found: 100,
      notFound: 0,
      p50Ms: 50,
      p95Ms: 95,
      p99Ms: 99,
      maxMs: 100,
    });
  });

  it('ranks a delay never found above every found one (null: not within the cap)', () => {
    const s = summariseDelays([100, 200, undefined, 300]);
    expect(s).toMatchObject({
      count: 4,
      found: 3,
      notFound: 1,
      p50Ms: 200,
      p99Ms: null,
      maxMs: null,
      meanFoundMs: 200,
    });
    expect(summariseDelays([])).toMatchObject({ count: 0, p50Ms: null });
  });
});

describe('freshnessTarget', () => {
  it('checks p50 ≤ 1 s and p99 ≤ 3 s per phase and the document within 30 s', () => {
    const fast = summariseDelays([200, 400, 900]);
    const slow = summariseDelays([500, 4000, undefined]);
    const lines = freshnessTarget(
      [
        { name: 'idle', summary: fast },
        { name: 'document', summary: slow },
      ],
      null,
      900,
    );
    expect(lines.map((l) => [l.what, l.pass])).toEqual([
      ['append → lexical hit p50 (idle)', true],
      ['append → lexical hit p99 (idle)', true],
      ['append → lexical hit p50 (document)', false],
      ['append → lexical hit p99 (document)', false],
      ['document READY → all chunks lexically searchable', false],
    ]);
    expect(lines[3]!.measured).toBe('not within 900 s');
    expect(freshnessTarget([], 12_000, 900)[0]).toMatchObject({ measured: '12.00 s', pass: true });
  });
});

describe('gaugeValue', () => {
  it('reads an unlabelled gauge and nothing else', () => {
    const text = [
      '# HELP engram_index_dense_pending Points without their dense vector.',
      '# TYPE engram_index_dense_pending gauge',
      'engram_index_dense_pending_total 9',
      'engram_index_dense_pending 14769',
      '',
    ].join('\n');
    expect(gaugeValue(text, 'engram_index_dense_pending')).toBe(14769);
    expect(gaugeValue(text, 'engram_index_dense_oldest_age_seconds')).toBeUndefined();
    expect(gaugeValue('engram_x NaN', 'engram_x')).toBeUndefined();
  });
});

describe('histogramSeries and histogramDelta', () => {
  const exposition = (bulkSum: number, bulkCount: number) =>
    [
      '# TYPE engram_index_pass_stage_seconds histogram',
      'engram_index_pass_stage_seconds_bucket{le="0.01",loop="bulk",stage="lease"} 3',
      `engram_index_pass_stage_seconds_sum{loop="bulk",stage="lease"} ${bulkSum}`,
      `engram_index_pass_stage_seconds_count{loop="bulk",stage="lease"} ${bulkCount}`,
      'engram_index_pass_stage_seconds_sum{loop="dense",stage="embed"} 4.5',
      'engram_index_pass_stage_seconds_count{loop="dense",stage="embed"} 2',
      'engram_index_pass_stage_seconds_other_sum{loop="x"} 1',
      'engram_search_stage_seconds_sum{stage="plan"} 9',
      '',
    ].join('\n');

  it('reads the sum and count of every labelled series of one histogram only', () => {
    expect(histogramSeries(exposition(0.25, 5), 'engram_index_pass_stage_seconds')).toEqual([
      { labels: { loop: 'bulk', stage: 'lease' }, sum: 0.25, count: 5 },
      { labels: { loop: 'dense', stage: 'embed' }, sum: 4.5, count: 2 },
    ]);
  });

  it('keeps what changed between two scrapes', () => {
    const name = 'engram_index_pass_stage_seconds';
    const delta = histogramDelta(
      histogramSeries(exposition(0.25, 5), name),
      histogramSeries(exposition(1.25, 9), name),
    );
    expect(delta).toEqual([{ labels: { loop: 'bulk', stage: 'lease' }, sum: 1, count: 4 }]);
    // A series that first appears later counts whole.
    expect(histogramDelta([], histogramSeries(exposition(1, 2), name))).toHaveLength(2);
  });
});
