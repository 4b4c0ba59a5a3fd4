import { mkdirSync } from 'node:fs';
import { serve } from '@engram/runtime';
import { isMysqlTarget, openStore, storeTarget } from '@engram/store';
import type { ContextConfig } from './config.js';
import { contextRoutes } from './routes.js';

/** Starts the context service as its own process (no I/O at import). */
export function createContextServer(config: ContextConfig, options: { handleSignals?: boolean } = {}) {
  const target = storeTarget(config);
  if (!isMysqlTarget(target)) mkdirSync(config.ENGRAM_DATA_DIR, { recursive: true, mode: 0o700 });
  const store = openStore({ target });
  return serve({
    name: 'context',
    env: config,
    port: config.ENGRAM_PORT,
    services: (logger) => contextRoutes({ logger, store }),
    onShutdown: () => store.close(),
    ...options,
  });
}
