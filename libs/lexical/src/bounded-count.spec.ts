import { describe, expect, it } from '@jest/globals';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { countInBoundedPieces, MAX_RUN } from './bounded-count.js';

describe('countInBoundedPieces', () => {
  it('counts ordinary text whole, with the identical result', () => {
    const text = 'The quick brown fox jumps over the lazy dog. 我们决定使用 PostgreSQL 16。\n'.repeat(50);
    expect(countInBoundedPieces(text, countTokens)).toBe(countTokens(text));
  });

  it('counts long runs without spaces in pieces, within about a token per cut of the whole', () => {
    for (const run of ['a'.repeat(5_000), '😀'.repeat(2_000), 'ab1'.repeat(1_000)]) {
      const text = `before ${run} after`;
      const pieces: string[] = [];
      const counted = countInBoundedPieces(text, (piece) => {
        pieces.push(piece);
        return countTokens(piece);
      });
      expect(Math.abs(counted - countTokens(text))).toBeLessThanOrEqual(pieces.length);
      expect(pieces.join('')).toBe(text);
      expect(
        Math.max(
          ...pieces.map((p) => Math.max(0, ...(p.match(/\S+/gu) ?? []).map((r) => Array.from(r).length))),
        ),
      ).toBeLessThanOrEqual(MAX_RUN);
    }
  });
});
