import { z } from 'zod';
import { DEFAULT_BILINGUAL_MIX, DEFAULT_INFERENCE_THREADS } from '@engram/embeddings';
import {
  envEnum,
  envInt,
  envNumber,
  envString,
  parseEnv,
  serviceEnvSchema,
  ADAPTIVE_MIN_SLOTS,
  type ProcessAdmissionLimits,
} from '@engram/runtime';
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
  /**
   * How the embedded index (no QDRANT_URL) holds dense vectors in memory (decision 0034): `int8`
   * (default: a quarter of the memory, recall@10 0.989 of exact at 100k points) or `none` (float32,
   * exact). The file keeps float32 either way, so switching needs no reindex.
   */
  ENGRAM_VECTOR_QUANTIZATION: envEnum(['int8', 'none'], 'int8'),
  /** Directory containing the local models (default: fetched by npm install into .models). */
  ENGRAM_MODEL_DIR: envString(),
  /**
   * ONNX Runtime intra-op threads of each local model session (embedders, the local reranker;
   * decision 0042): 1 (default) runs each inference on the calling thread; `0` is ORT's own
   * default, a spinning pool of one thread per core.
   */
  ENGRAM_ONNX_THREADS: envInt(DEFAULT_INFERENCE_THREADS, 0, 64),
  /**
   * The local index embedder: `bilingual` (bge-small-zh-v1.5 and all-MiniLM-L6-v2 in one vector
   * space, decision 0021) or `bge-small-zh` (the Chinese-first model alone, the index of earlier
   * releases). Changing it makes the live index stale until a Reindex.
   */
  ENGRAM_LOCAL_EMBEDDINGS: envEnum(['bilingual', 'bge-small-zh'], 'bilingual'),
  /** Share of an English query's dense similarity taken from MiniLM (bilingual only), 0–1. */
  ENGRAM_BILINGUAL_MIX_EN: envNumber(DEFAULT_BILINGUAL_MIX.en, 0, 1),
  /** Share of a Chinese query's dense similarity taken from MiniLM (bilingual only), 0–1. */
  ENGRAM_BILINGUAL_MIX_ZH: envNumber(DEFAULT_BILINGUAL_MIX.zh, 0, 1),
  /** An OpenAI-compatible embeddings endpoint instead of the local model. */
  ENGRAM_EMBEDDINGS_BASE_URL: z.preprocess(unset, z.url({ error: 'expected an http(s) URL' }).optional()),
  ENGRAM_EMBEDDINGS_API_KEY: envString(),
  ENGRAM_EMBEDDINGS_MODEL: envString(),
  ENGRAM_EMBEDDINGS_DIMENSIONS: envInt(0, 0, 65_536),
  /**
   * The rerank stage of Search (decision 0022): `off` (default), `http` (an HTTP `/rerank`
   * endpoint: ENGRAM_RERANK_URL, ENGRAM_RERANK_MODEL, optional ENGRAM_RERANK_API_KEY and
   * ENGRAM_RERANK_API), or `local` (an ONNX cross-encoder in the models directory, the folder
   * ENGRAM_RERANK_MODEL under ENGRAM_MODEL_DIR).
   */
  ENGRAM_RERANKER: envEnum(['off', 'http', 'local'], 'off'),
  ENGRAM_RERANK_URL: z.preprocess(unset, z.url({ error: 'expected an http(s) URL' }).optional()),
  ENGRAM_RERANK_MODEL: envString(),
  ENGRAM_RERANK_API_KEY: envString(),
  /** The request shape of ENGRAM_RERANK_URL: `cohere` (Cohere, Jina, vLLM) or `tei`. */
  ENGRAM_RERANK_API: envEnum(['cohere', 'tei'], 'cohere'),
  ENGRAM_RERANK_TIMEOUT_MS: envInt(10_000, 100, 120_000),
  /** `local` only: (query, document) pairs per inference (1: each alone, scores independent). */
  ENGRAM_RERANK_BATCH: envInt(1, 1, 64),
  /**
   * When the live index was built with another embedding model or index text version (after an
   * upgrade), rebuild it in the background at start (`on`, with the indexer), or wait for
   * `npm run reindex` (`off`). Search answers lexical-only meanwhile.
   */
  ENGRAM_REBUILD_STALE_INDEX: envEnum(['on', 'off'], 'on'),
  /** Run the outbox indexer in this process (`on`), or leave it to another replica (`off`). */
  ENGRAM_INDEXER: envEnum(['on', 'off'], 'on'),
  /**
   * How long outbox rows an indexer took stay invisible to other indexers, ms: after an indexer
   * dies, its rows are indexed by another (or its restart) once the lease ends. Longer than the
   * slowest batch (32 rows embedded and written).
   */
  ENGRAM_INDEXER_LEASE_MS: envInt(30_000, 1_000, 600_000),
  /**
   * Lexical-first indexing (decision 0032): a new item is written with its BM25 vector at once and
   * gets its dense vector when the dense stage reaches it (`on`), or is embedded before it is
   * written at all (`off`, the behaviour before issue 19).
   */
  ENGRAM_INDEX_LEXICAL_FIRST: envEnum(['on', 'off'], 'on'),
  /**
   * Embed the indexer's passages with a local model on its own worker thread (`on`), so the main
   * thread keeps serving searches while it embeds; `off` shares the search embedder (one copy of the
   * model in memory, about 150 MB less). Ignored with a remote embeddings endpoint.
   */
  ENGRAM_INDEX_EMBED_THREAD: envEnum(['on', 'off'], 'on'),
  /**
   * The niceness of that thread on Linux (0–19, decision 0047): when the cores are short, the
   * kernel gives them to the calls this process and its neighbours serve before the indexer's
   * passages, which are searchable lexically meanwhile. `0` schedules it like everything else.
   */
  ENGRAM_INDEX_EMBED_NICE: envInt(10, 0, 19),
  /**
   * Embed Search's queries with the local models on a worker thread of their own (`on`, decision
   * 0042), so the event loop keeps routing other calls during each inference; `off` embeds on the
   * event loop (the main thread then holds its own copy of the models). Ignored with a remote
   * embeddings endpoint.
   */
  ENGRAM_SEARCH_EMBED_THREAD: envEnum(['on', 'off'], 'on'),
  /**
   * While an outbox loop has a backlog (a pass leased a full batch), the dense stage embeds only
   * rounds and memories, and one batch of document chunks at most per this long (from the end of
   * the previous one), ms; `0`: it never holds chunks back. The lexical stage gets the cores first
   * (a document's chunks become searchable sooner).
   */
  ENGRAM_INDEX_DENSE_YIELD_MS: envInt(30_000, 0, 600_000),
  /**
   * Outbox rows the bulk loop (documents' chunks) leases per pass, lexical-first; the
   * conversational loop keeps 128. Larger passes write a large document's points in fewer Qdrant
   * requests and outbox statements.
   */
  ENGRAM_INDEX_BULK_BATCH: envInt(128, 1, 4096),
  /**
   * Search calls this process executes at once (decision 0033); `0` turns the process admission
   * off. Eight on two cores: a Search spends most of its time waiting for the index, the database
   * and the embedder, and 150 Search/s at ~50 ms each keep about eight in flight.
   */
  ENGRAM_SEARCH_MAX_CONCURRENT: envInt(8, 0, 10_000),
  /** Search calls that may wait for a slot (FIFO); beyond, RESOURCE_EXHAUSTED `OVERLOADED`. */
  ENGRAM_SEARCH_MAX_QUEUE: envInt(32, 0, 100_000),
  /**
   * The longest a Search may wait for a slot, ms: one expected to wait longer is refused at once
   * (`OVERLOADED` with a `google.rpc.RetryInfo` of the expected wait).
   */
  ENGRAM_SEARCH_MAX_QUEUE_WAIT_MS: envInt(100, 0, 60_000),
  /**
   * The average Search execution time the process admission steers for, ms (decision 0046): its
   * slots shrink while executions are slower (down to two) and grow back while they are faster
   * and calls wait. Set it above the method's execution time on an idle machine; `0` keeps
   * `ENGRAM_SEARCH_MAX_CONCURRENT` slots.
   */
  ENGRAM_SEARCH_TARGET_EXECUTION_MS: envInt(0, 0, 600_000),
} as const;

