import { readFileSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { z } from 'zod';
import { ConfigError, envEnum, envInt, envString, unsetIfEmpty } from '@engram/config';
import { DEFAULT_MAX_TOKEN_LIFETIME_SEC, type AuthConfig, type ServiceVerifyKey } from './auth.js';

/** Variables every Engram server understands. Documented in the README. */
export const serverEnvShape = {
  ENGRAM_HOST: z.preprocess(unsetIfEmpty, z.string().min(1).default('127.0.0.1')),
  ENGRAM_LOG_LEVEL: envEnum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], 'info'),
  /** `json` lines, `pretty` lines, or `auto`: pretty when standard output is a terminal. */
  ENGRAM_LOG_FORMAT: envEnum(['auto', 'json', 'pretty'], 'auto'),
  ENGRAM_MAX_MESSAGE_BYTES: envInt(5 * 1024 * 1024, 1024, 64 * 1024 * 1024),
  ENGRAM_MAX_STREAM_MESSAGES: envInt(4096, 1, 1_000_000),
  ENGRAM_MAX_TIMEOUT_MS: envInt(300_000, 1, 3_600_000),
  ENGRAM_SHUTDOWN_GRACE_MS: envInt(10_000, 0, 600_000),
  ENGRAM_AUTH_MODE: envEnum(['hs256', 'rs256', 'insecure'], 'hs256'),
  ENGRAM_JWT_SECRET: envString(),
  ENGRAM_JWT_SECRET_FILE: envString(),
  ENGRAM_JWT_PUBLIC_KEY_FILE: envString(),
  ENGRAM_JWT_JWKS_FILE: envString(),
  ENGRAM_JWT_ISSUER: envString(),
  ENGRAM_JWT_AUDIENCE: envString(),
  ENGRAM_JWT_CLOCK_TOLERANCE_SEC: envInt(30, 0, 600),
  /** Longest accepted token lifetime (`exp - iat`), seconds; tokens without `exp` are refused. */
  ENGRAM_JWT_MAX_LIFETIME_SEC: envInt(DEFAULT_MAX_TOKEN_LIFETIME_SEC, 60, 30 * 86_400),
  /**
   * HS256 secret (at least 32 bytes, distinct from ENGRAM_JWT_SECRET) that signs and verifies
   * `service`-role tokens (decision 0024); only the processes that make or receive background calls.
   */
  ENGRAM_SERVICE_JWT_SECRET: envString(),
  ENGRAM_SERVICE_JWT_SECRET_FILE: envString(),
  /** RS256 alternative: the SPKI PEM public key that verifies `service`-role tokens. */
  ENGRAM_SERVICE_PUBLIC_KEY_FILE: envString(),
  /** JSON file of per-tenant settings (secret redaction, governance policy overrides). */
  ENGRAM_TENANT_POLICY_FILE: envString(),
  /** RS256: PKCS#8 PEM private key that signs service-to-service tokens (background calls). */
  ENGRAM_SERVICE_PRIVATE_KEY_FILE: envString(),
  /** RS256: the `kid` of that key. */
  ENGRAM_SERVICE_KEY_ID: envString(),
  /**
   * Prometheus `GET /metrics` port (plain HTTP, on ENGRAM_HOST): a port, `0` for a free one, or
   * `off`. Unset: 9464, or a free port when the server itself was asked for one (ENGRAM_PORT=0).
   */
  ENGRAM_METRICS_PORT: z.preprocess(
    unsetIfEmpty,
    z
      .union([z.literal('off'), z.coerce.number().int().min(0).max(65535)], {
        error: 'expected a port from 0 to 65535, or off',
      })
      .optional(),
  ),
  /** Where finished spans go; trace ids are generated and propagated either way. */
  ENGRAM_OTEL_EXPORTER: envEnum(['off', 'console', 'otlp'], 'off'),
  /** OTLP/HTTP base URL with ENGRAM_OTEL_EXPORTER=otlp (`/v1/traces` is appended). */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.preprocess(
    unsetIfEmpty,
    z.url({ error: 'expected a URL such as http://localhost:4318' }).optional(),
  ),
} as const;

