import { errors } from '@engram/errors';
import { fromJson, toJson } from './codec.js';
import type { Store } from './database.js';
import { newId } from './ids.js';
import { keysetOn, keysetPage, type Page, type PageRequest } from './pagination.js';
import { findOne } from './rows.js';
import type { ReindexJobsTable } from './schema.js';
import { run, type Executor } from './store-context.js';

export type ReindexKind = 'MEMORY' | 'CHUNK' | 'ROUND';
export type ReindexMode = 'FULL' | 'MISSING_ONLY';
export type ReindexJobState = 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';

/** One item a reindex job could not index. */
export interface ReindexErrorSample {
  readonly kind: ReindexKind;
  readonly item: string;
  readonly message: string;
  readonly time: number;
}

/** A tenant-scoped rebuild or drift repair of the vector index (`reindexJobs/{id}`). */
export interface ReindexJobRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly creator: string;
  readonly kinds: readonly ReindexKind[];
  readonly mode: ReindexMode;
  readonly state: ReindexJobState;
  readonly rowsTotal: number;
  readonly rowsScanned: number;
  readonly pointsUpserted: number;
  readonly pointsDeleted: number;
  readonly rowsUnchanged: number;
  readonly errorCount: number;
  readonly errorSamples: readonly ReindexErrorSample[];
  /** Why the job FAILED: an ErrorReason name and a message. */
  readonly error?: { readonly reason: string; readonly message: string };
  readonly embeddingModel: string;
  readonly embeddingDimensions: number;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly startedAt?: number;
  readonly completedAt?: number;
}

export type ReindexJobPatch = Partial<
  Pick<
    ReindexJobRecord,
    | 'state'
    | 'rowsTotal'
    | 'rowsScanned'
    | 'pointsUpserted'
    | 'pointsDeleted'
    | 'rowsUnchanged'
    | 'errorCount'
    | 'errorSamples'
    | 'error'
    | 'startedAt'
    | 'completedAt'
  >
>;

const TERMINAL: readonly ReindexJobState[] = ['SUCCEEDED', 'FAILED', 'CANCELLED'];

function toRecord(r: ReindexJobsTable): ReindexJobRecord {
  const error = fromJson<{ reason: string; message: string }>(r.error_json);
  return {
    id: r.id,
    tenantId: r.tenant_id,
    creator: r.creator,
    kinds: fromJson<ReindexKind[]>(r.kinds_json) ?? [],
    mode: r.mode as ReindexMode,
    state: r.state as ReindexJobState,
    rowsTotal: r.rows_total,
    rowsScanned: r.rows_scanned,
    pointsUpserted: r.points_upserted,
    pointsDeleted: r.points_deleted,
    rowsUnchanged: r.rows_unchanged,
    errorCount: r.error_count,
    errorSamples: fromJson<ReindexErrorSample[]>(r.error_samples_json) ?? [],
    ...(error === undefined ? {} : { error }),
    embeddingModel: r.embedding_model,
    embeddingDimensions: r.embedding_dimensions,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    ...(r.started_at === null ? {} : { startedAt: r.started_at }),
    ...(r.completed_at === null ? {} : { completedAt: r.completed_at }),
  };
}

/** Reindex jobs: written by retrieval only. */
export class ReindexJobRepository {
  constructor(private readonly store: Store) {}

  /**
   * Creates a PENDING job, unless a PENDING or RUNNING job of the tenant already covers one of the
   * kinds: then FAILED_PRECONDITION `STATE_CONFLICT` naming it.
   */
  async create(
    trx: Executor,
    input: Pick<
      ReindexJobRecord,
      'tenantId' | 'creator' | 'kinds' | 'mode' | 'embeddingModel' | 'embeddingDimensions'
    >,
    now = Date.now(),
  ): Promise<ReindexJobRecord> {
    const active = await trx
      .selectFrom('reindex_jobs')
      .selectAll()
      .where('tenant_id', '=', input.tenantId)
      .where('state', 'in', ['PENDING', 'RUNNING'])
      .execute();
    const clash = active.map(toRecord).find((job) => job.kinds.some((k) => input.kinds.includes(k)));
    if (clash !== undefined) {
      throw errors.failedPrecondition(
        'STATE_CONFLICT',
        'a reindex job of this tenant already covers these kinds',
        {
          name: `reindexJobs/${clash.id}`,
          state: clash.state,
        },
      );
    }
    const row: ReindexJobsTable = {
      id: newId(now),
      tenant_id: input.tenantId,
      creator: input.creator,
      kinds_json: toJson(input.kinds),
      mode: input.mode,
      state: 'PENDING',
      rows_total: 0,
      rows_scanned: 0,
      points_upserted: 0,
      points_deleted: 0,
      rows_unchanged: 0,
      error_count: 0,
      error_samples_json: '[]',
      error_json: null,
      embedding_model: input.embeddingModel,
      embedding_dimensions: input.embeddingDimensions,
      created_at: now,
      updated_at: now,
      started_at: null,
      completed_at: null,
    };
    await trx.insertInto('reindex_jobs').values(row).execute();
    return toRecord(row);
  }

