import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { encodeDocument, encodeQuery, type SparseVector } from './bm25.js';
import { ENGLISH_STOPWORDS } from './stopwords.js';
import { termId } from './term-id.js';
import { TOKENIZER_LIMITS, tokenize } from './tokenize.js';

// Any code point; any UTF-16 code unit (lone surrogates included); printable graphemes; and text
// assembled from fragments that exercise every rule (scripts side by side, joiners, invisibles).
const codeUnits = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) });
const fragments = fc.string({
  unit: fc.oneof(
    fc.constantFrom(
      'The',
      'answers',
      "user's",
      "don't",
      'GPT-4o',
      'e-mail',
      'user_id',
      '3.14',
      '1,000',
      '1,2',
      '2024',
      'alice@example.com',
      'https://x.io/a?b=c',
      '简洁',
      '回答',
      '我',
      '的',
      '東京',
      'に',
      'タワー',
      '사과를',
      'ＡＢＣ１２３',
      'ΟΔΟΣ',
      'Привет',
      'İ',
      'ß',
      '𠀀',
      '🍎',
      '👨‍👩‍👧',
    ),
    fc.constantFrom(
      ' ',
      '-',
      '_',
      '.',
      ',',
      "'",
      '’',
      '@',
      '/',
      '\u00AD',
      '\u200D',
      '\uFE0F',
      '\u0301',
      '\u3000',
    ),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  ),
});
const anyText = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
  codeUnits,
  fragments,
);
// Strings of Han, kana and Hangul letters only.
const cjkText = fc.string({
  unit: fc.constantFrom(
    '简',
    '洁',
    '回',
    '答',
    '我',
    '的',
    '人',
    '工',
    '智',
    '能',
    'に',
    'タ',
    'ワ',
    'ー',
    '사',
    '과',
    '𠀀',
  ),
  minLength: 2,
});
const options = fc.record({
  k1: fc.double({ min: 0, max: 100, noNaN: true }),
  b: fc.double({ min: 0, max: 1, noNaN: true }),
  avgDocLength: fc.double({ min: 1, max: 1e6, noNaN: true }),
});

function expectWellFormed(vector: SparseVector): void {
  expect(vector.values).toHaveLength(vector.indices.length);
  vector.indices.forEach((id, i) => {
    expect(Number.isInteger(id) && id >= 0 && id <= 0xffffffff).toBe(true);
    if (i > 0) expect(id).toBeGreaterThan(vector.indices[i - 1]!);
  });
  for (const value of vector.values) expect(Number.isFinite(value) && value > 0).toBe(true);
}

describe('tokenize (properties)', () => {
  it('returns the same tokens for the same text, whatever was tokenized in between', () => {
    fc.assert(
      fc.property(anyText, anyText, (text, other) => {
        const first = tokenize(text);
        tokenize(other);
        expect(tokenize(text)).toEqual(first);
      }),
      { numRuns: 300 },
    );
  });

  it('never throws and returns bounded, non-empty tokens without spaces or stopwords', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const tokens = tokenize(text);
        expect(tokens.length).toBeLessThanOrEqual(TOKENIZER_LIMITS.maxTokens);
        for (const token of tokens) {
          expect(token.length).toBeGreaterThan(0);
          expect(token.length).toBeLessThanOrEqual(TOKENIZER_LIMITS.maxTokenLength);
          expect(token).not.toMatch(/\s/u);
          expect(ENGLISH_STOPWORDS.has(token)).toBe(false);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('treats whitespace as a boundary: two texts joined by a space tokenize as both in order', () => {
    fc.assert(
      fc.property(fragments, fragments, (a, b) => {
        expect(tokenize(`${a} ${b}`)).toEqual([...tokenize(a), ...tokenize(b)]);
      }),
      { numRuns: 300 },
    );
  });

  it('emits every two-character substring of a CJK run, so two-character words always match', () => {
    fc.assert(
      fc.property(cjkText, (text) => {
        const tokens = new Set(tokenize(text));
        const chars = Array.from(text);
        for (let i = 0; i + 1 < chars.length; i++)
          expect(tokens.has(`${chars[i]!}${chars[i + 1]!}`)).toBe(true);
      }),
    );
  });
});

describe('encodeDocument and encodeQuery (properties)', () => {
  it('produce strictly increasing uint32 indices with positive finite values', () => {
    fc.assert(
      fc.property(anyText, options, (text, opts) => {
        expectWellFormed(encodeDocument(text, opts));
        expectWellFormed(encodeQuery(text));
      }),
      { numRuns: 300 },
    );
  });

  it('never weigh a document term above k1 + 1', () => {
    fc.assert(
      fc.property(anyText, options, (text, opts) => {
        for (const value of encodeDocument(text, opts).values) expect(value).toBeLessThanOrEqual(opts.k1 + 1);
      }),
    );
  });

  it('give the query exactly the terms of the same text as a document', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const document = encodeDocument(text);
        expect(encodeQuery(text).indices).toEqual(document.indices);
        expect(document.indices).toEqual([...new Set(tokenize(text).map(termId))].sort((a, b) => a - b));
      }),
      { numRuns: 300 },
    );
  });
});
