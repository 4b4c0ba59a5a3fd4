import type { ExpressionBuilder, Selectable } from 'kysely';
import { errors } from '@engram/errors';
import { batches } from './batches.js';
import { findByIds } from './by-ids.js';
import { fromJson, toJson } from './codec.js';
import type { Store } from './database.js';
import { etagMismatch, etagMismatchOnDuplicate } from './errors.js';
import { newId } from './ids.js';
import { enqueueOutbox, type OutboxEvent } from './outbox.js';
import { keysetOn, keysetPage, type Keyset, type Page, type PageRequest } from './pagination.js';
import { clipped, enumOf, flag, nullable, rowCodec, stringMap, type Codec } from './row-codec.js';
import { findOne } from './rows.js';
import type { Database } from './schema.js';
import { read, run, type Executor } from './store-context.js';

export type SessionStatus = 'ACTIVE' | 'CLOSED';
export type MessageRole = 'USER' | 'ASSISTANT' | 'SYSTEM' | 'TOOL';
export type BoundaryReason =
  | 'MODEL_JUDGEMENT'
  | 'TOPIC_SHIFT'
  | 'DATE_CHANGE'
  | 'TIME_GAP'
  | 'TOKEN_CAP'
  | 'MESSAGE_CAP'
  | 'FLUSH'
  | 'SESSION_CLOSED';
export type MemCellStatus = 'PENDING' | 'EXTRACTING' | 'EXTRACTED' | 'FAILED';

/** A conversation as stored. Sessions are SELF-scoped: only `ownerId` may see them. Times are epoch ms. */
export interface SessionRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly ownerId: string;
  readonly displayName: string;
  /** The client's own conversation id, unique among the owner's sessions. */
  readonly externalId?: string;
  readonly languageCode: string;
  readonly timeZone: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly status: SessionStatus;
  readonly messageCount: number;
  /** Sequence of the latest message; 0 while there is none. */
  readonly lastSequence: number;
  readonly lastMessageAt?: number;
  /** First sequence of the open tail (messages not yet closed into a MemCell). */
  readonly openFromSequence: number;
  /** `lastMessageAt`, or `createdAt` while there is no message: sessions list by it, latest first. */
  readonly activityAt: number;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly closedAt?: number;
  /** Incremented by every change of the session, appended messages included (the etag). */
  readonly version: number;
}

/** What a new session is made of; the repository assigns id, counters, times and version. */
export interface NewSession {
  readonly tenantId: string;
  readonly ownerId: string;
  /** Default ''. */
  readonly displayName?: string;
  /** Default none ('' counts as none). */
  readonly externalId?: string;
  /** Default ''. */
  readonly languageCode?: string;
  /** Default 'UTC'. */
  readonly timeZone?: string;
  /** Default {}. */
  readonly metadata?: Readonly<Record<string, string>>;
}

/** Fields {@link SessionRepository.update} may change. */
export type SessionPatch = Partial<
  Pick<SessionRecord, 'displayName' | 'metadata' | 'languageCode' | 'timeZone' | 'status' | 'closedAt'>
>;

/** Narrowing filters of {@link SessionRepository.list}. Empty arrays mean "any". */
export interface SessionFilter {
  readonly statuses?: readonly SessionStatus[];
  readonly externalId?: string;
  /** Created at or after (epoch ms). */
  readonly createdFrom?: number;
  /** Created before (epoch ms). */
  readonly createdBefore?: number;
}

/** A tool call an assistant message made (chat-completions `tool_calls`). */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly argumentsJson: string;
}

/** A message as stored. */
export interface MessageRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly sessionId: string;
  /** 1-based, dense within the session, in append order. */
  readonly sequence: number;
  readonly role: MessageRole;
  readonly content: string;
  readonly participantName: string;
  readonly toolCallId: string;
  readonly toolCalls: readonly ToolCall[];
  readonly tokenCount: number;
  /** Compacted into the session summary by the context service. */
  readonly compacted: boolean;
  /** The MemCell the message was closed into; undefined while in the open tail. */
  readonly memCellId?: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly occurredAt: number;
  readonly createdAt: number;
}

/** A message to append; the repository assigns id, sequence and times. Validation is the caller's. */
export interface NewMessage {
  readonly role: MessageRole;
  readonly content: string;
  readonly participantName?: string;
  readonly toolCallId?: string;
  readonly toolCalls?: readonly ToolCall[];
  /** Default 0. */
  readonly tokenCount?: number;
  readonly metadata?: Readonly<Record<string, string>>;
  /** Default: `now`, raised if necessary to the previous message's time. */
  readonly occurredAt?: number;
}

/** A range of one session's messages, for {@link SessionRepository.messageWindows}. */
export interface MessageWindow {
  readonly sessionId: string;
  /** Inclusive. */
  readonly fromSequence: number;
  /** Inclusive. */
  readonly toSequence: number;
}

/** Preconditions of {@link SessionRepository.appendMessages}. */
export interface AppendOptions {
  /** Append only if the session's `lastSequence` is still this (ABORTED `ETAG_MISMATCH` otherwise). */
  readonly expectedLastSequence?: number;
}

