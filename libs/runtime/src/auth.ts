import { createContextKey, type ContextValues } from '@connectrpc/connect';
import {
  SignJWT,
  createLocalJWKSet,
  decodeJwt,
  errors as joseErrors,
  importPKCS8,
  importSPKI,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  type CryptoKey,
} from 'jose';
import { EngramError, errors } from '@engram/errors';

/** Roles a credential may carry in its `roles` claim. See docs/api-conventions.md. */
export const ROLES = ['admin', 'platform', 'service'] as const;
export type Role = (typeof ROLES)[number];

/**
 * Who is calling, from the verified credential only. Never built from request fields.
 */
export interface Principal {
  /** The `sub` claim: the user (or service) the call acts for. */
  readonly subject: string;
  /** The `tenant` claim. Nothing ever crosses tenants. */
  readonly tenantId: string;
  /** The `orgs` claim: orgs the subject is a member of (ORG-scope visibility). */
  readonly orgIds: readonly string[];
  /** The `roles` claim, filtered to known roles. */
  readonly roles: readonly Role[];
  /** The raw bearer token, forwarded on service-to-service calls. */
  readonly token: string;
}

/** Handlers read the caller with `ctx.values.get(principalKey)`; undefined only on public services. */
export const principalKey = createContextKey<Principal | undefined>(undefined, {
  description: 'engram.principal',
});

/**
 * The key that verifies tokens claiming the `service` role (decision 0024): never the key of the
 * user-facing tokens, so that whoever can mint user tokens cannot grant service power.
 */
export type ServiceVerifyKey =
  | { readonly algorithm: 'HS256'; readonly secret: Uint8Array }
  | { readonly algorithm: 'RS256'; readonly publicKeyPem: string };

/** What every verifying mode shares. */
interface VerifiedAuthConfig {
  readonly issuer?: string | undefined;
  readonly audience?: string | undefined;
  /** Allowed clock skew for exp/nbf/iat, seconds. */
  readonly clockToleranceSec: number;
  /** Longest accepted lifetime (`exp - iat`, or `exp` - now without `iat`), seconds. Default 24 h. */
  readonly maxLifetimeSec?: number | undefined;
  /** Verifies `service`-role tokens; without it, no service token is accepted. */
  readonly serviceKey?: ServiceVerifyKey | undefined;
}

/** The default of {@link VerifiedAuthConfig.maxLifetimeSec}: 24 hours. */
export const DEFAULT_MAX_TOKEN_LIFETIME_SEC = 86_400;

/** Longest `sub` and `tenant` claims, characters: the store's `owner_id` and `tenant_id` columns. */
export const MAX_SUBJECT_LENGTH = 128;
export const MAX_TENANT_LENGTH = 64;

/** How credentials are verified. Built by {@link authConfigFromEnv}-style config code. */
export type AuthConfig =
  | (VerifiedAuthConfig & {
      readonly mode: 'hs256';
      /** Shared secret, at least 32 bytes. */
      readonly secret: Uint8Array;
    })
  | (VerifiedAuthConfig & {
      readonly mode: 'rs256';
      /** SPKI PEM public key, or a JWKS document (exactly one). */
      readonly publicKeyPem?: string | undefined;
      readonly jwks?: JSONWebKeySet | undefined;
    })
  | {
      /**
       * Development only: the token's claims are read WITHOUT verifying its signature. The server
       * logs a loud warning at start. Never the default.
       */
      readonly mode: 'insecure';
    };

/** Verifies a bearer token and returns the principal, or throws an UNAUTHENTICATED EngramError. */
export type Authenticator = (authorization: string | null) => Promise<Principal>;

const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)$/;

