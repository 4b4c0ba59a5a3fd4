import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { ContextService } from '@engram/contracts/context';
import { errors, requirePrincipal, requireRole, type Logger } from '@engram/runtime';
import { chatMethodOf } from './chat-replays.js';
import {
  checkRequestId,
  idempotent,
  inTransaction,
  previousResult,
  purgeRequestIds,
  requestKeyOf,
  type Store,
} from '@engram/store';

/** What context's erasure is built from. */
export interface EraseDeps {
  readonly logger: Logger;
  readonly store: Store;
  /** Session states per transaction. Default 200. */
  readonly batchSize?: number;
}

const SERVICE = 'engram.context.v1.ContextService';
const RECEIPT_NAME = /^forgetReceipts\/[0-9A-HJKMNP-TV-Z]{26}$/;

/** Validates an erasure request; returns the cutoff (epoch ms). */
function checkRequest(request: {
  readonly subject: string;
  readonly forgetReceipt: string;
  readonly cutoffTime?: Timestamp | undefined;
  readonly requestId: string;
}): number {
  if (request.subject === '') throw errors.fieldRequired('subject');
  if (Array.from(request.subject).length > 256)
    throw errors.fieldInvalid('subject', 'at most 256 characters');
  if (request.forgetReceipt === '') throw errors.fieldRequired('forget_receipt');
  if (!RECEIPT_NAME.test(request.forgetReceipt)) {
    throw errors.invalidArgument(
      'NAME_INVALID',
      'forget_receipt must look like forgetReceipts/{forget_receipt}',
      { field: 'forget_receipt', pattern: 'forgetReceipts/{forget_receipt}' },
    );
  }
  if (request.cutoffTime === undefined) throw errors.fieldRequired('cutoff_time');
  const cutoff = timestampDate(request.cutoffTime).getTime();
  const { nanos } = request.cutoffTime;
  if (!Number.isFinite(cutoff) || nanos < 0 || nanos > 999_999_999) {
    throw errors.fieldInvalid('cutoff_time', 'not a valid timestamp');
  }
  checkRequestId(request.requestId);
  return cutoff;
}

function checkCancelled(ctx: HandlerContext): void {
  if (ctx.signal.aborted) throw ctx.signal.reason as Error;
}

/**
 * `EraseSubject` of `engram.context.v1.ContextService`: on behalf of governance `ForgetUser`,
 * hard-deletes the state (summary, key points, open loops, compaction mark) of every session the
 * subject owns that was created at or before the cutoff, in batches of one transaction each, and
 * forgets the request ids the subject used with context. (States also go with their session when
 * ingestion erases it; governance asks context first, so the count is context's own.) The
 * subject's recorded `Chat` replays go with the request ids (their method starts with the
 * service's name, see chat-replays.ts).
 */
export function createEraseHandlers(deps: EraseDeps): Partial<ServiceImpl<typeof ContextService>> {
  const batchSize = deps.batchSize ?? 200;
  return {
    async eraseSubject(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      requireRole(principal, 'service');
      const cutoff = checkRequest(request);
      const { tenantId } = principal;
      const subject = request.subject;
      const key = requestKeyOf(principal, `${SERVICE}/EraseSubject`, request.requestId);
      const body = { subject, forgetReceipt: request.forgetReceipt, cutoff };
      if (key !== undefined) {
        const previous = await previousResult<{ sessionStates: number }>(deps.store, key, body);
        if (previous !== undefined) return { sessionStates: BigInt(previous.sessionStates) };
      }
      let sessionStates = 0;
      for (;;) {
        checkCancelled(ctx);
        const deleted = await inTransaction(deps.store, async (trx) => {
          // The sessions belong to ingestion; context reads which are the subject's.
          const states = await trx
            .selectFrom('session_states')
            .innerJoin('sessions', 'sessions.id', 'session_states.session_id')
            .select('session_states.session_id')
            .where('sessions.tenant_id', '=', tenantId)
            .where('sessions.owner_id', '=', subject)
            .where('sessions.created_at', '<=', cutoff)
            .orderBy('session_states.session_id')
            .limit(batchSize)
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
        if (deleted === 0) break;
      }
      // The recorded Chat replays of those sessions, whenever they were recorded.
      for (let after = ''; ;) {
        checkCancelled(ctx);
        const sessions = await deps.store.db
          .selectFrom('sessions')
          .select('id')
          .where('tenant_id', '=', tenantId)
          .where('owner_id', '=', subject)
          .where('created_at', '<=', cutoff)
          .where('id', '>', after)
          .orderBy('id')
          .limit(batchSize)
          .execute();
        if (sessions.length === 0) break;
        await deps.store.db
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
      checkCancelled(ctx);
      const { result } = await idempotent(deps.store, key, body, async (trx) => {
        await purgeRequestIds(trx, {
          tenantId,
          subject,
          methodPrefix: `${SERVICE}/`,
          createdAtOrBefore: cutoff,
        });
        return { sessionStates };
      });
      deps.logger.info(
        {
          forgetReceipt: request.forgetReceipt,
          caller: principal.subject,
          sessionStates: result.sessionStates,
        },
        'erased a subject’s session states',
      );
      return { sessionStates: BigInt(result.sessionStates) };
    },
  };
}
