import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

/**
 * Row types of the source of truth, as Kysely sees them. Conventions (decision 0005):
 * - ids are ULIDs (CHAR(26), time-sortable); `tenant_id` is on every row;
 * - times are UTC epoch milliseconds (BIGINT) named `*_at`; nullable where optional;
 * - structured values are JSON text (`*_json`) encoded by the repositories;
 * - booleans are 0/1 integers; enums are their proto value names without the prefix.
 */
export interface Database {
  memories: MemoriesTable;
  memory_revisions: MemoryRevisionsTable;
  documents: DocumentsTable;
  chunks: ChunksTable;
  sessions: SessionsTable;
  session_states: SessionStatesTable;
  messages: MessagesTable;
  mem_cells: MemCellsTable;
  extraction_jobs: ExtractionJobsTable;
  outbox: OutboxTable;
  request_ids: RequestIdsTable;
  reindex_jobs: ReindexJobsTable;
}

export interface MemoriesTable {
  id: string;
  tenant_id: string;
  owner_id: string;
  /** '' unless scope is ORG. */
  org_id: string;
  scope: string;
  type: string;
  /** '' for non-FACT memories. */
  namespace: string;
  mkey: string;
  value_json: string | null;
  text: string;
  evergreen: number;
  source_kind: string;
  confidence: number;
  status: string;
  status_reason: string;
  supersedes_id: string | null;
  superseded_by_id: string | null;
  evidence_json: string;
  language_code: string;
  metadata_json: string;
  content_hash: string;
  occurred_at: number | null;
  created_at: number;
  updated_at: number;
  expires_at: number | null;
  valid_from: number | null;
  valid_until: number | null;
  version: number;
}

export interface MemoryRevisionsTable {
  id: string;
  tenant_id: string;
  memory_id: string;
  version: number;
  action: string;
  actor_kind: string;
  actor_id: string;
  reason: string;
  rule: string;
  before_json: string | null;
  after_json: string | null;
  changed_paths_json: string;
  request_id: string;
  extraction_job_id: string | null;
  created_at: number;
}

export interface DocumentsTable {
  id: string;
  tenant_id: string;
  owner_id: string;
  org_id: string;
  scope: string;
  display_name: string;
  mime_type: string;
  source_uri: string;
  metadata_json: string;
  content_hash: string;
  size_bytes: number;
  char_count: number;
  chunk_count: number;
  state: string;
  chunk_size: number;
  chunk_overlap: number;
  keep_tables_whole: number;
  keep_code_whole: number;
  failure_reason: string;
  failure_message: string;
  created_at: number;
  updated_at: number;
  version: number;
}

export interface ChunksTable {
  id: string;
  tenant_id: string;
  document_id: string;
  ordinal: number;
  kind: string;
  text: string;
  start_offset: number;
  end_offset: number;
  overlap_prefix_chars: number;
  header_prefix_chars: number;
  token_count: number;
  heading_path_json: string;
  created_at: number;
}

export interface SessionsTable {
  id: string;
  tenant_id: string;
  owner_id: string;
  display_name: string;
  /** Client's own conversation id, unique per owner; NULL when not set. */
  external_id: string | null;
  language_code: string;
  time_zone: string;
  metadata_json: string;
  status: string;
  message_count: number;
  last_sequence: number;
  last_message_at: number | null;
  /** First sequence of the open tail (messages not yet in a MemCell). */
  open_from_sequence: number;
  /** `last_message_at`, or `created_at` while the session has no message: the ListSessions order. */
  activity_at: number;
  created_at: number;
  updated_at: number;
  closed_at: number | null;
  version: number;
}

/** Owned by the context service: rolling summary, key points, open loops, compaction mark. */
export interface SessionStatesTable {
  session_id: string;
  tenant_id: string;
  summary: string;
  summary_token_count: number;
  key_points_json: string;
  open_loops_json: string;
  compacted_through_sequence: number;
  summary_memory_id: string | null;
  updated_at: number;
  version: number;
  last_compaction_at: number | null;
  /** The compaction mark ingestion has acknowledged (`MarkMessagesCompacted`). */
  mark_acknowledged_through: Generated<number>;
}