/** The process admission of Search (decision 0033) of a configuration. */
export function searchAdmissionLimits(
  config: Pick<
    RetrievalDataConfig,
    | 'ENGRAM_SEARCH_MAX_CONCURRENT'
    | 'ENGRAM_SEARCH_MAX_QUEUE'
    | 'ENGRAM_SEARCH_MAX_QUEUE_WAIT_MS'
    | 'ENGRAM_SEARCH_TARGET_EXECUTION_MS'
  >,
): ProcessAdmissionLimits {
  return {
    maxConcurrent: config.ENGRAM_SEARCH_MAX_CONCURRENT,
    maxQueue: config.ENGRAM_SEARCH_MAX_QUEUE,
    maxQueueWaitMs: config.ENGRAM_SEARCH_MAX_QUEUE_WAIT_MS,
    targetExecutionMs: config.ENGRAM_SEARCH_TARGET_EXECUTION_MS,
    minConcurrent: ADAPTIVE_MIN_SLOTS,
  };
}

/** The cross-variable rules of {@link retrievalEnvShape} (also applied by the all-in-one). */
export function refineRetrievalEnv(
  env: z.output<z.ZodObject<typeof retrievalEnvShape>>,
  ctx: z.RefinementCtx,
): void {
  if (env.ENGRAM_EMBEDDINGS_BASE_URL !== undefined) {
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
  }
  if (env.ENGRAM_RERANKER === 'http' && env.ENGRAM_RERANK_URL === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['ENGRAM_RERANK_URL'],
      message: 'required with ENGRAM_RERANKER=http',
    });
  }
  if (env.ENGRAM_RERANKER !== 'off' && env.ENGRAM_RERANK_MODEL === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['ENGRAM_RERANK_MODEL'],
      message: `required with ENGRAM_RERANKER=${env.ENGRAM_RERANKER}`,
    });
  }
}

const schema = serviceEnvSchema(DEFAULT_PORT).extend(retrievalEnvShape).superRefine(refineRetrievalEnv);

export type RetrievalConfig = z.output<typeof schema>;
/** The data-plane part of any configuration that embeds retrieval. */
export type RetrievalDataConfig = z.output<z.ZodObject<typeof retrievalEnvShape>>;

/** Parses the environment once, at start; a bad variable fails with its name. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): RetrievalConfig {
  return parseEnv(schema, env);
}