function principalFromClaims(payload: JWTPayload, token: string): Principal {
  const { sub } = payload;
  const tenant: unknown = payload['tenant'];
  const orgs: unknown = payload['orgs'] ?? [];
  const roles: unknown = payload['roles'] ?? [];
  if (typeof sub !== 'string' || sub.length === 0) throw claimInvalid('sub');
  if (typeof tenant !== 'string' || tenant.length === 0) throw claimInvalid('tenant');
  // Bounded to the columns they are stored in, so an oversized identity never reaches SQL.
  if (Array.from(sub).length > MAX_SUBJECT_LENGTH) throw claimTooLong('sub', MAX_SUBJECT_LENGTH);
  if (Array.from(tenant).length > MAX_TENANT_LENGTH) throw claimTooLong('tenant', MAX_TENANT_LENGTH);
  if (!Array.isArray(orgs) || !orgs.every((o): o is string => typeof o === 'string' && o.length > 0)) {
    throw claimInvalid('orgs');
  }
  if (!Array.isArray(roles) || !roles.every((r): r is string => typeof r === 'string')) {
    throw claimInvalid('roles');
  }
  return {
    subject: sub,
    tenantId: tenant,
    orgIds: [...new Set(orgs)],
    roles: roles.filter((r): r is Role => (ROLES as readonly string[]).includes(r)),
    token,
  };
}

function claimInvalid(claim: string): EngramError {
  return errors.unauthenticated('TOKEN_CLAIM_INVALID', `token claim "${claim}" is missing or invalid`, {
    claim,
  });
}

function claimTooLong(claim: string, maxLength: number): EngramError {
  return errors.unauthenticated(
    'TOKEN_CLAIM_INVALID',
    `token claim "${claim}" is longer than ${maxLength} characters`,
    { claim, max_length: maxLength },
  );
}

function serviceKeyRequired(): EngramError {
  return errors.unauthenticated(
    'TOKEN_SERVICE_KEY_REQUIRED',
    'a token claiming the "service" role must be signed by the service key',
    { role: 'service' },
  );
}

/** Whether the (not yet verified) claims ask for the `service` role. */
function claimsService(payload: JWTPayload): boolean {
  const roles: unknown = payload['roles'];
  return Array.isArray(roles) && roles.includes('service');
}

/** Refuses a token whose lifetime exceeds `maxLifetimeSec` (jose has already required `exp`). */
function checkLifetime(payload: JWTPayload, maxLifetimeSec: number, toleranceSec: number): void {
  const exp = payload.exp ?? 0;
  const start = typeof payload.iat === 'number' ? payload.iat : Math.floor(Date.now() / 1000);
  if (exp - start > maxLifetimeSec + toleranceSec) {
    throw errors.unauthenticated(
      'TOKEN_LIFETIME_TOO_LONG',
      `token lifetime exceeds the maximum of ${maxLifetimeSec} seconds`,
      { max_lifetime_sec: maxLifetimeSec },
    );
  }
}

type Verify = (token: string) => Promise<JWTPayload>;

/** A verifier for one key: pinned algorithm, issuer/audience when configured, `exp` required. */
function verifierFor(
  algorithm: 'HS256' | 'RS256',
  key: Uint8Array | CryptoKey | JWTVerifyGetKey,
  config: VerifiedAuthConfig,
): Verify {
  const options = {
    algorithms: [algorithm],
    issuer: config.issuer,
    audience: config.audience,
    clockTolerance: config.clockToleranceSec,
    requiredClaims: ['exp'],
  };
  const maxLifetimeSec = config.maxLifetimeSec ?? DEFAULT_MAX_TOKEN_LIFETIME_SEC;
  return async (token: string) => {
    // jose's overloads distinguish static keys from key resolvers.
    const result =
      typeof key === 'function' ? await jwtVerify(token, key, options) : await jwtVerify(token, key, options);
    checkLifetime(result.payload, maxLifetimeSec, config.clockToleranceSec);
    return result.payload;
  };
}

/** The user-facing verifier and the service verifier of a configuration. */
async function verifiers(
  config: Exclude<AuthConfig, { mode: 'insecure' }>,
): Promise<{ user: Verify; service: Verify | undefined }> {
  let key: Uint8Array | CryptoKey | JWTVerifyGetKey;
  if (config.mode === 'hs256') {
    key = config.secret;
  } else if (config.jwks !== undefined) {
    key = createLocalJWKSet(config.jwks);
  } else if (config.publicKeyPem !== undefined) {
    key = await importSPKI(config.publicKeyPem, 'RS256');
  } else {
    throw new Error('rs256 authentication needs a public key or a JWKS document');
  }
  const user = verifierFor(config.mode === 'hs256' ? 'HS256' : 'RS256', key, config);
  const { serviceKey } = config;
  if (serviceKey === undefined) return { user, service: undefined };
  const service =
    serviceKey.algorithm === 'HS256'
      ? verifierFor('HS256', serviceKey.secret, config)
      : verifierFor('RS256', await importSPKI(serviceKey.publicKeyPem, 'RS256'), config);
  return { user, service };
}

