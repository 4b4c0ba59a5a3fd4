import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  HttpReranker,
  LocalReranker,
  OpenAIEmbedder,
  ThreadedEmbedder,
  localEmbedder,
  resolveModelRoot,
  type Embedder,
  type LocalEmbedderRecipe,
  type Reranker,
} from '@engram/embeddings';
import { describeError, indexPassMetrics, type Logger, type ProcessAdmissionLimits } from '@engram/runtime';
import {
  ReindexJobRepository,
  failStaleReindexJobs,
  isMysqlTarget,
  openStore,
  storeTarget,
  type Store,
} from '@engram/store';
import { createEmbeddedStore, createQdrantStore, type VectorStore } from '@engram/vector-index';
import { searchAdmissionLimits, type RetrievalDataConfig } from './config.js';
import { ensureLiveIndex, indexSpec, type LiveIndex } from './indexer/collections.js';
import { Indexer } from './indexer/indexer.js';
import { rebuildCollection } from './indexer/rebuild.js';
import { ReindexWorker } from './indexer/reindex-worker.js';

/** Everything the retrieval service runs on, opened from configuration. */
export interface RetrievalResources {
  readonly store: Store;
  readonly vectors: VectorStore;
  readonly embedder: Embedder;
  /** Present when a reranker is configured. */
  readonly reranker?: Reranker;
  readonly live: LiveIndex;
  /** Present when this process runs the indexer (its worker is the module's to start). */
  readonly indexer?: Indexer;
  /** Runs tenant-scoped reindex jobs accepted by this process (closed by the module's stop). */
  readonly reindex: ReindexWorker;
  /** The process admission of Search (decision 0033); absent, Search is not gated. */
  readonly searchAdmission?: ProcessAdmissionLimits;
  /** Cancels a rebuild still running, then closes the index, the models and the database. */
  close(): Promise<void>;
}

/** The vector index of a configuration: Qdrant, or the embedded index in the data directory. */
export function createVectorStore(
  config: Pick<
    RetrievalDataConfig,
    'QDRANT_URL' | 'QDRANT_API_KEY' | 'ENGRAM_DATA_DIR' | 'ENGRAM_VECTOR_QUANTIZATION'
  >,
): VectorStore {
  return config.QDRANT_URL === undefined
    ? createEmbeddedStore({
        path: join(config.ENGRAM_DATA_DIR, 'vectors'),
        quantization: config.ENGRAM_VECTOR_QUANTIZATION,
      })
    : createQdrantStore({
        url: config.QDRANT_URL,
        ...(config.QDRANT_API_KEY === undefined ? {} : { apiKey: config.QDRANT_API_KEY }),
      });
}

/**
 * The embedding model of a configuration: an OpenAI-compatible endpoint, or the local models —
 * bge-small-zh-v1.5 and all-MiniLM-L6-v2 as one bilingual vector space (the default), or
 * bge-small-zh-v1.5 alone. The local models run on a worker thread of their own with
 * `ENGRAM_SEARCH_EMBED_THREAD` on (the default), so a query's inference never holds the event loop
 * that routes every other call; `off` runs them on the calling thread.
 */
export function createEmbedder(config: RetrievalDataConfig): Embedder {
  if (config.ENGRAM_EMBEDDINGS_BASE_URL !== undefined) {
    return new OpenAIEmbedder({
      baseURL: config.ENGRAM_EMBEDDINGS_BASE_URL,
      apiKey: config.ENGRAM_EMBEDDINGS_API_KEY ?? '',
      model: config.ENGRAM_EMBEDDINGS_MODEL ?? '',
      dimensions: config.ENGRAM_EMBEDDINGS_DIMENSIONS,
    });
  }
  const recipe = localRecipe(config);
  return config.ENGRAM_SEARCH_EMBED_THREAD === 'on' ? new ThreadedEmbedder(recipe) : localEmbedder(recipe);
}

