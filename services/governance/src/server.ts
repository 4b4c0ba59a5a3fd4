import { ContextService } from '@engram/contracts/context';
import { IngestionService } from '@engram/contracts/ingestion';
import { createLogger, moduleContext, networkPeers, serve, type ServeOptions } from '@engram/runtime';
import type { GovernanceConfig } from './config.js';
import { governanceModule } from './module.js';
import { openGovernanceResources } from './resources.js';

/** Where ingestion listens when it runs as its own process on this machine (its DEFAULT_PORT). */
const LOCAL_INGESTION_URL = 'http://127.0.0.1:50062';
/** Where context listens when it runs as its own process on this machine (its DEFAULT_PORT). */
const LOCAL_CONTEXT_URL = 'http://127.0.0.1:50064';

/**
 * Starts the governance service as its own process (no I/O at import): its resources, its module
 * with ingestion and context over the network, and the resources closed after the module stopped.
 */
export function createGovernanceServer(
  config: GovernanceConfig,
  options: Pick<ServeOptions, 'handleSignals' | 'logDestination'> = {},
) {
  const resources = openGovernanceResources(
    config,
    createLogger({ service: 'governance', level: config.ENGRAM_LOG_LEVEL }),
  );
  return serve({
    name: 'governance',
    env: config,
    port: config.ENGRAM_PORT,
    modules: (logger, serving) => [
      governanceModule(
        resources,
        moduleContext(
          logger,
          serving,
          networkPeers({
            [IngestionService.typeName]: config.ENGRAM_INGESTION_URL ?? LOCAL_INGESTION_URL,
            [ContextService.typeName]: config.ENGRAM_CONTEXT_URL ?? LOCAL_CONTEXT_URL,
          }),
        ),
      ),
    ],
    onShutdown: () => resources.close(),
    ...options,
  });
}