/** Narrowing filters of {@link SessionRepository.listMessages}. */
export interface MessageFilter {
  /** Inclusive. */
  readonly fromSequence?: number;
  /** Inclusive. */
  readonly toSequence?: number;
  /** Empty or unset: every role. */
  readonly roles?: readonly MessageRole[];
  /** Default true. */
  readonly includeCompacted?: boolean;
  /** Only the open tail (sequence ≥ the session's `openFromSequence`). Default false. */
  readonly openOnly?: boolean;
  /** Latest first. Default false (sequence ascending). */
  readonly newestFirst?: boolean;
}

/** A closed segment of a session, the unit of memory extraction. */
export interface MemCellRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly sessionId: string;
  readonly firstSequence: number;
  readonly lastSequence: number;
  readonly messageCount: number;
  readonly tokenCount: number;
  readonly reason: BoundaryReason;
  readonly status: MemCellStatus;
  readonly attempts: number;
  readonly extractionJobId?: string;
  /** Message of the latest failed attempt; '' if none failed. Never contains message content. */
  readonly lastError: string;
  /** `ErrorReason` name of the latest failed attempt (e.g. `DEPENDENCY_UNAVAILABLE`); '' if none failed. */
  readonly lastErrorReason: string;
  /** The flush reason or a judge's rationale (≤ 256 characters); '' for rule boundaries. */
  readonly boundaryNote: string;
  /** When the next hand-off attempt is due; undefined: as soon as possible (or not PENDING). */
  readonly nextAttemptAt?: number;
  /** `occurredAt` of the first message. */
  readonly openedAt: number;
  /** `occurredAt` of the last message. */
  readonly lastMessageAt: number;
  readonly closedAt: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** How {@link SessionRepository.closeMemCell} closes the open tail. */
export interface CloseMemCellInput {
  /** Last sequence of the new cell (inclusive); at least the open tail's first, at most `lastSequence`. */
  readonly throughSequence: number;
  readonly reason: BoundaryReason;
  /** Free-text detail (a flush reason, a judge's rationale); cut to 256 characters. Default ''. */
  readonly note?: string;
  /** Default: the sum of the covered messages' `tokenCount`. */
  readonly tokenCount?: number;
}

/** A change of a MemCell's extraction hand-off state. */
export interface MemCellStatusPatch {
  readonly status: MemCellStatus;
  readonly attempts?: number;
  readonly extractionJobId?: string;
  readonly lastError?: string;
  readonly lastErrorReason?: string;
  /** When the next attempt is due; `null` clears it. Unset: unchanged. */
  readonly nextAttemptAt?: number | null;
  /** Apply only if the cell is still in this status (ABORTED `ETAG_MISMATCH` otherwise). */
  readonly expectedStatus?: MemCellStatus;
}

/** Derived counters of a session (proto `Session.open_*`, `mem_cell_count`). */
export interface SessionCounts {
  readonly openMessageCount: number;
  readonly openTokenCount: number;
  readonly memCellCount: number;
}

/** What deleting sessions removed. */
export interface DeletedSessionCounts {
  readonly sessions: number;
  readonly messages: number;
  readonly memCells: number;
  readonly sessionStates: number;
}

/** Rows per multi-row INSERT, and UTF-16 units of message content per INSERT (≤ ~3 MB on the wire). */
const ROWS_PER_INSERT = 200;
const CONTENT_UNITS_PER_INSERT = 1_000_000;
/** Sequence windows per read of {@link SessionRepository.messageWindows} (3 parameters each). */
const WINDOWS_PER_QUERY = 200;

type SessionRow = Selectable<Database['sessions']>;
type MessageRow = Selectable<Database['messages']>;
type MemCellRow = Selectable<Database['mem_cells']>;

/**
 * One conversation aggregate: sessions, their messages and their MemCells (owned by ingestion).
 * Writes take the caller's transaction (`trx`); every write that changes searchable data (a
 * conversation round) inserts its outbox row in that same transaction. Rounds are keyed by the id
 * of their USER message.
 */
export class SessionRepository {
  constructor(private readonly store: Store) {}

  /** Inserts an ACTIVE, empty session. A duplicate `externalId` of the owner fails with ALREADY_EXISTS. */
  async createSession(trx: Executor, input: NewSession, now = Date.now()): Promise<SessionRecord> {
    const record: SessionRecord = {
      id: newId(now),
      tenantId: input.tenantId,
      ownerId: input.ownerId,
      displayName: input.displayName ?? '',
      externalId: input.externalId === '' ? undefined : input.externalId,
      languageCode: input.languageCode ?? '',
      timeZone: input.timeZone ?? 'UTC',
      metadata: input.metadata ?? {},
      status: 'ACTIVE',
      messageCount: 0,
      lastSequence: 0,
      openFromSequence: 1,
      activityAt: now,
      createdAt: now,
      updatedAt: now,
      version: 1,
    };
    await trx.insertInto('sessions').values(sessionToRow(record)).execute();
    return record;
  }

  /** A session by id within the tenant, whoever owns it (callers check ownership). */
  async get(tenantId: string, id: string, executor?: Executor): Promise<SessionRecord | undefined> {
    return findOne(this.store, 'sessions', { tenant_id: tenantId, id }, sessionToRecord, executor);
  }

