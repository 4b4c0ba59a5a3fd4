import { Code } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import type { EngramError } from '@engram/errors';
import {
  OutboxRepository,
  enqueueOutbox,
  idempotent,
  inTransaction,
  knownMigrations,
  migrateToLatest,
  newId,
  openStore,
  run,
  type RequestKey,
  type Store,
} from '../src/index.js';
import { code, countRows, dialects, thrown, useStore } from './harness.js';

describe.each(dialects)('the source of truth on $name', (dialect) => {
  let store: Store;

  useStore(dialect, (opened) => {
    store = opened;
  });
  const countOutbox = () => countRows(store, 'outbox');

  describe('migrations', () => {
    it('are recorded, and applying them again on a migrated database changes nothing', async () => {
      const again = await migrateToLatest(store.db);
      expect(again.applied).toEqual([]);
      expect(again.current).toEqual(knownMigrations());
    });
  });

  describe('the outbox', () => {
    it('hands unprocessed rows to the indexer in order, once, and retries failures later', async () => {
      const outbox = new OutboxRepository(store);
      const now = 1_000_000;
      const ids = [newId(), newId(), newId()];
      await inTransaction(store, (trx) =>
        enqueueOutbox(
          trx,
          ids.map((id) => ({ tenantId: 't1', aggregate: 'MEMORY', aggregateId: id, operation: 'UPSERT' })),
          now,
        ),
      );
      expect((await outbox.backlog(now + 500)).pending).toBeGreaterThanOrEqual(3);

      const handled: string[] = [];
      let failedId = -1;
      await outbox.claim(
        10,
        async (entries) => {
          const mine = entries.filter((e) => ids.includes(e.aggregateId));
          handled.push(...mine.map((e) => e.aggregateId));
          const failing = mine[1]!;
          failedId = failing.id;
          return {
            processed: entries.filter((e) => e.id !== failing.id).map((e) => e.id),
            failed: [{ id: failing.id, error: 'qdrant unreachable', retryAt: now + 60_000 }],
          };
        },
        now,
      );
      expect(handled).toEqual(ids);

      // Nothing due before the retry time; the failed row comes back after it, with its attempt counted.
      let retried: number[] = [];
      await outbox.claim(
        10,
        async (entries) => ((retried = entries.map((e) => e.id)), { processed: [], failed: [] }),
        now + 1,
      );
      expect(retried).toEqual([]);
      await outbox.claim(
        10,
        async (entries) => {
          retried = entries.map((e) => e.id);
          expect(entries[0]?.attempts).toBe(1);
          return { processed: retried, failed: [] };
        },
        now + 60_000,
      );
      expect(retried).toEqual([failedId]);
      expect((await outbox.backlog(now + 60_000)).pending).toBe(0);
    });

    it('leases conversational changes before older bulk ones (a document never holds a message up)', async () => {
      const outbox = new OutboxRepository(store);
      // Due long before the other tests' rows, so only these are leased.
      let now = 500;
      const chunks = Array.from({ length: 4 }, () => newId());
      const rounds = [newId(), newId()];
      await inTransaction(store, async (trx) => {
        await enqueueOutbox(
          trx,
          [
            { tenantId: 't-bulk', aggregate: 'DOCUMENT', aggregateId: newId(), operation: 'UPSERT' },
            ...chunks.map((id) => ({
              tenantId: 't-bulk',
              aggregate: 'CHUNK' as const,
              aggregateId: id,
              operation: 'UPSERT' as const,
            })),
          ],
          now,
        );
        await enqueueOutbox(
          trx,
          rounds.map((id) => ({
            tenantId: 't-bulk',
            aggregate: 'ROUND',
            aggregateId: id,
            operation: 'UPSERT',
          })),
          now,
        );
      });
      // One class alone (the indexer's two loops), then both.
      const bulkOnly = await outbox.lease(2, 60_000, now, 'bulk');
      expect(bulkOnly.map((e) => e.aggregateId)).toEqual(chunks.slice(0, 2));
      // A DOCUMENT row is conversational: a document's READY row is not queued behind its chunks.
      expect((await outbox.lease(2, 60_000, now, 'conversational')).map((e) => e.aggregate)).toEqual([
        'DOCUMENT',
        'ROUND',
      ]);
      // Leases end: every row is due again.
      now += 120_000;
      const first = await outbox.lease(3, 60_000, now);
      expect(first.map((e) => e.aggregate)).toEqual(['DOCUMENT', 'ROUND', 'ROUND']);
      expect(first.slice(1).map((e) => e.aggregateId)).toEqual(rounds);
      const rest = await outbox.lease(10, 60_000, now);
      expect(rest.map((e) => e.aggregateId)).toEqual(chunks);
      await outbox.complete(
        [...first, ...rest].map((e) => e.id),
        now,
      );
    });
  });

  describe('a poison row', () => {
    it('is parked with its error after the maximum attempts and does not block the rows behind it', async () => {
      const outbox = new OutboxRepository(store, 2);
      await outbox.claim(
        1000,
        async (entries) => ({ processed: entries.map((e) => e.id), failed: [] }),
        5_000_000,
      );
      const poison = newId();
      const healthy = newId();
      await inTransaction(store, (trx) =>
        enqueueOutbox(
          trx,
          [poison, healthy].map((id) => ({
            tenantId: 't1',
            aggregate: 'CHUNK',
            aggregateId: id,
            operation: 'UPSERT',
          })),
          5_000_000,
        ),
      );
      const attempt = (now: number) => {
        const seen: string[] = [];
        return outbox
          .claim(
            10,
            async (entries) => {
              seen.push(...entries.map((e) => e.aggregateId));
              return {
                processed: entries.filter((e) => e.aggregateId !== poison).map((e) => e.id),
                failed: entries
                  .filter((e) => e.aggregateId === poison)
                  .map((e) => ({ id: e.id, error: 'cannot embed', retryAt: now })),
              };
            },
            now,
          )
          .then(() => seen);
      };
      expect(await attempt(5_000_001)).toEqual([poison, healthy]);
      expect(await attempt(5_000_002)).toEqual([poison]);
      expect(await attempt(5_000_003)).toEqual([]);
      const backlog = await outbox.backlog(5_000_003);
      expect(backlog).toMatchObject({ pending: 0, parked: 1 });
      expect(await outbox.parked(10)).toEqual([
        expect.objectContaining({ aggregateId: poison, attempts: 2, lastError: 'cannot embed' }),
      ]);
    });
  });

  describe('request ids', () => {
    const key = (requestId: string): RequestKey => ({
      tenantId: 't1',
      subject: 'alice',
      method: 'engram.test.v1.TestService/Create',
      requestId,
    });
    const write =
      (aggregateId: string) => async (trx: Parameters<Parameters<typeof inTransaction>[1]>[0]) => {
        await enqueueOutbox(trx, [
          { tenantId: 't1', aggregate: 'DOCUMENT', aggregateId, operation: 'UPSERT' },
        ]);
        return { id: aggregateId };
      };

    it('make a retried create return the first result without writing twice', async () => {
      const before = await countOutbox();
      const first = await idempotent(store, key('r-1'), { name: 'a' }, write('doc-a'));
      const retry = await idempotent(store, key('r-1'), { name: 'a' }, write('doc-b'));
      expect(first).toEqual({ result: { id: 'doc-a' }, replayed: false });
      expect(retry).toEqual({ result: { id: 'doc-a' }, replayed: true });
      expect(await countOutbox()).toBe(before + 1);
    });

    it('refuse the same request id with a different body (REQUEST_ID_REUSED)', async () => {
      await idempotent(store, key('r-2'), { name: 'a' }, write('doc-c'));
      const reused = await thrown(() => idempotent(store, key('r-2'), { name: 'b' }, write('doc-d')));
      expect(code(reused)).toBe(Code.InvalidArgument);
      expect((reused as EngramError).reason).toBe('REQUEST_ID_REUSED');
    });

    it('let only one of two concurrent first attempts write', async () => {
      const before = await countOutbox();
      const [a, b] = await Promise.all([
        idempotent(store, key('r-3'), { name: 'same' }, write('doc-e')),
        idempotent(store, key('r-3'), { name: 'same' }, write('doc-f')),
      ]);
      expect(a.result).toEqual(b.result);
      expect([a.replayed, b.replayed].sort()).toEqual([false, true]);
      expect(await countOutbox()).toBe(before + 1);
    });

    it('are scoped to the caller: another user may use the same id', async () => {
      const mine = await idempotent(store, key('r-4'), {}, write('doc-g'));
      const theirs = await idempotent(store, { ...key('r-4'), subject: 'bob' }, {}, write('doc-h'));
      expect(mine.result).toEqual({ id: 'doc-g' });
      expect(theirs.result).toEqual({ id: 'doc-h' });
    });
  });

  describe('driver failures', () => {
    it('become ALREADY_EXISTS for a duplicate key, with nothing half-written', async () => {
      const id = newId();
      const session = {
        id,
        tenant_id: 't1',
        owner_id: 'alice',
        display_name: '',
        external_id: null,
        language_code: '',
        time_zone: 'UTC',
        metadata_json: '{}',
        status: 'ACTIVE',
        message_count: 0,
        last_sequence: 0,
        last_message_at: null,
        open_from_sequence: 1,
        activity_at: 1,
        created_at: 1,
        updated_at: 1,
        closed_at: null,
        version: 1,
      };
      await inTransaction(store, (trx) => trx.insertInto('sessions').values(session).execute());
      const outboxBefore = await countOutbox();
      const duplicate = await thrown(() =>
        inTransaction(store, async (trx) => {
          await enqueueOutbox(trx, [
            { tenantId: 't1', aggregate: 'SESSION', aggregateId: id, operation: 'UPSERT' },
          ]);
          await trx.insertInto('sessions').values(session).execute();
        }),
      );
      expect(code(duplicate)).toBe(Code.AlreadyExists);
      expect((duplicate as EngramError).reason).toBe('RESOURCE_ALREADY_EXISTS');
      expect(await countOutbox()).toBe(outboxBefore);
    });

    it('become FAILED_PRECONDITION for a row that references nothing', async () => {
      const orphan = await thrown(() =>
        inTransaction(store, (trx) =>
          trx
            .insertInto('chunks')
            .values({
              id: newId(),
              tenant_id: 't1',
              document_id: newId(),
              ordinal: 0,
              kind: 'TEXT',
              text: 'x',
              start_offset: 0,
              end_offset: 1,
              overlap_prefix_chars: 0,
              header_prefix_chars: 0,
              token_count: 1,
              heading_path_json: '[]',
              created_at: 1,
            })
            .execute(),
        ),
      );
      expect(code(orphan)).toBe(Code.FailedPrecondition);
    });
  });
});

describe('an unreachable database', () => {
  it('is UNAVAILABLE with the dependency named (MySQL)', async () => {
    const store = openStore({ target: 'mysql://nobody:nothing@127.0.0.1:1/none' });
    try {
      const failure = await thrown(() => run(store, (db) => db.selectFrom('memories').selectAll().execute()));
      expect(code(failure)).toBe(Code.Unavailable);
      expect((failure as EngramError).metadata).toEqual({ dependency: 'mysql' });
    } finally {
      await store.close();
    }
  });

  it('is UNAVAILABLE with the dependency named (SQLite file that cannot be opened)', () => {
    let failure: unknown;
    try {
      openStore({ target: '/nonexistent-dir/engram.db' });
    } catch (error) {
      failure = error;
    }
    expect(code(failure)).toBe(Code.Unavailable);
    expect((failure as EngramError).metadata).toEqual({ dependency: 'sqlite' });
  });
});
