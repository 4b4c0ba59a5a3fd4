import type { ServiceImpl } from '@connectrpc/connect';
import { RetrievalService } from '@engram/contracts/retrieval';
import {
  admitted,
  processAdmission,
  serviceModule,
  type ModuleContext,
  type ServiceModule,
} from '@engram/runtime';
import { IndexHandlers } from './index-handlers.js';
import { registerRetrievalMetrics, registerSearchMetrics } from './metrics.js';
import type { RetrievalResources } from './resources.js';
import { SearchHandlers } from './search-handlers.js';

/**
 * The retrieval package as a process mounts it: `RetrievalService` (Search and the index RPCs), the
 * outbox gauges on the process's metrics, and the indexer's three workers (the outbox loops of
 * conversational and bulk rows, and the dense stage) when this process runs the indexer. Its stop waits for the reindex jobs this process accepted (they fail `SHUTTING_DOWN`).
 */
export function retrievalModule(
  resources: RetrievalResources,
  context: ModuleContext,
): ServiceModule<typeof RetrievalService> {
  registerRetrievalMetrics(context.metrics, resources.store, () => resources.live.index);
  const { store, embedder, reranker, live, reindex, indexer } = resources;
  const service: ServiceImpl<typeof RetrievalService> = {
    ...new SearchHandlers({
      logger: context.logger,
      store,
      embedder,
      reranker,
      live,
      stageMetrics: registerSearchMetrics(context.metrics),
    }),
    ...new IndexHandlers({ store, embedder, live, reindex }),
  };
  if (resources.searchAdmission !== undefined) {
    // Per process, around the whole Search (decision 0033); the index RPCs are cheap or queue jobs.
    const method = `${RetrievalService.typeName}/${RetrievalService.method.search.name}`;
    const gate = processAdmission(context.metrics, method, resources.searchAdmission);
    service.search = admitted(gate, service.search);
  }
  return serviceModule(
    RetrievalService,
    service,
    indexer === undefined ? [] : [indexer.worker, indexer.bulkWorker, indexer.denseWorker],
    () => reindex.close(),
  );
}
