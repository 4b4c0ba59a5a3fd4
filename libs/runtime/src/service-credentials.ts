import { randomBytes } from 'node:crypto';
import type { CallOptions } from '@connectrpc/connect';
import { ConfigError } from '@engram/config';
import { mintToken, type AuthConfig, type SigningKey } from './auth.js';
import { readFileVariable, type ServerEnv } from './config.js';
import { injectTraceContext } from './tracing.js';

/**
 * The identity a service uses for its own background calls to another service (e.g. ingestion
 * handing a MemCell to governance long after the user's token expired): short-lived tokens with
 * the `service` role, one per tenant (a principal never crosses tenants), minted with the
 * deployment's service key (never the user-facing key) and cached until shortly before they expire.
 */
export interface ServiceCredentials {
  /**
   * Call options carrying a `service` bearer token for `tenantId` and the active trace context
   * (`traceparent`, when a span is active and the options carry none), plus the given options.
   */
  callOptions(tenantId: string, options?: CallOptions): Promise<CallOptions>;
}

/** Lifetime of a minted service token, seconds; renewed a minute before it expires. */
const TOKEN_TTL_SEC = 600;
const RENEW_BEFORE_MS = 60_000;

export function createServiceCredentials(
  key: SigningKey | (() => SigningKey),
  options: { readonly subject: string; readonly issuer?: string; readonly audience?: string },
): ServiceCredentials {
  const cache = new Map<string, { token: Promise<string>; expiresAt: number }>();
  let signingKey: SigningKey | undefined;
  // Resolved at the first call: a process that makes no background call needs no key.
  const resolveKey = () => (signingKey ??= typeof key === 'function' ? key() : key);
  const token = (tenantId: string): Promise<string> => {
    const now = Date.now();
    const cached = cache.get(tenantId);
    if (cached !== undefined && cached.expiresAt - RENEW_BEFORE_MS > now) return cached.token;
    const minted = mintToken({ subject: options.subject, tenantId, roles: ['service'] }, resolveKey(), {
      // A string: jose reads a bare number as an absolute time.
      expiresIn: `${TOKEN_TTL_SEC}s`,
      ...(options.issuer !== undefined ? { issuer: options.issuer } : {}),
      ...(options.audience !== undefined ? { audience: options.audience } : {}),
    });
    // A failed mint is not cached: the next call tries again.
    minted.catch(() => cache.delete(tenantId));
    cache.set(tenantId, { token: minted, expiresAt: now + TOKEN_TTL_SEC * 1000 });
    return minted;
  };
  return {
    async callOptions(tenantId, callOptions = {}) {
      // CallOptions.headers is typed with the DOM's HeadersInit, which this Node-only build lacks.
      // eslint-disable-next-line @typescript-eslint/no-unsafe-argument
      const headers = new Headers(callOptions.headers);
      if (!headers.has('traceparent')) injectTraceContext(headers);
      headers.set('authorization', `Bearer ${await token(tenantId)}`);
      return { ...callOptions, headers };
    },
  };
}

/**
 * The signing material for service tokens: never the user-facing key (decision 0024). The RS256
 * private key in `ENGRAM_SERVICE_PRIVATE_KEY_FILE` (its public key is the services'
 * `ENGRAM_SERVICE_PUBLIC_KEY_FILE`), else the HS256 service secret that also verifies them
 * (`ENGRAM_SERVICE_JWT_SECRET`, or the all-in-one's local one), or, in insecure development mode
 * (signatures are not verified), a random key. Resolved at a process's first background call, so a
 * process that makes none (retrieval) needs no service key.
 */
export function serviceSigningKey(env: ServerEnv, auth: AuthConfig): SigningKey {
  if (auth.mode === 'insecure') return { algorithm: 'HS256', secret: randomBytes(32) };
  const file = env.ENGRAM_SERVICE_PRIVATE_KEY_FILE;
  if (file !== undefined) {
    return {
      algorithm: 'RS256',
      privateKeyPem: readFileVariable('ENGRAM_SERVICE_PRIVATE_KEY_FILE', file),
      ...(env.ENGRAM_SERVICE_KEY_ID !== undefined ? { keyId: env.ENGRAM_SERVICE_KEY_ID } : {}),
    };
  }
  if (auth.serviceKey?.algorithm === 'HS256') return { algorithm: 'HS256', secret: auth.serviceKey.secret };
  throw new ConfigError([
    {
      variable: 'ENGRAM_SERVICE_JWT_SECRET',
      message:
        'this service makes background calls: set ENGRAM_SERVICE_JWT_SECRET(_FILE) (HS256, distinct from ENGRAM_JWT_SECRET) or ENGRAM_SERVICE_PRIVATE_KEY_FILE (RS256)',
    },
  ]);
}
