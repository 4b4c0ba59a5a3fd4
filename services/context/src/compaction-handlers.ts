import type { CallOptions, ServiceImpl } from '@connectrpc/connect';
import { ContextService } from '@engram/contracts/context';
import type { Session } from '@engram/contracts/ingestion';
import { methodKey } from '@engram/resources';
import { forwardedCallOptions, requirePrincipal, type Principal } from '@engram/runtime';
import { idempotent, previousResult, requestKeyOf } from '@engram/store';
import { checkCompactRequest, compactionResponse, type RecordedCompaction } from './compaction-api.js';
import type { Compactions } from './compactions.js';
import type { ContextDeps } from './deps.js';
import { readSession, readTail } from './session-access.js';

type Impl = ServiceImpl<typeof ContextService>;

/** Compaction: `CompactSession`. */
export class CompactionHandlers implements Pick<Impl, 'compactSession'> {
  readonly #deps: ContextDeps;
  readonly #compactions: Compactions;

  constructor(deps: ContextDeps, compactions: Compactions) {
    this.#deps = deps;
    this.#compactions = compactions;
  }

  /**
   * CompactSession: folds the oldest uncompacted messages into the rolling summary, key points and
   * open loops (when due, or when forced); a retry with the same request id gets the first result.
   */
  readonly compactSession: Impl['compactSession'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const { sessionId, policy } = checkCompactRequest(request, this.#deps.settings);
    const compactor = this.#compactions.compactor(policy.mode);
    const call = forwardedCallOptions(ctx);
    const session = await readSession(this.#deps.ingestion, sessionId, call);
    const { store } = this.#deps;
    const key = requestKeyOf(principal, methodKey(ContextService.method.compactSession), request.requestId);
    const body = { session: request.session, policy, force: request.force };
    if (key !== undefined) {
      const previous = await previousResult<RecordedCompaction>(store, key, body);
      if (previous !== undefined) return this.#present(principal, session, previous, call);
    }
    const recorded = await this.#compactions.run({
      principal,
      session,
      policy,
      compactor,
      force: request.force,
      call,
      commit: (write) => idempotent(store, key, body, write).then((r) => r.result),
      replay: () =>
        key === undefined ? Promise.resolve(undefined) : previousResult<RecordedCompaction>(store, key, body),
    });
    return this.#present(principal, session, recorded, call);
  };

  /** The recorded result with the session's state and tail as they are now. */
  async #present(principal: Principal, session: Session, recorded: RecordedCompaction, call: CallOptions) {
    const sessionId = session.name.slice('sessions/'.length);
    const state = await this.#deps.states.get(principal.tenantId, sessionId);
    const fresh = await readSession(this.#deps.ingestion, sessionId, call);
    const tail = await readTail(this.#deps.ingestion, fresh, state.compactedThroughSequence, call, 0);
    return compactionResponse(recorded, state, tail);
  }
}
