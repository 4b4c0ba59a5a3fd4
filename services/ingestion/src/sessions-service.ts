import { timestampMs } from '@bufbuild/protobuf/wkt';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { MemCellStatus, SessionStatus, type IngestionService } from '@engram/contracts/ingestion';
import {
  errors,
  isEngramError,
  requirePrincipal,
  requireRole,
  type Logger,
  type Principal,
} from '@engram/runtime';
import {
  SessionRepository,
  checkRequestId,
  etagMismatch,
  idempotent,
  inTransaction,
  requestKeyOf,
  type Executor,
  type MemCellRecord,
  type SessionPatch,
  type SessionRecord,
  type Store,
} from '@engram/store';
import { ruleBoundaries, type BoundaryRules } from './domain/boundaries.js';
import type { ExtractionHandOff } from './handoff.js';
import {
  checkAfterLatest,
  checkExternalId,
  checkSessionFields,
  memCellMessage,
  messageMessage,
  parseEtag,
  parseMemCellName,
  parseMessageName,
  parseSessionName,
  prepareMessages,
  sessionMessage,
  storedMemCellStatuses,
  storedRoles,
  storedSessionStatuses,
} from './sessions-api.js';

/** What the session methods are built from. */
export interface SessionDeps {
  readonly logger: Logger;
  readonly store: Store;
  readonly settings: {
    /** Redact secrets before anything is stored. */
    readonly redactSecrets: (tenantId: string) => boolean;
    readonly boundaries: BoundaryRules;
  };
  /** The durable hand-off of closed MemCells to governance; woken after commits that close cells. */
  readonly handOff?: ExtractionHandOff;
  /** Told about sessions whose open tail grew (the asynchronous boundary judge). */
  readonly onTailGrew?: (tenantId: string, sessionId: string) => void;
}

/** For request ids: the full name of this service. */
const SERVICE = 'engram.ingestion.v1.IngestionService';
const UPDATABLE = new Set(['display_name', 'language_code', 'time_zone', 'metadata', 'status']);
/** Appends that lose a race for the session row are retried this many times. */
const APPEND_RETRIES = 20;
const FLUSH_WAIT_DEFAULT_MS = 30_000;
const FLUSH_WAIT_MAX_MS = 300_000;

function pageSize(requested: number, fallback: number, max: number): number {
  if (requested < 0) throw errors.fieldInvalid('page_size', 'must not be negative');
  return requested === 0 ? fallback : Math.min(requested, max);
}

const isRace = (error: unknown) => isEngramError(error) && error.reason === 'ETAG_MISMATCH';

/**
 * The session, message and MemCell methods of `engram.ingestion.v1.IngestionService`
 * (blueprint §3 flows 1–2). Sessions are SELF-scoped: another owner's session does not exist.
 */
