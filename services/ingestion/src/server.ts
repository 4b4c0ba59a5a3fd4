import { LocalEmbedder, resolveModelRoot } from '@engram/embeddings';
import { chatModelFromEnv } from '@engram/llm';
import { createNetworkTransport, serve, type ServeOptions } from '@engram/runtime';
import type { IngestionConfig } from './config.js';
import { openIngestionResources } from './resources.js';
import { boundaryJudge } from './segmenter.js';
import { ingestionRoutes } from './routes.js';

/** Where governance listens when it runs as its own process on this machine (its DEFAULT_PORT). */
const LOCAL_GOVERNANCE_URL = 'http://127.0.0.1:50061';

/** Starts the ingestion service as its own process (no I/O at import). */
export function createIngestionServer(
  config: IngestionConfig,
  options: Pick<ServeOptions, 'handleSignals' | 'logDestination'> = {},
) {
  const resources = openIngestionResources(config);
  return serve({
    name: 'ingestion',
    env: config,
    port: config.ENGRAM_PORT,
    services: (logger, { serviceCredentials }) => {
      const { handOff, segmenter } = resources.startWorkers({
        transport: createNetworkTransport(config.ENGRAM_GOVERNANCE_URL ?? LOCAL_GOVERNANCE_URL),
        credentials: serviceCredentials,
        logger,
        judge: boundaryJudge(
          chatModelFromEnv(config, { logger }),
          () => new LocalEmbedder({ modelRoot: resolveModelRoot(config.ENGRAM_MODEL_DIR) }),
        ),
      });
      return ingestionRoutes({
        logger,
        ...resources,
        handOff,
        onTailGrew: (tenantId, sessionId) => {
          segmenter.tailGrew(tenantId, sessionId);
        },
      });
    },
    onShutdown: () => resources.close(),
    ...options,
  });
}
