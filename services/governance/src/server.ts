import { serve } from '@engram/runtime';
import type { GovernanceConfig } from './config.js';
import { governanceRoutes } from './routes.js';

/** Starts the governance service as its own process (no I/O at import). */
export function createGovernanceServer(config: GovernanceConfig, options: { handleSignals?: boolean } = {}) {
  return serve({
    name: 'governance',
    env: config,
    port: config.ENGRAM_PORT,
    services: (logger) => governanceRoutes({ logger }),
    ...options,
  });
}
