import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type Client, type ServiceImpl } from '@connectrpc/connect';
import type { ContextService } from '@engram/contracts/context';
import {
  ForgetReceiptState,
  type ForgetReceiptSchema,
  type GovernanceService,
} from '@engram/contracts/governance';
import type { IngestionService } from '@engram/contracts/ingestion';
import {
  errorInfoOf,
  errors,
  isEngramError,
  requirePrincipal,
  type Logger,
  type Principal,
  type ServiceCredentials,
  withoutTrace,
} from '@engram/runtime';
import {
  ExtractionJobRepository,
  ForgetReceiptRepository,
  MemoryRepository,
  ZERO_FORGET_COUNTS,
  addForgetCounts,
  checkRequestId,
  eraseLateExtractions,
  forgetPayload,
  forgetReceiptName,
  idempotent,
  inTransaction,
  purgeRequestIds,
  requestKeyOf,
  type Executor,
  type ForgetCountsRecord,
  type ForgetReceiptRecord,
  type ForgetReceiptState as StoredState,
  type Store,
} from '@engram/store';
import { errorReasonOf } from './jobs-api.js';

const SERVICE = 'engram.governance.v1.GovernanceService';
const FORGET_USER = `${SERVICE}/ForgetUser`;
const RECEIPT_NAME = /^forgetReceipts\/([0-9A-HJKMNP-TV-Z]{26})$/;
const MAX_SUBJECT_CHARS = 256;
const MAX_REASON_CHARS = 1_000;

/** What the forget handlers are built from. */
export interface ForgetDeps {
  readonly logger: Logger;
  readonly store: Store;
  /** Told when a receipt was created, so the erasure continues at once (absent: at its next poll). */
  readonly worker?: { wake(): void };
}

const STATES: Record<StoredState, ForgetReceiptState> = {
  PENDING: ForgetReceiptState.PENDING,
  COMPLETED: ForgetReceiptState.COMPLETED,
};
const STATE_NAMES: Partial<Record<ForgetReceiptState, StoredState>> = {
  [ForgetReceiptState.PENDING]: 'PENDING',
  [ForgetReceiptState.COMPLETED]: 'COMPLETED',
};

/** A stored receipt as the API's `ForgetReceipt`. */
export function receiptMessage(r: ForgetReceiptRecord): MessageInitShape<typeof ForgetReceiptSchema> {
  const c = r.counts;
  return {
    name: forgetReceiptName(r.id),
    subject: r.subject,
    requestedBy: r.requestedBy,
    reason: r.reason,
    requestId: r.requestId,
    state: STATES[r.state],
    counts: {
      memories: BigInt(c.memories),
      revisionsRedacted: BigInt(c.revisionsRedacted),
      revisionActorsRedacted: BigInt(c.revisionActorsRedacted),
      extractionJobs: BigInt(c.extractionJobs),
      documents: BigInt(c.documents),
      chunks: BigInt(c.chunks),
      sessions: BigInt(c.sessions),
      messages: BigInt(c.messages),
      memCells: BigInt(c.memCells),
      sessionStates: BigInt(c.sessionStates),
      vectorPoints: BigInt(c.vectorPoints),
    },
    ...(r.state === 'PENDING' && r.lastErrorReason !== ''
      ? { lastError: { reason: errorReasonOf(r.lastErrorReason), message: r.lastError } }
      : {}),
    createTime: timestampFromMs(r.createdAt),
    ...(r.completedAt !== undefined ? { completeTime: timestampFromMs(r.completedAt) } : {}),
  };
}

function parseReceiptName(name: string): string {
  if (name === '') throw errors.fieldRequired('name');
  const id = RECEIPT_NAME.exec(name)?.[1];
  if (id === undefined) {
    throw errors.invalidArgument('NAME_INVALID', 'name must look like forgetReceipts/{forget_receipt}', {
      field: 'name',
      pattern: 'forgetReceipts/{forget_receipt}',
    });
  }
  return id;
}

const isAdmin = (p: Principal) => p.roles.includes('admin');

/** Whether `principal` may see the receipt: its requester, its subject, or an administrator. */
function mayRead(principal: Principal, r: ForgetReceiptRecord): boolean {
  return isAdmin(principal) || r.subject === principal.subject || r.requestedBy === principal.subject;
}

/**
 * Erases governance's own content of `subject` created at or before `now`, for the receipt
 * `receipt`, in the caller's transaction: the subject's memories (every status and scope) are
 * hard-deleted with MEMORY DELETE outbox rows tagged with the receipt, their revisions reduced to
 * content-free audit records; the subject's extraction jobs are deleted; the subject as the actor
 * of other owners' revisions is replaced by the receipt's name; the request ids the subject used
 * with governance are forgotten (except ForgetUser's: a retry must find its receipt).
 */
