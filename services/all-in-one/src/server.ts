import { mkdirSync } from 'node:fs';
import { contextModule, openContextResources } from '@engram/context';
import { governanceModule, openGovernanceResources } from '@engram/governance';
import { ingestionModule, openIngestionResources } from '@engram/ingestion';
import { openRetrievalResources, retrievalModule } from '@engram/retrieval';
import {
  LOCAL_SERVICE_SECRET_FILE,
  createLogger,
  loadOrCreateLocalSecret,
  moduleContext,
  serve,
  type ServeOptions,
} from '@engram/runtime';
import { isMysqlTarget, migrateToLatest, openStore } from '@engram/store';
import { storeTarget, type AllInOneConfig } from './config.js';
import { studioRoute } from './studio.js';

/**
 * Starts all four services on one port (no I/O at import). The process only composes: it opens
 * each package's resources (the embedding model is retrieval's, shared), mounts the four modules
 * with in-process peers, and closes the resources in reverse order after `serve` has stopped the
 * modules' workers (context, retrieval, ingestion, then governance: the hand-off stops before the
 * governance jobs it waits for).
 */
export async function createAllInOneServer(
  config: AllInOneConfig,
  options: Pick<ServeOptions, 'handleSignals' | 'logDestination'> = {},
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
  const logger = createLogger({
    service: 'all-in-one',
    level: config.ENGRAM_LOG_LEVEL,
    format: config.ENGRAM_LOG_FORMAT,
  });
  const governance = openGovernanceResources(config, logger.child({ component: 'governance' }));
  const retrieval = await openRetrievalResources(config, logger.child({ component: 'retrieval' }));
  // Ingestion's topic detector and context's offline compaction share retrieval's embedding model.
  const shared = { embedder: () => retrieval.embedder };
  const ingestion = openIngestionResources(config, shared, logger.child({ component: 'ingestion' }));
  const context = openContextResources(config, shared, logger.child({ component: 'context' }));
  return serve({
    name: 'all-in-one',
    env: config,
    port: config.ENGRAM_PORT,
    modules: (logger, serving) => {
      // Services call each other in-process, through the same interceptors as the network.
      const mounted = (component: string) =>
        moduleContext(logger.child({ component }), serving, () => serving.localTransport);
      return [
        governanceModule(governance, mounted('governance')),
        ingestionModule(ingestion, mounted('ingestion')),
        retrievalModule(retrieval, mounted('retrieval')),
        contextModule(context, mounted('context')),
      ];
    },
    // The Studio's files and its loopback sign-in (decision 0038).
    httpRoutes: [studioRoute(config, governance.store)],
    fallbackSecret: () => loadOrCreateLocalSecret(config.ENGRAM_DATA_DIR),
    // The service key is never the user-facing one, configured or not (decision 0024).
    fallbackServiceSecret: () => loadOrCreateLocalSecret(config.ENGRAM_DATA_DIR, LOCAL_SERVICE_SECRET_FILE),
    onShutdown: async () => {
      await context.close();
      await ingestion.close();
      await governance.close();
      await retrieval.close();
    },
    announce: (server) => ({
      dataDir: config.ENGRAM_DATA_DIR,
      store: isMysqlTarget(target) ? 'mysql' : target,
      migrationsApplied: migrations,
      try: `npx buf curl --protocol grpc --http2-prior-knowledge --list-methods ${server.url}`,
      // Beside the RPCs on the same port (HTTP/1.1 too; decision 0035), with a bearer token.
      openai: `${server.url}/v1`,
      mcp: `${server.url}/mcp`,
      studio: `${server.url}/studio/`,
    }),
    ...options,
  });
}
