import { MysqlAdapter, sql, type Kysely, type RawBuilder } from 'kysely';

/**
 * The one place where MySQL/MariaDB and SQLite differ. Everything else (DDL types, queries) is
 * written once: SQLite accepts MySQL's type names through type affinity (`mediumtext` → TEXT,
 * `double` → REAL, `bigint` → INTEGER), and the repositories use only portable SQL.
 */
export type DialectName = 'mysql' | 'sqlite';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- works on any schema
export function dialectOf(db: Kysely<any>): DialectName {
  return db.getExecutor().adapter instanceof MysqlAdapter ? 'mysql' : 'sqlite';
}

/**
 * A column that only checks the rows a key has already found, for the reads by primary key
 * (`tenant_id = ? AND id IN (…)`): on SQLite it is written `+column`, which by the planner's
 * documented rule keeps the term from choosing an index. Without statistics SQLite guesses that an
 * equality on the first column of an index matches ten rows, so with more than a few ids it would
 * walk that index over the whole tenant (every row, in the single-tenant embedded stack) instead of
 * looking the ids up: Search's hydration grew tenfold from 10k to 100k memories (decision 0045).
 * MySQL keeps the plain column: its optimizer has statistics and reads the primary key.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- works on any schema
export function filterOnly(db: Kysely<any>, column: string): RawBuilder<unknown> {
  return dialectOf(db) === 'sqlite' ? sql`+${sql.ref(column)}` : sql`${sql.ref(column)}`;
}

/** `CREATE TABLE … <options>`: InnoDB with utf8mb4 and exact (binary) comparison on MySQL. */
export function tableOptions(dialect: DialectName): RawBuilder<unknown> {
  return dialect === 'mysql' ? sql`engine = InnoDB default charset = utf8mb4 collate = utf8mb4_bin` : sql``;
}

/** The column type of an auto-increment primary key (SQLite requires exactly `integer`). */
export function autoIncrementType(dialect: DialectName): 'bigint' | 'integer' {
  return dialect === 'mysql' ? 'bigint' : 'integer';
}

/** Whether `SELECT … FOR UPDATE SKIP LOCKED` exists (SQLite has one writer and no row locks). */
export function supportsRowLocks(dialect: DialectName): boolean {
  return dialect === 'mysql';
}
