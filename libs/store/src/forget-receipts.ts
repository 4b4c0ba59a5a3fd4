import { sql, type Kysely, type Selectable } from 'kysely';
import { encodeTime } from 'ulid';
import { errors } from '@engram/errors';
import { batches } from './batches.js';
import { fromJson, optional, toJson } from './codec.js';
import type { Store } from './database.js';
import { newId } from './ids.js';
import type { MemoryRepository } from './memories.js';
import { enqueueOutbox } from './outbox.js';
import { keysetOn, keysetPage, type Page, type PageRequest } from './pagination.js';
import { deleteWhereIn, findOne } from './rows.js';
import type { Database } from './schema.js';
import { read, run, type Executor } from './store-context.js';

/**
 * Forget receipts (governance `ForgetUser`): the proof that a subject's content was erased, and
 * the durable state of the erasure. A receipt is created, together with the erasure of
 * governance's own content, in one transaction; the remaining steps (context, ingestion, a final
 * governance sweep, the vector index) are recorded on the row as they complete, so a restarted
 * process resumes where the last one stopped. Receipts are never deleted and hold no content.
 */

/**
 * The table of this module (kept beside its repository; see migration 0003). A type alias, not an
 * interface: Kysely's `withTables` needs a shape with an implicit index signature.
 */
export type ForgetReceiptsTable = {
  id: string;
  tenant_id: string;
  subject: string;
  requested_by: string;
  reason: string;
  request_id: string;
  state: string;
  step: string;
  counts_json: string;
  outbox_from_id: number;
  outbox_to_id: number | null;
  attempts: number;
  next_attempt_at: number | null;
  last_error_reason: string;
  last_error: string;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
  version: number;
};

/** The tables of migration 0003 that this module reads and writes. */
export type ForgetTables = {
  forget_receipts: ForgetReceiptsTable;
};

type ReceiptRow = Selectable<ForgetReceiptsTable>;

export type ForgetReceiptState = 'PENDING' | 'COMPLETED';

/**
 * The steps after governance's own erasure, in order: context's session states, ingestion's
 * documents and conversations, a last governance sweep (extractions that raced the erasure),
 * waiting for the indexer to apply the point deletions and every earlier row of the tenant, a
 * subject-wide purge of the index (a SUBJECT outbox row, decision 0030); DONE once COMPLETED.
 */
export type ForgetStep = 'CONTEXT' | 'INGESTION' | 'SWEEP' | 'INDEX' | 'PURGE' | 'DONE';

/** What an erasure removed, per store (the API's `ForgetCounts`). */
export interface ForgetCountsRecord {
  readonly memories: number;
  readonly revisionsRedacted: number;
  readonly revisionActorsRedacted: number;
  readonly extractionJobs: number;
  readonly documents: number;
  readonly chunks: number;
  readonly sessions: number;
  readonly messages: number;
  readonly memCells: number;
  readonly sessionStates: number;
  readonly vectorPoints: number;
}

export const ZERO_FORGET_COUNTS: ForgetCountsRecord = {
  memories: 0,
  revisionsRedacted: 0,
  revisionActorsRedacted: 0,
  extractionJobs: 0,
  documents: 0,
  chunks: 0,
  sessions: 0,
  messages: 0,
  memCells: 0,
  sessionStates: 0,
  vectorPoints: 0,
};

/** A receipt as stored. Times are UTC epoch milliseconds; `createdAt` is the cutoff. */
export interface ForgetReceiptRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly subject: string;
  readonly requestedBy: string;
  readonly reason: string;
  readonly requestId: string;
  readonly state: ForgetReceiptState;
  readonly step: ForgetStep;
  readonly counts: ForgetCountsRecord;
  /** Outbox rows written by the erasure have ids above this. */
  readonly outboxFromId: number;
  /** …and at most this, once every deleting step has committed. */
  readonly outboxToId?: number;
  /** Failed attempts of the current step. */
  readonly attempts: number;
  /** When the worker may next work on the receipt (a retry's backoff, or a lease). */
  readonly nextAttemptAt?: number;
  /** ErrorReason name of the latest failure still being retried; '' if none. */
  readonly lastErrorReason: string;
  readonly lastError: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly completedAt?: number;
  /** Write counter: the worker's compare-and-set token. */
  readonly version: number;
}

/** What a new receipt records of its request. */
export interface NewForgetReceipt {
  readonly tenantId: string;
  readonly subject: string;
  readonly requestedBy: string;
  readonly reason: string;
  readonly requestId: string;
}