export type ServerEnv = z.output<z.ZodObject<typeof serverEnvShape>>;

/** Limits applied by every server. */
export interface ServerLimits {
  /** Largest single message read or written, bytes (RESOURCE_EXHAUSTED beyond). */
  readonly maxMessageBytes: number;
  /** Most messages a client stream may send (RESOURCE_EXHAUSTED STREAM_TOO_LONG beyond). */
  readonly maxStreamMessages: number;
  /** Largest deadline a client may ask for, ms (longer ones are INVALID_ARGUMENT). */
  readonly maxTimeoutMs: number;
}

/** The default Prometheus port (the OpenTelemetry/Prometheus exporter convention). */
export const DEFAULT_METRICS_PORT = 9464;

/**
 * The metrics port of a server listening on `serverPort`, or `off`: ENGRAM_METRICS_PORT, else
 * 9464, except that a server asked for a free port (0, tests) gets a free metrics port too, so
 * that several servers of one host or test process never collide on 9464.
 */
export function metricsPortFromEnv(env: ServerEnv, serverPort: number): number | 'off' {
  return env.ENGRAM_METRICS_PORT ?? (serverPort === 0 ? 0 : DEFAULT_METRICS_PORT);
}

export function limitsFromEnv(env: ServerEnv): ServerLimits {
  return {
    maxMessageBytes: env.ENGRAM_MAX_MESSAGE_BYTES,
    maxStreamMessages: env.ENGRAM_MAX_STREAM_MESSAGES,
    maxTimeoutMs: env.ENGRAM_MAX_TIMEOUT_MS,
  };
}

export function readFileVariable(variable: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError([
      { variable, message: `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}` },
    ]);
  }
}

/** Minimum HS256 secret length, bytes (RFC 7518 §3.2: at least the hash size). */
export const MIN_HS256_SECRET_BYTES = 32;

/** Whether a listen address only accepts connections from this machine. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost' || bare === '::1') return true;
  const v4 = bare.startsWith('::ffff:') ? bare.slice('::ffff:'.length) : bare;
  return isIPv4(v4) && v4.startsWith('127.');
}

/** An HS256 secret from `variable` or its `_FILE` twin, checked for length; undefined if neither is set. */
function secretFromEnv(
  variable: string,
  value: string | undefined,
  file: string | undefined,
): { secret: Uint8Array; variable: string } | undefined {
  let secret: Uint8Array;
  if (value !== undefined) {
    secret = new TextEncoder().encode(value);
  } else if (file !== undefined) {
    variable = `${variable}_FILE`;
    secret = new TextEncoder().encode(readFileVariable(variable, file).trim());
  } else {
    return undefined;
  }
  if (secret.byteLength < MIN_HS256_SECRET_BYTES) {
    throw new ConfigError([{ variable, message: `must be at least ${MIN_HS256_SECRET_BYTES} bytes` }]);
  }
  return { secret, variable };
}

/**
 * The key that verifies `service`-role tokens: ENGRAM_SERVICE_JWT_SECRET(_FILE), else
 * ENGRAM_SERVICE_PUBLIC_KEY_FILE, else the fallback (the all-in-one's local service secret), else
 * none. It may never be the user-facing secret: that would let every token minter grant it.
 */
function serviceKeyFromEnv(
  env: ServerEnv,
  userSecret: Uint8Array | undefined,
  fallback: (() => Uint8Array) | undefined,
): ServiceVerifyKey | undefined {
  const configured = secretFromEnv(
    'ENGRAM_SERVICE_JWT_SECRET',
    env.ENGRAM_SERVICE_JWT_SECRET,
    env.ENGRAM_SERVICE_JWT_SECRET_FILE,
  );
  if (configured !== undefined) {
    if (userSecret !== undefined && Buffer.from(configured.secret).equals(Buffer.from(userSecret))) {
      throw new ConfigError([
        {
          variable: configured.variable,
          message: 'must differ from ENGRAM_JWT_SECRET (the user-facing key)',
        },
      ]);
    }
    return { algorithm: 'HS256', secret: configured.secret };
  }
  const pemFile = env.ENGRAM_SERVICE_PUBLIC_KEY_FILE;
  if (pemFile !== undefined) {
    return { algorithm: 'RS256', publicKeyPem: readFileVariable('ENGRAM_SERVICE_PUBLIC_KEY_FILE', pemFile) };
  }
  const secret = fallback?.();
  return secret === undefined ? undefined : { algorithm: 'HS256', secret };
}

