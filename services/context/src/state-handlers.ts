import {
  Code,
  ConnectError,
  type CallOptions,
  type HandlerContext,
  type ServiceImpl,
} from '@connectrpc/connect';
import type { ContextService, SessionState } from '@engram/contracts/context';
import { checkUpdateMask, parseSessionStateName } from '@engram/resources';
import {
  dependencyFailure,
  errors,
  forwardedCallOptions,
  requirePrincipal,
  requireRole,
  type Principal,
} from '@engram/runtime';
import { etagMismatch, forgetResults, inTransaction, type SessionStateRecord } from '@engram/store';
import { chatMethodOf } from './chat-replays.js';
import type { ContextDeps } from './deps.js';
import { countO200kTokens } from './domain/tokenizer.js';
import { readSession, readTail } from './session-access.js';
import {
  checkItems,
  checkSummary,
  mergeItems,
  stateEtag,
  stateMessage,
  storedItems,
  storedSummary,
  UPDATABLE_PATHS,
  type ItemInput,
} from './state-api.js';
import { storedTextOf } from './stored-text.js';

type Impl = ServiceImpl<typeof ContextService>;

/** What an `UpdateSessionState` writes: the fields its mask names, validated. */
interface StateUpdate {
  readonly summary: string | undefined;
  readonly keyPoints: readonly ItemInput[] | undefined;
  readonly openLoops: readonly ItemInput[] | undefined;
}

/** Session state: `GetSessionState`, `UpdateSessionState` and `DeleteSessionState`. */
export class SessionStateHandlers implements Pick<
  Impl,
  'getSessionState' | 'updateSessionState' | 'deleteSessionState'
> {
  readonly #deps: ContextDeps;

  constructor(deps: ContextDeps) {
    this.#deps = deps;
  }

  /** GetSessionState: the state with its uncompacted tail measured. */
  readonly getSessionState: Impl['getSessionState'] = async (request, ctx) => {
    const sessionId = parseSessionStateName(request.name);
    return { sessionState: await this.#present(ctx, sessionId) };
  };

  /**
   * UpdateSessionState: writes the masked fields of a session the caller owns (cited messages
   * must exist), serialized with the session's compactions, conditional on the etag when sent.
   */
  readonly updateSessionState: Impl['updateSessionState'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const input = request.sessionState;
    if (input === undefined) throw errors.fieldRequired('session_state');
    const sessionId = parseSessionStateName(input.name, 'session_state.name');
    const paths = request.updateMask?.paths ?? [];
    checkUpdateMask(paths, UPDATABLE_PATHS);
    const call = forwardedCallOptions(ctx);
    // The session must be the caller's (NOT_FOUND otherwise) before anything else is looked at.
    await readSession(this.#deps.ingestion, sessionId, call);
    // Stored (and answered) like message content: redacted under the tenant's setting.
    const stored = storedTextOf(this.#deps.settings, principal.tenantId);
    const update: StateUpdate = {
      summary: paths.includes('summary') ? storedSummary(checkSummary(input.summary), stored) : undefined,
      keyPoints: paths.includes('key_points')
        ? storedItems(checkItems(input.keyPoints, 'key_points', sessionId), stored)
        : undefined,
      openLoops: paths.includes('open_loops')
        ? storedItems(checkItems(input.openLoops, 'open_loops', sessionId), stored)
        : undefined,
    };
    await this.#checkSourcesExist(
      sessionId,
      [...(update.keyPoints ?? []), ...(update.openLoops ?? [])],
      call,
    );
    const saved = await this.#deps.locks.run(`${principal.tenantId}/${sessionId}`, () =>
      this.#save(principal, sessionId, input, update),
    );
    this.#deps.logger.info({ session: sessionId, paths, version: saved.version }, 'session state updated');
    return { sessionState: await this.#present(ctx, sessionId, saved) };
  };

  /** DeleteSessionState (`service` role): removes the state and forgets the session's Chat replays. */
  readonly deleteSessionState: Impl['deleteSessionState'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    requireRole(principal, 'service');
    const sessionId = parseSessionStateName(request.name);
    const { states } = this.#deps;
    const deleted = await this.#deps.locks.run(`${principal.tenantId}/${sessionId}`, () =>
      inTransaction(this.#deps.store, (trx) => states.delete(trx, principal.tenantId, sessionId)),
    );
    await forgetResults(this.#deps.store, principal.tenantId, chatMethodOf(sessionId));
    this.#deps.logger.info({ session: sessionId, deleted }, 'session state deleted');
    return { deleted };
  };

  /** The state with its tail measured, as the API returns it. */
  async #present(ctx: HandlerContext, sessionId: string, state?: SessionStateRecord) {
    const call = forwardedCallOptions(ctx);
    const session = await readSession(this.#deps.ingestion, sessionId, call);
    const current = state ?? (await this.#deps.states.get(requirePrincipal(ctx.values).tenantId, sessionId));
    const tail = await readTail(this.#deps.ingestion, session, current.compactedThroughSequence, call, 0);
    return stateMessage(current, tail);
  }

  /** Writes the update over the current state, in one transaction, checking the etag. */
  #save(
    principal: Principal,
    sessionId: string,
    input: SessionState,
    { summary, keyPoints, openLoops }: StateUpdate,
  ): Promise<SessionStateRecord> {
    const { states } = this.#deps;
    return inTransaction(this.#deps.store, async (trx) => {
      const current = await states.get(principal.tenantId, sessionId, trx);
      if (input.etag !== '' && input.etag !== stateEtag(current)) throw etagMismatch(input.name);
      const now = Date.now();
      return states.save(trx, principal.tenantId, sessionId, current.version, {
        summary: summary ?? current.summary,
        summaryTokenCount: summary === undefined ? current.summaryTokenCount : countO200kTokens(summary),
        keyPoints:
          keyPoints === undefined
            ? current.keyPoints
            : mergeItems(current.keyPoints, keyPoints, 'key_points', now),
        openLoops:
          openLoops === undefined
            ? current.openLoops
            : mergeItems(current.openLoops, openLoops, 'open_loops', now),
        compactedThroughSequence: current.compactedThroughSequence,
        summaryMemoryId: current.summaryMemoryId,
        lastCompactedAt: current.lastCompactedAt,
      });
    });
  }

  /** Every cited message must exist in the session (FIELD_INVALID otherwise); 20 reads at a time. */
  async #checkSourcesExist(sessionId: string, items: readonly ItemInput[], call: CallOptions): Promise<void> {
    const ids = [...new Set(items.flatMap((i) => i.sourceMessageIds))];
    for (let i = 0; i < ids.length; i += 20) {
      await Promise.all(ids.slice(i, i + 20).map((id) => this.#checkSourceExists(sessionId, id, call)));
    }
  }

  async #checkSourceExists(sessionId: string, id: string, call: CallOptions): Promise<void> {
    const name = `sessions/${sessionId}/messages/${id}`;
    try {
      await this.#deps.ingestion.getMessage({ name }, call);
    } catch (error) {
      const failure = dependencyFailure('ingestion', error);
      if (ConnectError.from(failure).code === Code.NotFound) {
        throw errors.fieldInvalid(
          'session_state.source_messages',
          `${name} is not a message of this session`,
        );
      }
      throw failure;
    }
  }
}
