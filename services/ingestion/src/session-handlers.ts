import type { ServiceImpl } from '@connectrpc/connect';
import { IngestionService, SessionStatus, type Session } from '@engram/contracts/ingestion';
import { DEFAULT_PAGE_LIMITS, methodKey, pageSize, parseSessionName } from '@engram/resources';
import { errors, isEngramError, requirePrincipal, type Principal } from '@engram/runtime';
import {
  checkRequestId,
  etagMismatch,
  idempotent,
  inTransaction,
  requestKeyOf,
  type SessionPatch,
  type Store,
} from '@engram/store';
import type { IngestionDeps } from './deps.js';
import { SessionAccess } from './session-access.js';
import {
  checkExternalId,
  checkSessionFields,
  memCellMessage,
  parseEtag,
  storedSessionStatuses,
} from './sessions-api.js';
import { StoredText } from './stored-text.js';
import { createTimeFilter } from './time.js';

type Impl = ServiceImpl<typeof IngestionService>;

const UPDATABLE = new Set(['display_name', 'language_code', 'time_zone', 'metadata', 'status']);

/** The fields of an UpdateSession mask as a patch of the stored session (free text as stored). */
function sessionPatch(
  input: Session,
  mask: ReadonlySet<string>,
  text: StoredText,
): { -readonly [K in keyof SessionPatch]: SessionPatch[K] } {
  const patch: { -readonly [K in keyof SessionPatch]: SessionPatch[K] } = {};
  if (mask.has('display_name')) patch.displayName = text.displayName(input.displayName);
  if (mask.has('language_code')) patch.languageCode = input.languageCode;
  if (mask.has('time_zone')) patch.timeZone = input.timeZone === '' ? 'UTC' : input.timeZone;
  if (mask.has('metadata')) patch.metadata = text.metadata(input.metadata);
  if (mask.has('status')) patch.status = input.status === SessionStatus.CLOSED ? 'CLOSED' : 'ACTIVE';
  return patch;
}

/** sessions: CreateSession, GetSession, ListSessions, UpdateSession, DeleteSession. */
export class SessionHandlers implements Pick<
  Impl,
  'createSession' | 'getSession' | 'listSessions' | 'updateSession' | 'deleteSession'
> {
  readonly #store: Store;
  readonly #sessions: SessionAccess;
  readonly #redactSecrets: (tenantId: string) => boolean;

  constructor(deps: IngestionDeps) {
    this.#store = deps.store;
    this.#sessions = new SessionAccess(deps);
    this.#redactSecrets = deps.settings.redactSecrets;
  }

  readonly createSession: Impl['createSession'] = async (request, ctx) => {
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
    const text = new StoredText(this.#redactSecrets(principal.tenantId));
    let created: { sessionId: string };
    try {
      ({ result: created } = await idempotent(
        this.#store,
        requestKeyOf(principal, methodKey(IngestionService.method.createSession), request.requestId),
        { session: input ?? null },
        async (trx) => {
          const session = await this.#sessions.repository.createSession(trx, {
            tenantId: principal.tenantId,
            ownerId: principal.subject,
            displayName: text.displayName(input?.displayName ?? ''),
            externalId: input?.externalId ?? '',
            languageCode: input?.languageCode ?? '',
            timeZone: input?.timeZone === undefined || input.timeZone === '' ? 'UTC' : input.timeZone,
            metadata: text.metadata(input?.metadata ?? {}),
          });
          return { sessionId: session.id };
        },
      ));
    } catch (error) {
      // The owner already has a session with this external id: name it.
      if (!isEngramError(error) || error.reason !== 'RESOURCE_ALREADY_EXISTS' || !input?.externalId)
        throw error;
      throw await this.#existingSession(principal, input.externalId);
    }
    return { session: await this.#sessions.view(await this.#sessions.owned(principal, created.sessionId)) };
  };

  /** ALREADY_EXISTS naming the owner's session with `externalId`. */
  async #existingSession(principal: Principal, externalId: string) {
    const existing = await this.#sessions.repository.list(
      principal.tenantId,
      principal.subject,
      { externalId },
      { pageSize: 1 },
    );
    return errors.alreadyExists(existing.items[0] ? `sessions/${existing.items[0].id}` : 'the session');
  }

  readonly getSession: Impl['getSession'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const id = parseSessionName(request.name);
    return { session: await this.#sessions.view(await this.#sessions.readable(principal, id)) };
  };

  readonly listSessions: Impl['listSessions'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const statuses = storedSessionStatuses(request.statuses);
    if (request.externalId !== '') checkExternalId(request.externalId);
    const created = createTimeFilter(request.createTimeRange);
    const page = await this.#sessions.repository.list(
      principal.tenantId,
      principal.subject,
      {
        ...(statuses.length > 0 ? { statuses } : {}),
        ...(request.externalId !== '' ? { externalId: request.externalId } : {}),
        ...created,
      },
      { pageSize: pageSize(request.pageSize, DEFAULT_PAGE_LIMITS), pageToken: request.pageToken },
    );
    return {
      sessions: await Promise.all(page.items.map((s) => this.#sessions.view(s))),
      nextPageToken: page.nextPageToken,
    };
  };

  /** UpdateSession: the masked fields; closing closes the open tail into a MemCell (SESSION_CLOSED). */
  readonly updateSession: Impl['updateSession'] = async (request, ctx) => {
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
    const patch = sessionPatch(input, mask, new StoredText(this.#redactSecrets(principal.tenantId)));
    const sessions = this.#sessions;
    const { session, closed } = await inTransaction(this.#store, async (trx) => {
      const before = await sessions.owned(principal, id, trx);
      if (expected !== undefined && expected !== before.version) throw etagMismatch(`sessions/${id}`);
      const closing = patch.status === 'CLOSED' && before.status !== 'CLOSED';
      // Closing is final; re-closing changes nothing.
      if (patch.status === 'CLOSED' && before.status === 'CLOSED') delete patch.status;
      const cell = closing ? await sessions.closeTail(trx, before, 'SESSION_CLOSED') : undefined;
      const current = cell === undefined ? before : await sessions.owned(principal, id, trx);
      const after = await sessions.repository.update(trx, principal.tenantId, id, current.version, patch);
      return { session: after, closed: cell };
    });
    sessions.cellsClosed(closed === undefined ? 0 : 1);
    return {
      session: await sessions.view(session),
      ...(closed !== undefined ? { closedMemCell: memCellMessage(closed) } : {}),
    };
  };

  readonly deleteSession: Impl['deleteSession'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const id = parseSessionName(request.name);
    const expected = parseEtag(request.etag);
    const deleted = await inTransaction(this.#store, async (trx) => {
      await this.#sessions.owned(principal, id, trx);
      return this.#sessions.repository.deleteSession(trx, principal.tenantId, id, {
        ...(expected !== undefined ? { expectedVersion: expected } : {}),
      });
    });
    return {
      name: `sessions/${id}`,
      messagesDeleted: BigInt(deleted.messages),
      memCellsDeleted: deleted.memCells,
    };
  };
}
