import type { Kysely, Transaction } from 'kysely';
import type { Store } from './database.js';
import { mapDatabaseError } from './errors.js';
import type { Database } from './schema.js';

/** A query runner: the database itself, or an open transaction. */
export type Executor = Kysely<Database> | Transaction<Database>;

/**
 * Runs `fn` in one transaction: everything it writes commits together or not at all. Driver
 * errors are mapped ({@link mapDatabaseError}); domain errors thrown by `fn` roll back and pass
 * through unchanged.
 */
export async function inTransaction<T>(
  store: Store,
  fn: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  try {
    return await store.db.transaction().execute(fn);
  } catch (error) {
    throw mapDatabaseError(error, store.dialect);
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
