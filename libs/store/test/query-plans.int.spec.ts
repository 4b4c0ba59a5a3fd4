import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import {
  DocumentRepository,
  MemoryRepository,
  SessionRepository,
  inTransaction,
  migrateToLatest,
  searchableIds,
  type Database,
  type Store,
} from '../src/index.js';

// The reads by id of the hot paths (Search's hydration, the indexer's checks, ForgetUser) on
// SQLite, the embedded stack's source of truth: without statistics its planner guesses that an
// equality on the first column of an index matches ten rows, and used to walk a tenant-wide index
// (`tenant_id = ?`, `status = ?`) instead of looking the ids up, so their cost grew with the tenant
// (decision 0045). Each statement is captured as it runs and its plan read with EXPLAIN QUERY PLAN.

/** The key columns a lookup must be constrained by: a primary key or the parent of the rows. */
const KEY = /\((?:[a-z_]+=\? AND )*(?:id|document_id|aggregate_id|session_id)[=><]\?/;

interface Statement {
  readonly label: string;
  readonly sql: string;
  readonly parameters: readonly unknown[];
}

describe('reads by id on SQLite', () => {
  const file = new BetterSqlite3(':memory:');
  const captured: Statement[] = [];
  let label = '';
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: file }),
    log: (event) => {
      if (event.level === 'query')
        captured.push({ label, sql: event.query.sql, parameters: event.query.parameters });
    },
  });
  const store: Store = { db, dialect: 'sqlite', close: () => db.destroy() };
  const memories = new MemoryRepository(store);
  const documents = new DocumentRepository(store);
  const sessions = new SessionRepository(store);
  const ids = Array.from({ length: 40 }, (_, i) => `01HZY6Q7V4N8M3K2J1H0G9F8${String(i).padStart(2, '0')}`);
  const viewer = { tenantId: 't1', subject: 'alice', orgIds: ['o1'], platform: true, reviewer: true };

  beforeAll(async () => {
    await migrateToLatest(db);
  });
  afterAll(async () => {
    await store.close();
  });

  /** The plan lines of the statements `run` made, each with the statement's label. */
  async function plansOf(name: string, run: () => Promise<unknown>): Promise<string[]> {
    label = name;
    const from = captured.length;
    await run();
    return captured.slice(from).flatMap((statement) =>
      file
        .prepare(`EXPLAIN QUERY PLAN ${statement.sql}`)
        .all(...(statement.parameters as unknown[]))
        .map((row) => `${statement.label}: ${(row as { detail: string }).detail}`),
    );
  }

  it.each<[string, () => Promise<unknown>]>([
    ['MemoryRepository.getMany', () => memories.getMany('t1', ids)],
    ['MemoryRepository.getManyVisible', () => memories.getManyVisible(viewer, ids)],
    [
      'MemoryRepository.purge',
      () => inTransaction(store, (trx) => memories.purge(trx, 't1', ids, { erasedBy: 'x' })),
    ],
    ['DocumentRepository.getMany', () => documents.getMany('t1', ids)],
    ['DocumentRepository.getChunks', () => documents.getChunks('t1', ids)],
    ['DocumentRepository.indexedChunkCounts', () => documents.indexedChunkCounts('t1', ids)],
    ['DocumentRepository.pendingChunkRows', () => documents.pendingChunkRows('t1', ids[0] ?? '')],
    ['SessionRepository.getMany', () => sessions.getMany('t1', ids)],
    ['SessionRepository.getMessages', () => sessions.getMessages('t1', ids)],
    [
      'SessionRepository.messageWindows',
      () =>
        sessions.messageWindows(
          't1',
          ids.map((sessionId) => ({ sessionId, fromSequence: 2, toSequence: 51 })),
        ),
    ],
    ['searchableIds MEMORY', () => searchableIds(store, 't1', 'MEMORY', ids)],
    ['searchableIds CHUNK', () => searchableIds(store, 't1', 'CHUNK', ids)],
    ['searchableIds ROUND', () => searchableIds(store, 't1', 'ROUND', ids)],
  ])('%s looks its rows up by key, never walks the tenant', async (name, run) => {
    const lines = await plansOf(name, run);
    const lookups = lines.filter((line) => / (?:SEARCH|SCAN) /.test(line));
    expect(lookups.length).toBeGreaterThan(0);
    expect(lookups.filter((line) => / SCAN /.test(line) || !KEY.test(line))).toEqual([]);
  });
});
