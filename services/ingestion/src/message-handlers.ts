import { timestampMs } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import { IngestionService, type AppendMessagesRequest } from '@engram/contracts/ingestion';
import { methodKey, pageSize, parseMessageName, parseSessionName } from '@engram/resources';
import {
  PrincipalAdmission,
  errors,
  isEngramError,
  requirePrincipal,
  requireRole,
  type Principal,
} from '@engram/runtime';
import {
  checkRequestId,
  idempotent,
  requestKeyOf,
  type MemCellRecord,
  type MessageRecord,
  type NewMessage,
} from '@engram/store';
import type { IngestionDeps } from './deps.js';
import { SessionAccess } from './session-access.js';
import {
  checkAfterLatest,
  memCellMessage,
  messageMessage,
  prepareMessages,
  storedRoles,
} from './sessions-api.js';

type Impl = ServiceImpl<typeof IngestionService>;

/** Appends that lose a race for the session row are retried this many times. */
const APPEND_RETRIES = 20;
/** ListMessages: 100 messages by default, at most 1,000. */
const MESSAGE_PAGE_LIMITS = { fallback: 100, max: 1000 } as const;

/** What an append records under its request id: sequences and cell ids, never content. */
interface AppendResult {
  readonly first: number;
  readonly last: number;
  readonly cells: string[];
}

/** What the transaction of an append wrote, as the repository returned it. */
interface Appended {
  readonly messages: readonly MessageRecord[];
  readonly cells: readonly MemCellRecord[];
}

const isRace = (error: unknown) => isEngramError(error) && error.reason === 'ETAG_MISMATCH';

/** Messages as appended, with the MemCell the same transaction closed each into (if any). */
function inCells(messages: readonly MessageRecord[], cells: readonly MemCellRecord[]): MessageRecord[] {
  return messages.map((m) => {
    const cell = cells.find((c) => m.sequence >= c.firstSequence && m.sequence <= c.lastSequence);
    return cell === undefined ? m : { ...m, memCellId: cell.id };
  });
}

/** The request of an append as sent (before redaction), so a retry of the same call matches. */
function appendBody(request: AppendMessagesRequest, expectedLast: number | undefined) {
  return {
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
  };
}

/** messages: AppendMessages, GetMessage, ListMessages, MarkMessagesCompacted. */
export class MessageHandlers implements Pick<
  Impl,
  'appendMessages' | 'getMessage' | 'listMessages' | 'markMessagesCompacted'