/** The local embedder of a configuration, as plain data a thread can build it from. */
function localRecipe(config: RetrievalDataConfig): LocalEmbedderRecipe {
  const modelRoot = resolveModelRoot(config.ENGRAM_MODEL_DIR);
  const threads = config.ENGRAM_ONNX_THREADS;
  if (config.ENGRAM_LOCAL_EMBEDDINGS === 'bge-small-zh') return { kind: 'local', modelRoot, threads };
  return {
    kind: 'bilingual',
    modelRoot,
    threads,
    mix: { en: config.ENGRAM_BILINGUAL_MIX_EN, zh: config.ENGRAM_BILINGUAL_MIX_ZH },
  };
}

/**
 * The indexer's embedder: with a local model and `ENGRAM_INDEX_EMBED_THREAD` on, the same model on
 * its own worker thread, so embedding passages never holds the event loop that serves searches
 * (decision 0032) nor delays a query's embedding, at `ENGRAM_INDEX_EMBED_NICE` (decision 0047);
 * otherwise the search embedder itself.
 */
export function createIndexEmbedder(config: RetrievalDataConfig, embedder: Embedder): Embedder {
  if (config.ENGRAM_EMBEDDINGS_BASE_URL !== undefined || config.ENGRAM_INDEX_EMBED_THREAD === 'off')
    return embedder;
  return new ThreadedEmbedder({ ...localRecipe(config), nice: config.ENGRAM_INDEX_EMBED_NICE });
}

/** The reranker of a configuration, or undefined when `ENGRAM_RERANKER` is `off`. */
export function createReranker(config: RetrievalDataConfig): Reranker | undefined {
  switch (config.ENGRAM_RERANKER) {
    case 'off':
      return undefined;
    case 'http':
      return new HttpReranker({
        baseURL: config.ENGRAM_RERANK_URL ?? '',
        model: config.ENGRAM_RERANK_MODEL ?? '',
        ...(config.ENGRAM_RERANK_API_KEY === undefined ? {} : { apiKey: config.ENGRAM_RERANK_API_KEY }),
        api: config.ENGRAM_RERANK_API,
        timeoutMs: config.ENGRAM_RERANK_TIMEOUT_MS,
      });
    case 'local':
      return new LocalReranker({
        modelRoot: resolveModelRoot(config.ENGRAM_MODEL_DIR),
        model: config.ENGRAM_RERANK_MODEL ?? '',
        batchSize: config.ENGRAM_RERANK_BATCH,
        threads: config.ENGRAM_ONNX_THREADS,
      });
  }
}

/**
 * After an upgrade (another model or index text version): rebuilds the live collection into a new
 * generation in the background, swaps the alias, marks the live index current and wakes the
 * indexer, whose passes wait meanwhile. Search answers lexical-only until the swap
 * (DEGRADED_REASON_INDEX_STALE). A failure leaves indexing paused until a Reindex, and says so.
 * Once `closing()` answers true, the outcome is dropped (the index is being closed under it).
 */
function rebuildStaleIndex(
  deps: { store: Store; vectors: VectorStore; embedder: Embedder; live: LiveIndex; indexer: Indexer },
  logger: Logger,
  closing: () => boolean,
): Promise<void> {
  const { store, vectors, embedder, live, indexer } = deps;
  const target = indexSpec(embedder);
  logger.warn(
    { liveModel: live.spec.model, configuredModel: target.model },
    'the live index was built with another embedding model: rebuilding it in the background',
  );
  return rebuildCollection({ store, vectors, embedder, logger: logger.child({ component: 'rebuild' }) })
    .then((report) => {
      if (closing()) return;
      live.collection = report.collection;
      live.spec = target;
      live.stale = false;
      indexer.worker.wake();
      indexer.bulkWorker.wake();
      indexer.denseWorker.wake();
      logger.info(
        { collection: report.collection, points: report.points },
        'index rebuilt for the new model',
      );
    })
    .catch((error: unknown) => {
      if (closing()) return;
      logger.error(
        { err: describeError(error) },
        'rebuilding the index failed: run Reindex; indexing is paused until then',
      );
    });
}

