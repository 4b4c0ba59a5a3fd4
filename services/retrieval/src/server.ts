import { createLogger, serve, type ServeOptions } from '@engram/runtime';
import type { RetrievalConfig } from './config.js';
import { registerRetrievalMetrics } from './metrics.js';
import { openRetrievalResources } from './resources.js';
import { retrievalRoutes } from './routes.js';

/** Starts the retrieval service as its own process (no I/O at import). */
export async function createRetrievalServer(
  config: RetrievalConfig,
  options: Pick<ServeOptions, 'handleSignals' | 'logDestination'> = {},
) {
  const resources = await openRetrievalResources(
    config,
    createLogger({ service: 'retrieval', level: config.ENGRAM_LOG_LEVEL }),
  );
  return serve({
    name: 'retrieval',
    env: config,
    port: config.ENGRAM_PORT,
    services: (logger, { metrics }) => {
      registerRetrievalMetrics(metrics, resources.store);
      return retrievalRoutes({ logger, ...resources });
    },
    onShutdown: () => resources.close(),
    ...options,
  });
}