> {
  readonly #deps: IngestionDeps;
  readonly #sessions: SessionAccess;
  readonly #admission: PrincipalAdmission;

  constructor(deps: IngestionDeps) {
    this.#deps = deps;
    this.#sessions = new SessionAccess(deps);
    this.#admission = new PrincipalAdmission(deps.settings.admission.appends, { name: 'AppendMessages' });
  }

  /**
   * AppendMessages: the messages and the MemCells the rules close, in one transaction; the
   * asynchronous judge is told afterwards.
   */
  readonly appendMessages: Impl['appendMessages'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const ticket = this.#admission.admit(principal, IngestionService.method.appendMessages.name);
    try {
      return await this.#appendAdmitted(principal, request);
    } finally {
      ticket.release();
    }
  };

  async #appendAdmitted(principal: Principal, request: AppendMessagesRequest) {
    const id = parseSessionName(request.parent, 'parent');
    checkRequestId(request.requestId);
    const now = Date.now();
    const { messages, redactions } = prepareMessages(request.messages, {
      now,
      redactSecrets: this.#deps.settings.redactSecrets(principal.tenantId),
    });
    const expectedLast =
      request.expectedLastSequence === undefined ? undefined : Number(request.expectedLastSequence);
    if (expectedLast !== undefined && expectedLast < 0) {
      throw errors.fieldInvalid('expected_last_sequence', 'must not be negative');
    }
    const { result, appended } = await this.#append(principal, id, request, messages, expectedLast, now);
    if (appended !== undefined) {
      this.#sessions.cellsClosed(result.cells.length);
      this.#deps.onTailGrew(principal.tenantId, id);
      if (redactions > 0) {
        this.#deps.logger.info(
          { session: `sessions/${id}`, redactions },
          'secrets redacted from appended messages',
        );
      }
    }
    // The messages and cells come from the transaction (or, for a replay, as they are now); the
    // session is read again: its etag after the repository's compare-and-sets and its open-tail
    // and MemCell counters are only in the database.
    const [written, session] = await Promise.all([
      appended === undefined
        ? this.#replayed(principal.tenantId, id, result)
        : { messages: inCells(appended.messages, appended.cells), cells: appended.cells },
      this.#sessions.owned(principal, id),
    ]);
    return {
      messages: written.messages.map(messageMessage),
      closedMemCells: written.cells.map(memCellMessage),
      session: await this.#sessions.view(session),
    };
  }

  /**
   * The append's transaction, retried while it loses the race for the session row (with no
   * `expected_last_sequence`). The session is read once, in the transaction, and passed along.
   * `appended` is what this call wrote; undefined when the request id replayed an earlier call.
   */
  async #append(
    principal: Principal,
    id: string,
    request: AppendMessagesRequest,
    messages: readonly NewMessage[],
    expectedLast: number | undefined,
    now: number,
  ): Promise<{ result: AppendResult; appended?: Appended }> {
    const sessions = this.#sessions;
    // Set by the transaction that commits (the request-id record keeps only the ids).
    let appended: Appended | undefined;
    const write = () =>
      idempotent<AppendResult>(
        this.#deps.store,
        requestKeyOf(principal, methodKey(IngestionService.method.appendMessages), request.requestId),
        appendBody(request, expectedLast),
        async (trx) => {
          const session = await sessions.owned(principal, id, trx);
          if (session.status === 'ACTIVE') checkAfterLatest(messages, session.lastMessageAt);
          const stored = await sessions.repository.appendMessages(
            trx,
            principal.tenantId,
            id,
            messages,
            expectedLast === undefined ? {} : { expectedLastSequence: expectedLast },
            now,
          );
          const cells = await sessions.applyRules(trx, session);
          appended = { messages: stored, cells };
          return {
            first: stored[0]?.sequence ?? 0,
            last: stored[stored.length - 1]?.sequence ?? 0,
            cells: cells.map((c) => c.id),
          };
        },
        now,
      );
    for (let attempt = 1; ; attempt++) {
      try {
        const { result, replayed } = await write();
        return replayed || appended === undefined ? { result } : { result, appended };
      } catch (error) {
        // Another append took the session row first: with no expectation set, go after it.
        if (!isRace(error) || expectedLast !== undefined || attempt >= APPEND_RETRIES) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
      }
    }
  }

  /** The messages and cells of an earlier append, as they are now (a replay by request id). */
  async #replayed(tenantId: string, id: string, result: AppendResult): Promise<Appended> {
    const { repository } = this.#sessions;
    const [stored, cells] = await Promise.all([
      repository.listMessages(
        tenantId,
        id,
        { fromSequence: result.first, toSequence: result.last },
        { pageSize: Math.max(1, result.last - result.first + 1) },
      ),
      Promise.all(result.cells.map((cellId) => repository.getMemCell(tenantId, id, cellId))),
    ]);
    return { messages: stored.items, cells: cells.filter((c): c is MemCellRecord => c !== undefined) };
  }

  readonly getMessage: Impl['getMessage'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const { sessionId, messageId } = parseMessageName(request.name);
    await this.#sessions.checkReadableParent(principal, sessionId, request.name);
    const message = await this.#sessions.repository.getMessage(principal.tenantId, sessionId, messageId);
    if (message === undefined) throw errors.notFound(request.name);
    return { message: messageMessage(message) };
  };

  readonly listMessages: Impl['listMessages'] = async (request, ctx) => {
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
    const size = pageSize(request.pageSize, MESSAGE_PAGE_LIMITS);
    await this.#sessions.readable(principal, id);
    const page = await this.#sessions.repository.listMessages(
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
  };

  /** MarkMessagesCompacted (internal, `service` role): context's compaction mark. */
  readonly markMessagesCompacted: Impl['markMessagesCompacted'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    requireRole(principal, 'service');
    const id = parseSessionName(request.session, 'session');
    checkRequestId(request.requestId);
    const through = Number(request.throughSequence);
    if (through === 0) throw errors.fieldRequired('through_sequence');
    if (through < 0) throw errors.fieldInvalid('through_sequence', 'must not be negative');
    const { repository } = this.#sessions;
    const { result } = await idempotent(
      this.#deps.store,
      requestKeyOf(principal, methodKey(IngestionService.method.markMessagesCompacted), request.requestId),
      { session: request.session, through },
      async (trx) => {
        const session = await repository.get(principal.tenantId, id, trx);
        if (session === undefined) throw errors.notFound(`sessions/${id}`);
        if (through > session.lastSequence) {
          throw errors.fieldInvalid('through_sequence', "greater than the session's last_sequence");
        }
        const marked = await repository.markCompacted(trx, principal.tenantId, id, through);
        return { marked, mark: await repository.compactionMark(principal.tenantId, id, trx) };
      },
    );
    return {
      session: `sessions/${id}`,
      compactedThroughSequence: BigInt(result.mark),
      messagesMarked: BigInt(result.marked),
    };
  };
}
