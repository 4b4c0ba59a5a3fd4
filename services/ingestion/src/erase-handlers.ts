import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { IngestionService } from '@engram/contracts/ingestion';
import { checkEraseRequest, methodKey } from '@engram/resources';
import { isEngramError, requirePrincipal, requireRole, type Logger } from '@engram/runtime';
import {
  DocumentRepository,
  ForgetReceiptRepository,
  SessionRepository,
  forgetPayload,
  idempotent,
  inTransaction,
  previousResult,
  purgeRequestIds,
  requestKeyOf,
  type Store,
} from '@engram/store';

type Impl = ServiceImpl<typeof IngestionService>;

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

/** A batch that loses a race with an append (ETAG_MISMATCH) is retried this many times. */
const RACE_RETRIES = 20;

function response(counts: EraseCounts) {
  return {
    documents: BigInt(counts.documents),
    chunks: BigInt(counts.chunks),
    sessions: BigInt(counts.sessions),
    messages: BigInt(counts.messages),
    memCells: BigInt(counts.memCells),
  };
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
 * Runs one batch after another until a batch finds nothing left (`batch` returns false). Batches
 * commit one by one: a call that stops half-way has erased part, and a new call continues from
 * what is left. The call's cancellation (deadline, client gone) is thrown between batches.
 */
async function inBatches(ctx: HandlerContext, batch: () => Promise<boolean>): Promise<void> {
  for (;;) {
    if (ctx.signal.aborted) throw ctx.signal.reason as Error;
    if (!(await batch())) return;
  }
}

/**
 * erasure: `EraseSubject`, on behalf of governance `ForgetUser`. Hard-deletes the subject's
 * documents (every scope and state) with their chunks, and sessions with their messages and
 * MemCells, created at or before the cutoff, in batches of one transaction each, with outbox
 * DELETE rows tagged with the receipt (the indexer removes the chunk and round points; governance
 * counts them). A running ingestion of a deleted document fails with NOT_FOUND at its next write;
 * a MemCell not yet handed off is simply gone. The request ids the subject used with ingestion
 * are forgotten too: their results name erased resources. Only under a PENDING forget receipt of
 * the tenant for that subject (FAILED_PRECONDITION `FORGET_RECEIPT_NOT_PENDING` otherwise).
 */
export class EraseHandlers implements Pick<Impl, 'eraseSubject'> {
  readonly #deps: EraseDeps;
  readonly #documents: DocumentRepository;
  readonly #sessions: SessionRepository;
  readonly #receipts: ForgetReceiptRepository;

  constructor(deps: EraseDeps) {
    this.#deps = deps;
    this.#documents = new DocumentRepository(deps.store);
    this.#sessions = new SessionRepository(deps.store);
    this.#receipts = new ForgetReceiptRepository(deps.store);
  }

  readonly eraseSubject: Impl['eraseSubject'] = async (request, ctx) => {
    const { store, logger } = this.#deps;
    const principal = requirePrincipal(ctx.values);
    requireRole(principal, 'service');
    const { receiptId, cutoff } = checkEraseRequest(request);
    const { tenantId } = principal;
    const subject = request.subject;
    // Service power alone does not name whom to erase: a live receipt of ForgetUser must.
    await this.#receipts.requirePending(tenantId, receiptId, subject);
    const key = requestKeyOf(principal, methodKey(IngestionService.method.eraseSubject), request.requestId);
    const body = { subject, forgetReceipt: request.forgetReceipt, cutoff };
    if (key !== undefined) {
      const previous = await previousResult<EraseCounts>(store, key, body);
      if (previous !== undefined) return response(previous);
    }
    const counts = await this.#erase(ctx, tenantId, subject, {
      createdAtOrBefore: cutoff,
      payload: forgetPayload(receiptId),
    });
    if (ctx.signal.aborted) throw ctx.signal.reason as Error;
    const { result } = await idempotent(store, key, body, async (trx) => {
      await purgeRequestIds(trx, {
        tenantId,
        subject,
        methodPrefix: `${IngestionService.typeName}/`,
        createdAtOrBefore: cutoff,
      });
      return counts;
    });
    // For audit: the receipt and what went, never the subject's content.
    logger.info(
      { forgetReceipt: request.forgetReceipt, caller: principal.subject, ...result },
      'erased a subject’s documents and conversations',
    );
    return response(result);
  };

  /** The subject's documents, then its sessions, batch by batch. */
  async #erase(
    ctx: HandlerContext,
    tenantId: string,
    subject: string,
    options: { readonly createdAtOrBefore: number; readonly payload: ReturnType<typeof forgetPayload> },
  ): Promise<EraseCounts> {
    const { store, documentBatch = 20, sessionBatch = 10 } = this.#deps;
    const counts: EraseCounts = { documents: 0, chunks: 0, sessions: 0, messages: 0, memCells: 0 };
    await inBatches(ctx, async () => {
      const batch = await inTransaction(store, (trx) =>
        this.#documents.purgeOwnerBatch(trx, tenantId, subject, { ...options, limit: documentBatch }),
      );
      counts.documents += batch.documents;
      counts.chunks += batch.chunks;
      return batch.documents > 0;
    });
    await inBatches(ctx, async () => {
      const batch = await retryRaces(() =>
        inTransaction(store, (trx) =>
          this.#sessions.purgeOwnerBatch(trx, tenantId, subject, { ...options, limit: sessionBatch }),
        ),
      );
      counts.sessions += batch.sessions;
      counts.messages += batch.messages;
      counts.memCells += batch.memCells;
      return batch.sessions > 0;
    });
    return counts;
  }
}
