import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { ErrorReason } from '@engram/contracts/common';
import { ExtractionJobState, type GovernanceService } from '@engram/contracts/governance';
import {
  Worker,
  describeError,
  errorInfoOf,
  isEngramError,
  type Logger,
  type ServiceCredentials,
} from '@engram/runtime';
import { inTransaction, SessionRepository, type MemCellRecord, type Store } from '@engram/store';

/** Retry policy and pacing of the hand-off (documented in docs/api-conventions.md). */
export interface HandOffSettings {
  /** Attempts per MemCell before it becomes FAILED (the API documents 5). */
  readonly maxAttempts: number;
  /** Backoff after the n-th failed attempt: base · 2^(n-1), capped, with ±20 % jitter, ms. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Deadline of one ExtractMemories call, ms. */
  readonly callTimeoutMs: number;
  /** How often due cells are looked for when nothing wakes the worker, ms. */
  readonly pollMs: number;
  /** Cells handed off at the same time. */
  readonly concurrency: number;
}

export const DEFAULT_HANDOFF_SETTINGS: HandOffSettings = {
  maxAttempts: 5,
  baseDelayMs: 2_000,
  maxDelayMs: 5 * 60_000,
  callTimeoutMs: 120_000,
  pollMs: 5_000,
  concurrency: 2,
};

/** The reason of a failure that carries no `ErrorInfo` (transport errors, the framework's own). */
const FRAMEWORK_REASONS: Partial<Record<Code, string>> = {
  [Code.Unavailable]: 'DEPENDENCY_UNAVAILABLE',
  [Code.DeadlineExceeded]: 'DEADLINE_EXCEEDED',
  [Code.Unimplemented]: 'NOT_IMPLEMENTED',
  [Code.Canceled]: 'CANCELLED',
  [Code.Unauthenticated]: 'TOKEN_INVALID',
};

/** Failures that no retry can fix: the cell fails at once. */
const PERMANENT = new Set([Code.InvalidArgument, Code.PermissionDenied, Code.Unauthenticated]);

/** The backoff before attempt `attempts + 1`, ms. */
export function backoffMs(attempts: number, settings: HandOffSettings, random = Math.random): number {
  const raw = Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(raw * (0.8 + 0.4 * random()));
}

/**
 * The durable hand-off of closed MemCells to governance `ExtractMemories` (blueprint §3 flow 2).
 * The state lives in the MemCell row, so nothing is lost while governance is down or slow, or
 * when this process stops: PENDING → EXTRACTING (attempts + 1, taken with a compare-and-set so
 * that one replica takes a cell) → EXTRACTED, or back to PENDING with a backoff
 * (`next_attempt_at`), or FAILED after the last attempt. Each attempt calls governance with the
 * request id `mc-{cell}-{attempt}`: an attempt interrupted by a stop is resumed with the same id
 * and gets the same governance job back instead of starting a second one.
 */
export class ExtractionHandOff {
  /** The sweep: at start, after commits that closed cells, when a slot frees up, every `pollMs`. */
  readonly worker: Worker;
  readonly settings: HandOffSettings;
  readonly #sessions: SessionRepository;
  readonly #inFlight = new Map<string, Promise<void>>();
  readonly #waiters = new Set<() => void>();