  async get(tenantId: string, id: string): Promise<ReindexJobRecord | undefined> {
    return findOne(this.store, 'reindex_jobs', { tenant_id: tenantId, id }, toRecord);
  }

  /** The tenant's jobs, newest first. */
  async list(
    tenantId: string,
    filter: { states?: readonly ReindexJobState[] },
    page: PageRequest,
  ): Promise<Page<ReindexJobRecord>> {
    return keysetPage(this.store, page, {
      query: { tenantId, filter },
      rows: (db) => {
        const q = db.selectFrom('reindex_jobs').selectAll().where('tenant_id', '=', tenantId);
        return filter.states?.length ? q.where('state', 'in', [...filter.states]) : q;
      },
      order: keysetOn('id', 'desc', String),
      toItem: toRecord,
    });
  }

  /**
   * Applies `patch` unless the job already reached a terminal state (a cancelled job is never
   * revived by a worker's late progress update). Returns the job as stored afterwards.
   */
  async update(
    tenantId: string,
    id: string,
    patch: ReindexJobPatch,
    now = Date.now(),
  ): Promise<ReindexJobRecord> {
    return run(this.store, async (db) => {
      await db
        .updateTable('reindex_jobs')
        .set({
          updated_at: now,
          ...(patch.state === undefined ? {} : { state: patch.state }),
          ...(patch.rowsTotal === undefined ? {} : { rows_total: patch.rowsTotal }),
          ...(patch.rowsScanned === undefined ? {} : { rows_scanned: patch.rowsScanned }),
          ...(patch.pointsUpserted === undefined ? {} : { points_upserted: patch.pointsUpserted }),
          ...(patch.pointsDeleted === undefined ? {} : { points_deleted: patch.pointsDeleted }),
          ...(patch.rowsUnchanged === undefined ? {} : { rows_unchanged: patch.rowsUnchanged }),
          ...(patch.errorCount === undefined ? {} : { error_count: patch.errorCount }),
          ...(patch.errorSamples === undefined ? {} : { error_samples_json: toJson(patch.errorSamples) }),
          ...(patch.error === undefined ? {} : { error_json: toJson(patch.error) }),
          ...(patch.startedAt === undefined ? {} : { started_at: patch.startedAt }),
          ...(patch.completedAt === undefined ? {} : { completed_at: patch.completedAt }),
        })
        .where('tenant_id', '=', tenantId)
        .where('id', '=', id)
        .where('state', 'not in', [...TERMINAL])
        .execute();
      const job = await findOne(this.store, 'reindex_jobs', { tenant_id: tenantId, id }, toRecord, db);
      if (job === undefined) throw errors.notFound(`reindexJobs/${id}`);
      return job;
    });
  }
}

/**
 * Marks PENDING/RUNNING jobs that made no progress since `staleBefore` FAILED (their process
 * died: a live job persists progress after every batch). Returns how many were marked.
 */
export async function failStaleReindexJobs(
  store: Store,
  staleBefore: number,
  now = Date.now(),
): Promise<number> {
  return run(store, async (db) => {
    const result = await db
      .updateTable('reindex_jobs')
      .set({
        state: 'FAILED',
        completed_at: now,
        updated_at: now,
        error_json: toJson({
          reason: 'INTERNAL',
          message: 'the job stopped making progress (its process ended)',
        }),
      })
      .where('state', 'in', ['PENDING', 'RUNNING'])
      .where('updated_at', '<', staleBefore)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  });
}

/** Whether a job state is final. */
export function isTerminal(state: ReindexJobState): boolean {
  return TERMINAL.includes(state);
}
