import { serve } from '@engram/runtime';
import type { IngestionConfig } from './config.js';
import { openIngestionResources } from './resources.js';
import { ingestionRoutes } from './routes.js';

/** Starts the ingestion service as its own process (no I/O at import). */
export function createIngestionServer(config: IngestionConfig, options: { handleSignals?: boolean } = {}) {
  const resources = openIngestionResources(config);
  return serve({
    name: 'ingestion',
    env: config,
    port: config.ENGRAM_PORT,
    services: (logger) => ingestionRoutes({ logger, ...resources }),
    onShutdown: () => resources.close(),
    ...options,
  });
}