export function createSessionHandlers(deps: SessionDeps): Partial<ServiceImpl<typeof IngestionService>> {
  const sessions = new SessionRepository(deps.store);

  const view = async (session: SessionRecord, executor?: Executor) =>
    sessionMessage(session, await sessions.counts(session.tenantId, session.id, executor));

  /**
   * Closes what the rules find in the open tail (in the caller's transaction), returning the new
   * cells in order.
   */
  const applyRules = async (trx: Executor, session: SessionRecord): Promise<MemCellRecord[]> => {
    const tail = await sessions.openTail(session.tenantId, session.id, trx);
    const closed: MemCellRecord[] = [];
    for (const boundary of ruleBoundaries(tail, session.timeZone, deps.settings.boundaries)) {
      closed.push(
        await sessions.closeMemCell(trx, session.tenantId, session.id, {
          throughSequence: boundary.throughSequence,
          reason: boundary.reason,
        }),
      );
    }
    return closed;
  };

  /** Closes the whole open tail (FLUSH, SESSION_CLOSED); undefined when it is empty. */
  const closeTail = async (
    trx: Executor,
    session: SessionRecord,
    reason: 'FLUSH' | 'SESSION_CLOSED',
    note = '',
  ): Promise<MemCellRecord | undefined> => {
    if (session.lastSequence < session.openFromSequence) return undefined;
    return sessions.closeMemCell(trx, session.tenantId, session.id, {
      throughSequence: session.lastSequence,
      reason,
      note,
    });
  };

  const cellsClosed = (count: number) => {
    if (count > 0) deps.handOff?.wake();
  };

  const ownedSession = (principal: Principal, id: string, executor?: Executor) =>
    sessions.getOwned(principal.tenantId, principal.subject, id, executor);

  /** Reads: the owner, or a `service` principal of the tenant (internal callers read everything). */
  const readableSession = async (principal: Principal, id: string) => {
    if (!principal.roles.includes('service')) return ownedSession(principal, id);
    const session = await sessions.get(principal.tenantId, id);
    if (session === undefined) throw errors.notFound(`sessions/${id}`);
    return session;
  };

  /** Waits until the cell is EXTRACTED or FAILED, or the time is up; returns its latest state. */
  const waitForExtraction = async (cell: MemCellRecord, ms: number, ctx: HandlerContext) => {
    const remaining = ctx.timeoutMs();
    const deadline = Date.now() + Math.min(ms, remaining === undefined ? ms : Math.max(0, remaining - 250));
    let current = cell;
    for (;;) {
      const latest = await sessions.getMemCell(cell.tenantId, cell.sessionId, cell.id);
      if (latest === undefined) return current;
      current = latest;
      if (current.status === 'EXTRACTED' || current.status === 'FAILED') return current;
      const left = deadline - Date.now();
      if (left <= 0 || ctx.signal.aborted) return current;
      await Promise.race([
        deps.handOff?.settled(),
        new Promise((resolve) => setTimeout(resolve, Math.min(left, 250))),
      ]);
    }
  };

  return {
    async createSession(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      checkRequestId(request.requestId);
      const input = request.session;
      if (input !== undefined) {
        checkSessionFields(input, 'all');
        checkExternalId(input.externalId);
        if (input.status !== SessionStatus.UNSPECIFIED && input.status !== SessionStatus.ACTIVE) {
          throw errors.fieldInvalid('session.status', 'a new session is ACTIVE');
        }
      }
      const create = () =>
        idempotent(
          deps.store,
          requestKeyOf(principal, `${SERVICE}/CreateSession`, request.requestId),
          { session: input ?? null },
          async (trx) => {
            const created = await sessions.createSession(trx, {
              tenantId: principal.tenantId,
              ownerId: principal.subject,
              displayName: input?.displayName ?? '',
              externalId: input?.externalId ?? '',
              languageCode: input?.languageCode ?? '',
              timeZone: input?.timeZone === undefined || input.timeZone === '' ? 'UTC' : input.timeZone,
              metadata: { ...input?.metadata },
            });
            return { sessionId: created.id };
          },
        );
      let result: { sessionId: string };
      try {
        ({ result } = await create());
      } catch (error) {
        // The owner already has a session with this external id: name it.
        if (!isEngramError(error) || error.reason !== 'RESOURCE_ALREADY_EXISTS' || !input?.externalId)
          throw error;
        const existing = await sessions.list(
          principal.tenantId,
          principal.subject,
          { externalId: input.externalId },
          { pageSize: 1 },
        );
        throw errors.alreadyExists(existing.items[0] ? `sessions/${existing.items[0].id}` : 'the session');
      }
      return { session: await view(await ownedSession(principal, result.sessionId)) };
    },

    async getSession(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const id = parseSessionName(request.name);
      return { session: await view(await readableSession(principal, id)) };
    },

    async listSessions(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const statuses = storedSessionStatuses(request.statuses);
      if (request.externalId !== '') checkExternalId(request.externalId);
      const range = request.createTimeRange;
      const from = range?.startTime === undefined ? undefined : timestampMs(range.startTime);
      const before = range?.endTime === undefined ? undefined : timestampMs(range.endTime);
      if (from !== undefined && before !== undefined && before <= from) {
        throw errors.invalidArgument('TIME_RANGE_INVALID', 'create_time_range ends at or before its start', {
          field: 'create_time_range',
        });
      }
      const page = await sessions.list(
        principal.tenantId,
        principal.subject,
        {
          ...(statuses.length > 0 ? { statuses } : {}),
          ...(request.externalId !== '' ? { externalId: request.externalId } : {}),
          ...(from !== undefined ? { createdFrom: from } : {}),
          ...(before !== undefined ? { createdBefore: before } : {}),
        },
        { pageSize: pageSize(request.pageSize, 50, 500), pageToken: request.pageToken },
      );
      return {
        sessions: await Promise.all(page.items.map((s) => view(s))),
        nextPageToken: page.nextPageToken,
      };
    },

    async updateSession(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const input = request.session;
      if (input === undefined) throw errors.fieldRequired('session');
      const id = parseSessionName(input.name, 'session.name');
      const paths = request.updateMask?.paths ?? [];
      if (paths.length === 0) throw errors.fieldRequired('update_mask');
      for (const path of paths) {
        if (!UPDATABLE.has(path)) {
          throw errors.invalidArgument('UPDATE_MASK_INVALID', `update_mask path "${path}" is not updatable`, {
            path,
          });
        }
      }
      const mask = new Set(paths);
      checkSessionFields(input, mask);
      if (mask.has('status') && input.status === SessionStatus.UNSPECIFIED) {
        throw errors.fieldInvalid('session.status', 'SESSION_STATUS_UNSPECIFIED is not a status');
      }
      const expected = parseEtag(request.etag);
      const patch: { -readonly [K in keyof SessionPatch]: SessionPatch[K] } = {};
      if (mask.has('display_name')) patch.displayName = input.displayName;
      if (mask.has('language_code')) patch.languageCode = input.languageCode;
      if (mask.has('time_zone')) patch.timeZone = input.timeZone === '' ? 'UTC' : input.timeZone;
      if (mask.has('metadata')) patch.metadata = { ...input.metadata };
      if (mask.has('status')) patch.status = input.status === SessionStatus.CLOSED ? 'CLOSED' : 'ACTIVE';

      const { session, closed } = await inTransaction(deps.store, async (trx) => {
        const before = await ownedSession(principal, id, trx);
        if (expected !== undefined && expected !== before.version) throw etagMismatch(`sessions/${id}`);
        const closing = patch.status === 'CLOSED' && before.status !== 'CLOSED';
        // Closing is final; re-closing changes nothing.
        if (patch.status === 'CLOSED' && before.status === 'CLOSED') delete patch.status;
        const cell = closing ? await closeTail(trx, before, 'SESSION_CLOSED') : undefined;
        const current = cell === undefined ? before : await ownedSession(principal, id, trx);
        const after = await sessions.update(trx, principal.tenantId, id, current.version, patch);
        return { session: after, closed: cell };
      });
      cellsClosed(closed === undefined ? 0 : 1);
      return {
        session: await view(session),
        ...(closed !== undefined ? { closedMemCell: memCellMessage(closed) } : {}),
      };
    },

    async deleteSession(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const id = parseSessionName(request.name);
      const expected = parseEtag(request.etag);
      const deleted = await inTransaction(deps.store, async (trx) => {
        await ownedSession(principal, id, trx);
        return sessions.deleteSession(trx, principal.tenantId, id, {
          ...(expected !== undefined ? { expectedVersion: expected } : {}),
        });
      });
      return {
        name: `sessions/${id}`,
        messagesDeleted: BigInt(deleted.messages),
        memCellsDeleted: deleted.memCells,
      };
    },

    async appendMessages(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const id = parseSessionName(request.parent, 'parent');
      checkRequestId(request.requestId);
      const now = Date.now();
      const { messages, redactions } = prepareMessages(request.messages, {
        now,
        redactSecrets: deps.settings.redactSecrets(principal.tenantId),
      });
      const expectedLast =
        request.expectedLastSequence === undefined ? undefined : Number(request.expectedLastSequence);
      if (expectedLast !== undefined && expectedLast < 0) {
        throw errors.fieldInvalid('expected_last_sequence', 'must not be negative');
      }
      const write = () =>
        idempotent(
          deps.store,
          requestKeyOf(principal, `${SERVICE}/AppendMessages`, request.requestId),
          // The request as sent (before redaction), so a retry of the same call matches.
          {
            parent: request.parent,
            messages: request.messages.map((m) => ({
              role: m.role,
              content: m.content,
              participantName: m.participantName,
              toolCallId: m.toolCallId,
              toolCalls: m.toolCalls.map((c) => [c.id, c.name, c.argumentsJson]),
              occurTime: m.occurTime === undefined ? null : timestampMs(m.occurTime),
              metadata: m.metadata,
            })),
            expectedLast: expectedLast ?? null,
          },
          async (trx) => {
            const session = await ownedSession(principal, id, trx);
            if (session.status === 'ACTIVE') checkAfterLatest(messages, session.lastMessageAt);
            const stored = await sessions.appendMessages(
              trx,
              principal.tenantId,
              id,
              messages,
              expectedLast === undefined ? {} : { expectedLastSequence: expectedLast },
              now,
            );
            const after = await ownedSession(principal, id, trx);
            const closed = await applyRules(trx, after);
            return {
              first: stored[0]?.sequence ?? 0,
              last: stored[stored.length - 1]?.sequence ?? 0,
              cells: closed.map((c) => c.id),
            };
          },
          now,
        );
      let outcome: Awaited<ReturnType<typeof write>> | undefined;
      for (let attempt = 1; outcome === undefined; attempt++) {
        try {
          outcome = await write();
        } catch (error) {
          // Another append took the session row first: with no expectation set, go after it.
          if (!isRace(error) || expectedLast !== undefined || attempt >= APPEND_RETRIES) throw error;
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
        }
      }
      const { result, replayed } = outcome;
      if (!replayed) {
        cellsClosed(result.cells.length);
        deps.onTailGrew?.(principal.tenantId, id);
        if (redactions > 0) {
          deps.logger.info(
            { session: `sessions/${id}`, redactions },
            'secrets redacted from appended messages',
          );
        }
      }
      const [stored, cells, session] = await Promise.all([
        sessions.listMessages(
          principal.tenantId,
          id,
          { fromSequence: result.first, toSequence: result.last },
          { pageSize: Math.max(1, result.last - result.first + 1) },
        ),
        Promise.all(result.cells.map((cellId) => sessions.getMemCell(principal.tenantId, id, cellId))),
        ownedSession(principal, id),
      ]);
      return {
        messages: stored.items.map(messageMessage),
        closedMemCells: cells.filter((c): c is MemCellRecord => c !== undefined).map(memCellMessage),
        session: await view(session),
      };
    },

    async getMessage(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const { sessionId, messageId } = parseMessageName(request.name);
      await readableSession(principal, sessionId).catch(() => {
        throw errors.notFound(request.name);
      });
      const message = await sessions.getMessage(principal.tenantId, sessionId, messageId);
      if (message === undefined) throw errors.notFound(request.name);
      return { message: messageMessage(message) };
    },

    async listMessages(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const id = parseSessionName(request.parent, 'parent');
      const from = request.fromSequence === undefined ? undefined : Number(request.fromSequence);
      const to = request.toSequence === undefined ? undefined : Number(request.toSequence);
      if (from !== undefined && from < 1) throw errors.fieldInvalid('from_sequence', 'at least 1');
      if (to !== undefined && to < 1) throw errors.fieldInvalid('to_sequence', 'at least 1');
      if (from !== undefined && to !== undefined && from > to) {
        throw errors.fieldInvalid('from_sequence', 'greater than to_sequence');
      }
      const roles = storedRoles(request.roles, 'roles');
      const size = pageSize(request.pageSize, 100, 1000);
      await readableSession(principal, id);
      const page = await sessions.listMessages(
        principal.tenantId,
        id,
        {
          ...(from !== undefined ? { fromSequence: from } : {}),
          ...(to !== undefined ? { toSequence: to } : {}),
          ...(roles.length > 0 ? { roles } : {}),
          ...(request.includeCompacted === false ? { includeCompacted: false } : {}),
          openOnly: request.openOnly,
          newestFirst: request.newestFirst,
        },
        { pageSize: size, pageToken: request.pageToken },
      );
      return { messages: page.items.map(messageMessage), nextPageToken: page.nextPageToken };
    },

    async markMessagesCompacted(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      requireRole(principal, 'service');
      const id = parseSessionName(request.session, 'session');
      checkRequestId(request.requestId);
      const through = Number(request.throughSequence);
      if (through === 0) throw errors.fieldRequired('through_sequence');
      if (through < 0) throw errors.fieldInvalid('through_sequence', 'must not be negative');
      const { result } = await idempotent(
        deps.store,
        requestKeyOf(principal, `${SERVICE}/MarkMessagesCompacted`, request.requestId),
        { session: request.session, through },
        async (trx) => {
          const session = await sessions.get(principal.tenantId, id, trx);
          if (session === undefined) throw errors.notFound(`sessions/${id}`);
          if (through > session.lastSequence) {
            throw errors.fieldInvalid('through_sequence', "greater than the session's last_sequence");
          }
          const marked = await sessions.markCompacted(trx, principal.tenantId, id, through);
          return { marked, mark: await sessions.compactionMark(principal.tenantId, id, trx) };
        },
      );
      return {
        session: `sessions/${id}`,
        compactedThroughSequence: BigInt(result.mark),
        messagesMarked: BigInt(result.marked),
      };
    },

    async flushSession(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const id = parseSessionName(request.name);
      checkRequestId(request.requestId);
      if (Array.from(request.reason).length > 256)
        throw errors.fieldInvalid('reason', 'at most 256 characters');
      let waitMs = FLUSH_WAIT_DEFAULT_MS;
      if (request.extractionWaitTimeout !== undefined) {
        const t = request.extractionWaitTimeout;
        waitMs = Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6);
        if (waitMs < 0 || waitMs > FLUSH_WAIT_MAX_MS) {
          throw errors.fieldInvalid('extraction_wait_timeout', 'range 0–300 seconds');
        }
      }
      const { result, replayed } = await idempotent(
        deps.store,
        requestKeyOf(principal, `${SERVICE}/FlushSession`, request.requestId),
        { name: request.name, reason: request.reason },
        async (trx) => {
          const session = await ownedSession(principal, id, trx);
          if (session.status === 'CLOSED') return { cellId: null };
          const cell = await closeTail(trx, session, 'FLUSH', request.reason);
          return { cellId: cell?.id ?? null };
        },
      );
      if (result.cellId === null) return {};
      if (!replayed) cellsClosed(1);
      let cell = await sessions.getMemCell(principal.tenantId, id, result.cellId);
      if (cell === undefined) return {};
      if (request.waitForExtraction) cell = await waitForExtraction(cell, waitMs, ctx);
      return { memCell: memCellMessage(cell) };
    },

    async getMemCell(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const { sessionId, memCellId } = parseMemCellName(request.name);
      await readableSession(principal, sessionId).catch(() => {
        throw errors.notFound(request.name);
      });
      const cell = await sessions.getMemCell(principal.tenantId, sessionId, memCellId);
      if (cell === undefined) throw errors.notFound(request.name);
      return { memCell: memCellMessage(cell) };
    },

    async listMemCells(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const id = parseSessionName(request.parent, 'parent');
      const statuses = storedMemCellStatuses(request.statuses.filter((s) => s !== MemCellStatus.UNSPECIFIED));
      const size = pageSize(request.pageSize, 50, 500);
      await readableSession(principal, id);
      const page = await sessions.listMemCells(
        principal.tenantId,
        id,
        statuses.length > 0 ? { statuses } : {},
        { pageSize: size, pageToken: request.pageToken },
      );
      return { memCells: page.items.map(memCellMessage), nextPageToken: page.nextPageToken };
    },
  };
}
