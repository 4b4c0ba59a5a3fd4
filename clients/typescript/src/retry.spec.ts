import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { ErrorInfoSchema, RetryInfoSchema } from '@engram/contracts/grpc';
import { DEFAULT_RETRY_POLICY, retryDelayMs } from './retry.js';

const noJitter = () => 0;
const fullJitter = () => 0.999_999;

/** A server answer of `code` with an ErrorInfo `reason` and, if given, a RetryInfo of `retryMs`. */
function answer(code: Code, reason: string, retryMs?: number): ConnectError {
  const details = [{ desc: ErrorInfoSchema, value: { reason, domain: 'engram.retrieval', metadata: {} } }];
  if (retryMs !== undefined) {
    details.push({
      desc: RetryInfoSchema,
      value: { retryDelay: { seconds: BigInt(Math.floor(retryMs / 1000)), nanos: (retryMs % 1000) * 1e6 } },
    } as never);
  }
  return new ConnectError('refused', code, undefined, details);
}

describe('retryDelayMs', () => {
  it('honours the RetryInfo of RESOURCE_EXHAUSTED (OVERLOADED, RATE_LIMITED) as a minimum', () => {
    expect(
      retryDelayMs(
        answer(Code.ResourceExhausted, 'OVERLOADED', 250),
        1,
        undefined,
        DEFAULT_RETRY_POLICY,
        noJitter,
      ),
    ).toBe(250);
    expect(
      retryDelayMs(
        answer(Code.ResourceExhausted, 'RATE_LIMITED', 1500),
        2,
        60_000,
        DEFAULT_RETRY_POLICY,
        noJitter,
      ),
    ).toBe(1500);
  });

  it('never retries RESOURCE_EXHAUSTED without a RetryInfo (a quota or a message too large fails again)', () => {
    expect(retryDelayMs(answer(Code.ResourceExhausted, 'QUOTA_EXCEEDED'), 1, undefined)).toBeUndefined();
    expect(retryDelayMs(answer(Code.ResourceExhausted, 'MESSAGE_TOO_LARGE'), 1, undefined)).toBeUndefined();
  });

  it('backs off 100 ms doubled on an UNAVAILABLE the server answered, or waits its RetryInfo', () => {
    const shuttingDown = answer(Code.Unavailable, 'SHUTTING_DOWN');
    expect(
      [1, 2, 3].map((attempt) =>
        retryDelayMs(shuttingDown, attempt, undefined, DEFAULT_RETRY_POLICY, noJitter),
      ),
    ).toEqual([100, 200, 400]);
    expect(
      retryDelayMs(
        answer(Code.Unavailable, 'DEPENDENCY_UNAVAILABLE', 700),
        1,
        undefined,
        DEFAULT_RETRY_POLICY,
        noJitter,
      ),
    ).toBe(700);
  });

  it('reports a transport failure (UNAVAILABLE without an ErrorInfo: nobody answered) at once', () => {
    expect(
      retryDelayMs(new ConnectError('connect ECONNREFUSED', Code.Unavailable), 1, undefined),
    ).toBeUndefined();
  });

  it('retries no other code', () => {
    for (const code of [
      Code.InvalidArgument,
      Code.NotFound,
      Code.Internal,
      Code.DeadlineExceeded,
      Code.Aborted,
    ]) {
      expect(retryDelayMs(answer(code, 'X', 10), 1, undefined)).toBeUndefined();
    }
  });

  it('stops after 4 attempts in all', () => {
    const overloaded = answer(Code.ResourceExhausted, 'OVERLOADED', 10);
    expect(retryDelayMs(overloaded, 3, undefined, DEFAULT_RETRY_POLICY, noJitter)).toBe(10);
    expect(retryDelayMs(overloaded, 4, undefined, DEFAULT_RETRY_POLICY, noJitter)).toBeUndefined();
  });

  it('does not wait more than 10 s, nor past the deadline', () => {
    expect(retryDelayMs(answer(Code.ResourceExhausted, 'OVERLOADED', 10_001), 1, undefined)).toBeUndefined();
    expect(
      retryDelayMs(
        answer(Code.ResourceExhausted, 'OVERLOADED', 10_000),
        1,
        undefined,
        DEFAULT_RETRY_POLICY,
        noJitter,
      ),
    ).toBe(10_000);
    expect(
      retryDelayMs(answer(Code.ResourceExhausted, 'OVERLOADED', 500), 1, 500, DEFAULT_RETRY_POLICY, noJitter),
    ).toBeUndefined();
    expect(
      retryDelayMs(answer(Code.ResourceExhausted, 'OVERLOADED', 500), 1, 501, DEFAULT_RETRY_POLICY, noJitter),
    ).toBe(500);
  });

  it('adds between 0 and 20 % jitter, never less than the server asked', () => {
    const overloaded = answer(Code.ResourceExhausted, 'OVERLOADED', 1000);
    expect(retryDelayMs(overloaded, 1, undefined, DEFAULT_RETRY_POLICY, noJitter)).toBe(1000);
    expect(retryDelayMs(overloaded, 1, undefined, DEFAULT_RETRY_POLICY, fullJitter)).toBe(1200);
    for (let i = 0; i < 200; i++) {
      const delay = retryDelayMs(overloaded, 1, undefined)!;
      expect(delay).toBeGreaterThanOrEqual(1000);
      expect(delay).toBeLessThanOrEqual(1200);
    }
  });

  it('counts jitter against the deadline', () => {
    const overloaded = answer(Code.ResourceExhausted, 'OVERLOADED', 1000);
    expect(retryDelayMs(overloaded, 1, 1100, DEFAULT_RETRY_POLICY, fullJitter)).toBeUndefined();
    expect(retryDelayMs(overloaded, 1, 1100, DEFAULT_RETRY_POLICY, noJitter)).toBe(1000);
  });
});