  /** The session if `ownerId` owns it; NOT_FOUND otherwise (another's session and none look the same). */
  async getOwned(tenantId: string, ownerId: string, id: string, executor?: Executor): Promise<SessionRecord> {
    const session = await this.get(tenantId, id, executor);
    if (session?.ownerId !== ownerId) throw errors.notFound(sessionName(id));
    return session;
  }

  /**
   * The owner's sessions, most recently active first: by `activityAt` descending, then id
   * descending (keyset pagination on both).
   */
  async list(
    tenantId: string,
    ownerId: string,
    filter: SessionFilter,
    page: PageRequest,
  ): Promise<Page<SessionRecord>> {
    return keysetPage(this.store, page, {
      query: { tenantId, ownerId, filter },
      rows: (db) => {
        let q = db
          .selectFrom('sessions')
          .selectAll()
          .where('tenant_id', '=', tenantId)
          .where('owner_id', '=', ownerId);
        if (filter.statuses?.length) q = q.where('status', 'in', [...filter.statuses]);
        if (filter.externalId !== undefined && filter.externalId !== '') {
          q = q.where('external_id', '=', filter.externalId);
        }
        if (filter.createdFrom !== undefined) q = q.where('created_at', '>=', filter.createdFrom);
        if (filter.createdBefore !== undefined) q = q.where('created_at', '<', filter.createdBefore);
        return q;
      },
      order: BY_ACTIVITY,
      toItem: sessionToRecord,
    });
  }

  /**
   * Applies `patch` if the session's version is still `expectedVersion` (ABORTED `ETAG_MISMATCH`
   * otherwise; nothing written). Closing is final: CLOSED → ACTIVE fails with FAILED_PRECONDITION
   * `STATE_CONFLICT`. Closing without `closedAt` stamps `now`.
   */
  async update(
    trx: Executor,
    tenantId: string,
    id: string,
    expectedVersion: number,
    patch: SessionPatch,
    now = Date.now(),
  ): Promise<SessionRecord> {
    const before = await this.get(tenantId, id, trx);
    if (before === undefined) throw errors.notFound(sessionName(id));
    if (before.version !== expectedVersion) throw etagMismatch(sessionName(id));
    if (before.status === 'CLOSED' && patch.status === 'ACTIVE') {
      throw errors.failedPrecondition(
        'STATE_CONFLICT',
        `${sessionName(id)} is closed and cannot be reopened`,
        {
          name: sessionName(id),
          state: 'CLOSED',
        },
      );
    }
    const closing = patch.status === 'CLOSED' && before.status !== 'CLOSED';
    const after: SessionRecord = {
      ...before,
      ...patch,
      closedAt: patch.closedAt ?? before.closedAt ?? (closing ? now : undefined),
      updatedAt: now,
      version: before.version + 1,
    };
    const result = await trx
      .updateTable('sessions')
      .set(sessionToRow(after))
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .where('version', '=', expectedVersion)
      .executeTakeFirst();
    // Another writer (an append, for instance) committed between our read and our write.
    if (Number(result.numUpdatedRows) !== 1) throw etagMismatch(sessionName(id));
    return after;
  }

  /**
   * Hard-deletes a session with its messages, MemCells and state (foreign-key cascade), and
   * enqueues the removal of its conversation rounds: one ROUND DELETE per USER message and one
   * SESSION DELETE. NOT_FOUND if there is no such session; ABORTED `ETAG_MISMATCH` if it changed
   * since `expectedVersion` (when given) or concurrently (e.g. an append raced the delete: retry).
   */
  async deleteSession(
    trx: Executor,
    tenantId: string,
    id: string,
    options: { readonly expectedVersion?: number } = {},
    now = Date.now(),
  ): Promise<DeletedSessionCounts> {
    const session = await this.get(tenantId, id, trx);
    if (session === undefined) throw errors.notFound(sessionName(id));
    if (options.expectedVersion !== undefined && options.expectedVersion !== session.version) {
      throw etagMismatch(sessionName(id));
    }
    return this.#delete(trx, session, now);
  }

  /**
   * Appends messages at sequences `lastSequence + 1 …` in the given order and returns them as
   * stored. Concurrent appends to one session never produce duplicate or missing sequences: the
   * session row is advanced with a compare-and-set on its version, so the loser of a race fails
   * with ABORTED `ETAG_MISMATCH` and retries its transaction (the unique (session, sequence) index
   * is the last guard and fails the same way). Fails with FAILED_PRECONDITION `SESSION_CLOSED` on
   * a closed session. In the same transaction, enqueues ROUND UPSERTs: one for each USER message,
   * and one for the round of the nearest preceding USER message of each ASSISTANT message with
   * content (its reply; the user message may be from an earlier call).
   */
  async appendMessages(
    trx: Executor,
    tenantId: string,
    sessionId: string,
    messages: readonly NewMessage[],
    options: AppendOptions = {},
    now = Date.now(),
  ): Promise<MessageRecord[]> {
    const name = sessionName(sessionId);
    const session = await this.get(tenantId, sessionId, trx);
    if (session === undefined) throw errors.notFound(name);
    if (session.status === 'CLOSED') {
      throw errors.failedPrecondition('SESSION_CLOSED', `${name} is closed and accepts no more messages`, {
        name,
      });
    }
    if (options.expectedLastSequence !== undefined && options.expectedLastSequence !== session.lastSequence) {
      throw etagMismatch(name);
    }
    if (messages.length === 0) return [];

    let previousAt = session.lastMessageAt ?? Number.NEGATIVE_INFINITY;
    const records = messages.map((m, i): MessageRecord => {
      const occurredAt = m.occurredAt ?? Math.max(now, previousAt);
      previousAt = Math.max(previousAt, occurredAt);
      return {
        id: newId(now),
        tenantId,
        sessionId,
        sequence: session.lastSequence + 1 + i,
        role: m.role,
        content: m.content,
        participantName: m.participantName ?? '',
        toolCallId: m.toolCallId ?? '',
        toolCalls: m.toolCalls ?? [],
        tokenCount: m.tokenCount ?? 0,
        compacted: false,
        metadata: m.metadata ?? {},
        occurredAt,
        createdAt: now,
      };
    });

    // Take the session first: the compare-and-set decides the race before anything else is written.
    const result = await trx
      .updateTable('sessions')
      .set({
        last_sequence: session.lastSequence + records.length,
        message_count: session.messageCount + records.length,
        last_message_at: previousAt,
        activity_at: previousAt,
        updated_at: now,
        version: session.version + 1,
      })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', sessionId)
      .where('version', '=', session.version)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) throw etagMismatch(name);