  constructor(
    private readonly deps: {
      readonly store: Store;
      readonly governance: Client<typeof GovernanceService>;
      readonly credentials: ServiceCredentials;
      readonly logger: Logger;
      readonly settings?: Partial<HandOffSettings>;
    },
  ) {
    this.#sessions = new SessionRepository(deps.store);
    this.settings = { ...DEFAULT_HANDOFF_SETTINGS, ...deps.settings };
    const { pollMs } = this.settings;
    this.worker = new Worker({
      name: 'hand-off',
      logger: deps.logger,
      idleMs: pollMs,
      // A failed sweep (the store unreachable) is tried again at the next poll.
      backoff: { minMs: pollMs, maxMs: pollMs },
      pass: (signal) => this.#sweep(signal),
      // Stopping waits for the attempts in flight (their state is durable either way).
      drain: () => Promise.allSettled([...this.#inFlight.values()]),
    });
  }

  /** Looks for due cells now (called after a commit that closed cells). */
  wake(): void {
    this.worker.wake();
  }

  /** Resolves when some attempt ends (used by `FlushSession` with `wait_for_extraction`). */
  settled(): Promise<void> {
    return new Promise((resolve) => this.#waiters.add(resolve));
  }

  /** Starts attempts for due cells, up to `concurrency` in flight; they end on their own. */
  async #sweep(signal: AbortSignal): Promise<void> {
    const { concurrency, callTimeoutMs } = this.settings;
    const free = concurrency - this.#inFlight.size;
    if (free <= 0) return;
    const now = Date.now();
    // Attempts interrupted by a stop (EXTRACTING, untouched for longer than a call can last).
    const stale = await this.#sessions.staleExtractingMemCells(free, now - callTimeoutMs - 30_000);
    const due = await this.#sessions.dueMemCells(free + this.#inFlight.size, now);
    for (const cell of [...stale, ...due]) {
      if (this.#inFlight.size >= concurrency || signal.aborted) break;
      if (this.#inFlight.has(cell.id)) continue;
      const attempt = this.#attempt(cell)
        // A failure to record the outcome (the store unreachable) leaves the cell as it was: it is
        // taken up again by a later sweep. It must never reach the process as an unhandled rejection.
        .catch((error: unknown) => {
          this.deps.logger.warn(
            { memCell: cell.id, err: describeError(error) },
            'extraction hand-off attempt not recorded; retried later',
          );
        })
        .finally(() => {
          this.#inFlight.delete(cell.id);
          for (const resolve of this.#waiters) resolve();
          this.#waiters.clear();
          // A slot is free: look for more work.
          this.worker.wake();
        });
      this.#inFlight.set(cell.id, attempt);
    }
  }

  async #attempt(cell: MemCellRecord): Promise<void> {
    const { tenantId, id } = cell;
    let attempt = cell.attempts;
    let taken: MemCellRecord;
    try {
      taken = await inTransaction(this.deps.store, (trx) =>
        cell.status === 'EXTRACTING'
          ? // Resume the interrupted attempt: touch the cell so no other sweeper resumes it too.
            this.#sessions.updateMemCellStatus(trx, tenantId, id, {
              status: 'EXTRACTING',
              expectedStatus: 'EXTRACTING',
            })
          : this.#sessions.updateMemCellStatus(trx, tenantId, id, {
              status: 'EXTRACTING',
              attempts: (attempt += 1),
              expectedStatus: 'PENDING',
              nextAttemptAt: null,
            }),
      );
    } catch (error) {
      // Another sweeper took it, or the session was deleted: nothing to do.
      if (
        isEngramErrorWithReason(error, 'ETAG_MISMATCH') ||
        isEngramErrorWithReason(error, 'RESOURCE_NOT_FOUND')
      )
        return;
      throw error;
    }
    const name = `sessions/${cell.sessionId}/memCells/${id}`;
    const requestId = `mc-${id}-${attempt}`;
    const log = this.deps.logger.child({ memCell: name, attempt });
    try {
      // The tenant's service token, the active trace context, and the attempt's request id as
      // `x-request-id`: governance's log lines of the call carry the id its job is keyed by.
      const options = await this.deps.credentials.callOptions(tenantId, {
        timeoutMs: this.settings.callTimeoutMs,
        headers: { 'x-request-id': requestId },
      });
      const { extractionJob: job } = await this.deps.governance.extractMemories(
        { memCell: name, requestId },
        options,
      );
      const jobId = job?.name.replace(/^extractionJobs\//, '');
      if (job?.state === ExtractionJobState.SUCCEEDED) {
        await this.#finish(taken, { status: 'EXTRACTED', ...(jobId ? { extractionJobId: jobId } : {}) });
        log.info({ extractionJob: job.name }, 'memcell extracted');
        return;
      }
      const reason = job?.error?.reason ?? ErrorReason.INTERNAL;
      await this.#failed(taken, {
        code: Code.Internal,
        reason: ErrorReason[reason],
        message:
          `extraction job ${job?.name ?? '(none)'} ended ${job === undefined ? 'without a job' : ExtractionJobState[job.state]}: ${job?.error?.message ?? ''}`.slice(
            0,
            1000,
          ),
        ...(jobId ? { extractionJobId: jobId } : {}),
      });
    } catch (error) {
      const connectError = unreachable(error)
        ? new ConnectError(`governance unreachable: ${describeError(error)}`, Code.Unavailable)
        : ConnectError.from(error);
      const info = errorInfoOf(connectError);
      await this.#failed(taken, {
        code: connectError.code,
        reason: info?.reason ?? FRAMEWORK_REASONS[connectError.code] ?? 'INTERNAL',
        message:
          `governance ExtractMemories failed: ${Code[connectError.code]}: ${connectError.rawMessage}`.slice(
            0,
            1000,
          ),
      });
    }
  }

  async #failed(
    cell: MemCellRecord,
    failure: { code: Code; reason: string; message: string; extractionJobId?: string },
  ): Promise<void> {
    const { maxAttempts } = this.settings;
    const final = cell.attempts >= maxAttempts || PERMANENT.has(failure.code);
    const retryAt = Date.now() + backoffMs(cell.attempts, this.settings);
    await this.#finish(cell, {
      status: final ? 'FAILED' : 'PENDING',
      lastError: failure.message,
      lastErrorReason: failure.reason,
      ...(final ? {} : { nextAttemptAt: retryAt }),
      ...(failure.extractionJobId !== undefined ? { extractionJobId: failure.extractionJobId } : {}),
    });
    this.deps.logger.warn(
      {
        memCell: `sessions/${cell.sessionId}/memCells/${cell.id}`,
        attempt: cell.attempts,
        reason: failure.reason,
        final,
        ...(final ? {} : { retryInMs: retryAt - Date.now() }),
      },
      final ? 'memcell extraction failed for good' : 'memcell extraction attempt failed; will retry',
    );
  }

  async #finish(
    cell: MemCellRecord,
    patch: Parameters<SessionRepository['updateMemCellStatus']>[3],
  ): Promise<void> {
    try {
      await inTransaction(this.deps.store, (trx) =>
        this.#sessions.updateMemCellStatus(trx, cell.tenantId, cell.id, {
          ...patch,
          expectedStatus: 'EXTRACTING',
        }),
      );
    } catch (error) {
      // The session was deleted meanwhile: the cell is gone with it.
      if (isEngramErrorWithReason(error, 'RESOURCE_NOT_FOUND')) return;
      throw error;
    }
  }
}

const NETWORK_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EPIPE',
]);

/** Whether a call failed because the peer could not be reached (connect-node reports it as INTERNAL). */
function unreachable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && NETWORK_ERRORS.has(code)) return true;
    if (/\b(ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENOTFOUND)\b/.test(e.message)) return true;
  }
  return false;
}

function isEngramErrorWithReason(error: unknown, reason: string): boolean {
  return isEngramError(error) && error.reason === reason;
}
