import type { Client } from '@connectrpc/connect';
import type { GovernanceService } from '@engram/contracts/governance';
import type { IngestionService } from '@engram/contracts/ingestion';
import type { RetrievalService } from '@engram/contracts/retrieval';
import type { ChatModel, StreamingChatModel } from '@engram/llm';
import type { Logger, ServiceCredentials } from '@engram/runtime';
import type { SessionStateRepository, Store } from '@engram/store';
import type { BackgroundWork } from './background-work.js';
import type { ContextSettings } from './config.js';
import type { SessionLocks } from './session-locks.js';

/** What the context service's handlers are built from (assembled once by `contextModule`). */
export interface ContextDeps {
  readonly logger: Logger;
  /** Context's own connection to the source of truth (session states, request ids). */
  readonly store: Store;
  readonly states: SessionStateRepository;
  /** Clients of the other services (in-process in the all-in-one, gRPC otherwise). */
  readonly ingestion: Client<typeof IngestionService>;
  readonly governance: Client<typeof GovernanceService>;
  readonly retrieval: Client<typeof RetrievalService>;
  /** Context's own `service` credential (ingestion `MarkMessagesCompacted`). */
  readonly credentials: ServiceCredentials;
  readonly settings: ContextSettings;
  /** The configured chat model (compaction, Chat), if any. */
  readonly chatModel?: ChatModel & StreamingChatModel;
  /** Serializes the writes of one session's state within this process. */
  readonly locks: SessionLocks;
  /** What the handlers leave running after they answer; the module's `stop` waits for it. */
  readonly background: BackgroundWork;
}
