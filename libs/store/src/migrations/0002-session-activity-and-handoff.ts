import { sql, type Kysely } from 'kysely';

/**
 * Sessions are listed most recently active first (`ListSessions`): `activity_at` is the last
 * message's time, or the creation time of a session without messages, indexed for keyset paging.
 * MemCells record the extraction hand-off's retry schedule and the typed reason of the last
 * failure, and the free-text note of their boundary (a flush reason, a model's rationale).
 */
// Migrations see the schema as it was when they were written, not today's types (Kysely's advice).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('sessions')
    .addColumn('activity_at', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update sessions set activity_at = coalesce(last_message_at, created_at)`.execute(db);
  await db.schema
    .createIndex('sessions_owner_activity')
    .on('sessions')
    .columns(['tenant_id', 'owner_id', 'activity_at', 'id'])
    .execute();
  // The silence sweep: active sessions by last activity.
  await db.schema
    .createIndex('sessions_status_activity')
    .on('sessions')
    .columns(['status', 'activity_at'])
    .execute();

  await db.schema
    .alterTable('mem_cells')
    .addColumn('boundary_note', 'varchar(256)', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema
    .alterTable('mem_cells')
    .addColumn('last_error_reason', 'varchar(64)', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema.alterTable('mem_cells').addColumn('next_attempt_at', 'bigint').execute();
  // `occurred_at` of the cell's last message (the end of the span it covers).
  await db.schema
    .alterTable('mem_cells')
    .addColumn('last_message_at', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update mem_cells set last_message_at = (select max(m.occurred_at) from messages m where m.session_id = mem_cells.session_id and m.sequence between mem_cells.first_sequence and mem_cells.last_sequence)`.execute(
    db,
  );
  // Extraction jobs are listed by session too.
  await db.schema
    .alterTable('extraction_jobs')
    .addColumn('session_id', 'varchar(26)', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema
    .createIndex('extraction_jobs_session')
    .on('extraction_jobs')
    .columns(['tenant_id', 'session_id', 'id'])
    .execute();
  // Hand-off sweep: cells whose next attempt is due.
  await db.schema
    .createIndex('mem_cells_status_due')
    .on('mem_cells')
    .columns(['status', 'next_attempt_at'])
    .execute();
}
