import { Code } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { EngramError, errors, toConnectError } from '@engram/errors';
import { errorBodyOf, openAiFailureOf } from './errors.js';

/** An error as a client of the services receives it (through the error boundary). */
const received = (error: Error) => toConnectError(error, { domain: 'engram.context', requestId: 'r1' }).error;

describe('openAiFailureOf', () => {
  it.each([
    [errors.fieldInvalid('model', 'not allowed'), 400, 'invalid_request_error', 'FIELD_INVALID', 'model'],
    [errors.unauthenticated('TOKEN_EXPIRED', 'expired'), 401, 'authentication_error', 'TOKEN_EXPIRED', null],
    [errors.permissionDenied('NOT_OWNER', 'no'), 403, 'permission_error', 'NOT_OWNER', null],
    [errors.notFound('sessions/x'), 404, 'not_found_error', 'RESOURCE_NOT_FOUND', null],
    [
      new EngramError(Code.Aborted, 'ETAG_MISMATCH', 'moved on'),
      409,
      'invalid_request_error',
      'ETAG_MISMATCH',
      null,
    ],
    [errors.failedPrecondition('STATE_CONFLICT', 'no'), 400, 'invalid_request_error', 'STATE_CONFLICT', null],
    [
      errors.failedPrecondition('MODEL_NOT_CONFIGURED', 'set it'),
      503,
      'server_error',
      'MODEL_NOT_CONFIGURED',
      null,
    ],
    [errors.unavailable('model', 'down'), 503, 'server_error', 'DEPENDENCY_UNAVAILABLE', null],
  ])('%# → %d %s %s', (error, status, type, code, param) => {
    for (const failure of [openAiFailureOf(error), openAiFailureOf(received(error))]) {
      expect(failure).toMatchObject({ status, type, code, param });
    }
  });

  it('keeps the metadata and turns RetryInfo into Retry-After seconds', () => {
    const failure = openAiFailureOf(received(errors.rateLimited('slow down', 1_500)));
    expect(failure).toMatchObject({
      status: 429,
      type: 'rate_limit_error',
      code: 'RATE_LIMITED',
      retryAfterSeconds: 2,
      metadata: { retry_after_ms: '1500' },
    });
    expect(errorBodyOf(failure)).toEqual({
      error: {
        message: 'slow down',
        type: 'rate_limit_error',
        param: null,
        code: 'RATE_LIMITED',
        metadata: { retry_after_ms: '1500' },
      },
    });
  });

  it('answers anything without an ErrorInfo as a bare 500', () => {
    expect(openAiFailureOf(new Error('secret detail'))).toEqual({
      status: 500,
      message: 'internal error',
      type: 'server_error',
      param: null,
      code: 'INTERNAL',
      metadata: {},
    });
  });
});
