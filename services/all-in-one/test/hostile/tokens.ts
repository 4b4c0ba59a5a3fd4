/**
 * Malformed and forged bearer credentials. Each one must be refused with UNAUTHENTICATED and a
 * `TOKEN_*` reason by every RPC, before the request is looked at.
 */
import { createHmac, randomBytes } from 'node:crypto';
import fc from 'fast-check';

const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/** An HS256 JWT over any header and payload (claims of any type), signed with `secret`. */
export function signJwt(header: unknown, payload: unknown, secret: string | Buffer): string {
  const head = `${b64(JSON.stringify(header))}.${b64(JSON.stringify(payload))}`;
  return `${head}.${createHmac('sha256', secret).update(head).digest('base64url')}`;
}

export interface ForgedCase {
  readonly label: string;
  /** The whole `authorization` header value; undefined sends none. */
  readonly header: string | undefined;
}

export function forgedTokens(secret: string, tenant: string): fc.Arbitrary<ForgedCase> {
  const now = Math.floor(Date.now() / 1000);
  const good = { sub: 'alice', tenant, orgs: ['org-1'], roles: [] as string[], iat: now, exp: now + 3600 };
  const hs = { alg: 'HS256', typ: 'JWT' };
  const signed = (label: string, payload: unknown, header: unknown = hs, key: string | Buffer = secret) => ({
    label,
    header: `Bearer ${signJwt(header, payload, key)}`,
  });
  const valid = signJwt(hs, good, secret);
  const [h, p, s] = valid.split('.') as [string, string, string];
  const claimCases = fc.constantFrom<[string, Record<string, unknown>]>(
    ['tenant number', { ...good, tenant: 42 }],
    ['tenant array', { ...good, tenant: [tenant] }],
    ['tenant object', { ...good, tenant: { id: tenant } }],
    ['tenant empty', { ...good, tenant: '' }],
    ['tenant null', { ...good, tenant: null }],
    ['tenant missing', { sub: 'alice', exp: now + 3600 }],
    ['tenant bool', { ...good, tenant: true }],
    ['sub number', { ...good, sub: 7 }],
    ['sub empty', { ...good, sub: '' }],
    ['sub missing', { tenant, exp: now + 3600 }],
    ['orgs string', { ...good, orgs: 'org-1' }],
    ['orgs numbers', { ...good, orgs: [1, 2] }],
    ['orgs empty string', { ...good, orgs: [''] }],
    ['orgs object', { ...good, orgs: { 'org-1': true } }],
    ['roles string', { ...good, roles: 'admin' }],
    ['roles object', { ...good, roles: { admin: true } }],
    ['roles nested', { ...good, roles: [['admin']] }],
    ['exp string', { ...good, exp: 'never' }],
    ['nbf string', { ...good, nbf: 'now' }],
  );
  return fc.oneof(
    fc.constant<ForgedCase>({ label: 'no header', header: undefined }),
    fc.constantFrom<ForgedCase>(
      { label: 'empty', header: '' },
      { label: 'spaces', header: '   ' },
      { label: 'bare Bearer', header: 'Bearer' },
      { label: 'Bearer space', header: 'Bearer ' },
      { label: 'Basic', header: 'Basic YWxpY2U6c2VjcmV0' },
      { label: 'lowercase bearer', header: `bearer ${valid}` },
      { label: 'two parts', header: `Bearer ${h}.${p}` },
      { label: 'four parts', header: `Bearer ${valid}.${s}` },
      { label: 'two tokens', header: `Bearer ${valid} Bearer ${valid}` },
      { label: 'garbage', header: 'Bearer !!!.@@@.###' },
      { label: 'not base64 json', header: `Bearer ${b64('not json')}.${b64('{also not')}.${s}` },
      { label: 'payload array', header: `Bearer ${signJwt(hs, [1, 2, 3], secret)}` },
      { label: 'payload number', header: `Bearer ${signJwt(hs, 42, secret)}` },
      { label: 'header not json', header: `Bearer ${b64('{"alg":')}.${p}.${s}` },
      { label: 'oversized 8 KiB', header: `Bearer ${'a'.repeat(8_192)}.${p}.${s}` },
      { label: 'oversized 40 KiB', header: `Bearer ${h}.${b64('x'.repeat(30_000))}.${s}` },
      { label: 'alg none', header: `Bearer ${b64(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${p}.` },
      { label: 'alg NONE', header: `Bearer ${b64(JSON.stringify({ alg: 'NONE' }))}.${p}.` },
      { label: 'alg none with sig', header: `Bearer ${b64(JSON.stringify({ alg: 'none' }))}.${p}.${s}` },
      {
        label: 'tampered payload',
        header: `Bearer ${h}.${b64(JSON.stringify({ ...good, roles: ['admin', 'platform', 'service'] }))}.${s}`,
      },
      {
        label: 'tampered tenant',
        header: `Bearer ${h}.${b64(JSON.stringify({ ...good, tenant: 'tenant-b' }))}.${s}`,
      },
      { label: 'signature stripped', header: `Bearer ${h}.${p}.` },
      { label: 'signature truncated', header: `Bearer ${h}.${p}.${s.slice(0, -2)}` },
    ),
    fc.constantFrom(
      signed('wrong secret', good, hs, randomBytes(32)),
      signed('empty secret', good, hs, ''),
      signed('expired', { ...good, iat: now - 7_200, exp: now - 3_600 }),
      signed('not yet valid', { ...good, nbf: now + 3_600 }),
      signed('alg HS512 header', good, { alg: 'HS512', typ: 'JWT' }),
      signed('alg RS256 header', good, { alg: 'RS256', typ: 'JWT' }),
      signed('alg none header, HS signature', good, { alg: 'none' }),
      signed('kid injection, wrong key', good, { alg: 'HS256', kid: '../../dev/null' }, ''),
      signed('jku elsewhere, wrong key', good, { alg: 'HS256', jku: 'http://127.0.0.1:1/jwks' }, 'attacker'),
      signed('crit header', good, { alg: 'HS256', crit: ['exp'], exp: 1 }),
    ),
    claimCases.map(([label, payload]) => signed(`claim: ${label}`, payload)),
  );
}