    await etagMismatchOnDuplicate(this.store.dialect, name, async () => {
      for (const batch of batches(
        records,
        ROWS_PER_INSERT,
        CONTENT_UNITS_PER_INSERT,
        (m) => m.content.length,
      )) {
        await trx.insertInto('messages').values(batch.map(messageToRow)).execute();
      }
    });

    await enqueueOutbox(trx, await this.#roundEvents(trx, tenantId, sessionId, records), now);
    return records;
  }

  /** The session's messages by sequence (ascending unless `newestFirst`), narrowed by `filter`. */
  async listMessages(
    tenantId: string,
    sessionId: string,
    filter: MessageFilter,
    page: PageRequest,
  ): Promise<Page<MessageRecord>> {
    return keysetPage(this.store, page, {
      query: { tenantId, sessionId, filter },
      rows: (db) => {
        let q = db
          .selectFrom('messages')
          .selectAll()
          .where('tenant_id', '=', tenantId)
          .where('session_id', '=', sessionId);
        if (filter.fromSequence !== undefined) q = q.where('sequence', '>=', filter.fromSequence);
        if (filter.toSequence !== undefined) q = q.where('sequence', '<=', filter.toSequence);
        if (filter.roles?.length) q = q.where('role', 'in', [...filter.roles]);
        if (filter.includeCompacted === false) q = q.where('compacted', '=', 0);
        if (filter.openOnly === true) q = q.where('sequence', '>=', openFrom(tenantId, sessionId));
        return q;
      },
      order: keysetOn('sequence', filter.newestFirst === true ? 'desc' : 'asc', Number),
      toItem: messageToRecord,
    });
  }

  /** One message of the session, or undefined. */
  async getMessage(tenantId: string, sessionId: string, id: string): Promise<MessageRecord | undefined> {
    return findOne(
      this.store,
      'messages',
      { tenant_id: tenantId, session_id: sessionId, id },
      messageToRecord,
    );
  }

  /**
   * Sessions by id within the tenant, whoever owns them (callers check ownership), in the order of
   * `ids`; absent ids are missing from the map. One query per 500 ids.
   */
  async getMany(tenantId: string, ids: readonly string[]): Promise<Map<string, SessionRecord>> {
    return findByIds(this.store, 'sessions', tenantId, ids, sessionToRecord);
  }

  /**
   * Messages by id within the tenant, of any session (callers check that a message belongs to the
   * session they expect, and who owns it), in the order of `ids`; absent ids are missing from the
   * map. One query per 500 ids.
   */
  async getMessages(tenantId: string, ids: readonly string[]): Promise<Map<string, MessageRecord>> {
    return findByIds(this.store, 'messages', tenantId, ids, messageToRecord);
  }

  /**
   * The messages of several sequence ranges at once (one query per 200 windows): for each window,
   * in the same order, its session's messages with `fromSequence ≤ sequence ≤ toSequence`, by
   * sequence. Windows may overlap. Since sequences are dense, `[s + 1, s + n]` is the `n` messages
   * after `s`.
   */
  async messageWindows(tenantId: string, windows: readonly MessageWindow[]): Promise<MessageRecord[][]> {
    const bySession = new Map<string, MessageRecord[]>();
    const seen = new Set<string>();
    for (let i = 0; i < windows.length; i += WINDOWS_PER_QUERY) {
      const batch = windows.slice(i, i + WINDOWS_PER_QUERY);
      const rows = await run(this.store, (db) =>
        db
          .selectFrom('messages')
          .selectAll()
          .where('tenant_id', '=', tenantId)
          .where((eb) =>
            eb.or(
              batch.map((w) =>
                eb.and([
                  eb('session_id', '=', w.sessionId),
                  eb('sequence', '>=', w.fromSequence),
                  eb('sequence', '<=', w.toSequence),
                ]),
              ),
            ),
          )
          .execute(),
      );
      for (const row of rows) {
        // Overlapping windows of two batches read the same rows: keep one of each.
        if (seen.has(row.id)) continue;
        seen.add(row.id);
        const messages = bySession.get(row.session_id) ?? [];
        messages.push(messageToRecord(row));
        bySession.set(row.session_id, messages);
      }
    }
    for (const messages of bySession.values()) messages.sort((a, b) => a.sequence - b.sequence);
    return windows.map((w) =>
      (bySession.get(w.sessionId) ?? []).filter(
        (m) => m.sequence >= w.fromSequence && m.sequence <= w.toSequence,
      ),
    );
  }

