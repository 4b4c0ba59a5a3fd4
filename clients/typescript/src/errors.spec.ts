import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { ErrorInfoSchema, RetryInfoSchema } from '@engram/contracts/grpc';
import { EngramError, grpcCodeName, isEngramError, toEngramError } from './errors.js';

describe('toEngramError', () => {
  it('carries the code, its gRPC name, the ErrorInfo reason, domain and metadata, the RetryInfo delay and the request id', () => {
    const cause = new ConnectError('too many calls in flight', Code.ResourceExhausted, undefined, [
      {
        desc: ErrorInfoSchema,
        value: { reason: 'RATE_LIMITED', domain: 'engram.ingestion', metadata: { limit: '8' } },
      },
      { desc: RetryInfoSchema, value: { retryDelay: { seconds: 1n, nanos: 250_000_000 } } },
    ]);
    const error = toEngramError(cause, 'req-1');
    expect(error).toBeInstanceOf(EngramError);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({
      name: 'EngramError',
      code: Code.ResourceExhausted,
      codeName: 'RESOURCE_EXHAUSTED',
      reason: 'RATE_LIMITED',
      domain: 'engram.ingestion',
      metadata: { limit: '8' },
      retryDelayMs: 1250,
      requestId: 'req-1',
      message: 'RESOURCE_EXHAUSTED RATE_LIMITED: too many calls in flight',
    });
    expect(error.cause).toBe(cause);
  });

  it('maps a failure that is not a ConnectError (a network error) to UNKNOWN without a reason', () => {
    const cause = new TypeError('fetch failed');
    const error = toEngramError(cause);
    expect(error).toMatchObject({ code: Code.Unknown, codeName: 'UNKNOWN', reason: undefined, metadata: {} });
    expect(error.retryDelayMs).toBeUndefined();
    expect(error.cause).toBe(cause);
  });

  it('maps an abort to CANCELED', () => {
    const controller = new AbortController();
    controller.abort();
    expect(toEngramError(controller.signal.reason).code).toBe(Code.Canceled);
  });

  it('returns an EngramError unchanged', () => {
    const error = new EngramError({ code: Code.NotFound, message: 'gone', reason: 'RESOURCE_NOT_FOUND' });
    expect(toEngramError(error)).toBe(error);
    expect(isEngramError(error)).toBe(true);
    expect(isEngramError(new Error('x'))).toBe(false);
  });
});

describe('grpcCodeName', () => {
  it('names codes as the gRPC specification does', () => {
    expect(grpcCodeName(Code.NotFound)).toBe('NOT_FOUND');
    expect(grpcCodeName(Code.InvalidArgument)).toBe('INVALID_ARGUMENT');
    expect(grpcCodeName(Code.DeadlineExceeded)).toBe('DEADLINE_EXCEEDED');
    expect(grpcCodeName(Code.Unauthenticated)).toBe('UNAUTHENTICATED');
    // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-assignment -- a code a newer server may send
    expect(grpcCodeName(99 as Code)).toBe('CODE_99');
  });
});
