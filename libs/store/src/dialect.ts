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
