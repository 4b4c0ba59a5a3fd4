import type { Selectable } from 'kysely';
import { errors } from '@engram/errors';
import type { Store } from './database.js';
import { etagMismatch, etagMismatchOnDuplicate } from './errors.js';
import { json, nullable, rowCodec } from './row-codec.js';
import { findOne } from './rows.js';
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
    const state = await findOne(
      this.store,
      'session_states',
      { tenant_id: tenantId, session_id: sessionId },
      toRecord,
      executor,
    );
    return state ?? emptyState(tenantId, sessionId);
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
      // A duplicate: someone else wrote the first version meanwhile.
      await etagMismatchOnDuplicate(this.store.dialect, name, () =>
        trx.insertInto('session_states').values(toRow(record)).execute(),
      );
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

const { toRecord, toRow } = rowCodec<SessionStateRecord, SessionStateRow>({
  sessionId: 'session_id',
  tenantId: 'tenant_id',
  summary: 'summary',
  summaryTokenCount: 'summary_token_count',
  keyPoints: ['key_points_json', json<readonly KeyPoint[]>(() => [])],
  openLoops: ['open_loops_json', json<readonly OpenLoop[]>(() => [])],
  compactedThroughSequence: 'compacted_through_sequence',
  summaryMemoryId: ['summary_memory_id', nullable<string>()],
  lastCompactedAt: ['last_compaction_at', nullable<number>()],
  markAcknowledgedThrough: 'mark_acknowledged_through',
  // Unset only on the empty state (version 0), which is never written.
  updatedAt: ['updated_at', { read: (at: number) => at, write: (at?: number) => at ?? 0 }],
  version: 'version',
});

/** Rows of `session_states` and their records, both ways (export and import, `portability.ts`). */
export const sessionStateRows = { toRecord, toRow } as const;
