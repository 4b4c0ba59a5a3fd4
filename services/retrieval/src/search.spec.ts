import { describe, expect, it } from '@jest/globals';
import { encodeQuery } from '@engram/lexical';
import {
  VectorSimilarities,
  type Point,
  type PointPayload,
  type ScoredPoint,
  type SearchQuery,
  type VectorIndex,
} from '@engram/vector-index';
import { resolveRankingOptions } from './domain/ranking.js';
import {
  StageClock,
  candidateQueries,
  indexCandidates,
  lexicalQuery,
  preciseDuration,
  storedSimilarities,
} from './search.js';

const payload = (sourceId: string, extra: Partial<PointPayload> = {}): PointPayload => ({
  tenantId: 't1',
  kind: 'MEMORY',
  sourceId,
  scope: 'SELF',
  ownerId: 'alice',
  orgId: '',
  status: 'ACTIVE',
  createdAt: 1,
  ...extra,
});

const hit = (id: string, score: number, extra: Partial<ScoredPoint> = {}): ScoredPoint => ({
  id,
  score,
  payload: payload(id),
  ...extra,
});

/** An index that answers scripted batches and vector reads, and records every call. */
function scriptedIndex(answers: ScoredPoint[][], stored: readonly Point[] = []) {
  const batches: SearchQuery[][] = [];
  const fetches: string[][] = [];
  const index = {
    backend: 'EMBEDDED',
    searchBatch: (queries: readonly SearchQuery[]) => {
      batches.push([...queries]);
      return Promise.resolve(answers);
    },
    similarities: (ids: readonly string[]) => {
      fetches.push([...ids]);
      const found = stored.filter((p) => ids.includes(p.id) && p.dense !== undefined);
      return Promise.resolve(
        new VectorSimilarities(new Map(found.map((p) => [p.id, Float32Array.from(p.dense!)]))),
      );
    },
    fetch: () => Promise.reject(new Error('Search asks the index for similarities, not points')),
    searchDense: () => Promise.reject(new Error('Search must use searchBatch')),
    searchSparse: () => Promise.reject(new Error('Search must use searchBatch')),
  } as unknown as VectorIndex;
  return { index, batches, fetches };
}

const options = resolveRankingOptions({});
const filters = [
  { filter: { tenantId: 't1', kinds: ['MEMORY' as const] } },
  { filter: { tenantId: 't1', kinds: ['ROUND' as const] } },
];
const vector = Float32Array.from([1, 0]);

describe('lexicalQuery', () => {
  it('tokenizes once: the distinct terms in query order and the same sparse vector as encodeQuery', () => {
    const q = 'Green tea, green TEA and 绿茶?';
    const { terms, sparse } = lexicalQuery(q);
    expect(new Set(terms).size).toBe(terms.length);
    expect(terms[0]).toBe('green');
    expect(sparse).toEqual(encodeQuery(q));
  });
});

describe('candidateQueries', () => {
  it('asks one dense and one sparse query over the union of the kinds’ filters, none for vectors', () => {
    const sparse = lexicalQuery('green tea').sparse;
    const { queries, dense } = candidateQueries({ sparse, vector }, filters, 40, options);
    expect(dense).toBe(1);
    const union = { anyOf: filters.map((f) => f.filter) };
    expect(queries).toEqual([
      { dense: vector, filter: union, limit: 40 },
      { sparse, filter: union, limit: 40 },
    ]);
    // One kind: its filter as it is.
    const one = candidateQueries({ sparse, vector }, filters.slice(0, 1), 40, options);
    expect(one.queries.map((q) => q.filter)).toEqual([filters[0]!.filter, filters[0]!.filter]);
    // No dense signal, no lexical terms, no kind: nothing to ask.
    expect(candidateQueries({ sparse, vector: undefined }, filters, 40, options).queries).toHaveLength(1);
    const none = candidateQueries(
      { sparse: { indices: [], values: [] }, vector: undefined },
      filters,
      40,
      options,
    );
    expect(none.queries).toEqual([]);
    expect(candidateQueries({ sparse, vector }, [], 40, options).queries).toEqual([]);
  });
});

