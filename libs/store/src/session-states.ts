import { errors } from '@engram/errors';
import type { Selectable } from 'kysely';
import { fromJson, optional, toJson } from './codec.js';
import type { Store } from './database.js';
import { isDuplicate, mapDatabaseError, etagMismatch } from './errors.js';
import type { Database } from './schema.js';
import { run, type Executor } from './store-context.js';

/** Who wrote a key point or open loop. */
export type StateItemOrigin = 'COMPACTION' | 'CLIENT';

/** A decision taken or a conclusion confirmed in the conversation. Times are epoch ms. */
export interface KeyPoint {
  /** A ULID, unique within the session. */
  readonly id: string;
  readonly text: string;
  /** Message ids of the session the item rests on, oldest first. */
  readonly sourceMessageIds: readonly string[];
  readonly origin?: StateItemOrigin;
  readonly createdAt: number;
  readonly updatedAt?: number;
}

/** A question not yet answered or an item still pending. */
export interface OpenLoop extends KeyPoint {
  readonly resolved?: boolean;
  readonly resolvedAt?: number;
}

/**
 * The context service's state of one session: rolling summary, key points, open loops and the
 * compaction mark. Exists implicitly for every session: version 0 (and no `updatedAt`) until the
 * first write.
 */
export interface SessionStateRecord {
  readonly sessionId: string;
  readonly tenantId: string;
  readonly summary: string;
  readonly summaryTokenCount: number;
  /** Priority order (first = most important). */
  readonly keyPoints: readonly KeyPoint[];
  /** Priority order, resolved ones included. */
  readonly openLoops: readonly OpenLoop[];
  /** Every message with a sequence at or below it is compacted; 0 when none. Only moves forward. */
  readonly compactedThroughSequence: number;
  /** The SUMMARY memory written by the latest compaction. */
  readonly summaryMemoryId?: string;
  /** When the latest compaction committed. */
  readonly lastCompactedAt?: number;
  /** The compaction mark ingestion has acknowledged (`MarkMessagesCompacted`); 0 when none. */
  readonly markAcknowledgedThrough: number;
  readonly updatedAt?: number;
  /** Write counter and concurrency token: 0 for a never-written state. */
  readonly version: number;
}

/** What {@link SessionStateRepository.save} writes: the whole state. */
export type SessionStateInput = Pick<
  SessionStateRecord,
  | 'summary'
  | 'summaryTokenCount'
  | 'keyPoints'
  | 'openLoops'
  | 'compactedThroughSequence'
  | 'summaryMemoryId'
  | 'lastCompactedAt'
>;

type SessionStateRow = Selectable<Database['session_states']>;

/**
 * Session states, owned by the context service. Writes to one session's state are serialized by
 * optimistic concurrency on `version`; they take the caller's transaction.
 */
export class SessionStateRepository {
  constructor(private readonly store: Store) {}

  /** The state of a session; the empty state (version 0) when it was never written. */
  async get(tenantId: string, sessionId: string, executor?: Executor): Promise<SessionStateRecord> {
    const query = (db: Executor) =>
      db
        .selectFrom('session_states')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .where('session_id', '=', sessionId)
        .executeTakeFirst();
    const row = executor === undefined ? await run(this.store, query) : await query(executor);
    return row === undefined ? emptyState(tenantId, sessionId) : toRecord(row);
  }

