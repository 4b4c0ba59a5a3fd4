import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { errors, toConnectError } from '@engram/errors';
import { outcomeOf, retryAfterMs } from './workload.js';

/** An error as a client receives it from the service's boundary. */
function onTheWire(error: unknown): ConnectError {
  return toConnectError(error, { domain: 'engram.retrieval', requestId: 'r1' }).error;
}

describe('retryAfterMs', () => {
  it('reads the RetryInfo delay of an OVERLOADED or RATE_LIMITED refusal', () => {
    const overloaded = onTheWire(errors.overloaded('Search is at its limit', 137));
    expect(outcomeOf(overloaded)).toBe('RESOURCE_EXHAUSTED/OVERLOADED');
    expect(retryAfterMs(overloaded)).toBe(137);
    expect(retryAfterMs(onTheWire(errors.rateLimited('too fast', 1500)))).toBe(1500);
  });

  it('gives no delay for other errors, a RESOURCE_EXHAUSTED without RetryInfo, or a non-gRPC error', () => {
    expect(retryAfterMs(onTheWire(errors.resourceExhausted('MESSAGE_TOO_LARGE', 'too big')))).toBeUndefined();
    expect(retryAfterMs(onTheWire(errors.fieldInvalid('query', 'empty')))).toBeUndefined();
    expect(retryAfterMs(new ConnectError('gone', Code.Unavailable))).toBeUndefined();
    expect(retryAfterMs(new Error('socket hang up'))).toBeUndefined();
  });
});