/** Maps jose's verification failures to precise reasons. */
function fromJoseError(error: unknown): EngramError {
  if (error instanceof joseErrors.JWTExpired) {
    return errors.unauthenticated('TOKEN_EXPIRED', 'token has expired');
  }
  if (error instanceof EngramError) return error;
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf' || error.claim === 'iat') {
      return errors.unauthenticated('TOKEN_NOT_YET_VALID', 'token is not yet valid', { claim: error.claim });
    }
    if (error.claim === 'iss' || error.claim === 'aud') {
      return errors.unauthenticated(
        'TOKEN_AUDIENCE_OR_ISSUER_MISMATCH',
        `token claim "${error.claim}" does not match`,
        { claim: error.claim },
      );
    }
    return claimInvalid(error.claim);
  }
  if (error instanceof joseErrors.JOSEAlgNotAllowed || error instanceof joseErrors.JOSENotSupported) {
    return errors.unauthenticated('TOKEN_ALGORITHM_NOT_ALLOWED', 'token algorithm is not accepted');
  }
  if (
    error instanceof joseErrors.JWSSignatureVerificationFailed ||
    error instanceof joseErrors.JWKSNoMatchingKey
  ) {
    return errors.unauthenticated('TOKEN_SIGNATURE_INVALID', 'token signature is invalid');
  }
  return errors.unauthenticated('TOKEN_MALFORMED', 'token is malformed');
}

/** Verified tokens an authenticator remembers (see {@link VerifiedTokens}). */
export const VERIFIED_TOKEN_CACHE_SIZE = 10_000;

/**
 * The principals of tokens this process has verified, by the exact token text, until each token's
 * `exp` (with the clock tolerance). A client sends the same token with every call of its session;
 * verifying its signature again each time cost a webcrypto HMAC job per call (4.5 % of retrieval's
 * event loop under load, docs/benchmarks.md). Only successful verifications are kept, and the key
 * is the whole token, signature included, so a hit is the same bytes that verified before: no
 * claim can differ. `exp` is the only claim that changes its verdict with time (`nbf` and `iat`
 * can only turn from refused to accepted, and refusals are not kept); an expired entry is dropped
 * and the token verified afresh, which refuses it with TOKEN_EXPIRED. Least recently used entries
 * go first beyond `capacity`. The principals are frozen: every caller shares them.
 */
export class VerifiedTokens {
  readonly #entries = new Map<string, { readonly principal: Principal; readonly expSec: number }>();