/** Narrowing filters of {@link ForgetReceiptRepository.list}. */
export interface ForgetReceiptFilter {
  /** Only receipts for this subject. */
  readonly subject?: string;
  /** Empty or absent: every state. */
  readonly states?: readonly ForgetReceiptState[];
  /** Only receipts this subject requested or that concern it (non-administrators). */
  readonly involving?: string;
}

/** A change of a receipt by its worker. */
export interface ForgetReceiptPatch {
  readonly step?: ForgetStep;
  readonly state?: ForgetReceiptState;
  /** Replaces the counts (callers add to the previous ones). */
  readonly counts?: ForgetCountsRecord;
  readonly outboxToId?: number;
  readonly attempts?: number;
  /** null: due now. */
  readonly nextAttemptAt?: number | null;
  /** null clears the latest failure. */
  readonly lastError?: { readonly reason: string; readonly message: string } | null;
  readonly completedAt?: number;
}

/** How far the indexer is with the point deletions of an erasure. */
export interface ForgetIndexProgress {
  /** Outbox rows of the erasure not yet processed (parked ones included). */
  readonly pending: number;
  /** …of which parked after repeated failures (not retried until an operator requeues them). */
  readonly parked: number;
  /** Point deletions (memories, chunks, rounds) the erasure enqueued. */
  readonly pointDeletions: number;
  /** …of which the indexer has applied. */
  readonly pointDeletionsDone: number;
  /**
   * Other unprocessed, unparked outbox rows of the tenant up to the mark, written before or during
   * the erasure: an indexer may hold one (an UPSERT it planned before the erasure) and write its
   * point after the erasure's DELETE, so the subject-wide purge waits for them.
   */
  readonly unsettled: number;
}

/** The outbox payload key that tags a row with the receipt whose erasure wrote it. */
export const FORGET_RECEIPT_PAYLOAD_KEY = 'forgetReceipt';

/** The outbox payload of the rows an erasure writes: ids only, as every payload. */
export function forgetPayload(receiptId: string): Readonly<Record<string, string>> {
  return { [FORGET_RECEIPT_PAYLOAD_KEY]: receiptId };
}

/** The LIKE pattern of the outbox payloads tagged with a receipt. */
function receiptTag(receiptId: string): string {
  return `%"${FORGET_RECEIPT_PAYLOAD_KEY}":"${receiptId}"%`;
}

/** `forgetReceipts/{id}`. */
export function forgetReceiptName(id: string): string {
  return `forgetReceipts/${id}`;
}

function tables(db: Executor): Kysely<Database & ForgetTables> {
  // A transaction stays a transaction: `withTables` only widens the types.
  return (db as Kysely<Database>).withTables<ForgetTables>();
}

function toRecord(row: ReceiptRow): ForgetReceiptRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    subject: row.subject,
    requestedBy: row.requested_by,
    reason: row.reason,
    requestId: row.request_id,
    state: row.state as ForgetReceiptState,
    step: row.step as ForgetStep,
    counts: { ...ZERO_FORGET_COUNTS, ...fromJson<Partial<ForgetCountsRecord>>(row.counts_json) },
    outboxFromId: row.outbox_from_id,
    outboxToId: optional(row.outbox_to_id),
    attempts: row.attempts,
    nextAttemptAt: optional(row.next_attempt_at),
    lastErrorReason: row.last_error_reason,
    lastError: row.last_error,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    completedAt: optional(row.completed_at),
    version: row.version,
  };
}

/** Adds counts, field by field. */
export function addForgetCounts(a: ForgetCountsRecord, b: Partial<ForgetCountsRecord>): ForgetCountsRecord {
  const sum = { ...a };
  for (const key of Object.keys(ZERO_FORGET_COUNTS) as (keyof ForgetCountsRecord)[]) {
    sum[key] = a[key] + (b[key] ?? 0);
  }
  return sum;
}

/** Forget receipts, owned by governance. */
export class ForgetReceiptRepository {
  constructor(private readonly store: Store) {}