  /** The open tail: the messages not yet closed into a MemCell, by sequence. Bounded by the boundary caps. */
  async openTail(tenantId: string, sessionId: string, executor?: Executor): Promise<MessageRecord[]> {
    const rows = await read(this.store, executor, (db) =>
      db
        .selectFrom('messages')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .where('session_id', '=', sessionId)
        .where('sequence', '>=', openFrom(tenantId, sessionId))
        .orderBy('sequence', 'asc')
        .execute(),
    );
    return rows.map(messageToRecord);
  }

  /** Open-tail message and token counts and the number of MemCells (zeros for an unknown session). */
  async counts(tenantId: string, sessionId: string, executor?: Executor): Promise<SessionCounts> {
    return read(this.store, executor, async (db) => {
      const tail = await db
        .selectFrom('messages')
        .select((eb) => [
          eb.fn.countAll<number>().as('n'),
          eb.fn.sum<number | null>('token_count').as('tokens'),
        ])
        .where('tenant_id', '=', tenantId)
        .where('session_id', '=', sessionId)
        .where('sequence', '>=', openFrom(tenantId, sessionId))
        .executeTakeFirstOrThrow();
      const cells = await db
        .selectFrom('mem_cells')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('tenant_id', '=', tenantId)
        .where('session_id', '=', sessionId)
        .executeTakeFirstOrThrow();
      return {
        openMessageCount: tail.n,
        openTokenCount: tail.tokens ?? 0,
        memCellCount: cells.n,
      };
    });
  }

  /**
   * Closes the open tail up to `throughSequence` into a PENDING MemCell: links the messages to
   * it and advances the session's open tail (compare-and-set on the session version: ABORTED
   * `ETAG_MISMATCH` if the session changed concurrently). FAILED_PRECONDITION `STATE_CONFLICT` if
   * `throughSequence` is not within the open tail.
   */
  async closeMemCell(
    trx: Executor,
    tenantId: string,
    sessionId: string,
    input: CloseMemCellInput,
    now = Date.now(),
  ): Promise<MemCellRecord> {
    const name = sessionName(sessionId);
    const session = await this.get(tenantId, sessionId, trx);
    if (session === undefined) throw errors.notFound(name);
    const first = session.openFromSequence;
    if (input.throughSequence < first || input.throughSequence > session.lastSequence) {
      throw errors.failedPrecondition(
        'STATE_CONFLICT',
        `the open tail of ${name} is sequences ${first}..${session.lastSequence}; cannot close through ${input.throughSequence}`,
        { name, first_sequence: first, last_sequence: session.lastSequence },
      );
    }
    const covered = await trx
      .selectFrom('messages')
      .select((eb) => [
        eb.fn.countAll<number>().as('n'),
        eb.fn.sum<number | null>('token_count').as('tokens'),
        eb.fn.min<number | null>('occurred_at').as('opened'),
        eb.fn.max<number | null>('occurred_at').as('last'),
      ])
      .where('tenant_id', '=', tenantId)
      .where('session_id', '=', sessionId)
      .where('sequence', '>=', first)
      .where('sequence', '<=', input.throughSequence)
      .executeTakeFirstOrThrow();

    const result = await trx
      .updateTable('sessions')
      .set({ open_from_sequence: input.throughSequence + 1, updated_at: now, version: session.version + 1 })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', sessionId)
      .where('version', '=', session.version)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) throw etagMismatch(name);