  constructor(
    private readonly capacity: number,
    private readonly toleranceSec: number,
    private readonly nowMs: () => number = Date.now,
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  /** The principal of `token` when it verified before and has not expired since. */
  get(token: string): Principal | undefined {
    const entry = this.#entries.get(token);
    if (entry === undefined) return undefined;
    this.#entries.delete(token);
    // jose's rule: expired once the whole seconds since the epoch reach exp + tolerance.
    if (Math.floor(this.nowMs() / 1000) >= entry.expSec + this.toleranceSec) return undefined;
    this.#entries.set(token, entry);
    return entry.principal;
  }

  /** Remembers a verified token's principal until its `exp`; returns the frozen principal. */
  set(token: string, principal: Principal, expSec: number): Principal {
    const frozen: Principal = Object.freeze({
      ...principal,
      orgIds: Object.freeze([...principal.orgIds]),
      roles: Object.freeze([...principal.roles]),
    });
    if (this.capacity === 0) return frozen;
    this.#entries.delete(token);
    this.#entries.set(token, { principal: frozen, expSec });
    if (this.#entries.size > this.capacity) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    return frozen;
  }
}

/**
 * Builds the authenticator for a configuration. Keys are imported once, here. A token whose
 * claims ask for the `service` role is verified with the service key only (and refused with
 * TOKEN_SERVICE_KEY_REQUIRED when it does not verify, or no service key is trusted); every other
 * token with the user-facing key only (decision 0024). A token that verified is remembered until
 * it expires ({@link VerifiedTokens}).
 */
export async function createAuthenticator(config: AuthConfig): Promise<Authenticator> {
  let verify: Verify;
  // Insecure mode decodes without verifying: nothing to save, nothing remembered.
  const verified =
    config.mode === 'insecure'
      ? undefined
      : new VerifiedTokens(VERIFIED_TOKEN_CACHE_SIZE, config.clockToleranceSec);
  if (config.mode === 'insecure') {
    verify = (token) => Promise.resolve(decodeJwt(token));
  } else {
    const { user, service } = await verifiers(config);
    verify = async (token) => {
      if (!claimsService(decodeJwt(token))) return user(token);
      if (service === undefined) throw serviceKeyRequired();
      try {
        return await service(token);
      } catch (error) {
        if (
          error instanceof joseErrors.JWSSignatureVerificationFailed ||
          error instanceof joseErrors.JOSEAlgNotAllowed ||
          error instanceof joseErrors.JWKSNoMatchingKey
        ) {
          throw serviceKeyRequired();
        }
        throw error;
      }
    };
  }
  return async (authorization) => {
    if (authorization === null || authorization.trim() === '') {
      throw errors.unauthenticated('TOKEN_MISSING', 'missing "authorization: Bearer <token>" header');
    }
    const token = BEARER.exec(authorization.trim())?.[1];
    if (token === undefined) {
      throw errors.unauthenticated('TOKEN_MALFORMED', 'authorization header is not "Bearer <JWT>"');
    }
    const known = verified?.get(token);
    if (known !== undefined) return known;
    let payload: JWTPayload;
    try {
      payload = await verify(token);
    } catch (error) {
      throw fromJoseError(error);
    }
    const principal = principalFromClaims(payload, token);
    // Verified modes require `exp` (jose checked it): remembered until then.
    if (verified === undefined || typeof payload.exp !== 'number') return principal;
    return verified.set(token, principal, payload.exp);
  };
}

/** Claims of a token minted by Engram's own tools. */
export interface TokenClaims {
  readonly subject: string;
  readonly tenantId: string;
  readonly orgIds?: readonly string[];
  readonly roles?: readonly Role[];
}

/** Signing material for {@link mintToken}. */
export type SigningKey =
  | { readonly algorithm: 'HS256'; readonly secret: Uint8Array }
  | { readonly algorithm: 'RS256'; readonly privateKeyPem: string; readonly keyId?: string };

/**
 * Mints a token (for local tools, tests and service identities). Production tokens normally come
 * from the deployment's identity provider.
 */
export async function mintToken(
  claims: TokenClaims,
  key: SigningKey,
  options: { expiresIn?: string | number; issuer?: string; audience?: string } = {},
): Promise<string> {
  const jwt = new SignJWT({
    tenant: claims.tenantId,
    orgs: [...(claims.orgIds ?? [])],
    roles: [...(claims.roles ?? [])],
  })
    .setSubject(claims.subject)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '1h');
  if (options.issuer !== undefined) jwt.setIssuer(options.issuer);
  if (options.audience !== undefined) jwt.setAudience(options.audience);
  if (key.algorithm === 'HS256') {
    return jwt.setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(key.secret);
  }
  const privateKey = await importPKCS8(key.privateKeyPem, 'RS256');
  return jwt
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(key.keyId !== undefined ? { kid: key.keyId } : {}) })
    .sign(privateKey);
}

/** The principal of a handler call; throws if the service was mounted without authentication. */
export function requirePrincipal(values: ContextValues): Principal {
  const principal = values.get(principalKey);
  if (principal === undefined) throw new Error('no principal: the method is not behind authentication');
  return principal;
}

/** Throws PERMISSION_DENIED `ROLE_REQUIRED` unless the principal holds `role`. */
export function requireRole(principal: Principal, role: Role): void {
  if (!principal.roles.includes(role)) {
    throw errors.permissionDenied('ROLE_REQUIRED', `this method requires the "${role}" role`, { role });
  }
}
