import type { Client, ServiceImpl } from '@connectrpc/connect';
import type { ContextService } from '@engram/contracts/context';
import type { GovernanceService } from '@engram/contracts/governance';
import type { IngestionService } from '@engram/contracts/ingestion';
import type { RetrievalService } from '@engram/contracts/retrieval';
import type { Embedder } from '@engram/embeddings';
import type { ChatModel, StreamingChatModel } from '@engram/llm';
import type { Logger, ServiceCredentials } from '@engram/runtime';
import type { Store } from '@engram/store';
import { buildContext } from './build-context.js';
import { chat } from './chat-api.js';
import { Compactions } from './compaction-api.js';
import type { ContextSettings } from './config.js';
import { modelCompactor, offlineCompactor, type Compactor } from './domain/compaction/index.js';
import { createEraseHandlers } from './erase.js';
import { SessionLocks } from './session-locks.js';
import { createStateHandlers } from './state-api.js';

/** What the context service is built from. */
export interface ContextDeps {
  readonly logger: Logger;
  /** Context's own connection to the source of truth (session states, request ids). */
  readonly store: Store;
  /** Clients of the other services (in-process in the all-in-one, gRPC otherwise). */
  readonly ingestion: Client<typeof IngestionService>;
  readonly governance: Client<typeof GovernanceService>;
  readonly retrieval: Client<typeof RetrievalService>;
  /** Context's own `service` credential (ingestion `MarkMessagesCompacted`). */
  readonly credentials: ServiceCredentials;
  readonly settings: ContextSettings;
  /** The configured chat model (compaction, Chat), if any. */
  readonly chatModel?: ChatModel & StreamingChatModel;
  /** The local embedding model, for offline compaction; called at first use. */
  readonly embedder: () => Embedder;
}

/** `engram.context.v1.ContextService`. */
export function createContextService(deps: ContextDeps): ServiceImpl<typeof ContextService> {
  const locks = new SessionLocks();
  let offline: Compactor | undefined;
  const compactions = new Compactions({
    ...deps,
    locks,
    offlineCompactor: () => (offline ??= offlineCompactor(deps.embedder())),
    ...(deps.chatModel !== undefined
      ? { modelCompactor: modelCompactor(deps.chatModel), modelName: deps.chatModel.model }
      : {}),
  });
  const buildDeps = {
    ...deps,
    ...(deps.chatModel !== undefined ? { defaultModel: deps.chatModel.model } : {}),
  };
  return {
    ...createEraseHandlers({ logger: deps.logger, store: deps.store }),
    ...createStateHandlers({ ...deps, locks }),
    async buildContext(request, ctx) {
      return (await buildContext(buildDeps, request, ctx)).response;
    },
    compactSession: (request, ctx) => compactions.compactSession(request, ctx),
    chat: (request, ctx) =>
      chat(
        { ...buildDeps, compactions, ...(deps.chatModel ? { chatModel: deps.chatModel } : {}) },
        request,
        ctx,
      ),
  } as ServiceImpl<typeof ContextService>;
}