describe('indexCandidates', () => {
  it('answers from one searchBatch: each signal cut to the best `limit`, merged, pending points counted', async () => {
    const pending = hit('p', 3, { payload: payload('p', { densePendingSince: 5 }) });
    const { index, batches } = scriptedIndex([
      [hit('a', 0.9), hit('b', 0.8), hit('c', 0.1)],
      [pending, hit('a', 2), hit('d', 1)],
    ]);
    const got = await indexCandidates(
      index,
      { sparse: lexicalQuery('green tea').sparse, vector },
      filters,
      2,
      options,
    );
    expect(batches).toHaveLength(1);
    expect(batches[0]).toHaveLength(2);
    expect(got.dense.map((p) => p.id)).toEqual(['a', 'b']);
    expect(got.lexical.map((p) => p.id)).toEqual(['p', 'a']);
    expect([...got.merged.keys()]).toEqual(['a', 'b', 'p']);
    expect(got.merged.get('a')).toMatchObject({ dense: 0.9, denseRank: 1, text: 2, lexicalRank: 2 });
    expect(got.densePending).toBe(1);
  });

  it('makes no index call when there is nothing to ask', async () => {
    const { index, batches } = scriptedIndex([]);
    const got = await indexCandidates(
      index,
      { sparse: { indices: [], values: [] }, vector: undefined },
      filters,
      10,
      options,
    );
    expect(batches).toHaveLength(0);
    expect(got.merged.size).toBe(0);
  });
});

describe('storedSimilarities', () => {
  const candidatesOf = async (index: VectorIndex) =>
    indexCandidates(index, { sparse: lexicalQuery('green tea').sparse, vector }, filters, 10, options);

  it('asks for the merged candidates’ similarities in one call, leaving out pending points', async () => {
    const answers = [
      [hit('a', 0.9)],
      [],
      [hit('l', 2), hit('p', 1, { payload: payload('p', { densePendingSince: 5 }) }), hit('a', 1)],
      [],
    ];
    const stored: Point[] = [
      { id: 'a', dense: [1, 0], sparse: { indices: [], values: [] }, payload: payload('a') },
      { id: 'l', dense: [0.6, 0.8], sparse: { indices: [], values: [] }, payload: payload('l') },
    ];
    const { index, fetches } = scriptedIndex(answers, stored);
    const similarities = await storedSimilarities(index, await candidatesOf(index), true);
    expect(fetches).toEqual([['a', 'l']]);
    expect(similarities.size).toBe(2);
    expect(similarities.of('a', 'l')).toBeCloseTo(0.6, 6);
    expect(similarities.of('a', 'p')).toBeUndefined();
  });

  it('asks nothing when they are not needed or fewer than two candidates have a vector', async () => {
    const pendingOnly = [
      [hit('a', 0.9)],
      [],
      [hit('p', 1, { payload: payload('p', { densePendingSince: 5 }) })],
      [],
    ];
    const { index, fetches } = scriptedIndex(pendingOnly);
    const candidates = await candidatesOf(index);
    expect((await storedSimilarities(index, candidates, true)).size).toBe(0);
    expect((await storedSimilarities(index, candidates, false)).size).toBe(0);
    expect(fetches).toEqual([]);
  });

  it('reports an index failure as UNAVAILABLE', async () => {
    const { index } = scriptedIndex([[hit('a', 0.9), hit('b', 0.8)], [], [], []]);
    const candidates = await candidatesOf(index);
    const failing = { ...index, similarities: () => Promise.reject(new Error('connect ECONNREFUSED')) };
    await expect(storedSimilarities(failing as VectorIndex, candidates, true)).rejects.toMatchObject({
      code: 14,
    });
  });
});

describe('StageClock', () => {
  it('records each stage since the previous lap, in order, adding up to the elapsed time', () => {
    const clock = new StageClock();
    clock.lap('plan');
    clock.lap('embed');
    const elapsed = performance.now() - clock.started;
    expect(clock.laps.map((l) => l.stage)).toEqual(['plan', 'embed']);
    expect(clock.laps.every((l) => l.ms >= 0)).toBe(true);
    expect(clock.laps.reduce((a, l) => a + l.ms, 0)).toBeLessThanOrEqual(elapsed);
    const observed: [string, number][] = [];
    clock.record({
      duration: { observe: (labels: { stage: string }, s: number) => observed.push([labels.stage, s]) },
    } as never);
    expect(observed.map(([stage]) => stage)).toEqual(['plan', 'embed']);
  });

  it('renders times as Durations at microsecond resolution', () => {
    expect(preciseDuration(1234.5678)).toMatchObject({ seconds: 1n, nanos: 234_568_000 });
    expect(preciseDuration(0.0004)).toMatchObject({ seconds: 0n, nanos: 0 });
    expect(preciseDuration(-3)).toMatchObject({ seconds: 0n, nanos: 0 });
  });
});
