import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { ErrorReason } from '@engram/contracts/common';
import { ErrorInfoSchema, RetryInfoSchema } from '@engram/contracts/grpc';
import { codeName, describeError, errorSentence } from './errors.js';
import { enumName, formatBytes, shortName } from './format.js';
import { initialLang } from './lang.js';
import { nextPageToken } from './paging.js';
import { parseRoute, routeHash } from './route.js';
import { decodeClaims } from './session.js';

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('decodeClaims', () => {
  it("reads Engram's claims for display", () => {
    const token = `${base64url({ alg: 'HS256' })}.${base64url({
      sub: '用户-1',
      tenant: 'local',
      orgs: ['o1'],
      roles: ['admin', 7],
      exp: 1_800_000_000,
    })}.sig`;
    expect(decodeClaims(token)).toEqual({
      subject: '用户-1',
      tenantId: 'local',
      roles: ['admin'],
      orgIds: ['o1'],
      expiresAt: 1_800_000_000_000,
    });
  });

  it('refuses what is not a JWT with an object payload', () => {
    expect(decodeClaims('not a token')).toBeUndefined();
    expect(decodeClaims(`a.${Buffer.from('[1]x').toString('base64url')}.c`)).toBeUndefined();
    expect(decodeClaims(`a.${base64url(null)}.c`)).toBeUndefined();
  });
});

describe('routes', () => {
  it('parses and builds hashes, round trip', () => {
    expect(parseRoute('')).toMatchObject({ view: 'memories', rest: [] });
    const hash = routeHash('sessions', ['01J/x y'], { message: '12', empty: '', none: undefined });
    expect(hash).toBe('#/sessions/01J%2Fx%20y?message=12');
    const route = parseRoute(hash);
    expect({ view: route.view, rest: route.rest, message: route.query.get('message') }).toEqual({
      view: 'sessions',
      rest: ['01J/x y'],
      message: '12',
    });
  });
});

describe('errors', () => {
  it('reads the ErrorInfo reason, metadata and retry delay of a failed call', () => {
    const failure = new ConnectError('slow down', Code.ResourceExhausted, undefined, [
      {
        desc: ErrorInfoSchema,
        value: { reason: 'RATE_LIMITED', domain: 'engram', metadata: { limit: '5' } },
      },
      { desc: RetryInfoSchema, value: { retryDelay: { seconds: 1n, nanos: 500_000_000 } } },
    ]);
    expect(describeError(failure)).toEqual({
      code: 'RESOURCE_EXHAUSTED',
      reason: 'RATE_LIMITED',
      message: 'slow down',
      metadata: { limit: '5' },
      retryAfterSeconds: 1.5,
    });
  });

  it('falls back to the code when there is no ErrorInfo, and to a generic sentence', () => {
    const described = describeError(new Error('boom'));
    expect(described.reason).toBe('UNKNOWN');
    expect(errorSentence(described, 'en')).toBe('Something went wrong.');
    expect(codeName(Code.PermissionDenied)).toBe('PERMISSION_DENIED');
  });

  it('has a sentence in both languages for every reason the services send', () => {
    const reasons = Object.keys(ErrorReason).filter((k) => Number.isNaN(Number(k)) && k !== 'UNSPECIFIED');
    expect(reasons.length).toBeGreaterThan(40);
    for (const lang of ['en', 'zh'] as const) {
      const missing = reasons.filter(
        (reason) =>
          errorSentence({ code: 'UNKNOWN', reason, message: '', metadata: {} }, lang) ===
          errorSentence({ code: 'UNKNOWN', reason: 'UNKNOWN', message: '', metadata: {} }, lang),
      );
      expect({ lang, missing }).toEqual({ lang, missing: [] });
    }
  });
});

describe('paging', () => {
  it('reads the next page token; an empty one ends the list', () => {
    expect(nextPageToken({ nextPageToken: '' })).toBeUndefined();
    expect(nextPageToken({ nextPageToken: 'abc' })).toBe('abc');
  });
});

describe('format and language', () => {
  it('formats enum names, bytes and resource names', () => {
    expect(enumName(ErrorReason, ErrorReason.NOT_OWNER)).toBe('NOT_OWNER');
    expect(enumName(ErrorReason, 0)).toBe('—');
    expect([formatBytes(512), formatBytes(1536), formatBytes(5 * 1024 * 1024)]).toEqual([
      '512 B',
      '1.5 KiB',
      '5.0 MiB',
    ]);
    expect(shortName('memories/01JABC')).toBe('01JABC');
  });

  it('starts in the saved language, else the browser’s', () => {
    expect(initialLang('zh', ['en-GB'])).toBe('zh');
    expect(initialLang(null, ['zh-TW', 'en'])).toBe('zh');
    expect(initialLang('fr', ['de'])).toBe('en');
  });
});