  /**
   * Inserts a PENDING receipt whose next step is CONTEXT, due now, with `now` as its cutoff.
   * Records the outbox high-water mark first: every outbox row the erasure writes afterwards
   * (in this transaction or later ones) has a higher id.
   */
  async create(
    trx: Executor,
    input: NewForgetReceipt,
    counts: ForgetCountsRecord = ZERO_FORGET_COUNTS,
    now = Date.now(),
  ): Promise<ForgetReceiptRecord> {
    const mark = await this.outboxMark(trx);
    const row: ReceiptRow = {
      id: newId(now),
      tenant_id: input.tenantId,
      subject: input.subject,
      requested_by: input.requestedBy,
      reason: input.reason.slice(0, 1024),
      request_id: input.requestId,
      state: 'PENDING',
      step: 'CONTEXT',
      counts_json: toJson(counts),
      outbox_from_id: mark,
      outbox_to_id: null,
      attempts: 0,
      next_attempt_at: now,
      last_error_reason: '',
      last_error: '',
      created_at: now,
      updated_at: now,
      completed_at: null,
      version: 1,
    };
    await tables(trx).insertInto('forget_receipts').values(row).execute();
    return toRecord(row);
  }

  /**
   * The receipt an erasure (`EraseSubject`) acts under: it must exist in the tenant, be PENDING
   * and be for `subject`, else FAILED_PRECONDITION `FORGET_RECEIPT_NOT_PENDING` (one answer for
   * all three, so the check reveals nothing about other subjects' receipts).
   */
  async requirePending(tenantId: string, id: string, subject: string): Promise<ForgetReceiptRecord> {
    const receipt = await this.get(tenantId, id);
    if (receipt?.state !== 'PENDING' || receipt.subject !== subject) {
      throw errors.failedPrecondition(
        'FORGET_RECEIPT_NOT_PENDING',
        'the forget receipt does not exist, is not pending, or is for another subject',
        { forget_receipt: forgetReceiptName(id) },
      );
    }
    return receipt;
  }

  /** A receipt by id within the tenant, or undefined. */
  async get(tenantId: string, id: string, executor?: Executor): Promise<ForgetReceiptRecord | undefined> {
    return findOne<'forget_receipts', ForgetReceiptRecord, Database & ForgetTables>(
      this.store,
      'forget_receipts',
      { tenant_id: tenantId, id },
      toRecord,
      executor,
    );
  }

  /**
   * Receipts of the tenant, newest first (id descending: the id is a ULID of the creation time,
   * so this is `create_time` descending, then name descending), narrowed by `filter`.
   */
  async list(
    tenantId: string,
    filter: ForgetReceiptFilter,
    page: PageRequest,
  ): Promise<Page<ForgetReceiptRecord>> {
    return keysetPage(this.store, page, {
      query: { tenantId, filter },
      rows: (db) => {
        let q = tables(db).selectFrom('forget_receipts').selectAll().where('tenant_id', '=', tenantId);
        if (filter.subject !== undefined) q = q.where('subject', '=', filter.subject);
        if (filter.states?.length) q = q.where('state', 'in', [...filter.states]);
        const involving = filter.involving;
        if (involving !== undefined) {
          q = q.where((eb) => eb.or([eb('subject', '=', involving), eb('requested_by', '=', involving)]));
        }
        return q;
      },
      order: keysetOn('id', 'desc', String),
      toItem: toRecord,
    });
  }

  /** PENDING receipts of every tenant whose next attempt is due, oldest first. */
  async due(now: number, limit: number): Promise<ForgetReceiptRecord[]> {
    const rows = await run(this.store, (db) =>
      tables(db)
        .selectFrom('forget_receipts')
        .selectAll()
        .where('state', '=', 'PENDING')
        .where('next_attempt_at', '<=', now)
        .orderBy('next_attempt_at')
        .orderBy('id')
        .limit(limit)
        .execute(),
    );
    return rows.map(toRecord);
  }

  /**
   * The earliest time a PENDING receipt is due (undefined when none is pending): the worker
   * sleeps until then.
   */
  async nextDueAt(): Promise<number | undefined> {
    const row = await run(this.store, (db) =>
      tables(db)
        .selectFrom('forget_receipts')
        .select((eb) => eb.fn.min<number | null>('next_attempt_at').as('at'))
        .where('state', '=', 'PENDING')
        .executeTakeFirstOrThrow(),
    );
    return row.at ?? undefined;
  }