/**
 * Builds the authentication config from the environment. `fallbackSecret` and
 * `fallbackServiceSecret` let the all-in-one process use its local, generated secrets when none
 * are configured.
 */
export function authConfigFromEnv(
  env: ServerEnv,
  fallbackSecret?: () => Uint8Array,
  fallbackServiceSecret?: () => Uint8Array,
): AuthConfig {
  const common = {
    issuer: env.ENGRAM_JWT_ISSUER,
    audience: env.ENGRAM_JWT_AUDIENCE,
    clockToleranceSec: env.ENGRAM_JWT_CLOCK_TOLERANCE_SEC,
    maxLifetimeSec: env.ENGRAM_JWT_MAX_LIFETIME_SEC,
  };
  switch (env.ENGRAM_AUTH_MODE) {
    case 'insecure':
      if (!isLoopbackHost(env.ENGRAM_HOST)) {
        throw new ConfigError([
          {
            variable: 'ENGRAM_AUTH_MODE',
            message: `insecure mode (no signature checks) is refused unless ENGRAM_HOST is a loopback address (it is ${env.ENGRAM_HOST})`,
          },
        ]);
      }
      return { mode: 'insecure' };
    case 'rs256': {
      const pemFile = env.ENGRAM_JWT_PUBLIC_KEY_FILE;
      const jwksFile = env.ENGRAM_JWT_JWKS_FILE;
      if ((pemFile === undefined) === (jwksFile === undefined)) {
        throw new ConfigError([
          {
            variable: 'ENGRAM_JWT_PUBLIC_KEY_FILE',
            message:
              'with ENGRAM_AUTH_MODE=rs256 set exactly one of ENGRAM_JWT_PUBLIC_KEY_FILE or ENGRAM_JWT_JWKS_FILE',
          },
        ]);
      }
      const serviceKey = serviceKeyFromEnv(env, undefined, fallbackServiceSecret);
      if (pemFile !== undefined) {
        return {
          mode: 'rs256',
          publicKeyPem: readFileVariable('ENGRAM_JWT_PUBLIC_KEY_FILE', pemFile),
          serviceKey,
          ...common,
        };
      }
      const jwksText = readFileVariable('ENGRAM_JWT_JWKS_FILE', jwksFile ?? '');
      try {
        return { mode: 'rs256', jwks: JSON.parse(jwksText) as never, serviceKey, ...common };
      } catch {
        throw new ConfigError([{ variable: 'ENGRAM_JWT_JWKS_FILE', message: 'is not valid JSON' }]);
      }
    }
    case 'hs256': {
      const configured = secretFromEnv(
        'ENGRAM_JWT_SECRET',
        env.ENGRAM_JWT_SECRET,
        env.ENGRAM_JWT_SECRET_FILE,
      );
      const secret = configured?.secret ?? fallbackSecret?.();
      if (secret === undefined) {
        throw new ConfigError([
          {
            variable: 'ENGRAM_JWT_SECRET',
            message:
              'required with ENGRAM_AUTH_MODE=hs256 (or set ENGRAM_JWT_SECRET_FILE; ENGRAM_AUTH_MODE=insecure is for development only)',
          },
        ]);
      }
      const serviceKey = serviceKeyFromEnv(env, secret, fallbackServiceSecret);
      return { mode: 'hs256', secret, serviceKey, ...common };
    }
  }
}

/** The environment of one service process: the common variables plus `ENGRAM_PORT`. */
export function serviceEnvSchema(defaultPort: number) {
  return z.object({ ...serverEnvShape, ENGRAM_PORT: envInt(defaultPort, 0, 65535) });
}
export type ServiceEnv = z.output<ReturnType<typeof serviceEnvSchema>>;
