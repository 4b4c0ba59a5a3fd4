import { errors, isEngramError, type Principal } from '@engram/runtime';
import { SessionRepository, type Executor, type MemCellRecord, type SessionRecord } from '@engram/store';
import type { IngestionDeps } from './deps.js';
import { ruleBoundaries } from './domain/boundaries.js';
import { sessionMessage } from './sessions-api.js';

/**
 * Sessions as the session, message and MemCell handlers use them (blueprint §3 flows 1–2).
 * Sessions are SELF-scoped: another owner's session does not exist.
 */
export class SessionAccess {
  readonly repository: SessionRepository;
  readonly #deps: IngestionDeps;

  constructor(deps: IngestionDeps) {
    this.#deps = deps;
    this.repository = new SessionRepository(deps.store);
  }

  /** A stored session as the API's `Session`, with its open-tail and MemCell counters. */
  async view(session: SessionRecord, executor?: Executor) {
    return sessionMessage(session, await this.repository.counts(session.tenantId, session.id, executor));
  }

  /** The caller's own session; NOT_FOUND otherwise. */
  owned(principal: Principal, id: string, executor?: Executor): Promise<SessionRecord> {
    return this.repository.getOwned(principal.tenantId, principal.subject, id, executor);
  }

  /** Reads: the owner, or a `service` principal of the tenant (internal callers read everything). */
  async readable(principal: Principal, id: string): Promise<SessionRecord> {
    if (!principal.roles.includes('service')) return this.owned(principal, id);
    const session = await this.repository.get(principal.tenantId, id);
    if (session === undefined) throw errors.notFound(`sessions/${id}`);
    return session;
  }

  /**
   * Checks that the session of a message or MemCell is readable. A session that is not answers
   * NOT_FOUND naming the child (`name`); any other failure (the database unreachable) propagates.
   */
  async checkReadableParent(principal: Principal, sessionId: string, name: string): Promise<void> {
    try {
      await this.readable(principal, sessionId);
    } catch (error) {
      if (isEngramError(error) && error.reason === 'RESOURCE_NOT_FOUND') throw errors.notFound(name);
      throw error;
    }
  }

  /**
   * Closes what the rules find in the open tail (in the caller's transaction), returning the new
   * cells in order. `session` is the session as read in that transaction: the rules read only its
   * identity and time zone, which the transaction's writes do not change.
   */
  async applyRules(trx: Executor, session: SessionRecord): Promise<MemCellRecord[]> {
    const { repository } = this;
    const tail = await repository.openTail(session.tenantId, session.id, trx);
    const closed: MemCellRecord[] = [];
    for (const boundary of ruleBoundaries(tail, session.timeZone, this.#deps.settings.boundaries)) {
      closed.push(
        await repository.closeMemCell(trx, session.tenantId, session.id, {
          throughSequence: boundary.throughSequence,
          reason: boundary.reason,
        }),
      );
    }
    return closed;
  }

  /** Closes the whole open tail (FLUSH, SESSION_CLOSED); undefined when it is empty. */
  async closeTail(
    trx: Executor,
    session: SessionRecord,
    reason: 'FLUSH' | 'SESSION_CLOSED',
    note = '',
  ): Promise<MemCellRecord | undefined> {
    if (session.lastSequence < session.openFromSequence) return undefined;
    return this.repository.closeMemCell(trx, session.tenantId, session.id, {
      throughSequence: session.lastSequence,
      reason,
      note,
    });
  }

  /** After a commit that closed `count` cells: the hand-off takes them up now. */
  cellsClosed(count: number): void {
    if (count > 0) this.#deps.handOff.wake();
  }
}
