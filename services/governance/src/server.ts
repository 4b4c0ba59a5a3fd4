import { ContextService } from '@engram/contracts/context';
import { IngestionService } from '@engram/contracts/ingestion';
import {
  createLogger,
  createNetworkTransport,
  serve,
  serviceClient,
  type ServeOptions,
} from '@engram/runtime';
import type { GovernanceConfig } from './config.js';
import type { ExtractionRunner } from './extraction.js';
import { chooseExtractor } from './extractors.js';
import { ForgetWorker } from './forget.js';
import { registerGovernanceMetrics } from './metrics.js';
import { openGovernanceResources } from './resources.js';
import { governanceRoutes } from './routes.js';

/** Where ingestion listens when it runs as its own process on this machine (its DEFAULT_PORT). */
const LOCAL_INGESTION_URL = 'http://127.0.0.1:50062';
/** Where context listens when it runs as its own process on this machine (its DEFAULT_PORT). */
const LOCAL_CONTEXT_URL = 'http://127.0.0.1:50064';

/** Starts the governance service as its own process (no I/O at import). */
export function createGovernanceServer(
  config: GovernanceConfig,
  options: Pick<ServeOptions, 'handleSignals' | 'logDestination'> = {},
) {
  const resources = openGovernanceResources(
    config,
    createLogger({ service: 'governance', level: config.ENGRAM_LOG_LEVEL }),
  );
  let runner: ExtractionRunner | undefined;
  let forgetWorker: ForgetWorker | undefined;
  return serve({
    name: 'governance',
    env: config,
    port: config.ENGRAM_PORT,
    services: (logger, { serviceCredentials, metrics }) => {
      registerGovernanceMetrics(metrics, resources.store);
      const ingestion = serviceClient(
        IngestionService,
        createNetworkTransport(config.ENGRAM_INGESTION_URL ?? LOCAL_INGESTION_URL),
      );
      // Completes forget receipts: context and ingestion EraseSubject over the network, then the index.
      forgetWorker = new ForgetWorker({
        store: resources.store,
        logger: logger.child({ component: 'forget' }),
        ingestion,
        context: serviceClient(
          ContextService,
          createNetworkTransport(config.ENGRAM_CONTEXT_URL ?? LOCAL_CONTEXT_URL),
        ),
        credentials: serviceCredentials,
      });
      forgetWorker.start();
      return governanceRoutes({
        logger,
        ...resources,
        ingestion,
        ...chooseExtractor(resources.chatModel),
        onRunner: (r) => (runner = r),
        forgetWorker,
      });
    },
    onShutdown: async () => {
      await runner?.stop();
      await forgetWorker?.stop();
      await resources.close();
    },
    ...options,
  });
}
