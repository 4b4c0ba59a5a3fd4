import { serve } from '@engram/runtime';
import type { ContextConfig } from './config.js';
import { contextRoutes } from './routes.js';

/** Starts the context service as its own process (no I/O at import). */
export function createContextServer(config: ContextConfig, options: { handleSignals?: boolean } = {}) {
  return serve({
    name: 'context',
    env: config,
    port: config.ENGRAM_PORT,
    services: (logger) => contextRoutes({ logger }),
    ...options,
  });
}
