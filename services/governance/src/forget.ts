import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import type { ContextService } from '@engram/contracts/context';
import type { IngestionService } from '@engram/contracts/ingestion';
import {
  Worker,
  errorInfoOf,
  isEngramError,
  type Logger,
  type PassOutcome,
  type ServiceCredentials,
} from '@engram/runtime';
import {
  ForgetReceiptRepository,
  MemoryRepository,
  addForgetCounts,
  eraseLateExtractions,
  forgetPayload,
  forgetReceiptName,
  inTransaction,
  type ForgetCountsRecord,
  type ForgetIndexProgress,
  type ForgetReceiptRecord,
  type Store,
} from '@engram/store';

/** Retry policy and pacing of the forget worker. */
export interface ForgetWorkerSettings {
  /** Backoff after the n-th failure of a step: base · 2^(n-1), capped, with ±20 % jitter, ms. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Deadline of one EraseSubject call, ms. */
  readonly callTimeoutMs: number;
  /** How long a taken receipt is left alone by other workers (and resumed after a crash), ms. */
  readonly leaseMs: number;
  /** How often the worker looks for due receipts when nothing wakes it, ms. */
  readonly pollMs: number;
  /** How often a receipt waiting for the indexer checks the outbox, ms. */
  readonly indexPollMs: number;
  /** Receipts worked on per sweep. */
  readonly batchSize: number;
}

export const DEFAULT_FORGET_WORKER_SETTINGS: ForgetWorkerSettings = {
  baseDelayMs: 2_000,
  maxDelayMs: 5 * 60_000,
  callTimeoutMs: 120_000,
  leaseMs: 150_000,
  pollMs: 5_000,
  indexPollMs: 500,
  batchSize: 20,
};

/** What the forget worker is built from. */
export interface ForgetWorkerDeps {
  readonly store: Store;
  readonly logger: Logger;
  /** Ingestion and context, called as the `service` principal of the receipt's tenant. */
  readonly ingestion: Client<typeof IngestionService>;
  readonly context: Client<typeof ContextService>;
  readonly credentials: ServiceCredentials;
  readonly settings?: Partial<ForgetWorkerSettings>;
}

/** The reason of a failure that carries no `ErrorInfo` (transport errors, the framework's own). */
const FRAMEWORK_REASONS: Partial<Record<Code, string>> = {
  [Code.Unavailable]: 'DEPENDENCY_UNAVAILABLE',
  [Code.DeadlineExceeded]: 'DEADLINE_EXCEEDED',
  [Code.Unimplemented]: 'NOT_IMPLEMENTED',
  [Code.Canceled]: 'CANCELLED',
  [Code.Unauthenticated]: 'TOKEN_INVALID',
};

/** The backoff before attempt `failures + 1` of a step, ms. */
export function forgetBackoffMs(
  failures: number,
  settings: ForgetWorkerSettings,
  random = Math.random,
): number {
  const raw = Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** Math.max(0, failures - 1));
  return Math.round(raw * (0.8 + 0.4 * random()));
}

/**
 * Completes forget receipts: the durable part of `ForgetUser`. The state lives in the receipt row
 * (`step`, `attempts`, `next_attempt_at`, `last_error`), so nothing is lost when a call fails or
 * the process stops; a receipt is taken with a compare-and-set lease, so one replica works on it,
 * and one left by a stopped process is resumed when its lease runs out (at start, PENDING
 * receipts that are due are resumed at once). Steps, in order:
 *
 * 1. CONTEXT: context `EraseSubject` (session states; before ingestion, whose session deletion
 *    would take the states along uncounted);
 * 2. INGESTION: ingestion `EraseSubject` (documents, chunks, sessions, messages, MemCells);
 * 3. SWEEP: extractions of the subject's erased conversations that started after the cutoff
 *    (they raced the erasure) are erased with their memories;
 * 4. INDEX: waits until retrieval's indexer has processed every outbox row the erasure wrote
 *    (tagged with the receipt) and every other row of the tenant up to the mark (an indexer may
 *    hold an UPSERT it planned before the erasure and write its point after the DELETE);
 * 5. PURGE: enqueues a SUBJECT row (the indexer deletes every point whose owner is the subject)
 *    and waits for it, then COMPLETED with `vector_points` = the point deletions (decision 0030).
 *
 * Calls carry the request id `forget-{receipt}`, so a retried call after a lost answer returns the
 * first answer. Every failure is retried with exponential backoff (2 s · 2^(n−1), capped at 5 min)
 * for as long as it takes: the API promises the erasure, so a receipt never fails; its latest
 * failure is shown in `last_error`.
 */
