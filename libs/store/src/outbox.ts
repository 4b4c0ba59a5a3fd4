import { toJson } from './codec.js';
import type { Store } from './database.js';
import { supportsRowLocks } from './dialect.js';
import type { OutboxRow } from './schema.js';
import { inTransaction, run, type Executor, type TransactionOptions } from './store-context.js';

/**
 * What changed, for the indexer. SUBJECT: a forget's final purge; its aggregate id is the forget
 * receipt, whose subject's points are all deleted.
 */
export type OutboxAggregate = 'MEMORY' | 'CHUNK' | 'ROUND' | 'DOCUMENT' | 'SESSION' | 'SUBJECT';
/** UPSERT: re-read the row from the source of truth and (re)index it. DELETE: remove its points. */
export type OutboxOperation = 'UPSERT' | 'DELETE';

/** One change of searchable data. */
export interface OutboxEvent {
  readonly tenantId: string;
  readonly aggregate: OutboxAggregate;
  readonly aggregateId: string;
  readonly operation: OutboxOperation;
  /** Identifiers the indexer needs beyond the aggregate id (never contents). */
  readonly payload?: Readonly<Record<string, string | number>>;
}

/**
 * Aggregates of bulk work (a document's chunks): leased after every conversational change that is
 * due ({@link OutboxRepository.lease}). A DOCUMENT row is not bulk: the row a document's READY
 * transition writes makes its chunks indexed while it was INGESTING searchable in one request
 * (they are staged), so it must not wait behind the document's own chunk rows.
 */
export const BULK_AGGREGATES: readonly OutboxAggregate[] = ['CHUNK'];

/** How {@link OutboxRepository.lease} runs its transaction (see there). */
const LEASE_TRANSACTION: TransactionOptions = { isolation: 'read committed', deadlockRetries: 3 };

/** The two classes of outbox rows: bulk ({@link BULK_AGGREGATES}) and everything else. */
export type OutboxClass = 'conversational' | 'bulk';

/** An outbox row handed to the indexer. */
export interface OutboxEntry extends OutboxEvent {
  readonly id: number;
  readonly payload: Readonly<Record<string, string | number>>;
  readonly createdAt: number;
  readonly attempts: number;
}

/**
 * The outbox rule: a write that changes searchable data calls this with the same transaction, so
 * the change and its outbox row commit together or not at all.
 */
export async function enqueueOutbox(
  trx: Executor,
  events: readonly OutboxEvent[],
  now = Date.now(),
): Promise<void> {
  if (events.length === 0) return;
  await trx
    .insertInto('outbox')
    .values(
      events.map((e) => ({
        tenant_id: e.tenantId,
        aggregate_kind: e.aggregate,
        aggregate_id: e.aggregateId,
        operation: e.operation,
        payload_json: toJson(e.payload ?? {}),
        created_at: now,
        available_at: now,
        attempts: 0,
        last_error: '',
        processed_at: null,
        parked_at: null,
      })),
    )
    .execute();
}

function toEntry(r: OutboxRow): OutboxEntry {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    aggregate: r.aggregate_kind as OutboxAggregate,
    aggregateId: r.aggregate_id,
    operation: r.operation as OutboxOperation,
    payload: JSON.parse(r.payload_json) as Record<string, string | number>,
    createdAt: r.created_at,
    attempts: r.attempts,
  };
}

/** The indexer's side of the outbox. Only retrieval's indexer consumes it. */
export class OutboxRepository {
  /**
   * @param maxAttempts after this many failures a row is parked (kept with its error, reported,
   *   no longer retried) so that one poison row never blocks the others. Default 10.
   */
  constructor(
    private readonly store: Store,
    private readonly maxAttempts = 10,
  ) {}

