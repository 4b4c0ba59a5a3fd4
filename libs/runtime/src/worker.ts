import { Counter, Histogram, type Registry } from 'prom-client';
import { describeError } from '@engram/errors';
import { metricsRegistry, type Logger } from '@engram/telemetry';
import { withoutTrace } from './tracing.js';

/** What one pass reports: run again at once (`more`), or when the next pass is due. */
export interface PassOutcome {
  /** There is more work now: the next pass starts right away. */
  readonly more?: boolean;
  /** The next pass is due in this many ms (capped by `idleMs`); `idleMs` when absent. */
  readonly nextInMs?: number;
}

/** How a {@link Worker} runs. */
export interface WorkerOptions {
  /** The worker's name in logs and metrics (`forget`, `hand-off`, `expiry`, `segmenter`, `indexer`). */
  readonly name: string;
  readonly logger: Logger;
  /**
   * One pass over the due work. `signal` aborts when the worker stops: a pass should finish what it
   * must (a durable state change) and return. A rejection is logged and retried with backoff.
   */
  readonly pass: (signal: AbortSignal) => Promise<PassOutcome> | Promise<void>;
  /** The periodic sweep: the longest wait between passes when nothing wakes the worker, ms. */
  readonly idleMs: number;
  /** Backoff after a failed pass: doubles from `minMs` to `maxMs`, reset by a pass that succeeds. */
  readonly backoff?: { readonly minMs: number; readonly maxMs: number };
  /** Awaited by {@link Worker.stop} after the last pass: work the passes started and left running. */
  readonly drain?: () => Promise<unknown>;
  /** The metrics registry (the process registry by default). */
  readonly registry?: Registry;
}

const DEFAULT_BACKOFF = { minMs: 500, maxMs: 30_000 } as const;

interface WorkerMetrics {
  readonly passes: Counter<'worker' | 'outcome'>;
  readonly duration: Histogram<'worker'>;
}

function workerMetrics(registry: Registry): WorkerMetrics {
  const passes =
    (registry.getSingleMetric('engram_worker_passes_total') as Counter<'worker' | 'outcome'> | undefined) ??
    new Counter({
      name: 'engram_worker_passes_total',
      help: 'Background worker passes, by worker and outcome (ok, failed).',
      labelNames: ['worker', 'outcome'] as const,
      registers: [registry],
    });
  const duration =
    (registry.getSingleMetric('engram_worker_pass_duration_seconds') as Histogram<'worker'> | undefined) ??
    new Histogram({
      name: 'engram_worker_pass_duration_seconds',
      help: 'Duration of one background worker pass, by worker.',
      labelNames: ['worker'] as const,
      buckets: [0.001, 0.005, 0.025, 0.1, 0.5, 1, 5, 30, 120],
      registers: [registry],
    });
  return { passes, duration };
}

/**
 * The one background-loop primitive of every service: a pass at start, another when woken, the
 * periodic sweep when idle, backoff after failures, and a graceful stop that waits for the pass in
 * flight. Passes never overlap: a wake during a pass runs one more pass right after it. Timers do
 * not keep the process alive, and a pass started by a timer belongs to no request's trace.
 */
export class Worker {
  readonly name: string;
  readonly #options: WorkerOptions;
  readonly #metrics: WorkerMetrics;
  #abort = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #passing: Promise<void> | undefined;
  #again = false;
  #stopped = true;
  #failures = 0;

  constructor(options: WorkerOptions) {
    this.name = options.name;
    this.#options = options;
    this.#metrics = workerMetrics(options.registry ?? metricsRegistry());
  }

  /** Whether the worker is started and not stopped. */
  get running(): boolean {
    return !this.#stopped;
  }

  /** The stop signal of the current run (aborted by {@link stop}). */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** Starts, with a pass at once (work left over by a previous run). Idempotent. */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#abort = new AbortController();
    this.wake();
  }

  /** Runs a pass now, or right after the one in flight. Ignored when stopped. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#passing !== undefined) {
      this.#again = true;
      return;
    }
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#passing = this.#pass().then((delay) => {
      this.#passing = undefined;
      if (this.#stopped) return;
      if (this.#again || delay === 0) {
        this.#again = false;
        this.wake();
        return;
      }
      this.#timer = setTimeout(() => {
        withoutTrace(() => {
          this.wake();
        });
      }, delay);
      this.#timer.unref();
    });
  }

  /** Stops: aborts the signal, waits for the pass in flight and for `drain`. Idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort(new Error(`the ${this.name} worker is stopping`));
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#passing;
    await this.#options.drain?.();
  }

  /** One pass; resolves with the delay until the next (0: at once). Never rejects. */
  async #pass(): Promise<number> {
    const { idleMs, logger, name } = this.#options;
    const end = this.#metrics.duration.startTimer({ worker: name });
    try {
      const outcome = (await this.#options.pass(this.#abort.signal)) ?? {};
      this.#failures = 0;
      this.#metrics.passes.inc({ worker: name, outcome: 'ok' });
      if (outcome.more === true) return 0;
      return Math.max(1, Math.min(idleMs, outcome.nextInMs ?? idleMs));
    } catch (error) {
      this.#metrics.passes.inc({ worker: name, outcome: 'failed' });
      if (this.#stopped) return 0;
      const { minMs, maxMs } = this.#options.backoff ?? DEFAULT_BACKOFF;
      const retryInMs = Math.min(maxMs, minMs * 2 ** this.#failures);
      this.#failures += 1;
      logger.warn(
        { worker: name, err: describeError(error), retryInMs },
        'worker pass failed; retrying later',
      );
      return retryInMs;
    } finally {
      end();
    }
  }
}