async function eraseGovernanceContent(
  trx: Executor,
  repositories: { memories: MemoryRepository; jobs: ExtractionJobRepository },
  tenantId: string,
  subject: string,
  receiptId: string,
  now: number,
): Promise<Partial<ForgetCountsRecord>> {
  const erasedBy = forgetReceiptName(receiptId);
  const purged = await repositories.memories.purgeOwner(
    trx,
    tenantId,
    subject,
    { createdAtOrBefore: now, erasedBy, payload: forgetPayload(receiptId) },
    now,
  );
  // The jobs visible to this transaction were all created before `now`.
  const extractionJobs = await repositories.jobs.purgeOwner(trx, tenantId, subject);
  const revisionActorsRedacted = await repositories.memories.replaceRevisionActor(
    trx,
    tenantId,
    subject,
    erasedBy,
    now,
  );
  await purgeRequestIds(trx, {
    tenantId,
    subject,
    methodPrefix: `${SERVICE}/`,
    createdAtOrBefore: now,
    keepMethods: [FORGET_USER],
  });
  return {
    memories: purged.memories,
    revisionsRedacted: purged.revisionsRedacted,
    revisionActorsRedacted,
    extractionJobs,
  };
}

/**
 * `ForgetUser`, `GetForgetReceipt` and `ListForgetReceipts` of
 * `engram.governance.v1.GovernanceService`. ForgetUser erases governance's own content and
 * records the receipt in one transaction, then returns; the {@link ForgetWorker} carries out the
 * remaining steps (context, ingestion, the index) and completes the receipt.
 */
export function createForgetHandlers(deps: ForgetDeps): Partial<ServiceImpl<typeof GovernanceService>> {
  const receipts = new ForgetReceiptRepository(deps.store);
  const memories = new MemoryRepository(deps.store);
  const jobs = new ExtractionJobRepository(deps.store);

  return {
    async forgetUser(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const { subject, reason, requestId } = request;
      if (subject === '') throw errors.fieldRequired('subject');
      if (Array.from(subject).length > MAX_SUBJECT_CHARS) {
        throw errors.fieldInvalid('subject', `at most ${MAX_SUBJECT_CHARS} characters`);
      }
      if (Array.from(reason).length > MAX_REASON_CHARS) {
        throw errors.fieldInvalid('reason', `at most ${MAX_REASON_CHARS} characters`);
      }
      checkRequestId(requestId);
      if (subject !== principal.subject && !isAdmin(principal)) {
        throw errors.permissionDenied(
          'ROLE_REQUIRED',
          'forgetting another subject requires the "admin" role',
          {
            role: 'admin',
          },
        );
      }
      const key = requestKeyOf(principal, FORGET_USER, requestId);
      const { result, replayed } = await idempotent(deps.store, key, { subject, reason }, async (trx) => {
        const now = Date.now();
        const created = await receipts.create(
          trx,
          { tenantId: principal.tenantId, subject, requestedBy: principal.subject, reason, requestId },
          ZERO_FORGET_COUNTS,
          now,
        );
        const counts = await eraseGovernanceContent(
          trx,
          { memories, jobs },
          principal.tenantId,
          subject,
          created.id,
          now,
        );
        await receipts.update(created, { counts: addForgetCounts(created.counts, counts) }, now, trx);
        return { receiptId: created.id };
      });
      const receipt = await receipts.get(principal.tenantId, result.receiptId);
      if (receipt === undefined) throw errors.notFound(forgetReceiptName(result.receiptId));
      if (!replayed) {
        deps.logger.info(
          { forgetReceipt: forgetReceiptName(receipt.id), requestedBy: principal.subject, ...receipt.counts },
          'forget request accepted; governance content erased',
        );
        deps.worker?.wake();
      }
      return { forgetReceipt: receiptMessage(receipt) };
    },

    async getForgetReceipt(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const id = parseReceiptName(request.name);
      const receipt = await receipts.get(principal.tenantId, id);
      // Invisible and absent look the same.
      if (receipt === undefined || !mayRead(principal, receipt)) throw errors.notFound(forgetReceiptName(id));
      return { forgetReceipt: receiptMessage(receipt) };
    },

    async listForgetReceipts(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      if (request.pageSize < 0) throw errors.fieldInvalid('page_size', 'must not be negative');
      const pageSize = request.pageSize === 0 ? 50 : Math.min(request.pageSize, 500);
      const states = request.states.map((s) => {
        const name = STATE_NAMES[s];
        if (name === undefined) throw errors.fieldInvalid('states', 'UNSPECIFIED or unknown value');
        return name;
      });
      const page = await receipts.list(
        principal.tenantId,
        {
          ...(request.subject !== '' ? { subject: request.subject } : {}),
          ...(states.length > 0 ? { states } : {}),
          ...(isAdmin(principal) ? {} : { involving: principal.subject }),
        },
        { pageSize, pageToken: request.pageToken },
      );
      return { forgetReceipts: page.items.map(receiptMessage), nextPageToken: page.nextPageToken };
    },
  };
}

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
 *    (tagged with the receipt), then COMPLETED with `vector_points` = the point deletions.
 *
 * Calls carry the request id `forget-{receipt}`, so a retried call after a lost answer returns the
 * first answer. Every failure is retried with exponential backoff (2 s · 2^(n−1), capped at 5 min)
 * for as long as it takes: the API promises the erasure, so a receipt never fails; its latest
 * failure is shown in `last_error`.
 */