/**
 * Opens the source of truth, the vector index (Qdrant, or the embedded index in the data
 * directory), the embedder and the reranker; ensures the live collection; builds the indexer
 * unless disabled (the module runs its worker). A live collection built with another embedding
 * model (or index text version) is rebuilt in the background (`ENGRAM_REBUILD_STALE_INDEX`,
 * default on), and Search answers lexical-only until the swap; with the rebuild off, the indexer
 * waits for a Reindex, and the log says so.
 */
export async function openRetrievalResources(
  config: RetrievalDataConfig,
  logger: Logger,
): Promise<RetrievalResources> {
  const target = storeTarget(config);
  if (!isMysqlTarget(target) || config.QDRANT_URL === undefined) {
    mkdirSync(config.ENGRAM_DATA_DIR, { recursive: true, mode: 0o700 });
  }
  const store = openStore({ target });
  const vectors = createVectorStore(config);
  const embedder = createEmbedder(config);
  // The indexer's own copy of the model, on a thread (only when this process indexes).
  const indexEmbedder = config.ENGRAM_INDEXER === 'on' ? createIndexEmbedder(config, embedder) : embedder;
  const reranker = createReranker(config);
  const closeEmbedders = async () => {
    await embedder.close();
    if (indexEmbedder !== embedder) await indexEmbedder.close();
  };
  try {
    // A configured local cross-encoder must be there: fail at start, not on the first search.
    if (reranker instanceof LocalReranker) await reranker.load();
    const live = await ensureLiveIndex(vectors, indexSpec(embedder));
    // Load the index now (the embedded one reads every point into memory), not on the first search.
    await live.index.count();
    const indexer =
      config.ENGRAM_INDEXER === 'on'
        ? new Indexer({
            store,
            embedder: indexEmbedder,
            index: live.index,
            logger: logger.child({ component: 'indexer' }),
            leaseMs: config.ENGRAM_INDEXER_LEASE_MS,
            lexicalFirst: config.ENGRAM_INDEX_LEXICAL_FIRST === 'on',
            denseYieldMaxMs: config.ENGRAM_INDEX_DENSE_YIELD_MS,
            bulkBatchSize: config.ENGRAM_INDEX_BULK_BATCH,
            paused: () => live.stale,
            metrics: indexPassMetrics(),
          })
        : undefined;
    let closing = false;
    let rebuilding: Promise<void> | undefined;
    if (live.stale && indexer !== undefined && config.ENGRAM_REBUILD_STALE_INDEX === 'on') {
      rebuilding = rebuildStaleIndex(
        { store, vectors, embedder: indexEmbedder, live, indexer },
        logger,
        () => closing,
      );
    } else if (live.stale) {
      logger.error(
        { liveModel: live.spec.model, configuredModel: indexSpec(embedder).model },
        'the live index was built with another embedding model: run Reindex; indexing is paused until then',
      );
    }
    // Jobs whose process died would otherwise block new jobs of their kinds forever.
    const stale = await failStaleReindexJobs(store, Date.now() - 10 * 60_000);
    if (stale > 0)
      logger.warn({ jobs: stale }, 'reindex jobs without progress for 10 minutes were marked FAILED');
    const reindex = new ReindexWorker({
      store,
      index: live.index,
      writer: indexer ?? new Indexer({ store, embedder, index: live.index, logger }),
      jobs: new ReindexJobRepository(store),
      logger: logger.child({ component: 'reindex' }),
    });
    return {
      store,
      vectors,
      embedder,
      ...(reranker === undefined ? {} : { reranker }),
      live,
      reindex,
      ...(indexer === undefined ? {} : { indexer }),
      searchAdmission: searchAdmissionLimits(config),
      close: async () => {
        closing = true;
        await vectors.close();
        // A rebuild still running fails on the closed index; let it settle before the rest goes.
        await rebuilding;
        await closeEmbedders();
        await reranker?.close();
        await store.close();
      },
    };
  } catch (error) {
    await vectors.close();
    await closeEmbedders();
    await reranker?.close();
    await store.close();
    throw error;
  }
}
