import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { Code } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { SignJWT, exportJWK, importSPKI, type JSONWebKeySet } from 'jose';
import { EngramError } from '@engram/errors';
import { VerifiedTokens, createAuthenticator, mintToken, type Authenticator } from './auth.js';

const secret = randomBytes(32);
const { publicKey, privateKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});

async function rejection(authenticate: Authenticator, header: string | null) {
  try {
    await authenticate(header);
  } catch (error) {
    expect(error).toBeInstanceOf(EngramError);
    const e = error as EngramError;
    expect(e.code).toBe(Code.Unauthenticated);
    return { reason: e.reason, metadata: e.metadata };
  }
  throw new Error('expected the credential to be rejected');
}

const hs256 = () => createAuthenticator({ mode: 'hs256', secret, clockToleranceSec: 5 });
const claims = { subject: 'alice', tenantId: 't1', orgIds: ['o1', 'o2'], roles: ['admin' as const] };

describe('createAuthenticator (HS256)', () => {
  it('returns the principal from a valid token, with unknown roles dropped', async () => {
    const authenticate = await hs256();
    const token = await new SignJWT({ tenant: 't1', orgs: ['o1', 'o1'], roles: ['admin', 'superuser'] })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('alice')
      .setExpirationTime('5m')
      .sign(secret);
    const principal = await authenticate(`Bearer ${token}`);
    expect(principal).toEqual({ subject: 'alice', tenantId: 't1', orgIds: ['o1'], roles: ['admin'], token });
  });

  it('accepts tokens minted by mintToken', async () => {
    const authenticate = await hs256();
    const token = await mintToken(claims, { algorithm: 'HS256', secret });
    await expect(authenticate(`Bearer ${token}`)).resolves.toMatchObject({
      subject: 'alice',
      tenantId: 't1',
      orgIds: ['o1', 'o2'],
      roles: ['admin'],
    });
  });

  it('rejects a missing header with TOKEN_MISSING', async () => {
    expect((await rejection(await hs256(), null)).reason).toBe('TOKEN_MISSING');
    expect((await rejection(await hs256(), '  ')).reason).toBe('TOKEN_MISSING');
  });

  it('rejects headers that are not a bearer JWT with TOKEN_MALFORMED', async () => {
    const authenticate = await hs256();
    for (const header of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer not-a-jwt', 'Bearer a.b.c']) {
      expect((await rejection(authenticate, header)).reason).toBe('TOKEN_MALFORMED');
    }
  });

  it('rejects an expired token with TOKEN_EXPIRED', async () => {
    const token = await mintToken(
      claims,
      { algorithm: 'HS256', secret },
      { expiresIn: Math.floor(Date.now() / 1000) - 60 },
    );
    expect((await rejection(await hs256(), `Bearer ${token}`)).reason).toBe('TOKEN_EXPIRED');
  });

  it('rejects a token that is not valid yet with TOKEN_NOT_YET_VALID', async () => {
    const token = await new SignJWT({ tenant: 't1' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('alice')
      .setNotBefore(Math.floor(Date.now() / 1000) + 3600)
      .setExpirationTime('2h')
      .sign(secret);
    expect((await rejection(await hs256(), `Bearer ${token}`)).reason).toBe('TOKEN_NOT_YET_VALID');
  });

  it('rejects a token signed with another key with TOKEN_SIGNATURE_INVALID', async () => {
    const token = await mintToken(claims, { algorithm: 'HS256', secret: randomBytes(32) });
    expect((await rejection(await hs256(), `Bearer ${token}`)).reason).toBe('TOKEN_SIGNATURE_INVALID');
  });

  it('rejects RS256 and unsigned ("none") tokens with TOKEN_ALGORITHM_NOT_ALLOWED', async () => {
    const authenticate = await hs256();
    const rs = await mintToken(claims, { algorithm: 'RS256', privateKeyPem: privateKey });
    expect((await rejection(authenticate, `Bearer ${rs}`)).reason).toBe('TOKEN_ALGORITHM_NOT_ALLOWED');
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const none = `${encode({ alg: 'none' })}.${encode({ sub: 'alice', tenant: 't1', exp: 9_999_999_999 })}.`;
    expect((await rejection(authenticate, `Bearer ${none}`)).reason).toBe('TOKEN_ALGORITHM_NOT_ALLOWED');
  });

  it('rejects a token without a tenant claim with TOKEN_CLAIM_INVALID naming the claim', async () => {
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('alice')
      .setExpirationTime('5m')
      .sign(secret);
    expect(await rejection(await hs256(), `Bearer ${token}`)).toEqual({
      reason: 'TOKEN_CLAIM_INVALID',
      metadata: { claim: 'tenant' },
    });
  });

  it('rejects a token without a subject, or with malformed orgs, with TOKEN_CLAIM_INVALID', async () => {
    const noSub = await new SignJWT({ tenant: 't1' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('5m')
      .sign(secret);
    expect((await rejection(await hs256(), `Bearer ${noSub}`)).metadata).toEqual({ claim: 'sub' });
    const badOrgs = await new SignJWT({ tenant: 't1', orgs: 'o1' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('alice')
      .setExpirationTime('5m')
      .sign(secret);
    expect((await rejection(await hs256(), `Bearer ${badOrgs}`)).metadata).toEqual({ claim: 'orgs' });
  });

  it('checks issuer and audience when configured', async () => {
    const authenticate = await createAuthenticator({
      mode: 'hs256',
      secret,
      issuer: 'https://idp.example',
      audience: 'engram',
      clockToleranceSec: 0,
    });
    const good = await mintToken(
      claims,
      { algorithm: 'HS256', secret },
      { issuer: 'https://idp.example', audience: 'engram' },
    );
    await expect(authenticate(`Bearer ${good}`)).resolves.toMatchObject({ subject: 'alice' });
    const wrongIssuer = await mintToken(
      claims,
      { algorithm: 'HS256', secret },
      { issuer: 'https://evil.example', audience: 'engram' },
    );
    expect(await rejection(authenticate, `Bearer ${wrongIssuer}`)).toEqual({
      reason: 'TOKEN_AUDIENCE_OR_ISSUER_MISMATCH',
      metadata: { claim: 'iss' },
    });
  });
});

describe('createAuthenticator (RS256)', () => {
  it('verifies with a PEM public key and rejects HS256 tokens', async () => {
    const authenticate = await createAuthenticator({
      mode: 'rs256',
      publicKeyPem: publicKey,
      clockToleranceSec: 0,
    });
    const token = await mintToken(claims, { algorithm: 'RS256', privateKeyPem: privateKey });
    await expect(authenticate(`Bearer ${token}`)).resolves.toMatchObject({
      subject: 'alice',
      tenantId: 't1',
    });
    const hs = await mintToken(claims, { algorithm: 'HS256', secret });
    expect((await rejection(authenticate, `Bearer ${hs}`)).reason).toBe('TOKEN_ALGORITHM_NOT_ALLOWED');
  });

  it('verifies with a JWKS document selected by key id', async () => {
    const jwk = await exportJWK(await importSPKI(publicKey, 'RS256', { extractable: true }));
    const jwks: JSONWebKeySet = { keys: [{ ...jwk, kid: 'k1', alg: 'RS256', use: 'sig' }] };
    const authenticate = await createAuthenticator({ mode: 'rs256', jwks, clockToleranceSec: 0 });
    const token = await mintToken(claims, { algorithm: 'RS256', privateKeyPem: privateKey, keyId: 'k1' });
    await expect(authenticate(`Bearer ${token}`)).resolves.toMatchObject({ subject: 'alice' });
    const unknownKey = await mintToken(claims, {
      algorithm: 'RS256',
      privateKeyPem: privateKey,
      keyId: 'k2',
    });
    expect((await rejection(authenticate, `Bearer ${unknownKey}`)).reason).toBe('TOKEN_SIGNATURE_INVALID');
  });
});

describe('createAuthenticator (insecure development mode)', () => {
  it('reads claims without verifying the signature, but still requires them', async () => {
    const authenticate = await createAuthenticator({ mode: 'insecure' });
    const token = await mintToken(claims, { algorithm: 'HS256', secret: randomBytes(32) });
    await expect(authenticate(`Bearer ${token}`)).resolves.toMatchObject({ subject: 'alice' });
    const noTenant = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('a').sign(secret);
    expect((await rejection(authenticate, `Bearer ${noTenant}`)).reason).toBe('TOKEN_CLAIM_INVALID');
  });
});

describe('createAuthenticator: token lifetime (finding 6)', () => {
  it('refuses a token without exp with TOKEN_CLAIM_INVALID naming exp', async () => {
    const token = await new SignJWT({ tenant: 't1' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('alice')
      .setIssuedAt()
      .sign(secret);
    expect(await rejection(await hs256(), `Bearer ${token}`)).toEqual({
      reason: 'TOKEN_CLAIM_INVALID',
      metadata: { claim: 'exp' },
    });
  });

  it('refuses a token living longer than the maximum lifetime, with or without iat', async () => {
    const authenticate = await createAuthenticator({
      mode: 'hs256',
      secret,
      clockToleranceSec: 0,
      maxLifetimeSec: 3600,
    });
    const long = await mintToken(claims, { algorithm: 'HS256', secret }, { expiresIn: '2h' });
    expect(await rejection(authenticate, `Bearer ${long}`)).toEqual({
      reason: 'TOKEN_LIFETIME_TOO_LONG',
      metadata: { max_lifetime_sec: 3600 },
    });
    const noIat = await new SignJWT({ tenant: 't1' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('alice')
      .setExpirationTime('3h')
      .sign(secret);
    expect((await rejection(authenticate, `Bearer ${noIat}`)).reason).toBe('TOKEN_LIFETIME_TOO_LONG');
    const fine = await mintToken(claims, { algorithm: 'HS256', secret }, { expiresIn: '59m' });
    await expect(authenticate(`Bearer ${fine}`)).resolves.toMatchObject({ subject: 'alice' });
  });

  it('defaults the maximum lifetime to 24 hours', async () => {
    const day = await mintToken(claims, { algorithm: 'HS256', secret }, { expiresIn: '23h' });
    await expect((await hs256())(`Bearer ${day}`)).resolves.toMatchObject({ subject: 'alice' });
    const week = await mintToken(claims, { algorithm: 'HS256', secret }, { expiresIn: '7d' });
    expect((await rejection(await hs256(), `Bearer ${week}`)).reason).toBe('TOKEN_LIFETIME_TOO_LONG');
  });
});

describe('createAuthenticator: claim lengths (finding 11)', () => {
  it('refuses a sub longer than 128 characters and a tenant longer than 64', async () => {
    const authenticate = await hs256();
    const longSub = await mintToken(
      { subject: 'a'.repeat(129), tenantId: 't1' },
      { algorithm: 'HS256', secret },
    );
    expect(await rejection(authenticate, `Bearer ${longSub}`)).toEqual({
      reason: 'TOKEN_CLAIM_INVALID',
      metadata: { claim: 'sub', max_length: 128 },
    });
    const longTenant = await mintToken(
      { subject: 'a', tenantId: 't'.repeat(65) },
      { algorithm: 'HS256', secret },
    );
    expect(await rejection(authenticate, `Bearer ${longTenant}`)).toEqual({
      reason: 'TOKEN_CLAIM_INVALID',
      metadata: { claim: 'tenant', max_length: 64 },
    });
    const atLimit = await mintToken(
      { subject: '主'.repeat(128), tenantId: 't'.repeat(64) },
      { algorithm: 'HS256', secret },
    );
    await expect(authenticate(`Bearer ${atLimit}`)).resolves.toMatchObject({ tenantId: 't'.repeat(64) });
  });
});

describe('createAuthenticator: the service role (finding 5)', () => {
  const serviceSecret = randomBytes(32);
  const service = { subject: 'engram-ingestion', tenantId: 't1', roles: ['service' as const] };
  const withServiceKey = () =>
    createAuthenticator({
      mode: 'hs256',
      secret,
      clockToleranceSec: 0,
      serviceKey: { algorithm: 'HS256', secret: serviceSecret },
    });

  it('accepts a service token signed by the service key', async () => {
    const token = await mintToken(service, { algorithm: 'HS256', secret: serviceSecret });
    await expect((await withServiceKey())(`Bearer ${token}`)).resolves.toMatchObject({
      subject: 'engram-ingestion',
      roles: ['service'],
    });
  });

  it('refuses a user-key token claiming the service role with TOKEN_SERVICE_KEY_REQUIRED', async () => {
    const forged = await mintToken(service, { algorithm: 'HS256', secret });
    expect(await rejection(await withServiceKey(), `Bearer ${forged}`)).toEqual({
      reason: 'TOKEN_SERVICE_KEY_REQUIRED',
      metadata: { role: 'service' },
    });
    // A server that trusts no service key accepts no service token at all.
    expect((await rejection(await hs256(), `Bearer ${forged}`)).reason).toBe('TOKEN_SERVICE_KEY_REQUIRED');
  });

  it('does not accept user tokens signed by the service key', async () => {
    const token = await mintToken(claims, { algorithm: 'HS256', secret: serviceSecret });
    expect((await rejection(await withServiceKey(), `Bearer ${token}`)).reason).toBe(
      'TOKEN_SIGNATURE_INVALID',
    );
  });

  it('verifies RS256 service tokens with the service public key', async () => {
    const pair = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const authenticate = await createAuthenticator({
      mode: 'rs256',
      publicKeyPem: publicKey,
      clockToleranceSec: 0,
      serviceKey: { algorithm: 'RS256', publicKeyPem: pair.publicKey },
    });
    const good = await mintToken(service, { algorithm: 'RS256', privateKeyPem: pair.privateKey });
    await expect(authenticate(`Bearer ${good}`)).resolves.toMatchObject({ roles: ['service'] });
    const idp = await mintToken(service, { algorithm: 'RS256', privateKeyPem: privateKey });
    expect((await rejection(authenticate, `Bearer ${idp}`)).reason).toBe('TOKEN_SERVICE_KEY_REQUIRED');
  });
});

describe('createAuthenticator: verified tokens are remembered until they expire', () => {
  it('answers a token seen before with the same frozen principal', async () => {
    const authenticate = await hs256();
    const token = await mintToken(claims, { algorithm: 'HS256', secret });
    const first = await authenticate(`Bearer ${token}`);
    const again = await authenticate(`Bearer ${token}`);
    expect(again).toBe(first);
    expect(Object.isFrozen(first) && Object.isFrozen(first.orgIds) && Object.isFrozen(first.roles)).toBe(
      true,
    );
    expect(first).toEqual({
      subject: 'alice',
      tenantId: 't1',
      orgIds: ['o1', 'o2'],
      roles: ['admin'],
      token,
    });
  });

  it('refuses a remembered token with TOKEN_EXPIRED once it has expired', async () => {
    const authenticate = await createAuthenticator({ mode: 'hs256', secret, clockToleranceSec: 0 });
    const exp = Math.floor(Date.now() / 1000) + 1;
    const token = await mintToken(claims, { algorithm: 'HS256', secret }, { expiresIn: exp });
    await expect(authenticate(`Bearer ${token}`)).resolves.toMatchObject({ subject: 'alice' });
    while (Math.floor(Date.now() / 1000) < exp) await new Promise((r) => setTimeout(r, 50));
    expect((await rejection(authenticate, `Bearer ${token}`)).reason).toBe('TOKEN_EXPIRED');
  });

  it('never remembers a refusal, and a changed signature is another token', async () => {
    const authenticate = await hs256();
    const token = await mintToken(claims, { algorithm: 'HS256', secret });
    await authenticate(`Bearer ${token}`);
    const forged = await mintToken(
      { ...claims, subject: 'mallory' },
      { algorithm: 'HS256', secret: randomBytes(32) },
    );
    // The forged token's claims with the verified token's signature: not the remembered text.
    const spliced = `${forged.split('.').slice(0, 2).join('.')}.${token.split('.')[2]}`;
    for (const attempt of [forged, forged, spliced, spliced]) {
      expect((await rejection(authenticate, `Bearer ${attempt}`)).reason).toBe('TOKEN_SIGNATURE_INVALID');
    }
  });
});

describe('VerifiedTokens', () => {
  const principal = { subject: 's', tenantId: 't', orgIds: ['o'], roles: [], token: 'x' };

  it('forgets an entry when the clock reaches exp + tolerance (whole seconds, as jose)', () => {
    let now = 1_000_000;
    const cache = new VerifiedTokens(10, 5, () => now);
    cache.set('a', principal, 1_000 + 10);
    now = (1_000 + 14) * 1000 + 999;
    expect(cache.get('a')).toEqual(principal);
    now = (1_000 + 15) * 1000;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('drops the least recently used entry beyond its capacity, and keeps nothing at capacity 0', () => {
    const cache = new VerifiedTokens(2, 0, () => 0);
    cache.set('a', principal, 100);
    cache.set('b', principal, 100);
    expect(cache.get('a')).toBeDefined();
    cache.set('c', principal, 100);
    expect([cache.get('a'), cache.get('b'), cache.get('c')].map((p) => p !== undefined)).toEqual([
      true,
      false,
      true,
    ]);
    const none = new VerifiedTokens(0, 0, () => 0);
    expect(Object.isFrozen(none.set('a', principal, 100))).toBe(true);
    expect(none.get('a')).toBeUndefined();
  });
});