export class ForgetWorker {
  /** The loop: a pass at start, when woken (ForgetUser) and when the next receipt is due. */
  readonly worker: Worker;
  readonly #receipts: ForgetReceiptRepository;
  readonly #memories: MemoryRepository;

  constructor(private readonly deps: ForgetWorkerDeps) {
    this.#receipts = new ForgetReceiptRepository(deps.store);
    this.#memories = new MemoryRepository(deps.store);
    const { pollMs } = this.settings;
    this.worker = new Worker({
      name: 'forget',
      logger: deps.logger,
      pass: (signal) => this.#pass(signal),
      idleMs: pollMs,
      // A failed pass (the database, not a step: steps keep their own backoff) is retried at the
      // next poll.
      backoff: { minMs: pollMs, maxMs: pollMs },
    });
  }

  get settings(): ForgetWorkerSettings {
    return { ...DEFAULT_FORGET_WORKER_SETTINGS, ...this.deps.settings };
  }

  /** One pass: the due receipts, then a wait until the next is due (at most `pollMs`). */
  async #pass(signal: AbortSignal): Promise<PassOutcome> {
    await this.runOnce(Date.now(), signal);
    // Until the next receipt is due (a backoff, an index poll, a lease).
    const nextDue = await this.#receipts.nextDueAt();
    return nextDue === undefined ? {} : { nextInMs: Math.max(10, nextDue - Date.now()) };
  }

  /**
   * Works once on every due receipt (up to the batch size). Returns how many it took. `signal`
   * (the worker's: aborted when it stops) cancels the calls in flight; their receipts are resumed
   * by the next start.
   */
  async runOnce(now = Date.now(), signal: AbortSignal = this.worker.signal): Promise<number> {
    const due = await this.#receipts.due(now, this.settings.batchSize);
    let taken = 0;
    for (const receipt of due) {
      if (signal.aborted) break;
      const mine = await this.#receipts.take(receipt, this.settings.leaseMs);
      if (mine === undefined) continue;
      taken += 1;
      await this.#work(mine, signal);
    }
    return taken;
  }

  /** Runs the receipt's steps until it completes, waits for the indexer, or a step fails. */
  async #work(start: ForgetReceiptRecord, signal: AbortSignal): Promise<void> {
    const name = forgetReceiptName(start.id);
    const log = this.deps.logger.child({ forgetReceipt: name });
    let receipt: ForgetReceiptRecord | undefined = start;
    while (receipt?.state === 'PENDING') {
      const current: ForgetReceiptRecord = receipt;
      try {
        receipt = await this.#step(current, signal);
      } catch (error) {
        if (signal.aborted) return;
        const failure = describeFailure(error);
        const failures = current.attempts + 1;
        const retryAt = Date.now() + forgetBackoffMs(failures, this.settings);
        await this.#receipts.update(current, {
          attempts: failures,
          nextAttemptAt: retryAt,
          lastError: { reason: failure.reason, message: `${current.step}: ${failure.message}` },
        });
        log.warn(
          { step: current.step, attempt: failures, reason: failure.reason, retryInMs: retryAt - Date.now() },
          'a forget step failed; will retry',
        );
        return;
      }
      if (receipt === current) return;
    }
    if (receipt?.state === 'COMPLETED') log.info({ ...receipt.counts }, 'forget receipt completed');
  }

  /**
   * Runs the receipt's current step and records it. Returns the updated receipt; the same record
   * when it must wait (for the indexer); undefined when another worker changed it meanwhile.
   */
  async #step(r: ForgetReceiptRecord, signal: AbortSignal): Promise<ForgetReceiptRecord | undefined> {
    const now = Date.now();
    const lease = now + this.settings.leaseMs;
    const advance = (step: ForgetReceiptRecord['step'], counts: Partial<ForgetCountsRecord>, extra = {}) =>
      this.#receipts.update(r, {
        step,
        counts: addForgetCounts(r.counts, counts),
        attempts: 0,
        lastError: null,
        nextAttemptAt: lease,
        ...extra,
      });
    const request = {
      subject: r.subject,
      forgetReceipt: forgetReceiptName(r.id),
      cutoffTime: timestampFromMs(r.createdAt),
      requestId: `forget-${r.id}`,
    };
    switch (r.step) {
      case 'CONTEXT': {
        const erased = await this.deps.context.eraseSubject(
          request,
          await this.#callOptions(r.tenantId, signal),
        );
        return advance('INGESTION', { sessionStates: Number(erased.sessionStates) });
      }
      case 'INGESTION': {
        const erased = await this.deps.ingestion.eraseSubject(
          request,
          await this.#callOptions(r.tenantId, signal),
        );
        return advance('SWEEP', {
          documents: Number(erased.documents),
          chunks: Number(erased.chunks),
          sessions: Number(erased.sessions),
          messages: Number(erased.messages),
          memCells: Number(erased.memCells),
        });
      }
      case 'SWEEP': {
        return inTransaction(this.deps.store, async (trx) => {
          const swept = await eraseLateExtractions(
            trx,
            this.#memories,
            {
              tenantId: r.tenantId,
              subject: r.subject,
              cutoff: r.createdAt,
              erasedBy: forgetReceiptName(r.id),
              payload: forgetPayload(r.id),
            },
            now,
          );
          // Every deleting step has committed (this one with it): the erasure's outbox rows are
          // at most the newest row now.
          const outboxToId = await this.#receipts.outboxMark(trx);
          const updated = await this.#receipts.update(
            r,
            {
              step: 'INDEX',
              counts: addForgetCounts(r.counts, swept),
              outboxToId,
              attempts: 0,
              lastError: null,
              nextAttemptAt: lease,
            },
            now,
            trx,
          );
          return updated;
        });
      }
      case 'INDEX': {
        const progress = await this.#receipts.indexProgress(
          r,
          r.outboxToId ?? (await this.#receipts.outboxMark()),
        );
        if (progress.pending > 0 || progress.unsettled > 0) return this.#waitForIndexer(r, progress, now);
        // Every row that could still write one of the subject's points is done: purge the rest.
        return inTransaction(this.deps.store, async (trx) =>
          this.#receipts.update(
            r,
            {
              step: 'PURGE',
              counts: { ...r.counts, vectorPoints: progress.pointDeletions },
              outboxToId: await this.#receipts.enqueueSubjectPurge(trx, r, now),
              attempts: 0,
              lastError: null,
              nextAttemptAt: lease,
            },
            now,
            trx,
          ),
        );
      }
      case 'PURGE': {
        const progress = await this.#receipts.indexProgress(
          r,
          r.outboxToId ?? (await this.#receipts.outboxMark()),
        );
        if (progress.pending > 0) return this.#waitForIndexer(r, progress, now);
        return this.#receipts.update(r, {
          state: 'COMPLETED',
          step: 'DONE',
          counts: { ...r.counts, vectorPoints: progress.pointDeletions },
          attempts: 0,
          lastError: null,
          nextAttemptAt: null,
          completedAt: now,
        });
      }
      case 'DONE':
        return this.#receipts.update(r, { state: 'COMPLETED', nextAttemptAt: null, completedAt: now });
    }
  }

  /**
   * Records how far the indexer is and comes back after `indexPollMs` (not a failure: the worker's
   * timer does). Returns the same record, or undefined when another worker changed it meanwhile.
   */
  async #waitForIndexer(
    r: ForgetReceiptRecord,
    progress: ForgetIndexProgress,
    now: number,
  ): Promise<ForgetReceiptRecord | undefined> {
    const waited = await this.#receipts.update(r, {
      counts: { ...r.counts, vectorPoints: progress.pointDeletionsDone },
      nextAttemptAt: now + this.settings.indexPollMs,
      lastError:
        progress.parked > 0
          ? {
              reason: 'DEPENDENCY_UNAVAILABLE',
              message: `${r.step}: ${progress.parked} point deletions are parked in the outbox after repeated failures of the indexer; they complete once requeued`,
            }
          : null,
    });
    return waited === undefined ? undefined : r;
  }

  async #callOptions(tenantId: string, signal: AbortSignal) {
    return this.deps.credentials.callOptions(tenantId, { timeoutMs: this.settings.callTimeoutMs, signal });
  }
}

/** The reason and a content-free description of a failed step. */
function describeFailure(error: unknown): { reason: string; message: string } {
  if (isEngramError(error)) return { reason: error.reason, message: error.message.slice(0, 1_000) };
  const connectError = ConnectError.from(error);
  const info = errorInfoOf(connectError);
  return {
    reason: info?.reason ?? FRAMEWORK_REASONS[connectError.code] ?? 'INTERNAL',
    message: `${Code[connectError.code]}: ${connectError.rawMessage}`.slice(0, 1_000),
  };
}