  /**
   * Writes the whole state if its version is still `expectedVersion` (0: never written yet);
   * otherwise ABORTED `ETAG_MISMATCH` and nothing is written. NOT_FOUND if the session does not
   * exist in the tenant; FAILED_PRECONDITION `STATE_CONFLICT` if the compaction mark would move
   * backwards. Returns the new state (version `expectedVersion + 1`).
   */
  async save(
    trx: Executor,
    tenantId: string,
    sessionId: string,
    expectedVersion: number,
    state: SessionStateInput,
    now = Date.now(),
  ): Promise<SessionStateRecord> {
    const name = stateName(sessionId);
    const record: SessionStateRecord = {
      sessionId,
      tenantId,
      summary: state.summary,
      summaryTokenCount: state.summaryTokenCount,
      keyPoints: state.keyPoints,
      openLoops: state.openLoops,
      compactedThroughSequence: state.compactedThroughSequence,
      summaryMemoryId: state.summaryMemoryId,
      lastCompactedAt: state.lastCompactedAt,
      markAcknowledgedThrough: 0,
      updatedAt: now,
      version: expectedVersion + 1,
    };
    if (expectedVersion === 0) {
      const session = await trx
        .selectFrom('sessions')
        .select('id')
        .where('tenant_id', '=', tenantId)
        .where('id', '=', sessionId)
        .executeTakeFirst();
      if (session === undefined) throw errors.notFound(`sessions/${sessionId}`);
      try {
        await trx.insertInto('session_states').values(toRow(record)).execute();
      } catch (error) {
        // Someone else wrote the first version meanwhile.
        if (isDuplicate(mapDatabaseError(error, this.store.dialect))) throw etagMismatch(name);
        throw error;
      }
      return record;
    }

    const current = await this.get(tenantId, sessionId, trx);
    if (current.version !== expectedVersion) throw etagMismatch(name);
    if (state.compactedThroughSequence < current.compactedThroughSequence) {
      throw errors.failedPrecondition(
        'STATE_CONFLICT',
        `the compaction mark of ${name} only moves forward (${current.compactedThroughSequence} → ${state.compactedThroughSequence})`,
        { name, state: String(current.compactedThroughSequence) },
      );
    }
    const { mark_acknowledged_through: _kept, ...row } = toRow(record);
    const result = await trx
      .updateTable('session_states')
      .set(row)
      .where('tenant_id', '=', tenantId)
      .where('session_id', '=', sessionId)
      .where('version', '=', expectedVersion)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) throw etagMismatch(name);
    return { ...record, markAcknowledgedThrough: current.markAcknowledgedThrough };
  }

  /**
   * Records that ingestion has acknowledged the compaction mark `through` (it only moves forward).
   * Not a write of the state: its version and etag do not change.
   */
  async acknowledgeMark(tenantId: string, sessionId: string, through: number): Promise<void> {
    await run(this.store, (db) =>
      db
        .updateTable('session_states')
        .set({ mark_acknowledged_through: through })
        .where('tenant_id', '=', tenantId)
        .where('session_id', '=', sessionId)
        .where('mark_acknowledged_through', '<', through)
        .execute(),
    );
  }

  /** Deletes the state of a session (it reads as empty again). Returns whether there was one. */
  async delete(trx: Executor, tenantId: string, sessionId: string): Promise<boolean> {
    const result = await trx
      .deleteFrom('session_states')
      .where('tenant_id', '=', tenantId)
      .where('session_id', '=', sessionId)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}

function emptyState(tenantId: string, sessionId: string): SessionStateRecord {
  return {
    sessionId,
    tenantId,
    summary: '',
    summaryTokenCount: 0,
    keyPoints: [],
    openLoops: [],
    compactedThroughSequence: 0,
    markAcknowledgedThrough: 0,
    version: 0,
  };
}

function stateName(sessionId: string): string {
  return `sessions/${sessionId}/state`;
}

function toRecord(row: SessionStateRow): SessionStateRecord {
  return {
    sessionId: row.session_id,
    tenantId: row.tenant_id,
    summary: row.summary,
    summaryTokenCount: row.summary_token_count,
    keyPoints: fromJson<KeyPoint[]>(row.key_points_json) ?? [],
    openLoops: fromJson<OpenLoop[]>(row.open_loops_json) ?? [],
    compactedThroughSequence: row.compacted_through_sequence,
    summaryMemoryId: optional(row.summary_memory_id),
    lastCompactedAt: optional(row.last_compaction_at),
    markAcknowledgedThrough: row.mark_acknowledged_through,
    updatedAt: row.updated_at,
    version: row.version,
  };
}

function toRow(s: SessionStateRecord): SessionStateRow {
  return {
    session_id: s.sessionId,
    tenant_id: s.tenantId,
    summary: s.summary,
    summary_token_count: s.summaryTokenCount,
    key_points_json: toJson(s.keyPoints),
    open_loops_json: toJson(s.openLoops),
    compacted_through_sequence: s.compactedThroughSequence,
    summary_memory_id: s.summaryMemoryId ?? null,
    last_compaction_at: s.lastCompactedAt ?? null,
    mark_acknowledged_through: s.markAcknowledgedThrough,
    updated_at: s.updatedAt ?? 0,
    version: s.version,
  };
}