    const cell: MemCellRecord = {
      id: newId(now),
      tenantId,
      sessionId,
      firstSequence: first,
      lastSequence: input.throughSequence,
      messageCount: covered.n,
      tokenCount: input.tokenCount ?? covered.tokens ?? 0,
      reason: input.reason,
      status: 'PENDING',
      attempts: 0,
      lastError: '',
      lastErrorReason: '',
      boundaryNote: Array.from(input.note ?? '')
        .slice(0, 256)
        .join(''),
      openedAt: covered.opened ?? now,
      lastMessageAt: covered.last ?? now,
      closedAt: now,
      createdAt: now,
      updatedAt: now,
    };
    await etagMismatchOnDuplicate(this.store.dialect, name, () =>
      trx.insertInto('mem_cells').values(memCellToRow(cell)).execute(),
    );
    await trx
      .updateTable('messages')
      .set({ mem_cell_id: cell.id })
      .where('tenant_id', '=', tenantId)
      .where('session_id', '=', sessionId)
      .where('sequence', '>=', first)
      .where('sequence', '<=', input.throughSequence)
      .execute();
    return cell;
  }

  /** The session's MemCells by `firstSequence` ascending. */
  async listMemCells(
    tenantId: string,
    sessionId: string,
    filter: { readonly statuses?: readonly MemCellStatus[] },
    page: PageRequest,
  ): Promise<Page<MemCellRecord>> {
    return keysetPage(this.store, page, {
      query: { tenantId, sessionId, filter },
      rows: (db) => {
        const q = db
          .selectFrom('mem_cells')
          .selectAll()
          .where('tenant_id', '=', tenantId)
          .where('session_id', '=', sessionId);
        return filter.statuses?.length ? q.where('status', 'in', [...filter.statuses]) : q;
      },
      order: keysetOn('first_sequence', 'asc', Number),
      toItem: memCellToRecord,
    });
  }

  /** One MemCell of the session, or undefined. */
  async getMemCell(
    tenantId: string,
    sessionId: string,
    id: string,
    executor?: Executor,
  ): Promise<MemCellRecord | undefined> {
    return findOne(
      this.store,
      'mem_cells',
      { tenant_id: tenantId, session_id: sessionId, id },
      memCellToRecord,
      executor,
    );
  }

  /**
   * Records a step of the extraction hand-off. Applies only if the cell's status and attempts
   * are still as read (and, with `expectedStatus`, the status is that one): otherwise ABORTED
   * `ETAG_MISMATCH`, so two sweepers never both start the same cell. NOT_FOUND if absent.
   */
  async updateMemCellStatus(
    trx: Executor,
    tenantId: string,
    id: string,
    patch: MemCellStatusPatch,
    now = Date.now(),
  ): Promise<MemCellRecord> {
    const before = await findOne(this.store, 'mem_cells', { tenant_id: tenantId, id }, memCellToRecord, trx);
    if (before === undefined) throw errors.notFound(`memCells/${id}`);
    const name = memCellName(before.sessionId, id);
    if (patch.expectedStatus !== undefined && patch.expectedStatus !== before.status)
      throw etagMismatch(name);
    const after: MemCellRecord = {
      ...before,
      status: patch.status,
      attempts: patch.attempts ?? before.attempts,
      extractionJobId: patch.extractionJobId ?? before.extractionJobId,
      lastError: (patch.lastError ?? before.lastError).slice(0, 1024),
      lastErrorReason: patch.lastErrorReason ?? before.lastErrorReason,
      nextAttemptAt:
        patch.nextAttemptAt === undefined ? before.nextAttemptAt : (patch.nextAttemptAt ?? undefined),
      updatedAt: now,
    };
    const result = await trx
      .updateTable('mem_cells')
      .set({
        status: after.status,
        attempts: after.attempts,
        extraction_job_id: after.extractionJobId ?? null,
        last_error: after.lastError,
        last_error_reason: after.lastErrorReason,
        next_attempt_at: after.nextAttemptAt ?? null,
        updated_at: now,
      })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .where('status', '=', before.status)
      .where('attempts', '=', before.attempts)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) throw etagMismatch(name);
    return after;
  }

  /**
   * MemCells of every tenant whose next hand-off attempt is due at `now`: PENDING with no retry
   * time or one at or before `now`, oldest due first.
   */
  async dueMemCells(limit: number, now = Date.now()): Promise<MemCellRecord[]> {
    const rows = await run(this.store, (db) =>
      db
        .selectFrom('mem_cells')
        .selectAll()
        .where('status', '=', 'PENDING')
        .where((eb) => eb.or([eb('next_attempt_at', 'is', null), eb('next_attempt_at', '<=', now)]))
        .orderBy('updated_at', 'asc')
        .orderBy('id', 'asc')
        .limit(limit)
        .execute(),
    );
    return rows.map(memCellToRecord);
  }

  /**
   * EXTRACTING MemCells not updated since `updatedBefore`: their attempt was interrupted (the
   * process stopped while waiting for governance) and is resumed by the hand-off sweep.
   */
  async staleExtractingMemCells(limit: number, updatedBefore: number): Promise<MemCellRecord[]> {
    const rows = await run(this.store, (db) =>
      db
        .selectFrom('mem_cells')
        .selectAll()
        .where('status', '=', 'EXTRACTING')
        .where('updated_at', '<', updatedBefore)
        .orderBy('updated_at', 'asc')
        .limit(limit)
        .execute(),
    );
    return rows.map(memCellToRecord);
  }

  /**
   * Flags every message at or below `throughSequence` as compacted. Idempotent, and never lowers
   * the mark (a lower value flags nothing). Returns how many messages were newly flagged.
   */
  async markCompacted(
    trx: Executor,
    tenantId: string,
    sessionId: string,
    throughSequence: number,
  ): Promise<number> {
    const result = await trx
      .updateTable('messages')
      .set({ compacted: 1 })
      .where('tenant_id', '=', tenantId)
      .where('session_id', '=', sessionId)
      .where('sequence', '<=', throughSequence)
      .where('compacted', '=', 0)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /**
   * ACTIVE sessions of every tenant with a non-empty open tail whose latest message is older than
   * `silentBefore` (the TIME_GAP sweep), longest silent first.
   */
  async silentSessions(silentBefore: number, limit: number): Promise<SessionRecord[]> {
    const rows = await run(this.store, (db) =>
      db
        .selectFrom('sessions')
        .selectAll()
        .where('status', '=', 'ACTIVE')
        .where('activity_at', '<', silentBefore)
        .whereRef('last_sequence', '>=', 'open_from_sequence')
        .where('last_message_at', 'is not', null)
        .orderBy('activity_at', 'asc')
        .limit(limit)
        .execute(),
    );
    return rows.map(sessionToRecord);
  }

  /** The highest sequence flagged compacted in the session (0 when none is). */
  async compactionMark(tenantId: string, sessionId: string, executor?: Executor): Promise<number> {
    const row = await read(this.store, executor, (db) =>
      db
        .selectFrom('messages')
        .select((eb) => eb.fn.max<number | null>('sequence').as('mark'))
        .where('tenant_id', '=', tenantId)
        .where('session_id', '=', sessionId)
        .where('compacted', '=', 1)
        .executeTakeFirstOrThrow(),
    );
    return row.mark ?? 0;
  }

  /**
   * Forgets a user's conversations: deletes every session of `ownerId` in the tenant (with their
   * messages, MemCells and session states) and enqueues the removal of their rounds. Returns
   * what was deleted; ABORTED `ETAG_MISMATCH` if one of the sessions changed concurrently (retry).
   */
  async purgeOwner(
    trx: Executor,
    tenantId: string,
    ownerId: string,
    now = Date.now(),
  ): Promise<DeletedSessionCounts> {
    const rows = await trx
      .selectFrom('sessions')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('owner_id', '=', ownerId)
      .execute();
    return this.#deleteAll(trx, rows, now);
  }

  /**
   * Deletes up to `limit` sessions of `ownerId` in the tenant created at or before the cutoff, as
   * {@link purgeOwner} does, with `payload` on their outbox DELETE rows (governance `ForgetUser`
   * through ingestion `EraseSubject`, one batch per transaction). Zero sessions when none is left;
   * ABORTED `ETAG_MISMATCH` if one of them changed concurrently (retry).
   */
  async purgeOwnerBatch(
    trx: Executor,
    tenantId: string,
    ownerId: string,
    options: {
      readonly createdAtOrBefore: number;
      readonly limit: number;
      readonly payload?: Readonly<Record<string, string | number>>;
    },
    now = Date.now(),
  ): Promise<DeletedSessionCounts> {
    const rows = await trx
      .selectFrom('sessions')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('owner_id', '=', ownerId)
      .where('created_at', '<=', options.createdAtOrBefore)
      .orderBy('id')
      .limit(options.limit)
      .execute();
    return this.#deleteAll(trx, rows, now, options.payload);
  }

  /** Deletes these sessions one by one ({@link #delete}) and adds up what went. */
  async #deleteAll(
    trx: Executor,
    rows: readonly SessionRow[],
    now: number,
    payload?: Readonly<Record<string, string | number>>,
  ): Promise<DeletedSessionCounts> {
    const total = { sessions: 0, messages: 0, memCells: 0, sessionStates: 0 };
    for (const row of rows) {
      const deleted = await this.#delete(trx, sessionToRecord(row), now, payload);
      total.sessions += deleted.sessions;
      total.messages += deleted.messages;
      total.memCells += deleted.memCells;
      total.sessionStates += deleted.sessionStates;
    }
    return total;
  }

  async #delete(
    trx: Executor,
    session: SessionRecord,
    now: number,
    payload: Readonly<Record<string, string | number>> = {},
  ): Promise<DeletedSessionCounts> {
    const { tenantId, id } = session;
    // Take the session row first (compare-and-set, like an append): no message can be appended
    // between listing the rounds to remove and deleting them, so no round point is left behind.
    const taken = await trx
      .updateTable('sessions')
      .set({ version: session.version + 1 })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .where('version', '=', session.version)
      .executeTakeFirst();
    if (Number(taken.numUpdatedRows) !== 1) throw etagMismatch(sessionName(id));
    const userMessages = await trx
      .selectFrom('messages')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('session_id', '=', id)
      .where('role', '=', 'USER')
      .orderBy('sequence')
      .execute();
    const count = async (table: 'messages' | 'mem_cells' | 'session_states') => {
      const row = await trx
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('tenant_id', '=', tenantId)
        .where('session_id', '=', id)
        .executeTakeFirstOrThrow();
      return row.n;
    };
    const counts = {
      messages: await count('messages'),
      memCells: await count('mem_cells'),
      sessionStates: await count('session_states'),
    };
    const result = await trx
      .deleteFrom('sessions')
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .executeTakeFirst();
    const events: OutboxEvent[] = [
      ...userMessages.map((m): OutboxEvent => ({
        tenantId,
        aggregate: 'ROUND',
        aggregateId: m.id,
        operation: 'DELETE',
        payload: { ...payload, sessionId: id },
      })),
      { tenantId, aggregate: 'SESSION', aggregateId: id, operation: 'DELETE', payload },
    ];
    for (const batch of batches(events, ROWS_PER_INSERT)) await enqueueOutbox(trx, batch, now);
    return { sessions: Number(result.numDeletedRows), ...counts };
  }

  /** ROUND UPSERTs for freshly appended messages (one per round, in order). */
  async #roundEvents(
    trx: Executor,
    tenantId: string,
    sessionId: string,
    records: readonly MessageRecord[],
  ): Promise<OutboxEvent[]> {
    const rounds = new Set<string>();
    let currentUser: string | undefined;
    let lookedBack = false;
    for (const m of records) {
      if (m.role === 'USER') {
        currentUser = m.id;
        rounds.add(m.id);
      } else if (m.role === 'ASSISTANT' && m.content.trim() !== '') {
        if (currentUser === undefined && !lookedBack) {
          lookedBack = true;
          const previous = await trx
            .selectFrom('messages')
            .select('id')
            .where('tenant_id', '=', tenantId)
            .where('session_id', '=', sessionId)
            .where('role', '=', 'USER')
            .where('sequence', '<', m.sequence)
            .orderBy('sequence', 'desc')
            .limit(1)
            .executeTakeFirst();
          currentUser = previous?.id;
        }
        if (currentUser !== undefined) rounds.add(currentUser);
      }
    }
    return [...rounds].map((id) => ({
      tenantId,
      aggregate: 'ROUND',
      aggregateId: id,
      operation: 'UPSERT',
      payload: { sessionId },
    }));
  }
}

