import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { IngestionService } from '@engram/contracts/ingestion';
import { errors, isEngramError, requirePrincipal, requireRole, type Logger } from '@engram/runtime';
import {
  DocumentRepository,
  SessionRepository,
  checkRequestId,
  forgetPayload,
  idempotent,
  inTransaction,
  previousResult,
  purgeRequestIds,
  requestKeyOf,
  type Store,
} from '@engram/store';

/** What ingestion's erasure is built from. */
export interface EraseDeps {
  readonly logger: Logger;
  readonly store: Store;
  /** Documents per transaction. Default 20. */
  readonly documentBatch?: number;
  /** Sessions per transaction. Default 10. */
  readonly sessionBatch?: number;
}

/** What one EraseSubject call deleted (stored under its request id). */
interface EraseCounts {
  documents: number;
  chunks: number;
  sessions: number;
  messages: number;
  memCells: number;
}

const SERVICE = 'engram.ingestion.v1.IngestionService';
const RECEIPT_NAME = /^forgetReceipts\/([0-9A-HJKMNP-TV-Z]{26})$/;
/** A batch that loses a race with an append (ETAG_MISMATCH) is retried this many times. */
const RACE_RETRIES = 20;

/** Validates an erasure request; returns the receipt id and the cutoff (epoch ms). */
export function checkEraseRequest(request: {
  readonly subject: string;
  readonly forgetReceipt: string;
  readonly cutoffTime?: Timestamp | undefined;
  readonly requestId: string;
}): { receiptId: string; cutoff: number } {
  if (request.subject === '') throw errors.fieldRequired('subject');
  if (Array.from(request.subject).length > 256)
    throw errors.fieldInvalid('subject', 'at most 256 characters');
  if (request.forgetReceipt === '') throw errors.fieldRequired('forget_receipt');
  const receiptId = RECEIPT_NAME.exec(request.forgetReceipt)?.[1];
  if (receiptId === undefined) {
    throw errors.invalidArgument(
      'NAME_INVALID',
      'forget_receipt must look like forgetReceipts/{forget_receipt}',
      {
        field: 'forget_receipt',
        pattern: 'forgetReceipts/{forget_receipt}',
      },
    );
  }
  if (request.cutoffTime === undefined) throw errors.fieldRequired('cutoff_time');
  const cutoff = timestampDate(request.cutoffTime).getTime();
  const { nanos } = request.cutoffTime;
  if (!Number.isFinite(cutoff) || nanos < 0 || nanos > 999_999_999) {
    throw errors.fieldInvalid('cutoff_time', 'not a valid timestamp');
  }
  checkRequestId(request.requestId);
  return { receiptId, cutoff };
}

function response(counts: EraseCounts) {
  return {
    documents: BigInt(counts.documents),
    chunks: BigInt(counts.chunks),
    sessions: BigInt(counts.sessions),
    messages: BigInt(counts.messages),
    memCells: BigInt(counts.memCells),
  };
}

/** Throws the call's cancellation (deadline, client gone) between batches. */
function checkCancelled(ctx: HandlerContext): void {
  if (ctx.signal.aborted) throw ctx.signal.reason as Error;
}

/** Runs `work` again while it loses races with concurrent writers (ABORTED `ETAG_MISMATCH`). */
async function retryRaces<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!(isEngramError(error) && error.reason === 'ETAG_MISMATCH') || attempt >= RACE_RETRIES) throw error;
    }
  }
}

/**
 * `EraseSubject` of `engram.ingestion.v1.IngestionService`: on behalf of governance `ForgetUser`,
 * hard-deletes the subject's documents (every scope and state) with their chunks, and sessions
 * with their messages and MemCells, created at or before the cutoff, in batches of one
 * transaction each, with outbox DELETE rows tagged with the receipt (the indexer removes the
 * chunk and round points; governance counts them). A running ingestion of a deleted document
 * fails with NOT_FOUND at its next write; a MemCell not yet handed off is simply gone. The
 * request ids the subject used with ingestion are forgotten too: their results name erased
 * resources.
 */
export function createEraseHandlers(deps: EraseDeps): Partial<ServiceImpl<typeof IngestionService>> {
  const documents = new DocumentRepository(deps.store);
  const sessions = new SessionRepository(deps.store);
  const documentBatch = deps.documentBatch ?? 20;
  const sessionBatch = deps.sessionBatch ?? 10;

  return {
    async eraseSubject(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      requireRole(principal, 'service');
      const { receiptId, cutoff } = checkEraseRequest(request);
      const { tenantId } = principal;
      const subject = request.subject;
      const key = requestKeyOf(principal, `${SERVICE}/EraseSubject`, request.requestId);
      const body = { subject, forgetReceipt: request.forgetReceipt, cutoff };
      if (key !== undefined) {
        const previous = await previousResult<EraseCounts>(deps.store, key, body);
        if (previous !== undefined) return response(previous);
      }
      const payload = forgetPayload(receiptId);
      const counts: EraseCounts = { documents: 0, chunks: 0, sessions: 0, messages: 0, memCells: 0 };
      // Batches commit one by one: a call that stops half-way has erased part, and a new call
      // continues from what is left.
      for (;;) {
        checkCancelled(ctx);
        const batch = await inTransaction(deps.store, (trx) =>
          documents.purgeOwnerBatch(trx, tenantId, subject, {
            createdAtOrBefore: cutoff,
            limit: documentBatch,
            payload,
          }),
        );
        counts.documents += batch.documents;
        counts.chunks += batch.chunks;
        if (batch.documents === 0) break;
      }
      for (;;) {
        checkCancelled(ctx);
        const batch = await retryRaces(() =>
          inTransaction(deps.store, (trx) =>
            sessions.purgeOwnerBatch(trx, tenantId, subject, {
              createdAtOrBefore: cutoff,
              limit: sessionBatch,
              payload,
            }),
          ),
        );
        counts.sessions += batch.sessions;
        counts.messages += batch.messages;
        counts.memCells += batch.memCells;
        if (batch.sessions === 0) break;
      }
      checkCancelled(ctx);
      const { result } = await idempotent(deps.store, key, body, async (trx) => {
        await purgeRequestIds(trx, {
          tenantId,
          subject,
          methodPrefix: `${SERVICE}/`,
          createdAtOrBefore: cutoff,
        });
        return counts;
      });
      // For audit: the receipt and what went, never the subject's content.
      deps.logger.info(
        { forgetReceipt: request.forgetReceipt, caller: principal.subject, ...result },
        'erased a subject’s documents and conversations',
      );
      return response(result);
    },
  };
}
