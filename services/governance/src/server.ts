import { IngestionService } from '@engram/contracts/ingestion';
import { createLogger, createNetworkTransport, serve, serviceClient } from '@engram/runtime';
import type { GovernanceConfig } from './config.js';
import type { ExtractionRunner } from './extraction.js';
import { chooseExtractor } from './extractors.js';
import { openGovernanceResources } from './resources.js';
import { governanceRoutes } from './routes.js';

/** Where ingestion listens when it runs as its own process on this machine (its DEFAULT_PORT). */
const LOCAL_INGESTION_URL = 'http://127.0.0.1:50062';

/** Starts the governance service as its own process (no I/O at import). */
export function createGovernanceServer(config: GovernanceConfig, options: { handleSignals?: boolean } = {}) {
  const resources = openGovernanceResources(
    config,
    createLogger({ service: 'governance', level: config.ENGRAM_LOG_LEVEL }),
  );
  let runner: ExtractionRunner | undefined;
  return serve({
    name: 'governance',
    env: config,
    port: config.ENGRAM_PORT,
    services: (logger) =>
      governanceRoutes({
        logger,
        ...resources,
        ingestion: serviceClient(
          IngestionService,
          createNetworkTransport(config.ENGRAM_INGESTION_URL ?? LOCAL_INGESTION_URL),
        ),
        ...chooseExtractor(resources.chatModel),
        onRunner: (r) => (runner = r),
      }),
    onShutdown: async () => {
      await runner?.stop();
      await resources.close();
    },
    ...options,
  });
}
