import type { Kysely } from 'kysely';
import { dialectOf, tableOptions } from '../dialect.js';

/**
 * Forgetting a user (governance `ForgetUser`):
 * - `forget_receipts`: one row per request, never deleted; its state, the next step of the
 *   durable erasure, counts so far, the latest failure and the retry schedule, and the outbox id
 *   range its point deletions fall in (to tell when the indexer has applied them).
 * - `memory_revision_audits`: what is kept of the revisions of a hard-deleted memory, without
 *   content (no before/after, reason or actor): the revisions' foreign key cascades with their
 *   memory, so the audit records live beside them.
 * - an index to find the revisions a subject acted in (their actor is replaced by the receipt).
 */
// Migrations see the schema as it was when they were written, not today's types (Kysely's advice).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  const options = tableOptions(dialectOf(db));
  const time = 'bigint';

  await db.schema
    .createTable('forget_receipts')
    .addColumn('id', 'char(26)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('subject', 'varchar(256)', (c) => c.notNull())
    .addColumn('requested_by', 'varchar(256)', (c) => c.notNull())
    .addColumn('reason', 'varchar(1024)', (c) => c.notNull())
    .addColumn('request_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('state', 'varchar(16)', (c) => c.notNull())
    // The next step of the erasure: CONTEXT, INGESTION, SWEEP, INDEX, then DONE.
    .addColumn('step', 'varchar(16)', (c) => c.notNull())
    .addColumn('counts_json', 'text', (c) => c.notNull())
    // Outbox rows of the erasure have ids above `outbox_from_id` (and at most `outbox_to_id`,
    // set once every deleting step has committed).
    .addColumn('outbox_from_id', 'bigint', (c) => c.notNull())
    .addColumn('outbox_to_id', 'bigint')
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', time)
    .addColumn('last_error_reason', 'varchar(64)', (c) => c.notNull())
    .addColumn('last_error', 'varchar(1024)', (c) => c.notNull())
    // The cutoff: content created at or before it is erased.
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('updated_at', time, (c) => c.notNull())
    .addColumn('completed_at', time)
    .addColumn('version', 'integer', (c) => c.notNull())
    .modifyEnd(options)
    .execute();
  await db.schema
    .createIndex('forget_receipts_tenant')
    .on('forget_receipts')
    .columns(['tenant_id', 'id'])
    .execute();
  await db.schema
    .createIndex('forget_receipts_subject')
    .on('forget_receipts')
    .columns(['tenant_id', 'subject', 'id'])
    .execute();
  await db.schema
    .createIndex('forget_receipts_requested_by')
    .on('forget_receipts')
    .columns(['tenant_id', 'requested_by', 'id'])
    .execute();
  // The completion worker: PENDING receipts whose next attempt is due.
  await db.schema
    .createIndex('forget_receipts_due')
    .on('forget_receipts')
    .columns(['state', 'next_attempt_at'])
    .execute();

  await db.schema
    .createTable('memory_revision_audits')
    .addColumn('id', 'char(26)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('memory_id', 'char(26)', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('action', 'varchar(16)', (c) => c.notNull())
    .addColumn('actor_kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('rule', 'varchar(64)', (c) => c.notNull())
    .addColumn('changed_paths_json', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    // Why the content went: `forgetReceipts/{id}`, or another name given by the purge.
    .addColumn('erased_by', 'varchar(128)', (c) => c.notNull())
    .addColumn('erased_at', time, (c) => c.notNull())
    .modifyEnd(options)
    .execute();
  await db.schema
    .createIndex('memory_revision_audits_memory')
    .on('memory_revision_audits')
    .columns(['tenant_id', 'memory_id', 'version'])
    .execute();

  await db.schema
    .createIndex('memory_revisions_actor')
    .on('memory_revisions')
    .columns(['tenant_id', 'actor_id'])
    .execute();
}
