/**
 * `@engram/client`: the Engram SDK for browsers and Node, over Connect or gRPC-Web (fetch).
 * For gRPC over HTTP/2 and streamed ingestion in Node, import `@engram/client/node`.
 */
import { EngramClient, type EngramClientOptions } from './client.js';
import { webTransport, type WebTransportOptions } from './web.js';

/** Options of {@link Engram}: where to connect, the protocol, auth, deadline and retries. */
export interface EngramOptions extends EngramClientOptions, WebTransportOptions {}

/**
 * An Engram client over fetch:
 * `new Engram({ baseUrl: 'http://127.0.0.1:50051', token })`, then `engram.memories`,
 * `engram.sessions`, `engram.documents`, `engram.search`, `engram.context`, `engram.chat`.
 */
export class Engram extends EngramClient {
  constructor(options: EngramOptions) {
    super(webTransport(options), options, { bidiStreaming: false });
  }
}

export { Code } from '@connectrpc/connect';
export type { TokenProvider } from './auth.js';
export { newRequestId, type CallOptions, type FieldsOf } from './caller.js';
export type { Chat, ChatInit } from './chat.js';
export {
  DEFAULT_TIMEOUT_MS,
  EngramClient,
  type EngramClientOptions,
  type RawClients,
  type TransportCapabilities,
} from './client.js';
export type { IngestContent } from './content.js';
export type { BuildContextInit, Context } from './context.js';
export {
  MAX_PART_BYTES,
  UNARY_INGEST_LIMIT_BYTES,
  type Documents,
  type IngestOptions,
  type ListChunksInit,
  type ListDocumentsInit,
} from './documents.js';
export { EngramError, grpcCodeName, isEngramError, toEngramError, type EngramErrorInit } from './errors.js';
export type {
  CreateMemoryInit,
  DeleteMemoryOptions,
  ListMemoriesInit,
  Memories,
  UpdateMemoryInit,
} from './memories.js';
export { Paginated, type Page } from './pagination.js';
export type { ImportOptions, Portability } from './portability.js';
export { DEFAULT_RETRY_POLICY, retryDelayMs, type RetryPolicy } from './retry.js';
export type { Search, SearchInit } from './search.js';
export type {
  AppendOptions,
  FlushOptions,
  ListMessagesInit,
  ListSessionsInit,
  MessageInit,
  SessionInit,
  Sessions,
} from './sessions.js';
export { webTransport, type WebProtocol, type WebTransportOptions } from './web.js';

// The generated messages and enums of each service, e.g. `governance.MemoryType.FACT`.
export * as common from '@engram/contracts/common';
export * as context from '@engram/contracts/context';
export * as governance from '@engram/contracts/governance';
export * as ingestion from '@engram/contracts/ingestion';
export * as retrieval from '@engram/contracts/retrieval';
// The enums and messages most calls need, at the top level.
export { ErrorReason, Scope } from '@engram/contracts/common';
export type {
  BuildContextResponse,
  ChatDeltaEvent,
  ChatResponse,
  SessionState,
} from '@engram/contracts/context';
export { MemoryStatus, MemoryType, type Memory } from '@engram/contracts/governance';
export {
  IngestPhase,
  MessageRole,
  type Chunk,
  type Document,
  type IngestDocumentResponse,
  type IngestProgress,
  type Message,
  type Session,
} from '@engram/contracts/ingestion';
export type { SearchResponse, SearchResult } from '@engram/contracts/retrieval';
