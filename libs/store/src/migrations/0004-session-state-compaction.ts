import type { Kysely } from 'kysely';

/**
 * Session states remember when their latest compaction committed (`SessionState.last_compaction_time`)
 * and the compaction mark ingestion has acknowledged (`MarkMessagesCompacted`), so that context
 * re-sends a mark that was committed but not yet mirrored on the messages.
 */
// Migrations see the schema as it was when they were written, not today's types (Kysely's advice).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('session_states').addColumn('last_compaction_at', 'bigint').execute();
  await db.schema
    .alterTable('session_states')
    .addColumn('mark_acknowledged_through', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
}
