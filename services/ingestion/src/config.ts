import { z } from 'zod';
import { envEnum, envInt, parseEnv, serviceEnvSchema } from '@engram/runtime';
import { storeEnvShape } from '@engram/store';

/** Port of the ingestion service when it runs as its own process (`ENGRAM_PORT` overrides). */
export const DEFAULT_PORT = 50062;

/** Ingestion's own settings, shared with the all-in-one process. */
export const ingestionEnvShape = {
  ...storeEnvShape,
  /** Largest document in one IngestDocument request, bytes (the API documents 4 MiB). */
  ENGRAM_MAX_DOCUMENT_BYTES: envInt(4 * 1024 * 1024, 1024, 4 * 1024 * 1024),
  /** Default chunk size in code points when a request does not set one (unset: the measured default). */
  ENGRAM_CHUNK_SIZE: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.coerce
      .number({ error: 'expected an integer from 200 to 8000' })
      .int({ error: 'expected an integer from 200 to 8000' })
      .min(200, { error: 'expected an integer from 200 to 8000' })
      .max(8000, { error: 'expected an integer from 200 to 8000' })
      .optional(),
  ),
  /** Redact secrets (API keys, passwords, card and ID numbers) before anything is stored. */
  ENGRAM_REDACT_SECRETS: envEnum(['on', 'off'], 'on'),
} as const;

const schema = serviceEnvSchema(DEFAULT_PORT).extend(ingestionEnvShape);

export type IngestionConfig = z.output<typeof schema>;
export type IngestionDataConfig = z.output<z.ZodObject<typeof ingestionEnvShape>>;

/** Parses the environment once, at start; a bad variable fails with its name. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): IngestionConfig {
  return parseEnv(schema, env);
}