export class ForgetWorker {
  readonly #receipts: ForgetReceiptRepository;
  readonly #memories: MemoryRepository;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<void> | undefined;
  #again = false;
  #stopped = true;
  #abort = new AbortController();

  constructor(private readonly deps: ForgetWorkerDeps) {
    this.#receipts = new ForgetReceiptRepository(deps.store);
    this.#memories = new MemoryRepository(deps.store);
  }

  get settings(): ForgetWorkerSettings {
    return { ...DEFAULT_FORGET_WORKER_SETTINGS, ...this.deps.settings };
  }

  /** Starts working (and sweeps at once: receipts left PENDING by a previous run). */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#abort = new AbortController();
    this.wake();
  }

  /** Stops: calls in flight are cancelled, and their receipts resumed by the next start. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort(new ConnectError('the forget worker is stopping', Code.Canceled));
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#sweeping;
  }

  /** Looks for due receipts now (called after ForgetUser recorded one). */
  wake(): void {
    if (this.#stopped) return;
    if (this.#sweeping !== undefined) {
      this.#again = true;
      return;
    }
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#sweeping = this.runOnce()
      .then(() => this.#receipts.nextDueAt())
      .catch((error: unknown) => {
        this.deps.logger.warn({ err: describe(error) }, 'forget sweep failed; retrying later');
        return undefined;
      })
      .then((nextDue) => {
        this.#sweeping = undefined;
        if (this.#stopped) return;
        if (this.#again) {
          this.#again = false;
          this.wake();
          return;
        }
        const { pollMs } = this.settings;
        // Until the next receipt is due (a backoff, an index poll, a lease), at most `pollMs`.
        const delay = nextDue === undefined ? pollMs : Math.min(pollMs, Math.max(10, nextDue - Date.now()));
        this.#timer = setTimeout(() => {
          // A periodic sweep belongs to no request's trace.
          withoutTrace(() => {
            this.wake();
          });
        }, delay);
        this.#timer.unref();
      });
  }

  /** Works once on every due receipt (up to the batch size). Returns how many it took. */
  async runOnce(now = Date.now()): Promise<number> {
    const due = await this.#receipts.due(now, this.settings.batchSize);
    let taken = 0;
    for (const receipt of due) {
      if (this.#abort.signal.aborted) break;
      const mine = await this.#receipts.take(receipt, this.settings.leaseMs);
      if (mine === undefined) continue;
      taken += 1;
      await this.#work(mine);
    }
    return taken;
  }

  /** Runs the receipt's steps until it completes, waits for the indexer, or a step fails. */
  async #work(start: ForgetReceiptRecord): Promise<void> {
    const name = forgetReceiptName(start.id);
    const log = this.deps.logger.child({ forgetReceipt: name });
    let receipt: ForgetReceiptRecord | undefined = start;
    while (receipt?.state === 'PENDING') {
      const current: ForgetReceiptRecord = receipt;
      try {
        receipt = await this.#step(current);
      } catch (error) {
        if (this.#abort.signal.aborted) return;
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
  async #step(r: ForgetReceiptRecord): Promise<ForgetReceiptRecord | undefined> {
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
        const erased = await this.deps.context.eraseSubject(request, await this.#callOptions(r.tenantId));
        return advance('INGESTION', { sessionStates: Number(erased.sessionStates) });
      }
      case 'INGESTION': {
        const erased = await this.deps.ingestion.eraseSubject(request, await this.#callOptions(r.tenantId));
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
        const counts = { ...r.counts, vectorPoints: progress.pointDeletionsDone };
        if (progress.pending === 0) {
          return this.#receipts.update(r, {
            state: 'COMPLETED',
            step: 'DONE',
            counts: { ...counts, vectorPoints: progress.pointDeletions },
            attempts: 0,
            lastError: null,
            nextAttemptAt: null,
            completedAt: now,
          });
        }
        const waited = await this.#receipts.update(r, {
          counts,
          nextAttemptAt: now + this.settings.indexPollMs,
          lastError:
            progress.parked > 0
              ? {
                  reason: 'DEPENDENCY_UNAVAILABLE',
                  message: `INDEX: ${progress.parked} point deletions are parked in the outbox after repeated failures of the indexer; they complete once requeued`,
                }
              : null,
        });
        // Not a failure: come back when the indexer has had time (the worker's timer does).
        return waited === undefined ? undefined : r;
      }
      case 'DONE':
        return this.#receipts.update(r, { state: 'COMPLETED', nextAttemptAt: null, completedAt: now });
    }
  }

  async #callOptions(tenantId: string) {
    return this.deps.credentials.callOptions(tenantId, {
      timeoutMs: this.settings.callTimeoutMs,
      signal: this.#abort.signal,
    });
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

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