  /**
   * Applies `patch` if the receipt is still at `record.version` (compare-and-set) and returns the
   * new record; undefined when another worker changed it first (nothing written).
   */
  async update(
    record: ForgetReceiptRecord,
    patch: ForgetReceiptPatch,
    now = Date.now(),
    executor?: Executor,
  ): Promise<ForgetReceiptRecord | undefined> {
    const after: ForgetReceiptRecord = {
      ...record,
      ...(patch.step !== undefined ? { step: patch.step } : {}),
      ...(patch.state !== undefined ? { state: patch.state } : {}),
      ...(patch.counts !== undefined ? { counts: patch.counts } : {}),
      ...(patch.outboxToId !== undefined ? { outboxToId: patch.outboxToId } : {}),
      ...(patch.attempts !== undefined ? { attempts: patch.attempts } : {}),
      ...(patch.nextAttemptAt !== undefined ? { nextAttemptAt: patch.nextAttemptAt ?? undefined } : {}),
      ...(patch.lastError !== undefined
        ? {
            lastErrorReason: patch.lastError?.reason ?? '',
            lastError: (patch.lastError?.message ?? '').slice(0, 1024),
          }
        : {}),
      ...(patch.completedAt !== undefined ? { completedAt: patch.completedAt } : {}),
      updatedAt: now,
      version: record.version + 1,
    };
    const query = (db: Executor) =>
      tables(db)
        .updateTable('forget_receipts')
        .set({
          step: after.step,
          state: after.state,
          counts_json: toJson(after.counts),
          outbox_to_id: after.outboxToId ?? null,
          attempts: after.attempts,
          next_attempt_at: after.nextAttemptAt ?? null,
          last_error_reason: after.lastErrorReason,
          last_error: after.lastError,
          completed_at: after.completedAt ?? null,
          updated_at: after.updatedAt,
          version: after.version,
        })
        .where('tenant_id', '=', record.tenantId)
        .where('id', '=', record.id)
        .where('version', '=', record.version)
        .executeTakeFirst();
    const result = await read(this.store, executor, query);
    return Number(result.numUpdatedRows) === 1 ? after : undefined;
  }

  /**
   * Takes a due receipt for `leaseMs` (compare-and-set): other workers leave it alone until the
   * lease runs out, which is also when it is resumed if this process stops. Undefined when
   * another worker took it first.
   */
  async take(
    record: ForgetReceiptRecord,
    leaseMs: number,
    now = Date.now(),
  ): Promise<ForgetReceiptRecord | undefined> {
    return this.update(record, { nextAttemptAt: now + leaseMs }, now);
  }

  /** The newest outbox row id (0 when empty): the upper bound of an erasure's rows. */
  async outboxMark(executor?: Executor): Promise<number> {
    const query = (db: Executor) =>
      db
        .selectFrom('outbox')
        .select((eb) => eb.fn.max<number | null>('id').as('id'))
        .executeTakeFirstOrThrow();
    const row = await read(this.store, executor, query);
    return row.id ?? 0;
  }

  /**
   * How far the indexer is with the rows the receipt's erasure wrote: outbox rows of the tenant
   * with ids in `(outboxFromId, toId]` tagged with the receipt ({@link forgetPayload}).
   */
  async indexProgress(record: ForgetReceiptRecord, toId: number): Promise<ForgetIndexProgress> {
    const points = sql`aggregate_kind in ('MEMORY', 'CHUNK', 'ROUND')`;
    const row = await run(this.store, (db) =>
      db
        .selectFrom('outbox')
        .select([
          sql<number | string | null>`sum(case when processed_at is null then 1 else 0 end)`.as('pending'),
          sql<
            number | string | null
          >`sum(case when processed_at is null and parked_at is not null then 1 else 0 end)`.as('parked'),
          sql<number | string | null>`sum(case when ${points} then 1 else 0 end)`.as('points'),
          sql<
            number | string | null
          >`sum(case when ${points} and processed_at is not null then 1 else 0 end)`.as('pointsDone'),
        ])
        .where('tenant_id', '=', record.tenantId)
        .where('id', '>', record.outboxFromId)
        .where('id', '<=', toId)
        .where('payload_json', 'like', receiptTag(record.id))
        .executeTakeFirstOrThrow(),
    );
    // Rows not tagged with the receipt, among the unprocessed ones (the outbox's processed+id index).
    const unsettled = await run(this.store, (db) =>
      db
        .selectFrom('outbox')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('processed_at', 'is', null)
        .where('parked_at', 'is', null)
        .where('id', '<=', toId)
        .where('tenant_id', '=', record.tenantId)
        .where('payload_json', 'not like', receiptTag(record.id))
        .executeTakeFirstOrThrow(),
    );
    // SUM is DECIMAL on MySQL and NULL over no rows: Number() either way.
    return {
      pending: Number(row.pending ?? 0),
      parked: Number(row.parked ?? 0),
      pointDeletions: Number(row.points ?? 0),
      pointDeletionsDone: Number(row.pointsDone ?? 0),
      unsettled: Number(unsettled.n),
    };
  }

