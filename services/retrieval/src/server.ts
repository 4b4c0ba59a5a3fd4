import { serve } from '@engram/runtime';
import type { RetrievalConfig } from './config.js';
import { retrievalRoutes } from './routes.js';

/** Starts the retrieval service as its own process (no I/O at import). */
export function createRetrievalServer(config: RetrievalConfig, options: { handleSignals?: boolean } = {}) {
  return serve({
    name: 'retrieval',
    env: config,
    port: config.ENGRAM_PORT,
    services: (logger) => retrievalRoutes({ logger }),
    ...options,
  });
}
