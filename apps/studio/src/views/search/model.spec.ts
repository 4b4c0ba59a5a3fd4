import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { describe, expect, it } from '@jest/globals';
import { ItemKind } from '@engram/contracts/common';
import {
  Fusion,
  Recency,
  ScoreBreakdownSchema,
  SearchResultSchema,
  SearchStatsSchema,
} from '@engram/contracts/retrieval';
import {
  breakdownRows,
  buildSearchRequest,
  EMPTY_FORM,
  formFromQuery,
  formToQuery,
  resultSource,
  resultText,
  stageTimings,
  statsRows,
  type SearchForm,
} from './model.js';

describe('search form → request', () => {
  it('sends only the query (with explain) when no option is set: the server applies its defaults', () => {
    const { request, problems } = buildSearchRequest({ ...EMPTY_FORM, query: 'where do I live?' });
    expect(problems).toEqual([]);
    expect(request).toEqual({ query: 'where do I live?', explain: true });
  });

  it('maps every option the user set, and nothing else', () => {
    const form: SearchForm = {
      ...EMPTY_FORM,
      query: 'tea',
      topK: '5',
      minScore: '0.2',
      vectorWeight: '0',
      textWeight: '1',
      fusion: 'RRF',
      recency: 'MULTIPLICATIVE',
      decay: 'off',
      halfLifeDays: '7',
      mmr: 'on',
      mmrLambda: '0.5',
      kinds: ['MEMORY', 'ROUND'],
      from: '2026-01-01T00:00',
      allowDegraded: true,
    };
    const { request, problems } = buildSearchRequest(form);
    expect(problems).toEqual([]);
    expect(request).toEqual({
      query: 'tea',
      explain: true,
      topK: 5,
      allowDegraded: true,
      filter: {
        kinds: [ItemKind.MEMORY, ItemKind.ROUND],
        occurTime: { startTime: timestampFromDate(new Date('2026-01-01T00:00')) },
      },
      options: {
        vectorWeight: 0,
        textWeight: 1,
        decayEnabled: false,
        halfLifeDays: 7,
        mmrEnabled: true,
        mmrLambda: 0.5,
        minScore: 0.2,
        fusion: Fusion.RRF,
        recency: Recency.MULTIPLICATIVE,
      },
    });
  });

  it('reports fields that are not numbers (or a fractional top k) instead of sending them', () => {
    const { problems } = buildSearchRequest({ ...EMPTY_FORM, query: 'x', topK: '2.5', vectorWeight: 'abc' });
    expect(problems).toEqual(['topK', 'vectorWeight']);
  });

  it('round-trips through the URL, keeping only what differs from the defaults', () => {
    const form: SearchForm = { ...EMPTY_FORM, query: 'a b&c', topK: '3', kinds: ['CHUNK'], decay: 'off' };
    const query = formToQuery(form);
    expect(query).toEqual({ q: 'a b&c', k: '3', kinds: 'CHUNK', decay: 'off' });
    const params = new URLSearchParams(query as Record<string, string>);
    expect(formFromQuery(params)).toEqual(form);
    expect(formToQuery({ ...EMPTY_FORM, query: 'x' })).toEqual({ q: 'x' });
  });

  it('ignores unknown values in the URL', () => {
    const form = formFromQuery(new URLSearchParams('q=x&fusion=BOGUS&kinds=MEMORY,NOPE&mmr=maybe'));
    expect(form).toEqual({ ...EMPTY_FORM, query: 'x', kinds: ['MEMORY'] });
  });
});

describe('breakdown → bar rows', () => {
  it('lists the signals in scoring order with their raw values and ranks', () => {
    const rows = breakdownRows(
      create(ScoreBreakdownSchema, {
        textRaw: 2.5,
        textNormalized: 1,
        lexicalRank: 1,
        matchedTerms: ['tea', 'green'],
        vectorRaw: 0.8,
        vectorNormalized: 0.6,
        denseRank: 2,
        fused: 0.92,
        timeWindowFactor: 1,
        relevance: 0.92,
        recencyMultiplier: 0.99,
        ageDays: 0.5,
        decayFactor: 0.98,
        finalScore: 0.91,
      }),
    );
    expect(rows.map((r) => [r.key, r.value, r.tone])).toEqual([
      ['lexical', 1, 'lexical'],
      ['dense', 0.6, 'dense'],
      ['fused', 0.92, 'accent'],
      ['timeWindow', 1, 'muted'],
      ['relevance', 0.92, 'accent'],
      ['recency', 0.99, 'muted'],
      ['mmr', 0, 'warn'],
      ['final', 0.91, 'accent'],
    ]);
    expect(rows[0]?.detail).toBe('BM25 2.500 · #1 · tea green');
    expect(rows[1]?.detail).toBe('cos 0.800 · #2');
  });

  it('adds the reranker only when it scored the item, and marks absent signals', () => {
    const rows = breakdownRows(create(ScoreBreakdownSchema, { rerankScore: 0.4 }));
    expect(rows.map((r) => r.key)).toContain('rerank');
    expect(rows.find((r) => r.key === 'lexical')?.detail).toBe('—');
    expect(breakdownRows(create(ScoreBreakdownSchema, {})).map((r) => r.key)).not.toContain('rerank');
  });
});

describe('results', () => {
  it('links each kind to its Studio page and shows its text', () => {
    const memory = create(SearchResultSchema, {
      kind: ItemKind.MEMORY,
      name: 'memories/M1',
      item: { case: 'memory', value: { name: 'memories/M1', text: 'I like tea' } },
    });
    const round = create(SearchResultSchema, {
      kind: ItemKind.ROUND,
      name: 'sessions/S1/messages/X',
      item: { case: 'round', value: { session: 'sessions/S1', firstSequence: 7n, text: 'hi\n\nhello' } },
    });
    const chunk = create(SearchResultSchema, {
      kind: ItemKind.CHUNK,
      name: 'documents/D1/chunks/C1',
      item: { case: 'chunk', value: { name: 'documents/D1/chunks/C1', text: 'chunk text' } },
    });
    expect(resultSource(memory)).toEqual({ view: 'memories', rest: ['M1'], query: {} });
    expect(resultSource(round)).toEqual({ view: 'sessions', rest: ['S1'], query: { message: '7' } });
    expect(resultSource(chunk)).toEqual({ view: 'documents', rest: ['D1'], query: {} });
    expect([resultText(memory), resultText(round), resultText(chunk)]).toEqual([
      'I like tea',
      'hi\n\nhello',
      'chunk text',
    ]);
    expect(resultSource(create(SearchResultSchema, {}))).toBeUndefined();
  });
});

describe('stats', () => {
  it('lists the candidate counts, drops and timings', () => {
    const stats = create(SearchStatsSchema, {
      lexicalCandidates: 4,
      denseCandidates: 6,
      mergedCandidates: 7,
      driftDropped: 1,
      minScoreDropped: 2,
      densePendingCandidates: 3,
      elapsed: { seconds: 0n, nanos: 12_500_000 },
      stages: [{ stage: 'plan', elapsed: { seconds: 0n, nanos: 1_500_000 } }],
    });
    const rows = Object.fromEntries(statsRows(stats).map((r) => [r.key, r.value]));
    expect(rows).toMatchObject({
      lexicalCandidates: '4',
      denseCandidates: '6',
      mergedCandidates: '7',
      driftDropped: '1',
      minScoreDropped: '2',
      densePendingCandidates: '3',
      elapsed: '12.5 ms',
    });
    expect(rows['degraded']).toBeUndefined();
    expect(stageTimings(stats)).toEqual([{ stage: 'plan', ms: 1.5 }]);
  });
});