  /**
   * Leases up to `limit` due rows: they become invisible to other consumers for `leaseMs` (their
   * `available_at` moves forward) in one short transaction, so no transaction is held open while
   * the consumer embeds and writes vectors. A consumer that dies mid-batch simply lets the lease run
   * out and the rows come back (at-least-once; point ids make replays idempotent). On MySQL the
   * selection uses SKIP LOCKED so concurrent consumers never lease the same row.
   *
   * Conversational changes come first (decision 0032): the due rows of every aggregate but
   * {@link BULK_AGGREGATES} (documents' chunks) oldest first, then bulk rows oldest first to fill
   * the batch, so a message appended while a large document is being indexed never waits behind its
   * chunks. Within a class the order is the rows' order; across classes it does not matter, since the
   * indexer re-reads every row's source of truth. `only` leases one class alone (the indexer runs
   * a loop per class, so a conversational change never waits for a bulk batch to finish).
   *
   * On MySQL the lease runs at READ COMMITTED: at REPEATABLE READ its scan of `outbox_pending`
   * keeps next-key locks on every entry it passes (the other class's rows included) and on the gap
   * where new rows go, so a writer inserting outbox rows and a large lease deadlocked, and InnoDB
   * rolled back the writer (a streamed document's chunk batch, ABORTED). A lease still chosen as a
   * deadlock victim (two loops' leases) runs again; it has no effect outside the database.
   */
  async lease(limit: number, leaseMs: number, now = Date.now(), only?: OutboxClass): Promise<OutboxEntry[]> {
    return inTransaction(
      this.store,
      async (trx) => {
        const due = (bulk: boolean, max: number) => {
          let query = trx
            .selectFrom('outbox')
            .selectAll()
            .where('processed_at', 'is', null)
            .where('parked_at', 'is', null)
            .where('available_at', '<=', now)
            .where('aggregate_kind', bulk ? 'in' : 'not in', BULK_AGGREGATES)
            .orderBy('id')
            .limit(max);
          if (supportsRowLocks(this.store.dialect)) query = query.forUpdate().skipLocked();
          return query.execute();
        };
        const rows = only === 'bulk' ? [] : await due(false, limit);
        if (rows.length < limit && only !== 'conversational')
          rows.push(...(await due(true, limit - rows.length)));
        if (rows.length === 0) return [];
        await trx
          .updateTable('outbox')
          .set({ available_at: now + leaseMs })
          .where(
            'id',
            'in',
            rows.map((r) => r.id),
          )
          .execute();
        return rows.map(toEntry);
      },
      LEASE_TRANSACTION,
    );
  }

  /** Marks leased rows done. */
  async complete(ids: readonly number[], now = Date.now()): Promise<void> {
    if (ids.length === 0) return;
    await run(this.store, (db) =>
      db
        .updateTable('outbox')
        .set({ processed_at: now })
        .where('id', 'in', [...ids])
        .execute(),
    );
  }

  /**
   * Records failures of leased rows: each is retried at `retryAt`, or parked once it has failed
   * `maxAttempts` times.
   */
  async fail(
    failures: readonly { entry: OutboxEntry; error: string; retryAt: number }[],
    now = Date.now(),
  ): Promise<void> {
    if (failures.length === 0) return;
    await inTransaction(this.store, async (trx) => {
      for (const { entry, error, retryAt } of failures) {
        const attempts = entry.attempts + 1;
        await trx
          .updateTable('outbox')
          .set({
            attempts,
            last_error: error.slice(0, 1024),
            available_at: retryAt,
            parked_at: attempts >= this.maxAttempts ? now : null,
          })
          .where('id', '=', entry.id)
          .execute();
      }
    });
  }

  /**
   * Leases a batch, hands it to `handle`, and records what `handle` reports: a convenience over
   * {@link lease}, {@link complete} and {@link fail}. Returns how many rows were leased.
   */
  async claim(
    limit: number,
    handle: (entries: OutboxEntry[]) => Promise<{
      processed: number[];
      failed: { id: number; error: string; retryAt: number }[];
    }>,
    now = Date.now(),
    leaseMs = 60_000,
  ): Promise<number> {
    const entries = await this.lease(limit, leaseMs, now);
    if (entries.length === 0) return 0;
    const result = await handle(entries);
    const byId = new Map(entries.map((e) => [e.id, e]));
    await this.complete(result.processed, now);
    await this.fail(
      result.failed.flatMap((f) => {
        const entry = byId.get(f.id);
        return entry === undefined ? [] : [{ entry, error: f.error, retryAt: f.retryAt }];
      }),
      now,
    );
    return entries.length;
  }