/**
 * The order of {@link SessionRepository.list}: latest activity first, then id descending; a page
 * key is `${activity_at}:${id}`.
 */
const BY_ACTIVITY: Keyset<Database, 'sessions', SessionRow> = {
  orderBy: [
    ['activity_at', 'desc'],
    ['id', 'desc'],
  ],
  after: (key) => {
    const [activity, id] = String(key).split(':');
    const at = Number(activity);
    if (id === undefined || !Number.isSafeInteger(at)) {
      throw errors.invalidArgument('PAGE_TOKEN_INVALID', 'page_token is invalid', {
        field: 'page_token',
      });
    }
    return (eb) =>
      eb.or([eb('activity_at', '<', at), eb.and([eb('activity_at', '=', at), eb('id', '<', id)])]);
  },
  keyOf: (row) => `${row.activity_at}:${row.id}`,
};

/** The first sequence of the session's open tail, as a subquery of a read of its messages. */
function openFrom(tenantId: string, sessionId: string) {
  return (eb: ExpressionBuilder<Database, 'messages'>) =>
    eb
      .selectFrom('sessions')
      .select('open_from_sequence')
      .where('tenant_id', '=', tenantId)
      .where('id', '=', sessionId);
}

function sessionName(id: string): string {
  return `sessions/${id}`;
}