  /**
   * Enqueues the subject-wide purge of the index (a SUBJECT DELETE row naming the receipt: the
   * indexer deletes every point of the tenant whose owner is the receipt's subject), tagged with it, and returns the new
   * high-water mark that includes it. Written once the erasure's rows and every earlier row of the
   * tenant are processed, so no point planned before the erasure can land after it.
   */
  async enqueueSubjectPurge(trx: Executor, record: ForgetReceiptRecord, now = Date.now()): Promise<number> {
    await enqueueOutbox(
      trx,
      [
        {
          tenantId: record.tenantId,
          aggregate: 'SUBJECT',
          // The receipt, not the subject: no outbox row names an erased user (the indexer reads
          // the subject from the receipt).
          aggregateId: record.id,
          operation: 'DELETE',
          payload: forgetPayload(record.id),
        },
      ],
      now,
    );
    return this.outboxMark(trx);
  }
}

/**
 * Removes the request ids a subject used with the methods of one service (`method` starting
 * with `methodPrefix`, e.g. `engram.ingestion.v1.IngestionService/`), recorded at or before the
 * cutoff, except `keepMethods`: their stored results name the erased resources. Returns how many.
 */
export async function purgeRequestIds(
  trx: Executor,
  input: {
    readonly tenantId: string;
    readonly subject: string;
    readonly methodPrefix: string;
    readonly createdAtOrBefore: number;
    readonly keepMethods?: readonly string[];
  },
): Promise<number> {
  // Methods starting with the prefix, as a range (binary collation on both engines).
  const prefix = input.methodPrefix;
  const afterPrefix = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  let q = trx
    .deleteFrom('request_ids')
    .where('tenant_id', '=', input.tenantId)
    .where('subject', '=', input.subject)
    .where('method', '>=', prefix)
    .where('method', '<', afterPrefix)
    .where('created_at', '<=', input.createdAtOrBefore);
  if (input.keepMethods?.length) q = q.where('method', 'not in', [...input.keepMethods]);
  const result = await q.executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The greatest ULID of millisecond `time`: ids of rows created at or before it sort at or below. */
function lastIdAt(time: number): string {
  return `${encodeTime(time, 10)}${'Z'.repeat(16)}`;
}

/**
 * The governance sweep after ingestion erased a subject's conversations: extraction jobs of the
 * subject created after the cutoff for sessions created at or before it (an extraction that
 * started between governance's erasure and ingestion's) are deleted, with the memories they
 * wrote (hard-deleted, revisions reduced to audit records, point deletions enqueued with
 * `payload`). A job still running fails at its commit: its row is gone. Returns the counts.
 */
export async function eraseLateExtractions(
  trx: Executor,
  memories: MemoryRepository,
  input: {
    readonly tenantId: string;
    readonly subject: string;
    readonly cutoff: number;
    readonly erasedBy: string;
    readonly payload?: Readonly<Record<string, string | number>>;
  },
  now = Date.now(),
): Promise<Pick<ForgetCountsRecord, 'memories' | 'revisionsRedacted' | 'extractionJobs'>> {
  const jobs = await trx
    .selectFrom('extraction_jobs')
    .select('id')
    .where('tenant_id', '=', input.tenantId)
    .where('owner_id', '=', input.subject)
    .where('session_id', '<=', lastIdAt(input.cutoff))
    .execute();
  if (jobs.length === 0) return { memories: 0, revisionsRedacted: 0, extractionJobs: 0 };
  const jobIds = jobs.map((j) => j.id);
  const ids = await memories.idsWrittenByJobs(trx, input.tenantId, input.subject, jobIds);
  const purged = await memories.purge(
    trx,
    input.tenantId,
    ids,
    { erasedBy: input.erasedBy, ...(input.payload !== undefined ? { payload: input.payload } : {}) },
    now,
  );
  let extractionJobs = 0;
  for (const batch of batches(jobIds, 500)) {
    extractionJobs += await deleteWhereIn(trx, 'extraction_jobs', input.tenantId, 'id', batch);
  }
  return { memories: purged.memories, revisionsRedacted: purged.revisionsRedacted, extractionJobs };
}