  /**
   * Pending rows (of one tenant, or all), how many of them are being retried after a failure, the
   * age of the oldest, the time of the last processed row, and parked rows: for index status.
   */
  async backlog(
    now = Date.now(),
    tenantId?: string,
  ): Promise<{
    pending: number;
    retrying: number;
    oldestCreatedAt?: number;
    oldestAgeMs: number;
    parked: number;
    lastProcessedAt?: number;
  }> {
    return run(this.store, async (db) => {
      let base = db.selectFrom('outbox');
      if (tenantId !== undefined) base = base.where('tenant_id', '=', tenantId);
      const pending = await base
        .select((eb) => [
          eb.fn.countAll<number>().as('pending'),
          eb.fn.min<number | null>('created_at').as('oldest'),
          eb.fn
            .sum<number | string | null>(eb.case().when('attempts', '>', 0).then(1).else(0).end())
            .as('retrying'),
        ])
        .where('processed_at', 'is', null)
        .where('parked_at', 'is', null)
        .executeTakeFirstOrThrow();
      const parked = await base
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('parked_at', 'is not', null)
        .executeTakeFirstOrThrow();
      const last = await base
        .select((eb) => eb.fn.max<number | null>('processed_at').as('at'))
        .executeTakeFirstOrThrow();
      const oldest = pending.oldest ?? undefined;
      return {
        pending: pending.pending,
        // SUM is DECIMAL on MySQL (a string through mysql2 with decimalNumbers off); Number() either way.
        retrying: Number(pending.retrying ?? 0),
        oldestCreatedAt: oldest,
        oldestAgeMs: oldest === undefined ? 0 : now - oldest,
        parked: parked.n,
        lastProcessedAt: last.at ?? undefined,
      };
    });
  }

  /** The newest outbox row id (0 when empty): a high-water mark for a rebuild's catch-up. */
  async lastId(): Promise<number> {
    return run(this.store, async (db) => {
      const row = await db
        .selectFrom('outbox')
        .select((eb) => eb.fn.max<number | null>('id').as('id'))
        .executeTakeFirstOrThrow();
      return row.id ?? 0;
    });
  }

  /**
   * Rows after `afterId` in id order, processed or not: what changed since a high-water mark,
   * replayed by a rebuild into its new collection before and after it swaps the alias.
   */
  async since(afterId: number, limit: number): Promise<OutboxEntry[]> {
    return run(this.store, async (db) => {
      const rows = await db
        .selectFrom('outbox')
        .selectAll()
        .where('id', '>', afterId)
        .orderBy('id')
        .limit(limit)
        .execute();
      return rows.map(toEntry);
    });
  }

  /** Parked rows with their errors, oldest first (for operators and index status). */
  async parked(
    limit: number,
  ): Promise<
    { id: number; aggregate: OutboxAggregate; aggregateId: string; attempts: number; lastError: string }[]
  > {
    return run(this.store, async (db) => {
      const rows = await db
        .selectFrom('outbox')
        .select(['id', 'aggregate_kind', 'aggregate_id', 'attempts', 'last_error'])
        .where('parked_at', 'is not', null)
        .orderBy('id')
        .limit(limit)
        .execute();
      return rows.map((r) => ({
        id: r.id,
        aggregate: r.aggregate_kind as OutboxAggregate,
        aggregateId: r.aggregate_id,
        attempts: r.attempts,
        lastError: r.last_error,
      }));
    });
  }

  /** Deletes processed rows older than `before` (housekeeping). */
  async prune(before: number): Promise<number> {
    return run(this.store, async (db) => {
      const result = await db.deleteFrom('outbox').where('processed_at', '<', before).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}
