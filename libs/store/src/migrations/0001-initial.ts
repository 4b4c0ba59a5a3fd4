import { sql, type Kysely } from 'kysely';
import { autoIncrementType, dialectOf, tableOptions } from '../dialect.js';

/**
 * The initial schema: every table of blueprint §1 with `tenant_id` on every row, and indexes for
 * the real access paths. Forward-only: later changes are new migrations, never edits here.
 *
 * Text sizes (characters are up to 4 bytes in utf8mb4): identifiers are VARCHAR; memory text
 * (8,000 chars) is `text` (64 KiB); messages (32,000 chars) and chunks are `mediumtext` (16 MiB).
 * Only VARCHAR/CHAR/BIGINT columns are indexed (MySQL cannot index TEXT without a prefix).
 */
// Migrations see the schema as it was when they were written, not today's types (Kysely's advice).
// Long on purpose: the whole initial schema as one DDL script, read top to bottom and never edited
// once released (see above), so it is not split into functions.
// eslint-disable-next-line @typescript-eslint/no-explicit-any, max-lines-per-function
export async function up(db: Kysely<any>): Promise<void> {
  const mediumtext = sql`mediumtext`;
  const dialect = dialectOf(db);
  const options = tableOptions(dialect);
  const id = (name = 'id') => [name, 'char(26)'] as const;
  const tenant = ['tenant_id', 'varchar(64)'] as const;
  const time = 'bigint';

  await db.schema
    .createTable('memories')
    .addColumn(...id(), (c) => c.primaryKey())
    .addColumn(...tenant, (c) => c.notNull())
    .addColumn('owner_id', 'varchar(128)', (c) => c.notNull())
    .addColumn('org_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('scope', 'varchar(16)', (c) => c.notNull())
    .addColumn('type', 'varchar(16)', (c) => c.notNull())
    .addColumn('namespace', 'varchar(128)', (c) => c.notNull())
    .addColumn('mkey', 'varchar(128)', (c) => c.notNull())
    .addColumn('value_json', mediumtext)
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('evergreen', 'smallint', (c) => c.notNull())
    .addColumn('source_kind', 'varchar(32)', (c) => c.notNull())
    .addColumn('confidence', 'double precision', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('status_reason', 'varchar(1024)', (c) => c.notNull())
    .addColumn('supersedes_id', 'char(26)')
    .addColumn('superseded_by_id', 'char(26)')
    .addColumn('evidence_json', mediumtext, (c) => c.notNull())
    .addColumn('language_code', 'varchar(35)', (c) => c.notNull())
    .addColumn('metadata_json', mediumtext, (c) => c.notNull())
    .addColumn('content_hash', 'char(64)', (c) => c.notNull())
    .addColumn('occurred_at', time)
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('updated_at', time, (c) => c.notNull())
    .addColumn('expires_at', time)
    .addColumn('valid_from', time)
    .addColumn('valid_until', time)
    .addColumn('version', 'integer', (c) => c.notNull())
    .modifyEnd(options)
    .execute();
  // Listing and filtering an owner's memories by type and status.
  await db.schema
    .createIndex('memories_owner_type_status')
    .on('memories')
    .columns(['tenant_id', 'owner_id', 'type', 'status'])
    .execute();
  // Supersede: the active fact with the same namespace/key.
  await db.schema
    .createIndex('memories_owner_namespace_key')
    .on('memories')
    .columns(['tenant_id', 'owner_id', 'namespace', 'mkey', 'status'])
    .execute();
  // Dedupe: identical content already stored for the owner.
  await db.schema
    .createIndex('memories_owner_content_hash')
    .on('memories')
    .columns(['tenant_id', 'owner_id', 'content_hash'])
    .execute();
  // ORG-scoped visibility and the expiry sweep.
  await db.schema
    .createIndex('memories_org_status')
    .on('memories')
    .columns(['tenant_id', 'org_id', 'status'])
    .execute();
  await db.schema
    .createIndex('memories_status_expires')
    .on('memories')
    .columns(['status', 'expires_at'])
    .execute();

  await db.schema
    .createTable('memory_revisions')
    .addColumn(...id(), (c) => c.primaryKey())
    .addColumn(...tenant, (c) => c.notNull())
    .addColumn('memory_id', 'char(26)', (c) => c.notNull().references('memories.id').onDelete('cascade'))
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('action', 'varchar(16)', (c) => c.notNull())
    .addColumn('actor_kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('actor_id', 'varchar(128)', (c) => c.notNull())
    .addColumn('reason', 'varchar(1024)', (c) => c.notNull())
    .addColumn('rule', 'varchar(64)', (c) => c.notNull())
    .addColumn('before_json', mediumtext)
    .addColumn('after_json', mediumtext)
    .addColumn('changed_paths_json', 'text', (c) => c.notNull())
    .addColumn('request_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('extraction_job_id', 'char(26)')
    .addColumn('created_at', time, (c) => c.notNull())
    .modifyEnd(options)
    .execute();
  await db.schema
    .createIndex('memory_revisions_memory_version')
    .on('memory_revisions')
    .columns(['memory_id', 'version'])
    .unique()
    .execute();

  await db.schema
    .createTable('documents')
    .addColumn(...id(), (c) => c.primaryKey())
    .addColumn(...tenant, (c) => c.notNull())
    .addColumn('owner_id', 'varchar(128)', (c) => c.notNull())
    .addColumn('org_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('scope', 'varchar(16)', (c) => c.notNull())
    .addColumn('display_name', 'varchar(512)', (c) => c.notNull())
    .addColumn('mime_type', 'varchar(128)', (c) => c.notNull())
    .addColumn('source_uri', 'varchar(2048)', (c) => c.notNull())
    .addColumn('metadata_json', mediumtext, (c) => c.notNull())
    .addColumn('content_hash', 'char(64)', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    .addColumn('char_count', 'bigint', (c) => c.notNull())
    .addColumn('chunk_count', 'integer', (c) => c.notNull())
    .addColumn('state', 'varchar(16)', (c) => c.notNull())
    .addColumn('chunk_size', 'integer', (c) => c.notNull())
    .addColumn('chunk_overlap', 'integer', (c) => c.notNull())
    .addColumn('keep_tables_whole', 'smallint', (c) => c.notNull())
    .addColumn('keep_code_whole', 'smallint', (c) => c.notNull())
    .addColumn('failure_reason', 'varchar(64)', (c) => c.notNull())
    .addColumn('failure_message', 'varchar(1024)', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('updated_at', time, (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .modifyEnd(options)
    .execute();
  await db.schema
    .createIndex('documents_owner_content_hash')
    .on('documents')
    .columns(['tenant_id', 'owner_id', 'content_hash'])
    .execute();
  await db.schema
    .createIndex('documents_owner_id')
    .on('documents')
    .columns(['tenant_id', 'owner_id', 'id'])
    .execute();
  await db.schema
    .createIndex('documents_org')
    .on('documents')
    .columns(['tenant_id', 'org_id', 'id'])
    .execute();
  // PLATFORM-scoped listing, and the sweep that fails abandoned INGESTING documents.
  await db.schema
    .createIndex('documents_scope')
    .on('documents')
    .columns(['tenant_id', 'scope', 'id'])
    .execute();
  await db.schema.createIndex('documents_state').on('documents').columns(['state', 'updated_at']).execute();

  await db.schema
    .createTable('chunks')
    .addColumn(...id(), (c) => c.primaryKey())
    .addColumn(...tenant, (c) => c.notNull())
    .addColumn('document_id', 'char(26)', (c) => c.notNull().references('documents.id').onDelete('cascade'))
    .addColumn('ordinal', 'integer', (c) => c.notNull())
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('text', mediumtext, (c) => c.notNull())
    .addColumn('start_offset', 'bigint', (c) => c.notNull())
    .addColumn('end_offset', 'bigint', (c) => c.notNull())
    .addColumn('overlap_prefix_chars', 'integer', (c) => c.notNull())
    .addColumn('header_prefix_chars', 'integer', (c) => c.notNull())
    .addColumn('token_count', 'integer', (c) => c.notNull())
    .addColumn('heading_path_json', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .modifyEnd(options)
    .execute();
  await db.schema
    .createIndex('chunks_document_ordinal')
    .on('chunks')
    .columns(['document_id', 'ordinal'])
    .unique()
    .execute();

  await db.schema
    .createTable('sessions')
    .addColumn(...id(), (c) => c.primaryKey())
    .addColumn(...tenant, (c) => c.notNull())
    .addColumn('owner_id', 'varchar(128)', (c) => c.notNull())
    .addColumn('display_name', 'varchar(512)', (c) => c.notNull())
    .addColumn('external_id', 'varchar(256)')
    .addColumn('language_code', 'varchar(35)', (c) => c.notNull())
    .addColumn('time_zone', 'varchar(64)', (c) => c.notNull())
    .addColumn('metadata_json', mediumtext, (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('message_count', 'bigint', (c) => c.notNull())
    .addColumn('last_sequence', 'bigint', (c) => c.notNull())
    .addColumn('last_message_at', time)
    .addColumn('open_from_sequence', 'bigint', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('updated_at', time, (c) => c.notNull())
    .addColumn('closed_at', time)
    .addColumn('version', 'integer', (c) => c.notNull())
    .modifyEnd(options)
    .execute();
  await db.schema
    .createIndex('sessions_owner_id')
    .on('sessions')
    .columns(['tenant_id', 'owner_id', 'id'])
    .execute();
  await db.schema
    .createIndex('sessions_owner_external_id')
    .on('sessions')
    .columns(['tenant_id', 'owner_id', 'external_id'])
    .unique()
    .execute();

  await db.schema
    .createTable('session_states')
    .addColumn('session_id', 'char(26)', (c) => c.primaryKey().references('sessions.id').onDelete('cascade'))
    .addColumn(...tenant, (c) => c.notNull())
    .addColumn('summary', mediumtext, (c) => c.notNull())
    .addColumn('summary_token_count', 'integer', (c) => c.notNull())
    .addColumn('key_points_json', mediumtext, (c) => c.notNull())
    .addColumn('open_loops_json', mediumtext, (c) => c.notNull())
    .addColumn('compacted_through_sequence', 'bigint', (c) => c.notNull())
    .addColumn('summary_memory_id', 'char(26)')
    .addColumn('updated_at', time, (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .modifyEnd(options)
    .execute();

  await db.schema
    .createTable('mem_cells')
    .addColumn(...id(), (c) => c.primaryKey())
    .addColumn(...tenant, (c) => c.notNull())
    .addColumn('session_id', 'char(26)', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('first_sequence', 'bigint', (c) => c.notNull())
    .addColumn('last_sequence', 'bigint', (c) => c.notNull())
    .addColumn('message_count', 'integer', (c) => c.notNull())
    .addColumn('token_count', 'integer', (c) => c.notNull())
    .addColumn('reason', 'varchar(32)', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('extraction_job_id', 'char(26)')
    .addColumn('last_error', 'varchar(1024)', (c) => c.notNull())
    .addColumn('opened_at', time, (c) => c.notNull())
    .addColumn('closed_at', time, (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('updated_at', time, (c) => c.notNull())
    .modifyEnd(options)
    .execute();
  await db.schema
    .createIndex('mem_cells_session_first')
    .on('mem_cells')
    .columns(['session_id', 'first_sequence'])
    .unique()
    .execute();
  // Hand-off sweep: cells waiting for (re)extraction.
  await db.schema.createIndex('mem_cells_status').on('mem_cells').columns(['status', 'updated_at']).execute();

  await db.schema
    .createTable('messages')
    .addColumn(...id(), (c) => c.primaryKey())
    .addColumn(...tenant, (c) => c.notNull())
    .addColumn('session_id', 'char(26)', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('sequence', 'bigint', (c) => c.notNull())
    .addColumn('role', 'varchar(16)', (c) => c.notNull())
    .addColumn('content', mediumtext, (c) => c.notNull())
    .addColumn('participant_name', 'varchar(64)', (c) => c.notNull())
    .addColumn('tool_call_id', 'varchar(128)', (c) => c.notNull())
    .addColumn('tool_calls_json', mediumtext, (c) => c.notNull())
    .addColumn('token_count', 'integer', (c) => c.notNull())
    .addColumn('compacted', 'smallint', (c) => c.notNull())
    .addColumn('mem_cell_id', 'char(26)')
    .addColumn('metadata_json', mediumtext, (c) => c.notNull())
    .addColumn('occurred_at', time, (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .modifyEnd(options)
    .execute();
  await db.schema
    .createIndex('messages_session_sequence')
    .on('messages')
    .columns(['session_id', 'sequence'])
    .unique()
    .execute();

  await db.schema
    .createTable('extraction_jobs')
    .addColumn(...id(), (c) => c.primaryKey())
    .addColumn(...tenant, (c) => c.notNull())
    .addColumn('owner_id', 'varchar(128)', (c) => c.notNull())
    .addColumn('mem_cell_id', 'char(26)', (c) => c.notNull())
    .addColumn('state', 'varchar(16)', (c) => c.notNull())
    .addColumn('extractors_json', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('result_json', mediumtext, (c) => c.notNull())
    .addColumn('usage_json', 'text', (c) => c.notNull())
    .addColumn('language_code', 'varchar(35)', (c) => c.notNull())
    .addColumn('error_json', 'text')
    .addColumn('request_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('updated_at', time, (c) => c.notNull())
    .addColumn('completed_at', time)
    .modifyEnd(options)
    .execute();
  await db.schema
    .createIndex('extraction_jobs_mem_cell')
    .on('extraction_jobs')
    .columns(['tenant_id', 'mem_cell_id', 'id'])
    .execute();
  await db.schema
    .createIndex('extraction_jobs_state')
    .on('extraction_jobs')
    .columns(['state', 'updated_at'])
    .execute();

  await db.schema
    .createTable('outbox')
    .addColumn('id', autoIncrementType(dialect), (c) => c.primaryKey().autoIncrement())
    .addColumn(...tenant, (c) => c.notNull())
    .addColumn('aggregate_kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('aggregate_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('operation', 'varchar(16)', (c) => c.notNull())
    .addColumn('payload_json', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('available_at', time, (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('last_error', 'varchar(1024)', (c) => c.notNull())
    .addColumn('processed_at', time)
    // A poison row: failed too often, kept with its error for inspection, no longer retried.
    .addColumn('parked_at', time)
    .modifyEnd(options)
    .execute();
  // The indexer's work queue: unprocessed, unparked rows in order.
  await db.schema
    .createIndex('outbox_pending')
    .on('outbox')
    .columns(['processed_at', 'parked_at', 'available_at', 'id'])
    .execute();
  await db.schema
    .createIndex('outbox_aggregate')
    .on('outbox')
    .columns(['aggregate_kind', 'aggregate_id'])
    .execute();

  // Owned by retrieval: tenant-scoped rebuilds and drift repairs of the vector index.
  await db.schema
    .createTable('reindex_jobs')
    .addColumn(...id(), (c) => c.primaryKey())
    .addColumn(...tenant, (c) => c.notNull())
    .addColumn('creator', 'varchar(128)', (c) => c.notNull())
    .addColumn('kinds_json', 'varchar(128)', (c) => c.notNull())
    .addColumn('mode', 'varchar(16)', (c) => c.notNull())
    .addColumn('state', 'varchar(16)', (c) => c.notNull())
    .addColumn('rows_total', 'bigint', (c) => c.notNull())
    .addColumn('rows_scanned', 'bigint', (c) => c.notNull())
    .addColumn('points_upserted', 'bigint', (c) => c.notNull())
    .addColumn('points_deleted', 'bigint', (c) => c.notNull())
    .addColumn('rows_unchanged', 'bigint', (c) => c.notNull())
    .addColumn('error_count', 'bigint', (c) => c.notNull())
    .addColumn('error_samples_json', mediumtext, (c) => c.notNull())
    .addColumn('error_json', 'text')
    .addColumn('embedding_model', 'varchar(256)', (c) => c.notNull())
    .addColumn('embedding_dimensions', 'integer', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('updated_at', time, (c) => c.notNull())
    .addColumn('started_at', time)
    .addColumn('completed_at', time)
    .modifyEnd(options)
    .execute();
  await db.schema
    .createIndex('reindex_jobs_tenant')
    .on('reindex_jobs')
    .columns(['tenant_id', 'id'])
    .execute();
  await db.schema
    .createIndex('reindex_jobs_state')
    .on('reindex_jobs')
    .columns(['state', 'updated_at'])
    .execute();

  await db.schema
    .createTable('request_ids')
    .addColumn(...tenant, (c) => c.notNull())
    .addColumn('subject', 'varchar(128)', (c) => c.notNull())
    .addColumn('method', 'varchar(128)', (c) => c.notNull())
    .addColumn('request_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('request_hash', 'char(64)', (c) => c.notNull())
    .addColumn('result_json', mediumtext, (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('expires_at', time, (c) => c.notNull())
    .addPrimaryKeyConstraint('request_ids_pk', ['tenant_id', 'subject', 'method', 'request_id'])
    .modifyEnd(options)
    .execute();
  await db.schema.createIndex('request_ids_expires').on('request_ids').columns(['expires_at']).execute();
}
