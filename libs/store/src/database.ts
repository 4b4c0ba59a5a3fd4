import BetterSqlite3 from 'better-sqlite3';
import { Kysely, MysqlDialect, SqliteDialect } from 'kysely';
import { createPool } from 'mysql2';
import { errors } from '@engram/errors';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';

/** Where the source of truth lives: a `mysql://` URL, or a SQLite file path (`:memory:` in tests). */
export interface StoreOptions {
  readonly target: string;
  /** MySQL pool size. Default 10. */
  readonly poolSize?: number;
  /** SQLite: how long a writer waits for the file lock, ms. Default 5000. */
  readonly busyTimeoutMs?: number;
}

/** An open source of truth. */
export interface Store {
  readonly db: Kysely<Database>;
  readonly dialect: DialectName;
  /** Closes the pool or the file. */
  close(): Promise<void>;
}

/** True when `target` names a MySQL/MariaDB server rather than a SQLite file. */
export function isMysqlTarget(target: string): boolean {
  return /^mysql:\/\//i.test(target);
}

/**
 * Opens the source of truth. MySQL: a mysql2 pool in UTC with strict SQL mode, utf8mb4. SQLite:
 * better-sqlite3 with WAL, a busy timeout, foreign keys on and `synchronous = FULL`, so that an
 * acknowledged commit survives a power loss.
 */
export function openStore(options: StoreOptions): Store {
  if (isMysqlTarget(options.target)) {
    const pool = createPool({
      uri: options.target,
      connectionLimit: options.poolSize ?? 10,
      charset: 'utf8mb4_bin',
      timezone: 'Z',
      supportBigNumbers: true,
      bigNumberStrings: false,
      decimalNumbers: true,
      enableKeepAlive: true,
    });
    pool.on('connection', (connection) => {
      connection.query(
        "SET SESSION sql_mode = 'STRICT_ALL_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION', time_zone = '+00:00'",
      );
    });
    const db = new Kysely<Database>({ dialect: new MysqlDialect({ pool }) });
    return { db, dialect: 'mysql', close: () => db.destroy() };
  }
  let file: BetterSqlite3.Database;
  try {
    file = new BetterSqlite3(options.target);
  } catch (error) {
    // Missing directory, permissions, a corrupt file: the source of truth cannot be reached.
    throw errors.unavailable('sqlite', 'cannot open the SQLite database file', { cause: error });
  }
  if (options.target !== ':memory:') file.pragma('journal_mode = WAL');
  file.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
  file.pragma('foreign_keys = ON');
  file.pragma('synchronous = FULL');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: file }) });
  return { db, dialect: 'sqlite', close: () => db.destroy() };
}