function memCellName(sessionId: string, id: string): string {
  return `sessions/${sessionId}/memCells/${id}`;
}

const { toRecord: sessionToRecord, toRow: sessionToRow } = rowCodec<SessionRecord, SessionRow>({
  id: 'id',
  tenantId: 'tenant_id',
  ownerId: 'owner_id',
  displayName: 'display_name',
  externalId: ['external_id', nullable<string>()],
  languageCode: 'language_code',
  timeZone: 'time_zone',
  metadata: ['metadata_json', stringMap],
  status: ['status', enumOf<SessionStatus>()],
  messageCount: 'message_count',
  lastSequence: 'last_sequence',
  lastMessageAt: ['last_message_at', nullable<number>()],
  openFromSequence: 'open_from_sequence',
  activityAt: 'activity_at',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  closedAt: ['closed_at', nullable<number>()],
  version: 'version',
});

/** Rows of `sessions` and their records, both ways (export and import, `portability.ts`). */
export const sessionRows = { toRecord: sessionToRecord, toRow: sessionToRow } as const;

/** Tool calls as JSON, written with exactly their three fields. */
const toolCallsJson: Codec<readonly ToolCall[], string> = {
  read: (text) => fromJson<ToolCall[]>(text) ?? [],
  write: (calls) => toJson(calls.map((c) => ({ id: c.id, name: c.name, argumentsJson: c.argumentsJson }))),
};

const { toRecord: messageToRecord, toRow: messageToRow } = rowCodec<MessageRecord, MessageRow>({
  id: 'id',
  tenantId: 'tenant_id',
  sessionId: 'session_id',
  sequence: 'sequence',
  role: ['role', enumOf<MessageRole>()],
  content: 'content',
  participantName: 'participant_name',
  toolCallId: 'tool_call_id',
  toolCalls: ['tool_calls_json', toolCallsJson],
  tokenCount: 'token_count',
  compacted: ['compacted', flag],
  memCellId: ['mem_cell_id', nullable<string>()],
  metadata: ['metadata_json', stringMap],
  occurredAt: 'occurred_at',
  createdAt: 'created_at',
});

/** Rows of `messages` and their records, both ways (export and import, `portability.ts`). */
export const messageRows = { toRecord: messageToRecord, toRow: messageToRow } as const;

const { toRecord: memCellToRecord, toRow: memCellToRow } = rowCodec<MemCellRecord, MemCellRow>({
  id: 'id',
  tenantId: 'tenant_id',
  sessionId: 'session_id',
  firstSequence: 'first_sequence',
  lastSequence: 'last_sequence',
  messageCount: 'message_count',
  tokenCount: 'token_count',
  reason: ['reason', enumOf<BoundaryReason>()],
  status: ['status', enumOf<MemCellStatus>()],
  attempts: 'attempts',
  extractionJobId: ['extraction_job_id', nullable<string>()],
  lastError: ['last_error', clipped(1024)],
  lastErrorReason: 'last_error_reason',
  boundaryNote: 'boundary_note',
  nextAttemptAt: ['next_attempt_at', nullable<number>()],
  openedAt: 'opened_at',
  lastMessageAt: 'last_message_at',
  closedAt: 'closed_at',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
});

/** Rows of `mem_cells` and their records, both ways (export and import, `portability.ts`). */
export const memCellRows = { toRecord: memCellToRecord, toRow: memCellToRow } as const;
