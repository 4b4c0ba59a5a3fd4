/**
 * @engram/store: the source of truth. Schema and migrations, one repository per aggregate on
 * Kysely, and the transactional outbox, on MySQL/MariaDB (`mysql://…`) or SQLite (a file path).
 */
export { fromFlag, fromJson, toFlag, toJson, type JsonValue } from './codec.js';
export { storeEnvShape, storeTarget, type StoreEnv } from './config.js';
export { isMysqlTarget, openStore, type Store, type StoreOptions } from './database.js';
export { dialectOf, type DialectName } from './dialect.js';
export {
  DocumentRepository,
  type ChunkFilter,
  type ChunkKind,
  type ChunkRecord,
  type DeletedCounts,
  type DocumentFilter,
  type DocumentIdentity,
  type DocumentRecord,
  type DocumentState,
  type NewChunk,
  type NewDocument,
} from './documents.js';
export { etagMismatch, isDuplicate, mapDatabaseError } from './errors.js';
export {
  ExtractionJobRepository,
  type ExtractionJobFilter,
  type ExtractionJobPatch,
  type ExtractionJobRecord,
  type ExtractionJobState,
  type Extractor,
  type NewExtractionJob,
} from './extraction-jobs.js';
export {
  FORGET_RECEIPT_PAYLOAD_KEY,
  ForgetReceiptRepository,
  ZERO_FORGET_COUNTS,
  addForgetCounts,
  eraseLateExtractions,
  forgetPayload,
  forgetReceiptName,
  purgeRequestIds,
  type ForgetCountsRecord,
  type ForgetIndexProgress,
  type ForgetReceiptFilter,
  type ForgetReceiptPatch,
  type ForgetReceiptRecord,
  type ForgetReceiptState,
  type ForgetStep,
  type NewForgetReceipt,
} from './forget-receipts.js';
export { isId, newId } from './ids.js';
export {
  MemoryRepository,
  memoryContentHash,
  memoryVisibleTo,
  type ActorKind,
  type Evidence,
  type MemoryFilter,
  type MemoryPatch,
  type MemoryRecord,
  type MemoryRevisionRecord,
  type MemoryStatus,
  type MemoryType,
  type NewMemory,
  type PurgeOptions,
  type PurgedMemoryCounts,
  type RevisionAction,
  type RevisionInput,
  type Scope,
  type SourceKind,
  type Viewer,
} from './memories.js';
export { knownMigrations, migrateToLatest, type MigrationReport } from './migrator.js';
export {
  OutboxRepository,
  enqueueOutbox,
  type OutboxAggregate,
  type OutboxClass,
  type OutboxEntry,
  type OutboxEvent,
  type OutboxOperation,
} from './outbox.js';
export { decodePageToken, encodePageToken, toPage, type Page, type PageRequest } from './pagination.js';
export {
  ReindexJobRepository,
  failStaleReindexJobs,
  isTerminal,
  type ReindexErrorSample,
  type ReindexJobPatch,
  type ReindexJobRecord,
  type ReindexJobState,
  type ReindexKind,
  type ReindexMode,
} from './reindex-jobs.js';
export {
  REQUEST_ID_TTL_MS,
  checkRequestId,
  idempotent,
  forgetResults,
  previousResult,
  pruneRequestIds,
  rememberResult,
  requestHash,
  requestKeyOf,
  type RequestKey,
} from './request-ids.js';
export { viewerOf } from './visibility.js';
export type { Database } from './schema.js';
export {
  countSearchable,
  scanSearchable,
  searchableIds,
  type SearchableCounts,
  type SearchableRow,
} from './searchable-counts.js';
export {
  SessionStateRepository,
  type KeyPoint,
  type OpenLoop,
  type SessionStateInput,
  type SessionStateRecord,
  type StateItemOrigin,
} from './session-states.js';
export {
  SessionRepository,
  type AppendOptions,
  type BoundaryReason,
  type CloseMemCellInput,
  type DeletedSessionCounts,
  type MemCellRecord,
  type MemCellStatus,
  type MemCellStatusPatch,
  type MessageFilter,
  type MessageRecord,
  type MessageRole,
  type MessageWindow,
  type NewMessage,
  type NewSession,
  type SessionCounts,
  type SessionFilter,
  type SessionPatch,
  type SessionRecord,
  type SessionStatus,
  type ToolCall,
} from './sessions.js';
export { recentOwners, type RecentOwner } from './recent-owners.js';
export { inTransaction, run, type Executor, type TransactionOptions } from './store-context.js';
export {
  readSubjectSnapshot,
  SnapshotConflict,
  type SnapshotKind,
  type SnapshotWriteCounts,
  type SubjectSnapshot,
  writeSubjectSnapshot,
} from './portability.js';
