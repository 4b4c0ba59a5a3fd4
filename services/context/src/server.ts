import { ContextService } from '@engram/contracts/context';
import { GovernanceService } from '@engram/contracts/governance';
import { IngestionService } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { createLogger, moduleContext, networkPeers, serve, type ServeOptions } from '@engram/runtime';
import type { ContextConfig } from './config.js';
import { contextModule } from './module.js';
import { openContextResources } from './resources.js';

/** Where the other services listen when they run as their own processes on this machine. */
const LOCAL_URLS = {
  governance: 'http://127.0.0.1:50061',
  ingestion: 'http://127.0.0.1:50062',
  retrieval: 'http://127.0.0.1:50063',
} as const;

/** Starts the context service as its own process (no I/O at import). */
export function createContextServer(
  config: ContextConfig,
  options: Pick<ServeOptions, 'handleSignals' | 'logDestination'> = {},
) {
  const resources = openContextResources(
    config,
    {},
    createLogger({ service: 'context', level: config.ENGRAM_LOG_LEVEL, format: config.ENGRAM_LOG_FORMAT }),
  );
  const peers = networkPeers({
    [GovernanceService.typeName]: config.ENGRAM_GOVERNANCE_URL ?? LOCAL_URLS.governance,
    [IngestionService.typeName]: config.ENGRAM_INGESTION_URL ?? LOCAL_URLS.ingestion,
    [RetrievalService.typeName]: config.ENGRAM_RETRIEVAL_URL ?? LOCAL_URLS.retrieval,
  });
  return serve({
    name: 'context',
    env: config,
    port: config.ENGRAM_PORT,
    modules: (logger, serving) => [
      // The gateway routes (`/v1/`, `/mcp`) call this process's own ContextService in-process.
      contextModule(
        resources,
        moduleContext(logger, serving, (service) =>
          service.typeName === ContextService.typeName ? serving.localTransport : peers(service),
        ),
      ),
    ],
    onShutdown: () => resources.close(),
    ...options,
  });
}
