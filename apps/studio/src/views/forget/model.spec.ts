import { describe, expect, it } from '@jest/globals';
import {
  COUNT_FIELDS,
  confirmationPhrase,
  countRows,
  elapsedSeconds,
  phraseMatches,
  receiptFinished,
  receiptTone,
  totalErased,
} from './model.js';

describe('the confirmation phrase', () => {
  it('names the subject and must be typed exactly, spaces aside', () => {
    const phrase = confirmationPhrase('alice');
    expect(phrase).toBe('forget alice');
    expect(phraseMatches('forget alice', phrase)).toBe(true);
    expect(phraseMatches('  forget   alice ', phrase)).toBe(true);
    expect(phraseMatches('forget Alice', phrase)).toBe(false);
    expect(phraseMatches('forget', phrase)).toBe(false);
    expect(phraseMatches('', phrase)).toBe(false);
    expect(phraseMatches('', '')).toBe(false);
  });
});

describe('receipt counts', () => {
  it('lists every ForgetCounts field, zero when unset, and sums them', () => {
    const rows = countRows({ memories: 2n, chunks: 5n, vectorPoints: 7n });
    expect(rows).toHaveLength(COUNT_FIELDS.length);
    expect(rows.find((r) => r.field === 'memories')).toEqual({
      field: 'memories',
      by: 'governance',
      count: 2n,
    });
    expect(rows.find((r) => r.field === 'sessions')?.count).toBe(0n);
    expect(rows.find((r) => r.field === 'vectorPoints')?.by).toBe('retrieval');
    expect(totalErased({ memories: 2n, chunks: 5n, vectorPoints: 7n })).toBe(14n);
    expect(totalErased(undefined)).toBe(0n);
    expect(countRows(undefined).every((r) => r.count === 0n)).toBe(true);
  });
});

describe('receipt state', () => {
  it('is finished once COMPLETED', () => {
    expect(receiptFinished('COMPLETED')).toBe(true);
    expect(receiptFinished('PENDING')).toBe(false);
    expect(receiptTone('COMPLETED')).toBe('ok');
    expect(receiptTone('PENDING')).toBe('info');
    expect(receiptTone('—')).toBe('plain');
  });
  it('measures the time taken so far, or in all', () => {
    expect(elapsedSeconds(1_000, 3_500, 10_000)).toBe(2.5);
    expect(elapsedSeconds(1_000, undefined, 10_000)).toBe(9);
    expect(elapsedSeconds(undefined, undefined, 10_000)).toBeUndefined();
    expect(elapsedSeconds(5_000, undefined, 1_000)).toBe(0);
  });
});
