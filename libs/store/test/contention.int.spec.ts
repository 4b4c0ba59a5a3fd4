import { Code } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import {
  DocumentRepository,
  enqueueOutbox,
  inTransaction,
  OutboxRepository,
  type Executor,
  type OutboxClass,
  type Store,
  type TransactionOptions,
} from '../src/index.js';
import { newChunk, newDocument } from './fixtures.js';
import { code, dialects, reason, useStore } from './harness.js';

const mariadb = dialects.filter((d) => d.name === 'mariadb');

// What a streamed document does (services/ingestion: batches of 200 chunks, each batch its own
// transaction with its outbox rows) while the indexer's two loops lease and complete, and a
// conversation appends.
const WRITE_BATCH = 200;
const BATCHES = 40;

describe.each(dialects)('outbox under contention on $name', (dialect) => {
  let store: Store;
  useStore(dialect, (s) => {
    store = s;
  });

  it('never aborts a streamed document while large bulk leases and conversational writes run', async () => {
    const documents = new DocumentRepository(store);
    const outbox = new OutboxRepository(store);
    const created = await inTransaction(store, (trx) => documents.createDocument(trx, newDocument()));
    let writing = true;
    const errors: unknown[] = [];
    const leased = { bulk: 0, conversational: 0 };

    const stream = (async () => {
      try {
        for (let b = 0; b < BATCHES; b++) {
          const batch = Array.from({ length: WRITE_BATCH }, (_, i) => newChunk(b * WRITE_BATCH + i));
          await inTransaction(store, (trx) => documents.addChunks(trx, 't1', created.id, batch));
        }
      } finally {
        writing = false;
      }
    })();
    const consume = async (only: OutboxClass, limit: number) => {
      while (writing) {
        const entries = await outbox.lease(limit, 30_000, Date.now(), only);
        leased[only] += entries.length;
        await outbox.complete(entries.map((e) => e.id));
      }
    };
    const append = async () => {
      for (let n = 0; writing; n++) {
        await inTransaction(store, (trx) =>
          enqueueOutbox(trx, [
            { tenantId: 't1', aggregate: 'ROUND', aggregateId: `r${n}`, operation: 'UPSERT' },
          ]),
        );
      }
    };
    const settled = await Promise.allSettled([
      stream,
      consume('bulk', 512),
      consume('conversational', 128),
      append(),
    ]);
    settled.forEach((s, i) => {
      if (s.status === 'rejected')
        errors.push([['stream', 'bulk', 'conversational', 'append'][i], String(s.reason)]);
    });
    expect(errors).toEqual([]);
    expect(leased.bulk).toBeGreaterThan(0);
    expect(leased.conversational).toBeGreaterThan(0);
  }, 120_000);
});

describe.each(mariadb)('deadlock victims on $name', (dialect) => {
  let store: Store;
  useStore(dialect, (s) => {
    store = s;
  });

  /**
   * Two transactions that lock two outbox rows in opposite orders: a heavy one (it first updates
   * ten other rows, so InnoDB rolls back the light one) and a light one run with `options`.
   * Resolves with the light one's attempts and outcome.
   */
  async function deadlock(options: TransactionOptions) {
    const ids: number[] = [];
    await inTransaction(store, (trx) =>
      enqueueOutbox(
        trx,
        Array.from({ length: 12 }, (_, n) => ({
          tenantId: 't1',
          aggregate: 'ROUND' as const,
          aggregateId: `d${n}`,
          operation: 'UPSERT' as const,
        })),
      ),
    );
    ids.push(
      ...(await store.db.selectFrom('outbox').select('id').orderBy('id', 'desc').limit(12).execute()).map(
        (r) => r.id,
      ),
    );
    const [a, b, ...others] = ids as [number, number, ...number[]];
    const touch = (trx: Executor, id: number, by: string) =>
      trx.updateTable('outbox').set({ last_error: by }).where('id', '=', id).execute();
    let heavyLocked!: () => void;
    let lightLocked!: () => void;
    const heavyHolds = new Promise<void>((r) => (heavyLocked = r));
    const lightHolds = new Promise<void>((r) => (lightLocked = r));
    let attempts = 0;
    const heavy = inTransaction(store, async (trx) => {
      for (const id of others) await touch(trx, id, 'heavy');
      await touch(trx, a, 'heavy');
      heavyLocked();
      await lightHolds;
      await touch(trx, b, 'heavy');
    });
    const light = inTransaction(
      store,
      async (trx) => {
        attempts++;
        await touch(trx, b, 'light');
        lightLocked();
        await heavyHolds;
        await touch(trx, a, 'light');
      },
      options,
    );
    const [heavyOutcome, lightOutcome] = await Promise.allSettled([heavy, light]);
    const rows = await store.db
      .selectFrom('outbox')
      .select(['id', 'last_error'])
      .where('id', 'in', [a, b])
      .execute();
    return { heavyOutcome, lightOutcome, attempts, marks: rows.map((r) => r.last_error) };
  }

  it('gives a deadlock victim ABORTED ETAG_MISMATCH by default, and the other transaction commits', async () => {
    const { heavyOutcome, lightOutcome, attempts, marks } = await deadlock({});
    expect(heavyOutcome.status).toBe('fulfilled');
    expect(lightOutcome.status).toBe('rejected');
    const error: unknown = lightOutcome.status === 'rejected' ? lightOutcome.reason : undefined;
    expect([code(error), reason(error)]).toEqual([Code.Aborted, 'ETAG_MISMATCH']);
    expect(attempts).toBe(1);
    expect(marks).toEqual(['heavy', 'heavy']);
  });

  it('runs a deadlock victim again with deadlockRetries, after the winner committed', async () => {
    const { heavyOutcome, lightOutcome, attempts, marks } = await deadlock({ deadlockRetries: 2 });
    expect(heavyOutcome.status).toBe('fulfilled');
    expect(lightOutcome.status).toBe('fulfilled');
    expect(attempts).toBe(2);
    expect(marks).toEqual(['light', 'light']);
  });
});
