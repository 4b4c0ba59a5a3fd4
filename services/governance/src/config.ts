import type { z } from 'zod';
import { llmEnvShape } from '@engram/llm';
import { envEnum, envInt, envString, parseEnv, serviceEnvSchema } from '@engram/runtime';
import { storeEnvShape } from '@engram/store';

/** Port of the governance service when it runs as its own process (`ENGRAM_PORT` overrides). */
export const DEFAULT_PORT = 50061;

/** Governance's own settings, shared with the all-in-one process. */
export const governanceEnvShape = {
  ...storeEnvShape,
  ...llmEnvShape,
  /**
   * The most an ImportUser stream may carry, in bytes of JSON lines (RESOURCE_EXHAUSTED
   * BATCH_TOO_LARGE beyond): the import is checked whole before one transaction writes it, so it
   * is held in memory. Default 256 MiB.
   */
  ENGRAM_IMPORT_MAX_BYTES: envInt(256 * 1024 * 1024, 1024 * 1024, 4 * 1024 * 1024 * 1024),
  /**
   * Redact secrets in what ImportUser stores; the same variable and per-tenant override
   * (`redactSecrets`) as ingestion's and context's.
   */
  ENGRAM_REDACT_SECRETS: envEnum(['on', 'off'], 'on'),
} as const;

/** Where the standalone governance process reaches ingestion (the all-in-one calls it in-process). */
export const ingestionClientEnvShape = {
  ENGRAM_INGESTION_URL: envString(),
  /** Where the standalone governance process reaches context (ForgetUser's erasure of session states). */
  ENGRAM_CONTEXT_URL: envString(),
} as const;

const schema = serviceEnvSchema(DEFAULT_PORT).extend(governanceEnvShape).extend(ingestionClientEnvShape);

export type GovernanceConfig = z.output<typeof schema>;
export type GovernanceDataConfig = z.output<z.ZodObject<typeof governanceEnvShape>>;

/** Parses the environment once, at start; a bad variable fails with its name. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): GovernanceConfig {
  return parseEnv(schema, env);
}
