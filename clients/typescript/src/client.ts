import { createClient, type Client, type Transport } from '@connectrpc/connect';
import { ContextService } from '@engram/contracts/context';
import { GovernanceService } from '@engram/contracts/governance';
import { IngestionService } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { authorizedTransport, tokenSource, type TokenProvider } from './auth.js';
import { Caller } from './caller.js';
import { chatOf, type Chat } from './chat.js';
import { Context } from './context.js';
import { Documents } from './documents.js';
import { Memories } from './memories.js';
import { Portability } from './portability.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js';
import { searchOf, type Search } from './search.js';
import { Sessions } from './sessions.js';

/** The default deadline of a call, ms. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Options every client takes, whatever its transport. */
export interface EngramClientOptions {
  /** A bearer token (a JWT) sent on every call. */
  readonly token?: string;
  /**
   * Asked for the token before every request (wins over `token`), so short-lived tokens are
   * refreshed; may be async. A throw fails the call with UNAUTHENTICATED.
   */
  readonly tokenProvider?: TokenProvider;
  /** The deadline of each call, ms, retries included. Default 30 000. */
  readonly timeoutMs?: number;
  /** The retry policy (fields override {@link DEFAULT_RETRY_POLICY}), or `false` to never retry. */
  readonly retry?: Partial<RetryPolicy> | false;
}

/** What the transport can carry. */
export interface TransportCapabilities {
  /** Bidirectional streams (gRPC over HTTP/2): streamed ingestion. Default false. */
  readonly bidiStreaming?: boolean;
}

/** The generated clients of the four services, for what the facade does not cover (not retried). */
export interface RawClients {
  readonly governance: Client<typeof GovernanceService>;
  readonly ingestion: Client<typeof IngestionService>;
  readonly retrieval: Client<typeof RetrievalService>;
  readonly context: Client<typeof ContextService>;
}

/**
 * An Engram client over any Connect transport (e.g. one built with custom interceptors, or an
 * in-memory router in tests). `Engram` from `@engram/client` or `@engram/client/node` builds the
 * transport from a base URL.
 */
export class EngramClient {
  /** Memories: create, get, list, update, delete. */
  readonly memories: Memories;
  /** Sessions and their messages: create, get, list, append, messages, flush, delete. */
  readonly sessions: Sessions;
  /** Documents: ingest (streamed where the transport allows), get, list, chunks, delete. */
  readonly documents: Documents;
  /** Context assembly: build, state. */
  readonly context: Context;
  /** Hybrid search over memories and document chunks. */
  readonly search: Search;
  /** Chat with the configured model: an async iterator of deltas (`chat.events` for every event). */
  readonly chat: Chat;
  /** A user's whole memory as the Engram export format: `export()` its lines, `import(lines)` them back. */
  readonly portability: Portability;
  /** The generated clients, authorized but not retried. */
  readonly raw: RawClients;

  constructor(
    transport: Transport,
    options: EngramClientOptions = {},
    capabilities: TransportCapabilities = {},
  ) {
    const authorized = authorizedTransport(transport, tokenSource(options.token, options.tokenProvider));
    const caller = new Caller(authorized, {
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      retry: options.retry === false ? undefined : { ...DEFAULT_RETRY_POLICY, ...options.retry },
      bidiStreaming: capabilities.bidiStreaming ?? false,
    });
    this.memories = new Memories(caller);
    this.sessions = new Sessions(caller);
    this.documents = new Documents(caller);
    this.context = new Context(caller);
    this.search = searchOf(caller);
    this.chat = chatOf(caller);
    this.portability = new Portability(caller);
    this.raw = {
      governance: createClient(GovernanceService, authorized),
      ingestion: createClient(IngestionService, authorized),
      retrieval: createClient(RetrievalService, authorized),
      context: createClient(ContextService, authorized),
    };
  }
}
