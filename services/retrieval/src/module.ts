import type { ServiceImpl } from '@connectrpc/connect';
import { RetrievalService } from '@engram/contracts/retrieval';
import { serviceModule, type ModuleContext, type ServiceModule } from '@engram/runtime';
import { IndexHandlers } from './index-handlers.js';
import { registerRetrievalMetrics } from './metrics.js';
import type { RetrievalResources } from './resources.js';
import { SearchHandlers } from './search-handlers.js';

/**
 * The retrieval package as a process mounts it: `RetrievalService` (Search and the index RPCs), the
 * outbox gauges on the process's metrics, and the indexer's worker when this process runs the
 * indexer. Its stop waits for the reindex jobs this process accepted (they fail `SHUTTING_DOWN`).
 */
export function retrievalModule(
  resources: RetrievalResources,
  context: ModuleContext,
): ServiceModule<typeof RetrievalService> {
  registerRetrievalMetrics(context.metrics, resources.store);
  const { store, embedder, reranker, live, reindex, indexer } = resources;
  const service: ServiceImpl<typeof RetrievalService> = {
    ...new SearchHandlers({ logger: context.logger, store, embedder, reranker, live }),
    ...new IndexHandlers({ store, embedder, live, reindex }),
  };
  return serviceModule(RetrievalService, service, indexer === undefined ? [] : [indexer.worker], () =>
    reindex.close(),
  );
}
