import { contextRoutes } from '@engram/context';
import { governanceRoutes } from '@engram/governance';
import { ingestionRoutes } from '@engram/ingestion';
import { retrievalRoutes } from '@engram/retrieval';
import { serve, type Logger, type ServiceRegistration } from '@engram/runtime';
import type { AllInOneConfig } from './config.js';
import { loadOrCreateLocalSecret } from './local-secret.js';

/** The four Engram services, as mounted together on one server. */
export function allServices(logger: Logger): ServiceRegistration[] {
  return [
    ...governanceRoutes({ logger: logger.child({ component: 'governance' }) }),
    ...ingestionRoutes({ logger: logger.child({ component: 'ingestion' }) }),
    ...retrievalRoutes({ logger: logger.child({ component: 'retrieval' }) }),
    ...contextRoutes({ logger: logger.child({ component: 'context' }) }),
  ];
}

/** Starts all four services on one port (no I/O at import). */
export function createAllInOneServer(config: AllInOneConfig, options: { handleSignals?: boolean } = {}) {
  return serve({
    name: 'all-in-one',
    env: config,
    port: config.ENGRAM_PORT,
    services: allServices,
    fallbackSecret: () => loadOrCreateLocalSecret(config.ENGRAM_DATA_DIR),
    announce: (server) => ({
      dataDir: config.ENGRAM_DATA_DIR,
      try: `npx buf curl --protocol grpc --http2-prior-knowledge --list-methods ${server.url}`,
    }),
    ...options,
  });
}
