import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Code } from '@connectrpc/connect';
import { afterAll, beforeAll } from '@jest/globals';
import type { Kysely } from 'kysely';
import { createConnection } from 'mysql2/promise';
import { EngramError } from '@engram/errors';
import { migrateToLatest, openStore, type Database, type Store } from '../src/index.js';

/** A source of truth under test: a fresh, migrated database and how to throw it away. */
export interface TestStore {
  readonly store: Store;
  readonly dispose: () => Promise<void>;
}

export interface TestDialect {
  readonly name: 'mariadb' | 'sqlite';
  /** A fresh, migrated database of this dialect. */
  readonly open: () => Promise<TestStore>;
}

const HOW_TO_START =
  'MariaDB is required for the store tests: run `bash scripts/ensure-mariadb.sh` (npm test runs it), ' +
  'or set ENGRAM_TEST_MYSQL_URL=mysql://user:password@127.0.0.1:3306/engram_test to a server where the user may create engram_test_* databases.';

/** The MariaDB URL from ENGRAM_TEST_MYSQL_URL or the file scripts/ensure-mariadb.sh writes. Never skips. */
export function testMysqlUrl(): string {
  const fromEnv = process.env['ENGRAM_TEST_MYSQL_URL'];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const file = join(process.env['ENGRAM_TEST_STATE_DIR'] ?? join(homedir(), '.engram-test'), 'mysql-url');
  if (!existsSync(file)) throw new Error(`${HOW_TO_START} (missing ${file})`);
  return readFileSync(file, 'utf8').trim();
}

/** A fresh `engram_test_<random>` database on the test server, migrated; dropped by dispose. */
async function openMariadb(): Promise<TestStore> {
  const base = new URL(testMysqlUrl());
  const name = `engram_test_${randomBytes(6).toString('hex')}`;
  let admin;
  try {
    admin = await createConnection({
      uri: `${base.protocol}//${base.username}:${base.password}@${base.host}/`,
    });
  } catch (error) {
    throw new Error(`${HOW_TO_START} (connecting to ${base.host} failed: ${(error as Error).message})`, {
      cause: error,
    });
  }
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  const url = new URL(base.href);
  url.pathname = `/${name}`;
  const store = openStore({ target: url.href });
  await migrateToLatest(store.db);
  return {
    store,
    dispose: async () => {
      await store.close();
      await admin.query(`DROP DATABASE \`${name}\``);
      await admin.end();
    },
  };
}

/** A fresh SQLite file (WAL needs a real file), migrated; deleted by dispose. */
async function openSqlite(): Promise<TestStore> {
  const dir = mkdtempSync(join(tmpdir(), 'engram-store-'));
  const store = openStore({ target: join(dir, 'engram.db') });
  await migrateToLatest(store.db);
  return {
    store,
    dispose: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Both dialects: every contract suite runs against each with identical assertions. */
export const dialects: readonly TestDialect[] = [
  { name: 'mariadb', open: openMariadb },
  { name: 'sqlite', open: openSqlite },
];

/** Runs `fn` and returns what it threw (fails the test if it did not throw). */
export async function thrown(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}

/**
 * A fresh, migrated store of `dialect` for the tests of the enclosing `describe`: opened before
 * they run and handed to `opened` (which builds the repositories under test), disposed of after.
 */
export function useStore(dialect: TestDialect, opened: (store: Store) => void): void {
  let dispose: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const test = await dialect.open();
    dispose = test.dispose;
    opened(test.store);
  });
  afterAll(async () => {
    await dispose?.();
  });
}

/** The gRPC code of an {@link EngramError}; undefined for anything else. */
export function code(error: unknown): Code | undefined {
  return error instanceof EngramError ? error.code : undefined;
}

/** The ErrorInfo reason of an {@link EngramError}; undefined for anything else. */
export function reason(error: unknown): string | undefined {
  return error instanceof EngramError ? error.reason : undefined;
}

/** How many rows of `table` have the column values of `match` (all of them by default). */
export async function countRows(
  store: Store,
  table: keyof Database,
  match: Readonly<Record<string, string>> = {},
): Promise<number> {
  // Any table: `match` names its columns, which Kysely's types cannot check for a variable table.
  let q = (store.db as unknown as Kysely<Record<string, Record<string, unknown>>>)
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'));
  for (const [column, value] of Object.entries(match)) q = q.where(column, '=', value);
  return (await q.executeTakeFirstOrThrow()).n;
}
