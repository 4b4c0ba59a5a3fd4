import { contextRoutes } from '@engram/context';
import { governanceRoutes } from '@engram/governance';
import {
  ingestionRoutes,
  offlineJudge,
  openIngestionResources,
  type IngestionResources,
} from '@engram/ingestion';
import { openRetrievalResources, retrievalRoutes, type RetrievalResources } from '@engram/retrieval';
import { mkdirSync } from 'node:fs';
import {
  createLogger,
  serve,
  type Logger,
  type ServeContext,
  type ServiceRegistration,
} from '@engram/runtime';
import { isMysqlTarget, migrateToLatest, openStore } from '@engram/store';
import { storeTarget, type AllInOneConfig } from './config.js';
import { loadOrCreateLocalSecret } from './local-secret.js';

/** The four Engram services, as mounted together on one server. */
export function allServices(
  logger: Logger,
  retrieval: RetrievalResources,
  ingestion: IngestionResources,
  context: ServeContext,
): ServiceRegistration[] {
  const ingestionLogger = logger.child({ component: 'ingestion' });
  // Services call each other in-process, through the same interceptors as the network.
  const { handOff, segmenter } = ingestion.startWorkers({
    transport: context.localTransport,
    credentials: context.serviceCredentials,
    logger: ingestionLogger,
    // One embedding model per process: the detector shares retrieval's.
    judge: offlineJudge(retrieval.embedder),
  });
  return [
    ...governanceRoutes({ logger: logger.child({ component: 'governance' }) }),
    ...ingestionRoutes({
      logger: ingestionLogger,
      ...ingestion,
      handOff,
      onTailGrew: (tenantId, sessionId) => {
        segmenter.tailGrew(tenantId, sessionId);
      },
    }),
    ...retrievalRoutes({ logger: logger.child({ component: 'retrieval' }), ...retrieval }),
    ...contextRoutes({ logger: logger.child({ component: 'context' }) }),
  ];
}

/** Starts all four services on one port (no I/O at import). */
export async function createAllInOneServer(
  config: AllInOneConfig,
  options: { handleSignals?: boolean } = {},
) {
  const target = storeTarget(config);
  if (!isMysqlTarget(target)) mkdirSync(config.ENGRAM_DATA_DIR, { recursive: true, mode: 0o700 });
  // Migrate before any service opens the database (each service opens its own connections).
  let migrations: string[] = [];
  if (config.ENGRAM_MIGRATE_ON_START === 'true') {
    const store = openStore({ target });
    try {
      migrations = [...(await migrateToLatest(store.db)).applied];
    } finally {
      await store.close();
    }
  }
  const ingestion = openIngestionResources(config);
  const retrieval = await openRetrievalResources(
    config,
    createLogger({ service: 'all-in-one', level: config.ENGRAM_LOG_LEVEL }).child({ component: 'retrieval' }),
  );
  return serve({
    name: 'all-in-one',
    env: config,
    port: config.ENGRAM_PORT,
    services: (logger, { localTransport, serviceCredentials }) =>
      allServices(logger, retrieval, ingestion, { localTransport, serviceCredentials }),
    fallbackSecret: () => loadOrCreateLocalSecret(config.ENGRAM_DATA_DIR),
    onShutdown: async () => {
      await retrieval.close();
      await ingestion.close();
    },
    announce: (server) => ({
      dataDir: config.ENGRAM_DATA_DIR,
      store: isMysqlTarget(target) ? 'mysql' : target,
      migrationsApplied: migrations,
      try: `npx buf curl --protocol grpc --http2-prior-knowledge --list-methods ${server.url}`,
    }),
    ...options,
  });
}
