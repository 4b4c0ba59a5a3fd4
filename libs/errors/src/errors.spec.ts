import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { ErrorInfoSchema } from '@engram/contracts/grpc';
import {
  EngramError,
  dependencyFailure,
  describeError,
  errorInfoOf,
  errors,
  isEngramError,
  loggableError,
  toConnectError,
} from './errors.js';

const boundary = { domain: 'engram.governance', requestId: 'req-1' };

describe('toConnectError', () => {
  it('keeps a domain error code and sends its reason, domain and metadata as ErrorInfo', () => {
    const { error, internal } = toConnectError(errors.notFound('memories/01ABC'), boundary);
    expect(internal).toBe(false);
    expect(error.code).toBe(Code.NotFound);
    expect(error.rawMessage).toBe('memories/01ABC was not found');
    expect(errorInfoOf(error)).toMatchObject({
      reason: 'RESOURCE_NOT_FOUND',
      domain: 'engram.governance',
      metadata: { name: 'memories/01ABC' },
    });
  });

  it('stringifies numeric and boolean metadata', () => {
    const error = new EngramError(Code.ResourceExhausted, 'STREAM_TOO_LONG', 'too long', {
      limit: 10,
      hard: true,
    });
    expect(errorInfoOf(toConnectError(error, boundary).error)?.metadata).toEqual({
      limit: '10',
      hard: 'true',
    });
  });

  it('hides unknown errors behind INTERNAL with only the request id, and asks for a log line', () => {
    const { error, internal } = toConnectError(new TypeError('secret detail: password=hunter2'), boundary);
    expect(internal).toBe(true);
    expect(error.code).toBe(Code.Internal);
    expect(error.message).not.toContain('hunter2');
    expect(error.rawMessage).toBe('internal error (request id req-1)');
    expect(errorInfoOf(error)).toMatchObject({ reason: 'INTERNAL', metadata: { request_id: 'req-1' } });
  });

  it('adds NOT_IMPLEMENTED with the method to the framework UNIMPLEMENTED error', () => {
    const framework = new ConnectError('engram.x.v1.XService.Foo is not implemented', Code.Unimplemented);
    const { error } = toConnectError(framework, boundary);
    expect(error.code).toBe(Code.Unimplemented);
    expect(errorInfoOf(error)).toMatchObject({
      reason: 'NOT_IMPLEMENTED',
      metadata: { method: 'engram.x.v1.XService.Foo' },
    });
  });

  it('adds DEADLINE_EXCEEDED to the deadline error', () => {
    const { error } = toConnectError(
      new ConnectError('the operation timed out', Code.DeadlineExceeded),
      boundary,
    );
    expect(error.code).toBe(Code.DeadlineExceeded);
    expect(errorInfoOf(error)?.reason).toBe('DEADLINE_EXCEEDED');
  });

  it('passes on an error that already carries ErrorInfo (from a downstream service), without its headers', () => {
    const downstream = new ConnectError(
      'nope',
      Code.PermissionDenied,
      new Headers({ 'content-type': 'application/grpc', 'grpc-status': '7' }),
      [
        {
          desc: ErrorInfoSchema,
          value: { reason: 'SCOPE_NOT_ALLOWED', domain: 'engram.retrieval', metadata: {} },
        },
      ],
    );
    const { error, internal } = toConnectError(downstream, boundary);
    expect(internal).toBe(false);
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.rawMessage).toBe('nope');
    expect(errorInfoOf(error)).toMatchObject({ reason: 'SCOPE_NOT_ALLOWED', domain: 'engram.retrieval' });
    // Headers and trailers it arrived with would corrupt the response it is passed on in.
    expect([...error.metadata.keys()]).toEqual([]);
  });

  it('treats framework INTERNAL errors as unknown', () => {
    const { error, internal } = toConnectError(new ConnectError('boom', Code.Internal), boundary);
    expect(internal).toBe(true);
    expect(errorInfoOf(error)?.reason).toBe('INTERNAL');
  });
});

describe('dependencyFailure', () => {
  it('names the dependency for a transport failure and keeps an answer that was judged', () => {
    const unreachable = dependencyFailure(
      'retrieval',
      new ConnectError('connect ECONNREFUSED', Code.Unavailable),
    );
    expect(isEngramError(unreachable) && unreachable.code).toBe(Code.Unavailable);
    expect(isEngramError(unreachable) && unreachable.metadata).toEqual({ dependency: 'retrieval' });
    const judged = new ConnectError('no such session', Code.NotFound, undefined, [
      {
        desc: ErrorInfoSchema,
        value: { reason: 'RESOURCE_NOT_FOUND', domain: 'engram.ingestion', metadata: {} },
      },
    ]);
    expect(ConnectError.from(dependencyFailure('ingestion', judged)).code).toBe(Code.NotFound);
    const refused = new ConnectError(
      'connect ECONNREFUSED',
      Code.Internal,
      undefined,
      undefined,
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
    );
    expect(isEngramError(dependencyFailure('governance', refused))).toBe(true);
    expect(
      ConnectError.from(dependencyFailure('governance', new ConnectError('bug', Code.Internal))).code,
    ).toBe(Code.Internal);
    const deadline = dependencyFailure('ingestion', new ConnectError('late', Code.DeadlineExceeded));
    expect(ConnectError.from(deadline).code).toBe(Code.DeadlineExceeded);
  });
});

describe('loggableError', () => {
  it('keeps a driver error’s identifiers and drops its SQL, parameters and quoted values', () => {
    const driver = Object.assign(new Error("Duplicate entry 'alice@example.com-x' for key 'uniq_owner'"), {
      code: 'ER_DUP_ENTRY',
      errno: 1062,
      sqlState: '23000',
      sqlMessage: "Duplicate entry 'alice@example.com-x' for key 'uniq_owner'",
      sql: "insert into `t` values ('alice@example.com', 'x')",
      parameters: ['alice@example.com', 'x'],
    });
    const wrapped = new Error('query failed', { cause: driver });
    const logged = loggableError(wrapped);
    expect(JSON.stringify(logged)).not.toContain('alice@example.com');
    expect(logged['cause']).toMatchObject({
      type: 'Error',
      message: "Duplicate entry '?' for key 'uniq_owner'",
      code: 'ER_DUP_ENTRY',
      errno: 1062,
      sqlState: '23000',
    });
    expect(Object.keys(logged['cause'] as object)).toEqual([
      'type',
      'message',
      'stack',
      'code',
      'errno',
      'sqlState',
    ]);
    expect(describeError(driver)).toBe("Error: Duplicate entry '?' for key 'uniq_owner'");
  });

  it('leaves other errors’ messages as they are', () => {
    expect(loggableError(new Error("file 'a.txt' missing"))).toMatchObject({
      message: "file 'a.txt' missing",
    });
  });
});
