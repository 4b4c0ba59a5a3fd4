import type { Kysely, Transaction } from 'kysely';
import type { Store } from './database.js';
import { isDeadlock, mapDatabaseError } from './errors.js';
import type { Database } from './schema.js';

/** A query runner: the database itself, or an open transaction. */
export type Executor = Kysely<Database> | Transaction<Database>;

/** How {@link inTransaction} runs a transaction beyond the defaults. */
export interface TransactionOptions {
  /**
   * MySQL: the transaction's isolation level (`read committed`: locking reads take record locks
   * only, no gap locks, and release the rows that do not match). Default: the server's (InnoDB's
   * REPEATABLE READ). SQLite has one writer and ignores it.
   */
  readonly isolation?: 'read committed';
  /**
   * MySQL: how many times a transaction chosen as a deadlock victim runs again (InnoDB has rolled
   * it back whole). Only for an `fn` whose every effect is in the database, so running it again
   * is safe. Default 0: the caller gets ABORTED.
   */
  readonly deadlockRetries?: number;
}

/**
 * Runs `fn` in one transaction: everything it writes commits together or not at all. Driver
 * errors are mapped ({@link mapDatabaseError}); domain errors thrown by `fn` roll back and pass
 * through unchanged.
 */
export async function inTransaction<T>(
  store: Store,
  fn: (trx: Transaction<Database>) => Promise<T>,
  options: TransactionOptions = {},
): Promise<T> {
  const mysql = store.dialect === 'mysql';
  const retries = mysql ? (options.deadlockRetries ?? 0) : 0;
  for (let attempt = 0; ; attempt++) {
    try {
      let builder = store.db.transaction();
      if (mysql && options.isolation !== undefined) builder = builder.setIsolationLevel(options.isolation);
      return await builder.execute(fn);
    } catch (error) {
      if (attempt < retries && isDeadlock(error)) continue;
      throw mapDatabaseError(error, store.dialect);
    }
  }
}

/** Runs a read (or a single statement) with driver errors mapped. */
export async function run<T>(store: Store, fn: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  try {
    return await fn(store.db);
  } catch (error) {
    throw mapDatabaseError(error, store.dialect);
  }
}

/**
 * Runs a read on `executor` when one is given (inside the caller's transaction, which maps its
 * errors), else on the store with driver errors mapped ({@link run}).
 */
export async function read<T>(
  store: Store,
  executor: Executor | undefined,
  fn: (db: Executor) => Promise<T>,
): Promise<T> {
  return executor === undefined ? run(store, fn) : fn(executor);
}
