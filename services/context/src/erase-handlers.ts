import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { ContextService } from '@engram/contracts/context';
import { checkEraseRequest, methodKey } from '@engram/resources';
import { requirePrincipal, requireRole } from '@engram/runtime';
import {
  ForgetReceiptRepository,
  idempotent,
  inTransaction,
  previousResult,
  purgeRequestIds,
  requestKeyOf,
} from '@engram/store';
import { chatMethodOf } from './chat-replays.js';
import type { ContextDeps } from './deps.js';

type Impl = ServiceImpl<typeof ContextService>;

/** Whose sessions an erasure covers: the subject's in the tenant, created at or before the cutoff. */
interface Erasure {
  readonly tenantId: string;
  readonly subject: string;
  readonly cutoff: number;
}

function checkCancelled(ctx: HandlerContext): void {
  if (ctx.signal.aborted) throw ctx.signal.reason as Error;
}

/**
 * `EraseSubject`: on behalf of governance `ForgetUser`, hard-deletes the state (summary, key
 * points, open loops, compaction mark) of every session the subject owns that was created at or
 * before the cutoff, in batches of one transaction each, and forgets the request ids the subject
 * used with context. (States also go with their session when ingestion erases it; governance asks
 * context first, so the count is context's own.) The subject's recorded `Chat` replays go with the
 * request ids (their method starts with the service's name, see chat-replays.ts).
 */
export class EraseHandlers implements Pick<Impl, 'eraseSubject'> {
  readonly #deps: Pick<ContextDeps, 'logger' | 'store'>;
  readonly #batchSize: number;
  readonly #receipts: ForgetReceiptRepository;

  /** `batchSize`: session states per transaction. */
  constructor(deps: Pick<ContextDeps, 'logger' | 'store'>, batchSize = 200) {
    this.#deps = deps;
    this.#batchSize = batchSize;
    this.#receipts = new ForgetReceiptRepository(deps.store);
  }

  /** EraseSubject (`service` role, under a PENDING forget receipt for the subject). */
  readonly eraseSubject: Impl['eraseSubject'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    requireRole(principal, 'service');
    const { receiptId, cutoff } = checkEraseRequest(request);
    const erasure: Erasure = { tenantId: principal.tenantId, subject: request.subject, cutoff };
    // Service power alone does not name whom to erase: a live receipt of ForgetUser must.
    await this.#receipts.requirePending(erasure.tenantId, receiptId, erasure.subject);
    const key = requestKeyOf(principal, methodKey(ContextService.method.eraseSubject), request.requestId);
    const body = { subject: erasure.subject, forgetReceipt: request.forgetReceipt, cutoff };
    const { store } = this.#deps;
    if (key !== undefined) {
      const previous = await previousResult<{ sessionStates: number }>(store, key, body);
      if (previous !== undefined) return { sessionStates: BigInt(previous.sessionStates) };
    }
    const sessionStates = await this.#deleteStates(erasure, ctx);
    await this.#deleteChatReplays(erasure, ctx);
    checkCancelled(ctx);
    const { result } = await idempotent(store, key, body, async (trx) => {
      await purgeRequestIds(trx, {
        tenantId: erasure.tenantId,
        subject: erasure.subject,
        methodPrefix: `${ContextService.typeName}/`,
        createdAtOrBefore: cutoff,
      });
      return { sessionStates };
    });
    this.#deps.logger.info(
      {
        forgetReceipt: request.forgetReceipt,
        caller: principal.subject,
        sessionStates: result.sessionStates,
      },
      'erased a subject’s session states',
    );
    return { sessionStates: BigInt(result.sessionStates) };
  };

  /** Deletes the states of the subject's sessions, a batch per transaction; returns how many. */
  async #deleteStates({ tenantId, subject, cutoff }: Erasure, ctx: HandlerContext): Promise<number> {
    let sessionStates = 0;
    for (;;) {
      checkCancelled(ctx);
      const deleted = await inTransaction(this.#deps.store, async (trx) => {
        // The sessions belong to ingestion; context reads which are the subject's.
        const states = await trx
          .selectFrom('session_states')
          .innerJoin('sessions', 'sessions.id', 'session_states.session_id')
          .select('session_states.session_id')
          .where('sessions.tenant_id', '=', tenantId)
          .where('sessions.owner_id', '=', subject)
          .where('sessions.created_at', '<=', cutoff)
          .orderBy('session_states.session_id')
          .limit(this.#batchSize)
          .execute();
        if (states.length === 0) return 0;
        const result = await trx
          .deleteFrom('session_states')
          .where('tenant_id', '=', tenantId)
          .where(
            'session_id',
            'in',
            states.map((s) => s.session_id),
          )
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      });
      sessionStates += deleted;
      if (deleted === 0) return sessionStates;
    }
  }

  /** Deletes the recorded Chat replays of the subject's sessions, whenever they were recorded. */
  async #deleteChatReplays({ tenantId, subject, cutoff }: Erasure, ctx: HandlerContext): Promise<void> {
    const { db } = this.#deps.store;
    for (let after = ''; ;) {
      checkCancelled(ctx);
      const sessions = await db
        .selectFrom('sessions')
        .select('id')
        .where('tenant_id', '=', tenantId)
        .where('owner_id', '=', subject)
        .where('created_at', '<=', cutoff)
        .where('id', '>', after)
        .orderBy('id')
        .limit(this.#batchSize)
        .execute();
      if (sessions.length === 0) return;
      await db
        .deleteFrom('request_ids')
        .where('tenant_id', '=', tenantId)
        .where(
          'method',
          'in',
          sessions.map((row) => chatMethodOf(row.id)),
        )
        .execute();
      after = sessions[sessions.length - 1]?.id ?? after;
    }
  }
}
