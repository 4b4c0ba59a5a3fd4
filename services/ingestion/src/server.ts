import { GovernanceService } from '@engram/contracts/governance';
import { createLogger, moduleContext, networkPeers, serve, type ServeOptions } from '@engram/runtime';
import type { IngestionConfig } from './config.js';
import { ingestionModule } from './module.js';
import { openIngestionResources } from './resources.js';

/** Where governance listens when it runs as its own process on this machine (its DEFAULT_PORT). */
const LOCAL_GOVERNANCE_URL = 'http://127.0.0.1:50061';

/** Starts the ingestion service as its own process (no I/O at import). */
export function createIngestionServer(
  config: IngestionConfig,
  options: Pick<ServeOptions, 'handleSignals' | 'logDestination'> = {},
) {
  const resources = openIngestionResources(
    config,
    {},
    createLogger({ service: 'ingestion', level: config.ENGRAM_LOG_LEVEL }, options.logDestination),
  );
  return serve({
    name: 'ingestion',
    env: config,
    port: config.ENGRAM_PORT,
    modules: (logger, serving) => [
      ingestionModule(
        resources,
        moduleContext(
          logger,
          serving,
          networkPeers({
            [GovernanceService.typeName]: config.ENGRAM_GOVERNANCE_URL ?? LOCAL_GOVERNANCE_URL,
          }),
        ),
      ),
    ],
    onShutdown: () => resources.close(),
    ...options,
  });
}
