import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { ConfigError, envInt, parseEnv } from '@engram/config';
import { authConfigFromEnv, limitsFromEnv, metricsPortFromEnv, serverEnvShape } from './config.js';

const schema = z.object({ ...serverEnvShape, ENGRAM_PORT: envInt(50051, 0, 65535) });
const secret = 'x'.repeat(32);

function configError(env: Record<string, string>): ConfigError {
  try {
    authConfigFromEnv(parseEnv(schema, env));
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('parseEnv', () => {
  it('fills documented defaults', () => {
    const env = parseEnv(schema, {});
    expect(env.ENGRAM_PORT).toBe(50051);
    expect(env.ENGRAM_HOST).toBe('127.0.0.1');
    expect(env.ENGRAM_AUTH_MODE).toBe('hs256');
    expect(limitsFromEnv(env)).toEqual({
      maxMessageBytes: 5242880,
      maxStreamMessages: 4096,
      maxTimeoutMs: 300000,
    });
  });

  it('treats empty variables as unset', () => {
    expect(parseEnv(schema, { ENGRAM_PORT: '' }).ENGRAM_PORT).toBe(50051);
  });

  it('names every bad variable and what it expects', () => {
    let error: unknown;
    try {
      parseEnv(schema, { ENGRAM_PORT: 'http', ENGRAM_LOG_LEVEL: 'loud', ENGRAM_MAX_MESSAGE_BYTES: '10' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems.map((p) => p.variable).sort()).toEqual([
      'ENGRAM_LOG_LEVEL',
      'ENGRAM_MAX_MESSAGE_BYTES',
      'ENGRAM_PORT',
    ]);
    expect((error as Error).message).toContain('ENGRAM_PORT: expected an integer from 0 to 65535');
    expect((error as Error).message).toContain('ENGRAM_LOG_LEVEL: expected one of: trace, debug');
  });
});

describe('observability settings', () => {
  it('serve metrics on 9464 by default, on a free port beside a free API port, or not at all', () => {
    expect(metricsPortFromEnv(parseEnv(schema, {}), 50051)).toBe(9464);
    expect(metricsPortFromEnv(parseEnv(schema, {}), 0)).toBe(0);
    expect(metricsPortFromEnv(parseEnv(schema, { ENGRAM_METRICS_PORT: '9100' }), 0)).toBe(9100);
    expect(metricsPortFromEnv(parseEnv(schema, { ENGRAM_METRICS_PORT: '0' }), 50051)).toBe(0);
    expect(metricsPortFromEnv(parseEnv(schema, { ENGRAM_METRICS_PORT: 'off' }), 50051)).toBe('off');
  });

  it('keep the trace exporter off unless asked, and name bad values', () => {
    expect(parseEnv(schema, {}).ENGRAM_OTEL_EXPORTER).toBe('off');
    let problems: readonly { variable: string }[] = [];
    try {
      parseEnv(schema, {
        ENGRAM_METRICS_PORT: 'on',
        ENGRAM_OTEL_EXPORTER: 'jaeger',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url',
      });
    } catch (error) {
      problems = (error as ConfigError).problems;
    }
    expect(problems.map((p) => p.variable).sort()).toEqual([
      'ENGRAM_METRICS_PORT',
      'ENGRAM_OTEL_EXPORTER',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
    ]);
  });
});

describe('authConfigFromEnv', () => {
  it('requires a secret in the default hs256 mode and says how to provide one', () => {
    const error = configError({});
    expect(error.problems[0]?.variable).toBe('ENGRAM_JWT_SECRET');
    expect(error.message).toContain('ENGRAM_JWT_SECRET_FILE');
  });

  it('rejects a secret shorter than 32 bytes', () => {
    expect(configError({ ENGRAM_JWT_SECRET: 'short' }).problems[0]).toEqual({
      variable: 'ENGRAM_JWT_SECRET',
      message: 'must be at least 32 bytes',
    });
  });

  it('reads the secret from a file, trimmed', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'engram-')), 'secret');
    writeFileSync(file, `${secret}\n`);
    const config = authConfigFromEnv(parseEnv(schema, { ENGRAM_JWT_SECRET_FILE: file }));
    expect(config.mode === 'hs256' && new TextDecoder().decode(config.secret)).toBe(secret);
  });

  it('names the file variable when the file cannot be read', () => {
    expect(configError({ ENGRAM_JWT_SECRET_FILE: '/nonexistent/secret' }).problems[0]?.variable).toBe(
      'ENGRAM_JWT_SECRET_FILE',
    );
  });

  it('uses the fallback secret only when none is configured', () => {
    const fallback = new TextEncoder().encode('f'.repeat(32));
    const env = parseEnv(schema, {});
    expect(authConfigFromEnv(env, () => fallback)).toMatchObject({ mode: 'hs256', secret: fallback });
    const configured = authConfigFromEnv(parseEnv(schema, { ENGRAM_JWT_SECRET: secret }), () => fallback);
    expect(configured.mode === 'hs256' && new TextDecoder().decode(configured.secret)).toBe(secret);
  });

  it('needs exactly one RS256 key source', () => {
    expect(configError({ ENGRAM_AUTH_MODE: 'rs256' }).problems[0]?.variable).toBe(
      'ENGRAM_JWT_PUBLIC_KEY_FILE',
    );
  });

  it('refuses insecure mode unless ENGRAM_HOST is a loopback address', () => {
    for (const host of ['0.0.0.0', '10.0.0.5', '::', 'engram.internal']) {
      const error = configError({ ENGRAM_AUTH_MODE: 'insecure', ENGRAM_HOST: host });
      expect(error.problems[0]?.variable).toBe('ENGRAM_AUTH_MODE');
      expect(error.message).toContain('ENGRAM_HOST');
    }
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', 'localhost']) {
      expect(
        authConfigFromEnv(parseEnv(schema, { ENGRAM_AUTH_MODE: 'insecure', ENGRAM_HOST: host })),
      ).toEqual({
        mode: 'insecure',
      });
    }
  });

  it('reads the maximum token lifetime, 24 hours by default', () => {
    expect(authConfigFromEnv(parseEnv(schema, { ENGRAM_JWT_SECRET: secret }))).toMatchObject({
      maxLifetimeSec: 86_400,
    });
    const env = parseEnv(schema, { ENGRAM_JWT_SECRET: secret, ENGRAM_JWT_MAX_LIFETIME_SEC: '3600' });
    expect(authConfigFromEnv(env)).toMatchObject({ maxLifetimeSec: 3600 });
  });

  it('reads a separate service key, which must differ from the user-facing secret', () => {
    const serviceSecret = 's'.repeat(32);
    const config = authConfigFromEnv(
      parseEnv(schema, { ENGRAM_JWT_SECRET: secret, ENGRAM_SERVICE_JWT_SECRET: serviceSecret }),
    );
    expect(config.mode === 'hs256' && config.serviceKey).toEqual({
      algorithm: 'HS256',
      secret: new TextEncoder().encode(serviceSecret),
    });
    expect(
      configError({ ENGRAM_JWT_SECRET: secret, ENGRAM_SERVICE_JWT_SECRET: secret }).problems[0]?.variable,
    ).toBe('ENGRAM_SERVICE_JWT_SECRET');
    expect(
      configError({ ENGRAM_JWT_SECRET: secret, ENGRAM_SERVICE_JWT_SECRET: 'short' }).problems[0],
    ).toEqual({ variable: 'ENGRAM_SERVICE_JWT_SECRET', message: 'must be at least 32 bytes' });
    // Unset: no service key (such a process accepts no service token), unless a fallback exists.
    const none = authConfigFromEnv(parseEnv(schema, { ENGRAM_JWT_SECRET: secret }));
    expect(none.mode === 'hs256' && none.serviceKey).toBeUndefined();
    const fallback = new TextEncoder().encode('f'.repeat(32));
    const local = authConfigFromEnv(
      parseEnv(schema, { ENGRAM_JWT_SECRET: secret }),
      undefined,
      () => fallback,
    );
    expect(local.mode === 'hs256' && local.serviceKey).toEqual({ algorithm: 'HS256', secret: fallback });
  });

  it('only enters insecure mode when asked to', () => {
    expect(authConfigFromEnv(parseEnv(schema, { ENGRAM_AUTH_MODE: 'insecure' }))).toEqual({
      mode: 'insecure',
    });
  });
});