export interface MessagesTable {
  id: string;
  tenant_id: string;
  session_id: string;
  sequence: number;
  role: string;
  content: string;
  participant_name: string;
  tool_call_id: string;
  tool_calls_json: string;
  token_count: number;
  compacted: number;
  mem_cell_id: string | null;
  metadata_json: string;
  occurred_at: number;
  created_at: number;
}

export interface MemCellsTable {
  id: string;
  tenant_id: string;
  session_id: string;
  first_sequence: number;
  last_sequence: number;
  message_count: number;
  token_count: number;
  reason: string;
  status: string;
  attempts: number;
  extraction_job_id: string | null;
  last_error: string;
  /** ErrorReason name of the latest failed attempt; '' if none failed. */
  last_error_reason: string;
  /** The flush reason or the judge's rationale; '' for rule boundaries. */
  boundary_note: string;
  /** When the next hand-off attempt is due (PENDING after a failure); NULL: now. */
  next_attempt_at: number | null;
  opened_at: number;
  /** `occurred_at` of the last message. */
  last_message_at: number;
  closed_at: number;
  created_at: number;
  updated_at: number;
}

export interface ExtractionJobsTable {
  id: string;
  tenant_id: string;
  owner_id: string;
  mem_cell_id: string;
  session_id: string;
  state: string;
  extractors_json: string;
  attempts: number;
  result_json: string;
  usage_json: string;
  language_code: string;
  error_json: string | null;
  request_id: string;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
}

/**
 * The transactional outbox: one row per change of searchable data, written in the same
 * transaction as the change, consumed in `id` order by retrieval's indexer alone.
 */
export interface OutboxTable {
  id: Generated<number>;
  tenant_id: string;
  /** What changed: MEMORY, CHUNK, ROUND, DOCUMENT, SESSION, SUBJECT. */
  aggregate_kind: string;
  aggregate_id: string;
  /** UPSERT (re-read the row and index it) or DELETE (remove its points). */
  operation: string;
  payload_json: string;
  created_at: number;
  /** Earliest time a (re)try may run; backoff after failures. */
  available_at: number;
  attempts: number;
  last_error: string;
  processed_at: number | null;
  /** Set when the row failed `maxAttempts` times: parked with its error, not retried. */
  parked_at: number | null;
}

/** Remembered `request_id`s: a retried create returns its first result instead of writing twice. */
export interface RequestIdsTable {
  tenant_id: string;
  subject: string;
  /** The RPC, e.g. `engram.governance.v1.GovernanceService/CreateMemory`. */
  method: string;
  request_id: string;
  /** sha256 of the canonical request, to refuse a reused id with a different body. */
  request_hash: string;
  /** What the first call returned (JSON), e.g. the created resource's id. */
  result_json: string;
  created_at: number;
  expires_at: number;
}

export type MemoryRow = Selectable<MemoriesTable>;
export type NewMemoryRow = Insertable<MemoriesTable>;
export type MemoryRowUpdate = Updateable<MemoriesTable>;
export type OutboxRow = Selectable<OutboxTable>;

/** Owned by retrieval: a tenant-scoped rebuild (FULL) or drift repair (MISSING_ONLY) of the index. */
export interface ReindexJobsTable {
  id: string;
  tenant_id: string;
  creator: string;
  kinds_json: string;
  mode: string;
  state: string;
  rows_total: number;
  rows_scanned: number;
  points_upserted: number;
  points_deleted: number;
  rows_unchanged: number;
  error_count: number;
  error_samples_json: string;
  error_json: string | null;
  embedding_model: string;
  embedding_dimensions: number;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  completed_at: number | null;
}
