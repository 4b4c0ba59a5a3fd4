import type { Selectable } from 'kysely';
import { errors } from '@engram/errors';
import type { JsonValue } from './codec.js';
import type { Store } from './database.js';
import { etagMismatch } from './errors.js';
import { newId } from './ids.js';
import { keysetOn, keysetPage, type Page, type PageRequest } from './pagination.js';
import { enumOf, json, nullable, nullableJson, rowCodec } from './row-codec.js';
import { findOne } from './rows.js';
import type { Database } from './schema.js';
import { read, run, type Executor } from './store-context.js';

export type Extractor = 'EPISODE' | 'EVENT' | 'FORESIGHT' | 'FACT';
export type ExtractionJobState = 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED';

/** One memory-extraction run over a MemCell, as stored by governance. Times are epoch ms. */
export interface ExtractionJobRecord {
  readonly id: string;
  readonly tenantId: string;
  /** Owner of the MemCell's session, who owns the memories written. */
  readonly ownerId: string;
  readonly memCellId: string;
  /** The MemCell's session ('' for jobs recorded before it was kept). */
  readonly sessionId: string;
  readonly state: ExtractionJobState;
  readonly extractors: readonly Extractor[];
  /** How many times the job was started. */
  readonly attempts: number;
  /** Extractor runs, candidates, decisions and counts, as governance shapes them. Default {}. */
  readonly result: JsonValue;
  /** Model usage summed over extractors and attempts. Default {}. */
  readonly usage: JsonValue;
  readonly languageCode: string;
  /** Set when the job failed. */
  readonly error?: JsonValue;
  /** The request's `request_id`; '' if none. */
  readonly requestId: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** When it reached SUCCEEDED or FAILED. */
  readonly completedAt?: number;
}

/** What a new job is made of; the repository assigns id and times. */
export interface NewExtractionJob {
  readonly tenantId: string;
  readonly ownerId: string;
  readonly memCellId: string;
  readonly sessionId: string;
  readonly extractors: readonly Extractor[];
  /** Default PENDING. */
  readonly state?: ExtractionJobState;
  /** Default 0. */
  readonly attempts?: number;
  /** Default ''. */
  readonly languageCode?: string;
  /** Default ''. */
  readonly requestId?: string;
  readonly result?: JsonValue;
  readonly usage?: JsonValue;
}

/** Fields {@link ExtractionJobRepository.update} may change; `error: null` clears the error. */
export interface ExtractionJobPatch {
  readonly state?: ExtractionJobState;
  readonly attempts?: number;
  readonly result?: JsonValue;
  readonly usage?: JsonValue;
  readonly error?: JsonValue;
  readonly languageCode?: string;
  /** Default when the state becomes SUCCEEDED or FAILED: `now`. */
  readonly completedAt?: number;
  /** Apply only if the job is still in this state (ABORTED `ETAG_MISMATCH` otherwise). */
  readonly expectedState?: ExtractionJobState;
  /**
   * Apply only if the job's attempt count is still this (ABORTED `ETAG_MISMATCH` otherwise): the
   * attempt that holds a RUNNING job, so that a runner whose job was taken over by a later
   * attempt cannot end it (decision 0027).
   */
  readonly expectedAttempts?: number;
}

/** Narrowing filters of {@link ExtractionJobRepository.list}. Empty arrays mean "any". */
export interface ExtractionJobFilter {
  readonly memCellId?: string;
  readonly sessionId?: string;
  readonly ownerId?: string;
  readonly states?: readonly ExtractionJobState[];
}

type ExtractionJobRow = Selectable<Database['extraction_jobs']>;

const FINAL_STATES: ReadonlySet<ExtractionJobState> = new Set(['SUCCEEDED', 'FAILED']);

/** Extraction jobs, owned by governance. Writes take the caller's transaction. */
export class ExtractionJobRepository {
  constructor(private readonly store: Store) {}

  /** Records a new job (PENDING unless given). */
  async create(trx: Executor, input: NewExtractionJob, now = Date.now()): Promise<ExtractionJobRecord> {
    const state = input.state ?? 'PENDING';
    const record: ExtractionJobRecord = {
      id: newId(now),
      tenantId: input.tenantId,
      ownerId: input.ownerId,
      memCellId: input.memCellId,
      sessionId: input.sessionId,
      state,
      extractors: input.extractors,
      attempts: input.attempts ?? 0,
      result: input.result ?? {},
      usage: input.usage ?? {},
      languageCode: input.languageCode ?? '',
      requestId: input.requestId ?? '',
      createdAt: now,
      updatedAt: now,
      completedAt: FINAL_STATES.has(state) ? now : undefined,
    };
    await trx.insertInto('extraction_jobs').values(toRow(record)).execute();
    return record;
  }

  /** A job by id within the tenant, or undefined. */
  async get(tenantId: string, id: string, executor?: Executor): Promise<ExtractionJobRecord | undefined> {
    return findOne(this.store, 'extraction_jobs', { tenant_id: tenantId, id }, toRecord, executor);
  }

  /** Jobs of one MemCell, newest first. */
  async listByMemCell(
    tenantId: string,
    memCellId: string,
    page: PageRequest,
  ): Promise<Page<ExtractionJobRecord>> {
    return this.list(tenantId, { memCellId }, page);
  }

