import { mkdirSync } from 'node:fs';
import { GovernanceService } from '@engram/contracts/governance';
import { IngestionService } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { LocalEmbedder, resolveModelRoot, type Embedder } from '@engram/embeddings';
import { chatModelFromEnv } from '@engram/llm';
import { createNetworkTransport, serve, serviceClient } from '@engram/runtime';
import { isMysqlTarget, openStore, storeTarget } from '@engram/store';
import { contextSettings, type ContextConfig } from './config.js';
import { contextRoutes } from './routes.js';

/** Where the other services listen when they run as their own processes on this machine. */
const LOCAL_URLS = {
  governance: 'http://127.0.0.1:50061',
  ingestion: 'http://127.0.0.1:50062',
  retrieval: 'http://127.0.0.1:50063',
} as const;

/** Starts the context service as its own process (no I/O at import). */
export function createContextServer(config: ContextConfig, options: { handleSignals?: boolean } = {}) {
  const target = storeTarget(config);
  if (!isMysqlTarget(target)) mkdirSync(config.ENGRAM_DATA_DIR, { recursive: true, mode: 0o700 });
  const store = openStore({ target });
  let embedder: Embedder | undefined;
  return serve({
    name: 'context',
    env: config,
    port: config.ENGRAM_PORT,
    services: (logger, { serviceCredentials }) => {
      const chatModel = chatModelFromEnv(config, { logger });
      return contextRoutes({
        logger,
        store,
        ingestion: serviceClient(
          IngestionService,
          createNetworkTransport(config.ENGRAM_INGESTION_URL ?? LOCAL_URLS.ingestion),
        ),
        governance: serviceClient(
          GovernanceService,
          createNetworkTransport(config.ENGRAM_GOVERNANCE_URL ?? LOCAL_URLS.governance),
        ),
        retrieval: serviceClient(
          RetrievalService,
          createNetworkTransport(config.ENGRAM_RETRIEVAL_URL ?? LOCAL_URLS.retrieval),
        ),
        credentials: serviceCredentials,
        settings: contextSettings(config),
        ...(chatModel !== undefined ? { chatModel } : {}),
        embedder: () =>
          (embedder ??= new LocalEmbedder({ modelRoot: resolveModelRoot(config.ENGRAM_MODEL_DIR) })),
      });
    },
    onShutdown: async () => {
      await embedder?.close();
      await store.close();
    },
    ...options,
  });
}
