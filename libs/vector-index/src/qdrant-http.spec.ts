import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { QdrantHttpError, backoffDelay, isTransient, segment } from './qdrant-http.js';

describe('isTransient', () => {
  it('retries 429 and 5xx answers but not other 4xx', () => {
    for (const status of [429, 500, 502, 503, 504]) {
      expect(isTransient(new QdrantHttpError(status, 'x', 'GET', '/'))).toBe(true);
    }
    for (const status of [400, 401, 403, 404, 409, 422]) {
      expect(isTransient(new QdrantHttpError(status, 'x', 'GET', '/'))).toBe(false);
    }
  });

  it('retries refused, reset and timed-out connections, nothing else', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']) {
      expect(isTransient(Object.assign(new Error(code), { code }))).toBe(true);
    }
    expect(isTransient(Object.assign(new Error('bad'), { code: 'ERR_INVALID_ARG_TYPE' }))).toBe(false);
    expect(isTransient(new SyntaxError('Unexpected token'))).toBe(false);
    expect(isTransient(undefined)).toBe(false);
  });
});

describe('backoffDelay', () => {
  it('grows exponentially, stays within [ceiling/2, ceiling] and never exceeds the maximum (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 1_000 }), (attempt, base) => {
        const max = 5_000;
        const ceiling = Math.min(max, base * 2 ** (attempt - 1));
        const delay = backoffDelay(attempt, base, max);
        expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
        expect(delay).toBeLessThanOrEqual(ceiling);
      }),
    );
  });
});

describe('segment', () => {
  it('percent-encodes names so they stay one path segment', () => {
    expect(segment('memories_v2')).toBe('memories_v2');
    expect(segment('a/b?c')).toBe('a%2Fb%3Fc');
  });
});
