import { describe, expect, it } from '@jest/globals';
import { encodeQuery } from '@engram/lexical';
import type { Point, PointPayload, ScoredPoint, SearchQuery, VectorIndex } from '@engram/vector-index';
import { resolveRankingOptions } from './domain/ranking.js';
import {
  StageClock,
  candidateQueries,
  indexCandidates,
  lexicalQuery,
  preciseDuration,
  storedVectors,
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

/** An index that answers scripted batches and fetches, and records every call. */
function scriptedIndex(answers: ScoredPoint[][], stored: readonly Point[] = []) {
  const batches: SearchQuery[][] = [];
  const fetches: string[][] = [];
  const index = {
    backend: 'EMBEDDED',
    searchBatch: (queries: readonly SearchQuery[]) => {
      batches.push([...queries]);
      return Promise.resolve(answers);
    },
    fetch: (ids: readonly string[]) => {
      fetches.push([...ids]);
      return Promise.resolve(stored.filter((p) => ids.includes(p.id)));
    },
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
  it('asks for vectors with the dense queries only, and skips the sparse ones without terms', () => {
    const sparse = lexicalQuery('green tea').sparse;
    const { queries, dense } = candidateQueries({ sparse, vector, withVectors: true }, filters, 40, options);
    expect(dense).toBe(2);
    expect(queries.map((q) => ('dense' in q ? 'dense' : 'sparse'))).toEqual([
      'dense',
      'dense',
      'sparse',
      'sparse',
    ]);
    expect(queries.map((q) => q.withVectors === true)).toEqual([true, true, false, false]);
    const none = candidateQueries(
      { sparse: { indices: [], values: [] }, vector: undefined, withVectors: true },
      filters,
      40,
      options,
    );
    expect(none.queries).toEqual([]);
  });
});

describe('indexCandidates', () => {
  it('answers from one searchBatch: per-kind lists cut to the best `limit`, merged, pending points counted', async () => {
    const pending = hit('p', 3, { payload: payload('p', { densePendingSince: 5 }) });
    const { index, batches } = scriptedIndex([
      [hit('a', 0.9, { vector: Float32Array.from([1, 0]) })],
      [hit('b', 0.8, { vector: Float32Array.from([0, 1]) }), hit('c', 0.1)],
      [pending, hit('a', 2)],
      [hit('d', 1)],
    ]);
    const got = await indexCandidates(
      index,
      { sparse: lexicalQuery('green tea').sparse, vector, withVectors: true },
      filters,
      2,
      options,
    );
    expect(batches).toHaveLength(1);
    expect(got.dense.map((p) => p.id)).toEqual(['a', 'b']);
    expect(got.lexical.map((p) => p.id)).toEqual(['p', 'a']);
    expect([...got.merged.keys()]).toEqual(['a', 'b', 'p']);
    expect(got.merged.get('a')).toMatchObject({ dense: 0.9, denseRank: 1, text: 2, lexicalRank: 2 });
    expect([...got.vectors.keys()]).toEqual(['a', 'b']);
    expect(got.densePending).toBe(1);
  });

  it('makes no index call when there is nothing to ask', async () => {
    const { index, batches } = scriptedIndex([]);
    const got = await indexCandidates(
      index,
      { sparse: { indices: [], values: [] }, vector: undefined, withVectors: false },
      filters,
      10,
      options,
    );
    expect(batches).toHaveLength(0);
    expect(got.merged.size).toBe(0);
  });
});

describe('storedVectors', () => {
  const candidatesOf = async (index: VectorIndex) =>
    indexCandidates(
      index,
      { sparse: lexicalQuery('green tea').sparse, vector, withVectors: true },
      filters,
      10,
      options,
    );

  it('fetches only the candidates that came without a vector and have one (not pending points)', async () => {
    const answers = [
      [hit('a', 0.9, { vector: Float32Array.from([1, 0]) })],
      [],
      [hit('l', 2), hit('p', 1, { payload: payload('p', { densePendingSince: 5 }) })],
      [],
    ];
    const stored: Point[] = [
      { id: 'l', dense: [0, 1], sparse: { indices: [], values: [] }, payload: payload('l') },
    ];
    const { index, fetches } = scriptedIndex(answers, stored);
    const vectors = await storedVectors(index, await candidatesOf(index), true);
    expect(fetches).toEqual([['l']]);
    expect([...vectors.keys()].sort()).toEqual(['a', 'l']);
    expect(Array.from(vectors.get('l')!)).toEqual([0, 1]);
  });

  it('makes no fetch when every candidate brought its vector, and none when vectors are not needed', async () => {
    const answers = [[hit('a', 0.9, { vector: Float32Array.from([1, 0]) })], [], [hit('a', 1)], []];
    const { index, fetches } = scriptedIndex(answers);
    const candidates = await candidatesOf(index);
    expect([...(await storedVectors(index, candidates, true)).keys()]).toEqual(['a']);
    expect((await storedVectors(index, candidates, false)).size).toBe(0);
    expect(fetches).toEqual([]);
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
