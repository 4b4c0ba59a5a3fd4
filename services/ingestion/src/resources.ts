import { mkdirSync } from 'node:fs';
import { localEmbedder, resolveModelRoot, ThreadedEmbedder, type Embedder } from '@engram/embeddings';
import { chatModelFromEnv } from '@engram/llm';
import {
  loadTenantPolicies,
  redactSecretsOf,
  type Logger,
  type ProcessAdmissionLimits,
} from '@engram/runtime';
import { isMysqlTarget, openStore, storeTarget, type Store } from '@engram/store';
import { SEGMENTER_EMBED_NICE, appendAdmissionLimits, type IngestionDataConfig } from './config.js';
import type { IngestionSettings } from './deps.js';
import { DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP } from './domain/chunker.js';
import { boundaryJudge, type BoundaryJudge } from './segmenter.js';

/** Everything the ingestion service runs on, opened from configuration. */
export interface IngestionResources {
  readonly store: Store;
  readonly settings: IngestionSettings;
  /** The judge of topic shifts in open tails: the configured language model, else the offline detector. */
  readonly judge: BoundaryJudge;
  /** The process admission of AppendMessages (decision 0033); absent, it is not gated per process. */
  readonly appendAdmission?: ProcessAdmissionLimits;
  /** Closes what was opened here: the database, and the embedding model when it was created here. */
  close(): Promise<void>;
}

/** What ingestion's resources are opened from (its own process's configuration, or the all-in-one's). */
export type IngestionResourcesConfig = IngestionDataConfig & {
  readonly ENGRAM_TENANT_POLICY_FILE?: string | undefined;
  /** The local embedding model's directory, for the offline topic-shift detector. */
  readonly ENGRAM_MODEL_DIR?: string | undefined;
  /** Whether that model runs on a worker thread of its own (default `on`). */
  readonly ENGRAM_SEGMENTER_EMBED_THREAD?: 'on' | 'off' | undefined;
  /** That thread's niceness on Linux (decision 0047; default 10). */
  readonly ENGRAM_SEGMENTER_EMBED_NICE?: number | undefined;
};

/**
 * The standalone process's own embedding model for the offline topic-shift detector: on a worker
 * thread of its own (at `ENGRAM_SEGMENTER_EMBED_NICE`) unless `ENGRAM_SEGMENTER_EMBED_THREAD` is `off`.
 */
export function segmenterEmbedder(
  config: Pick<
    IngestionResourcesConfig,
    'ENGRAM_MODEL_DIR' | 'ENGRAM_SEGMENTER_EMBED_THREAD' | 'ENGRAM_SEGMENTER_EMBED_NICE'
  >,
): Embedder {
  const recipe = { kind: 'local', modelRoot: resolveModelRoot(config.ENGRAM_MODEL_DIR) } as const;
  return config.ENGRAM_SEGMENTER_EMBED_THREAD === 'off'
    ? localEmbedder(recipe)
    : new ThreadedEmbedder({ ...recipe, nice: config.ENGRAM_SEGMENTER_EMBED_NICE ?? SEGMENTER_EMBED_NICE });
}

/**
 * Opens ingestion's connection to the source of truth, resolves its settings and builds the
 * boundary judge: the language model where one is configured, else the offline topic-shift
 * detector over `shared.embedder` (the all-in-one shares retrieval's) or, without one, a local
 * embedding model of its own (on a worker thread unless `ENGRAM_SEGMENTER_EMBED_THREAD` is off),
 * closed with these resources.
 */
export function openIngestionResources(
  config: IngestionResourcesConfig,
  shared: { readonly embedder?: () => Embedder } = {},
  logger?: Logger,
): IngestionResources {
  const tenants = loadTenantPolicies(config.ENGRAM_TENANT_POLICY_FILE);
  let ownEmbedder: Embedder | undefined;
  const embedder = shared.embedder ?? (() => (ownEmbedder ??= segmenterEmbedder(config)));
  // Before the store opens: a bad model configuration fails the start with nothing to close.
  const judge = boundaryJudge(chatModelFromEnv(config, logger === undefined ? {} : { logger }), embedder);
  const target = storeTarget(config);
  if (!isMysqlTarget(target)) mkdirSync(config.ENGRAM_DATA_DIR, { recursive: true, mode: 0o700 });
  const store = openStore({ target });
  return {
    store,
    judge,
    appendAdmission: appendAdmissionLimits(config),
    settings: {
      maxDocumentBytes: config.ENGRAM_MAX_DOCUMENT_BYTES,
      chunkSize: config.ENGRAM_CHUNK_SIZE ?? DEFAULT_CHUNK_SIZE,
      overlap: DEFAULT_OVERLAP,
      // The tenant's setting (ENGRAM_TENANT_POLICY_FILE), else the server's.
      redactSecrets: redactSecretsOf(tenants, config.ENGRAM_REDACT_SECRETS),
      boundaries: {
        timeGapMs: config.ENGRAM_BOUNDARY_GAP_MINUTES * 60_000,
        tokenCap: config.ENGRAM_BOUNDARY_TOKEN_CAP,
        messageCap: config.ENGRAM_BOUNDARY_MESSAGE_CAP,
      },
      maxExtractionAttempts: config.ENGRAM_EXTRACTION_MAX_ATTEMPTS,
      admission: {
        documents: {
          maxConcurrent: config.ENGRAM_INGEST_DOCUMENT_CONCURRENCY,
          ratePerMinute: config.ENGRAM_INGEST_DOCUMENT_RATE_PER_MIN,
        },
        appends: {
          maxConcurrent: config.ENGRAM_INGEST_APPEND_CONCURRENCY,
          ratePerMinute: config.ENGRAM_INGEST_APPEND_RATE_PER_MIN,
        },
      },
    },
    async close() {
      await store.close();
      await ownEmbedder?.close();
    },
  };
}
