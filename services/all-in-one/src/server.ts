import { contextRoutes, contextSettings, type ContextSettings } from '@engram/context';
import { IngestionService } from '@engram/contracts/ingestion';
import { ContextService } from '@engram/contracts/context';
import { GovernanceService } from '@engram/contracts/governance';
import { RetrievalService } from '@engram/contracts/retrieval';
import { chatModelFromEnv, type ChatModel, type StreamingChatModel } from '@engram/llm';
import {
  ForgetWorker,
  governanceRoutes,
  openGovernanceResources,
  chooseExtractor,
  registerGovernanceMetrics,
  type ExtractionRunner,
  type GovernanceResources,
} from '@engram/governance';
import {
  ingestionRoutes,
  boundaryJudge,
  openIngestionResources,
  type IngestionResources,
} from '@engram/ingestion';
import {
  openRetrievalResources,
  registerRetrievalMetrics,
  retrievalRoutes,
  type RetrievalResources,
} from '@engram/retrieval';
import { mkdirSync } from 'node:fs';
import {
  createLogger,
  loadOrCreateLocalSecret,
  serve,
  serviceClient,
  type Logger,
  type ServeContext,
  type ServeOptions,
  type ServiceRegistration,
} from '@engram/runtime';
import { isMysqlTarget, migrateToLatest, openStore, type Store } from '@engram/store';
import { storeTarget, type AllInOneConfig } from './config.js';

/** The four Engram services, as mounted together on one server. */
export function allServices(
  logger: Logger,
  retrieval: RetrievalResources,
  ingestion: IngestionResources,
  governance: GovernanceResources & { onRunner?: (runner: ExtractionRunner) => void },
  context: ServeContext,
  contextResources: {
    readonly store: Store;
    readonly settings: ContextSettings;
    readonly chatModel?: ChatModel & StreamingChatModel;
  },
  onForgetWorker?: (worker: ForgetWorker) => void,
): ServiceRegistration[] {
  // Completes forget receipts: context and ingestion EraseSubject in-process, then the index.
  const forgetWorker = new ForgetWorker({
    store: governance.store,
    logger: logger.child({ component: 'forget' }),
    ingestion: serviceClient(IngestionService, context.localTransport),
    context: serviceClient(ContextService, context.localTransport),
    credentials: context.serviceCredentials,
  });
  forgetWorker.start();
  onForgetWorker?.(forgetWorker);
  // One registry for the whole process: the outbox, index and extraction-job gauges.
  registerRetrievalMetrics(context.metrics, retrieval.store);
  registerGovernanceMetrics(context.metrics, governance.store);
  const ingestionLogger = logger.child({ component: 'ingestion' });
  // Services call each other in-process, through the same interceptors as the network.
  const { handOff, segmenter } = ingestion.startWorkers({
    transport: context.localTransport,
    credentials: context.serviceCredentials,
    logger: ingestionLogger,
    // The configured model, else the offline detector (sharing retrieval's embedding model).
    judge: boundaryJudge(governance.chatModel, () => retrieval.embedder),
  });
  return [
    ...governanceRoutes({
      logger: logger.child({ component: 'governance' }),
      ...governance,
      ingestion: serviceClient(IngestionService, context.localTransport),
      ...chooseExtractor(governance.chatModel),
      forgetWorker,
    }),
    ...ingestionRoutes({
      logger: ingestionLogger,
      ...ingestion,
      handOff,
      onTailGrew: (tenantId, sessionId) => {
        segmenter.tailGrew(tenantId, sessionId);
      },
    }),
    ...retrievalRoutes({ logger: logger.child({ component: 'retrieval' }), ...retrieval }),
    ...contextRoutes({
      logger: logger.child({ component: 'context' }),
      ...contextResources,
      ingestion: serviceClient(IngestionService, context.localTransport),
      governance: serviceClient(GovernanceService, context.localTransport),
      retrieval: serviceClient(RetrievalService, context.localTransport),
      credentials: context.serviceCredentials,
      // Offline compaction shares retrieval's embedding model.
      embedder: () => retrieval.embedder,
    }),
  ];
}

/** Starts all four services on one port (no I/O at import). */
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
  const logger = createLogger({ service: 'all-in-one', level: config.ENGRAM_LOG_LEVEL });
  const ingestion = openIngestionResources(config);
  const governance = openGovernanceResources(config, logger.child({ component: 'governance' }));
  const retrieval = await openRetrievalResources(config, logger.child({ component: 'retrieval' }));
  // Context's own connection to the source of truth (session states).
  const contextStore = openStore({ target });
  const contextChatModel = chatModelFromEnv(config, { logger: logger.child({ component: 'context' }) });
  let runner: ExtractionRunner | undefined;
  let forgetWorker: ForgetWorker | undefined;
  return serve({
    name: 'all-in-one',
    env: config,
    port: config.ENGRAM_PORT,
    services: (logger, context) =>
      allServices(
        logger,
        retrieval,
        ingestion,
        { ...governance, onRunner: (r) => (runner = r) },
        context,
        {
          store: contextStore,
          settings: contextSettings(config),
          ...(contextChatModel !== undefined ? { chatModel: contextChatModel } : {}),
        },
        (w) => (forgetWorker = w),
      ),
    fallbackSecret: () => loadOrCreateLocalSecret(config.ENGRAM_DATA_DIR),
    onShutdown: async () => {
      // Ingestion's hand-off waits for governance's answers: stop it first.
      await ingestion.close();
      await runner?.stop();
      await forgetWorker?.stop();
      await governance.close();
      await contextStore.close();
      await retrieval.close();
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