  /** Jobs of the tenant, newest first (id descending), narrowed by `filter`. */
  async list(
    tenantId: string,
    filter: ExtractionJobFilter,
    page: PageRequest,
  ): Promise<Page<ExtractionJobRecord>> {
    return keysetPage(this.store, page, {
      query: { tenantId, filter },
      rows: (db) => {
        let q = db.selectFrom('extraction_jobs').selectAll().where('tenant_id', '=', tenantId);
        if (filter.memCellId !== undefined) q = q.where('mem_cell_id', '=', filter.memCellId);
        if (filter.sessionId !== undefined) q = q.where('session_id', '=', filter.sessionId);
        if (filter.ownerId !== undefined) q = q.where('owner_id', '=', filter.ownerId);
        if (filter.states?.length) q = q.where('state', 'in', [...filter.states]);
        return q;
      },
      order: keysetOn('id', 'desc', String),
      toItem: toRecord,
    });
  }

  /**
   * Applies `patch` and returns the new record. NOT_FOUND if absent; with `expectedState` (and
   * `expectedAttempts`), ABORTED `ETAG_MISMATCH` if the job is no longer in that state (or
   * attempt), nothing written. The write is a compare-and-set (`UPDATE … WHERE state = ? AND
   * attempts = ?` on what was read), so of two racing writers exactly one wins.
   */
  async update(
    trx: Executor,
    tenantId: string,
    id: string,
    patch: ExtractionJobPatch,
    now = Date.now(),
  ): Promise<ExtractionJobRecord> {
    const before = await this.get(tenantId, id, trx);
    if (before === undefined) throw errors.notFound(jobName(id));
    if (
      (patch.expectedState !== undefined && before.state !== patch.expectedState) ||
      (patch.expectedAttempts !== undefined && before.attempts !== patch.expectedAttempts)
    )
      throw etagMismatch(jobName(id));
    const state = patch.state ?? before.state;
    const completing = FINAL_STATES.has(state) && !FINAL_STATES.has(before.state);
    const after: ExtractionJobRecord = {
      ...before,
      state,
      attempts: patch.attempts ?? before.attempts,
      result: patch.result ?? before.result,
      usage: patch.usage ?? before.usage,
      error: patch.error === undefined ? before.error : (patch.error ?? undefined),
      languageCode: patch.languageCode ?? before.languageCode,
      completedAt: patch.completedAt ?? (completing ? now : before.completedAt),
      updatedAt: now,
    };
    const result = await trx
      .updateTable('extraction_jobs')
      .set(toRow(after))
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .where('state', '=', before.state)
      .where('attempts', '=', before.attempts)
      .executeTakeFirst();
    // The state or the attempt moved between our read and our write.
    if (Number(result.numUpdatedRows) !== 1) throw etagMismatch(jobName(id));
    return after;
  }

  /**
   * Renews the lease of the attempt that holds a RUNNING job (its `updated_at` becomes `now`):
   * false, and nothing written, when the job is no longer RUNNING with this attempt count.
   */
  async touch(tenantId: string, id: string, attempts: number, now = Date.now()): Promise<boolean> {
    const result = await run(this.store, (db) =>
      db
        .updateTable('extraction_jobs')
        .set({ updated_at: now })
        .where('tenant_id', '=', tenantId)
        .where('id', '=', id)
        .where('state', '=', 'RUNNING')
        .where('attempts', '=', attempts)
        .executeTakeFirst(),
    );
    return Number(result.numUpdatedRows) === 1;
  }

  /** The newest unfinished (PENDING or RUNNING) job of a MemCell, if any. */
  async findRunning(
    tenantId: string,
    memCellId: string,
    executor?: Executor,
  ): Promise<ExtractionJobRecord | undefined> {
    const row = await read(this.store, executor, (db) =>
      db
        .selectFrom('extraction_jobs')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .where('mem_cell_id', '=', memCellId)
        .where('state', 'in', ['PENDING', 'RUNNING'])
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst(),
    );
    return row === undefined ? undefined : toRecord(row);
  }

  /** Deletes every job of `ownerId` in the tenant (forgetting a user). Returns how many. */
  async purgeOwner(trx: Executor, tenantId: string, ownerId: string): Promise<number> {
    const result = await trx
      .deleteFrom('extraction_jobs')
      .where('tenant_id', '=', tenantId)
      .where('owner_id', '=', ownerId)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

function jobName(id: string): string {
  return `extractionJobs/${id}`;
}

const { toRecord, toRow } = rowCodec<ExtractionJobRecord, ExtractionJobRow>({
  id: 'id',
  tenantId: 'tenant_id',
  ownerId: 'owner_id',
  memCellId: 'mem_cell_id',
  sessionId: 'session_id',
  state: ['state', enumOf<ExtractionJobState>()],
  extractors: ['extractors_json', json<readonly Extractor[]>(() => [])],
  attempts: 'attempts',
  result: ['result_json', json<JsonValue>(() => ({}))],
  usage: ['usage_json', json<JsonValue>(() => ({}))],
  languageCode: 'language_code',
  error: ['error_json', nullableJson<JsonValue>()],
  requestId: 'request_id',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  completedAt: ['completed_at', nullable<number>()],
});

/** Rows of `extraction_jobs` and their records, both ways (export and import, `portability.ts`). */
export const extractionJobRows = { toRecord, toRow } as const;
