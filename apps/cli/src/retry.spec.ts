import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, type UnaryRequest, type UnaryResponse } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { ErrorInfoSchema, RetryInfoSchema } from '@engram/contracts/grpc';
import { retryDelayOf } from '@engram/errors';
import { DEFAULT_RETRY_POLICY, retryDelayMs, retryInterceptor } from './retry.js';

function refusal(code: Code, reason: string | undefined, retryMs?: number): ConnectError {
  const error = new ConnectError('refused', code);
  if (reason !== undefined)
    error.details.push({ desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason }) });
  if (retryMs !== undefined) {
    error.details.push({
      desc: RetryInfoSchema,
      value: create(RetryInfoSchema, {
        retryDelay: { seconds: BigInt(Math.floor(retryMs / 1000)), nanos: (retryMs % 1000) * 1e6 },
      }),
    });
  }
  return error;
}

const noJitter = () => 0;

describe('retryDelayMs', () => {
  it('waits the RetryInfo delay of an OVERLOADED or RATE_LIMITED refusal', () => {
    expect(
      retryDelayMs(refusal(Code.ResourceExhausted, 'OVERLOADED', 120), 1, undefined, undefined, noJitter),
    ).toBe(120);
    expect(
      retryDelayMs(refusal(Code.ResourceExhausted, 'RATE_LIMITED', 1500), 1, undefined, undefined, noJitter),
    ).toBe(1500);
  });

  it('never retries a RESOURCE_EXHAUSTED without RetryInfo (too large, quota)', () => {
    expect(retryDelayMs(refusal(Code.ResourceExhausted, 'MESSAGE_TOO_LARGE'), 1, undefined)).toBeUndefined();
    expect(retryDelayMs(refusal(Code.ResourceExhausted, 'QUOTA_EXCEEDED'), 1, undefined)).toBeUndefined();
  });

  it('backs off exponentially on an answered UNAVAILABLE without RetryInfo, and not on a transport failure', () => {
    const answered = refusal(Code.Unavailable, 'SHUTTING_DOWN');
    expect([1, 2, 3].map((a) => retryDelayMs(answered, a, undefined, undefined, noJitter))).toEqual([
      100, 200, 400,
    ]);
    expect(
      retryDelayMs(
        refusal(Code.Unavailable, 'DEPENDENCY_UNAVAILABLE', 700),
        1,
        undefined,
        undefined,
        noJitter,
      ),
    ).toBe(700);
    expect(retryDelayMs(refusal(Code.Unavailable, undefined), 1, undefined)).toBeUndefined();
  });

  it('never retries other codes', () => {
    for (const code of [
      Code.InvalidArgument,
      Code.NotFound,
      Code.Internal,
      Code.DeadlineExceeded,
      Code.Unauthenticated,
    ]) {
      expect(retryDelayMs(refusal(code, 'X', 100), 1, undefined)).toBeUndefined();
    }
  });

  it('stops after maxAttempts, above maxDelayMs, and when the deadline would pass first', () => {
    const overloaded = refusal(Code.ResourceExhausted, 'OVERLOADED', 200);
    expect(retryDelayMs(overloaded, DEFAULT_RETRY_POLICY.maxAttempts, undefined)).toBeUndefined();
    expect(
      retryDelayMs(refusal(Code.ResourceExhausted, 'RATE_LIMITED', 60_000), 1, undefined),
    ).toBeUndefined();
    expect(retryDelayMs(overloaded, 1, 150, undefined, noJitter)).toBeUndefined();
    expect(retryDelayMs(overloaded, 1, 1_000, undefined, noJitter)).toBe(200);
  });

  it('adds jitter only on top of the server delay, within the jitter share', () => {
    const overloaded = refusal(Code.ResourceExhausted, 'OVERLOADED', 100);
    expect(retryDelayMs(overloaded, 1, undefined, undefined, () => 0.999)).toBe(120);
    expect(retryDelayMs(overloaded, 1, undefined, undefined, () => 0.5)).toBe(110);
  });

  it('reads a RetryInfo delay of seconds and nanos', () => {
    expect(retryDelayOf(refusal(Code.ResourceExhausted, 'OVERLOADED', 2_345))).toBe(2_345);
    expect(retryDelayOf(refusal(Code.ResourceExhausted, 'OVERLOADED'))).toBeUndefined();
  });
});

describe('retryInterceptor', () => {
  const request = (timeout?: string, stream = false) =>
    ({
      stream,
      signal: new AbortController().signal,
      header: new Headers(timeout === undefined ? {} : { 'grpc-timeout': timeout }),
    }) as unknown as UnaryRequest;
  const ok = { stream: false } as unknown as UnaryResponse;

  /** An interceptor whose clock moves by the delays it sleeps. */
  function harness() {
    let clock = 0;
    const slept: number[] = [];
    const interceptor = retryInterceptor({
      now: () => clock,
      sleep: (ms) => {
        slept.push(ms);
        clock += ms;
        return Promise.resolve();
      },
      random: noJitter,
    });
    return { interceptor, slept };
  }

  it('retries a refused call after the server delay and returns the answer', async () => {
    const { interceptor, slept } = harness();
    const failures = [
      refusal(Code.ResourceExhausted, 'OVERLOADED', 50),
      refusal(Code.ResourceExhausted, 'OVERLOADED', 80),
    ];
    const timeouts: (string | null)[] = [];
    const call = interceptor((req) => {
      timeouts.push(req.header.get('grpc-timeout'));
      const failure = failures.shift();
      return failure === undefined ? Promise.resolve(ok) : Promise.reject(failure);
    });
    await expect(call(request('1000m'))).resolves.toBe(ok);
    expect(slept).toEqual([50, 80]);
    // Each attempt asks only for the time left of the call's deadline.
    expect(timeouts).toEqual(['1000m', '950m', '870m']);
  });

  it('gives up with the last refusal after maxAttempts', async () => {
    const { interceptor, slept } = harness();
    let attempts = 0;
    const call = interceptor(() => {
      attempts += 1;
      return Promise.reject(refusal(Code.ResourceExhausted, 'OVERLOADED', 10));
    });
    const error = await call(request()).catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.ResourceExhausted);
    expect(attempts).toBe(DEFAULT_RETRY_POLICY.maxAttempts);
    expect(slept).toHaveLength(DEFAULT_RETRY_POLICY.maxAttempts - 1);
  });

  it('does not retry when the delay would outlast the deadline', async () => {
    const { interceptor, slept } = harness();
    let attempts = 0;
    const call = interceptor(() => {
      attempts += 1;
      return Promise.reject(refusal(Code.ResourceExhausted, 'OVERLOADED', 500));
    });
    await expect(call(request('300m'))).rejects.toBeInstanceOf(ConnectError);
    expect(attempts).toBe(1);
    expect(slept).toEqual([]);
  });

  it('never retries a streaming call', async () => {
    const { interceptor } = harness();
    let attempts = 0;
    const call = interceptor(() => {
      attempts += 1;
      return Promise.reject(refusal(Code.ResourceExhausted, 'OVERLOADED', 10));
    });
    await expect(call(request(undefined, true))).rejects.toBeInstanceOf(ConnectError);
    expect(attempts).toBe(1);
  });
});
