import { describe, expect, it } from '@jest/globals';
import {
  BM25_DEFAULTS,
  DEFAULT_AVG_DOC_LENGTH,
  encodeDocument,
  encodeQuery,
  encodeQueryTerms,
  type SparseVector,
} from './bm25.js';
import { termId } from './term-id.js';
import { tokenize } from './tokenize.js';

function weightOf(vector: SparseVector, token: string): number | undefined {
  const at = vector.indices.indexOf(termId(token));
  return at < 0 ? undefined : vector.values[at];
}

/**
 * What the index does with these vectors (Qdrant's IDF modifier): score = Σ query weight ·
 * idf · document weight, idf = ln(1 + (N − n + 0.5) / (n + 0.5)).
 */
function rank(corpus: string[], query: string): number[] {
  const documents = corpus.map((text) => encodeDocument(text));
  const df = new Map<number, number>();
  for (const doc of documents) for (const id of doc.indices) df.set(id, (df.get(id) ?? 0) + 1);
  const idf = (id: number): number => {
    const n = df.get(id) ?? 0;
    return Math.log(1 + (documents.length - n + 0.5) / (n + 0.5));
  };
  const q = encodeQuery(query);
  const scores = documents.map((doc) =>
    q.indices.reduce((sum, id, i) => {
      const at = doc.indices.indexOf(id);
      return at < 0 ? sum : sum + (q.values[i] ?? 0) * idf(id) * (doc.values[at] ?? 0);
    }, 0),
  );
  return scores
    .map((score, i) => ({ score, i }))
    .sort((a, b) => b.score - a.score)
    .map(({ i }) => i);
}

describe('encodeDocument', () => {
  it('weighs a single occurrence in a document of average length as exactly 1', () => {
    const vector = encodeDocument('concise answer', { avgDocLength: 2 });
    expect(vector.indices).toEqual([termId('concis'), termId('answer')].sort((a, b) => a - b));
    expect(vector.values).toEqual([1, 1]);
  });

  it('saturates repeated terms: tf·(k1+1)/(tf + k1·(1 − b + b·len/avg))', () => {
    const vector = encodeDocument('apple apple apple pear', { avgDocLength: 4 });
    expect(weightOf(vector, 'appl')).toBeCloseTo((3 * 2.2) / (3 + 1.2), 12);
    expect(weightOf(vector, 'pear')).toBeCloseTo(1, 12);
  });

  it('weighs a term lower in a longer document and ignores length when b is 0', () => {
    const short = encodeDocument('apple pie');
    const long = encodeDocument('apple pie with cinnamon raisins walnuts cream sugar butter flour eggs');
    expect(weightOf(short, 'appl')!).toBeGreaterThan(weightOf(long, 'appl')!);
    expect(weightOf(encodeDocument('apple pie', { b: 0 }), 'appl')).toBeCloseTo(1, 12);
    expect(weightOf(encodeDocument('apple pie with cinnamon raisins', { b: 0 }), 'appl')).toBeCloseTo(1, 12);
  });

  it('uses k1 1.2, b 0.75 and the default average length when given no options', () => {
    const explicit = { k1: 1.2, b: 0.75, avgDocLength: DEFAULT_AVG_DOC_LENGTH };
    expect(BM25_DEFAULTS).toEqual(explicit);
    expect(encodeDocument('apple apple pear')).toEqual(encodeDocument('apple apple pear', explicit));
    expect(encodeDocument('apple apple pear')).not.toEqual(encodeDocument('apple apple pear', { k1: 2 }));
  });

  it('counts tokens whose ids collide as one term', () => {
    expect(termId('40189')).toBe(termId('797186'));
    const vector = encodeDocument('40189 797186', { avgDocLength: 2 });
    expect(vector.indices).toEqual([termId('40189')]);
    expect(vector.values[0]).toBeCloseTo((2 * 2.2) / (2 + 1.2), 12);
    expect(encodeQuery('40189 797186').values).toEqual([2]);
  });

  it('encodes a text without tokens as an empty vector', () => {
    expect(encodeDocument('the and of 🍎')).toEqual({ indices: [], values: [] });
  });

  it('rejects options that would make weights meaningless', () => {
    expect(() => encodeDocument('x', { k1: -1 })).toThrow(RangeError);
    expect(() => encodeDocument('x', { k1: Number.NaN })).toThrow(RangeError);
    expect(() => encodeDocument('x', { b: 1.5 })).toThrow(RangeError);
    expect(() => encodeDocument('x', { avgDocLength: 0 })).toThrow(RangeError);
    expect(() => encodeDocument('x', { avgDocLength: Number.POSITIVE_INFINITY })).toThrow(RangeError);
  });
});

describe('encodeQuery', () => {
  it('gives every distinct term weight 1, however often it occurs', () => {
    const vector = encodeQuery('answer answers answered concise');
    expect(vector.indices).toEqual([termId('answer'), termId('concis')].sort((a, b) => a - b));
    expect(vector.values).toEqual([1, 1]);
  });

  it('equals encodeQueryTerms of the distinct tokens (a caller tokenizes the query once)', () => {
    for (const text of ['answer answers answered concise', '我最喜欢的颜色是什么？', '40189 797186', '']) {
      expect(encodeQueryTerms(new Set(tokenize(text)))).toEqual(encodeQuery(text));
    }
  });
});

describe('BM25 ranking with index-side IDF', () => {
  it('ranks the document about the query first in English', () => {
    const corpus = [
      'The user lives in Shanghai and works as a designer.',
      'The user prefers concise answers without long explanations.',
      'The weather in Shanghai was rainy last week.',
      'The user asked for a detailed explanation of the answer.',
    ];
    expect(rank(corpus, 'Does the user like concise answers?')[0]).toBe(1);
  });

  it('ranks the document about the query first in Chinese, with differently segmented wording', () => {
    const corpus = [
      '用户住在上海，是一名设计师。',
      '用户喜欢简洁的回答，不要长篇解释。',
      '上周上海一直下雨。',
      '用户要求详细解释这个回答。',
    ];
    expect(rank(corpus, '简洁回答')[0]).toBe(1);
  });
});
