import type { HandlerContext } from '@connectrpc/connect';
import { errors } from '@engram/errors';
import { admissionMetrics, type AdmissionMetrics, type ServiceMetrics } from '@engram/telemetry';
import type { AdmissionTicket } from './admission.js';

/** Limits of one {@link ProcessAdmission} gate (decision 0033). */
export interface ProcessAdmissionLimits {
  /**
   * Calls executing at once in this process; `0` turns the gate off (every call is admitted). With
   * a `targetExecutionMs` it is the most slots the gate adapts up to.
   */
  readonly maxConcurrent: number;
  /** Calls waiting for a slot, first in first out; `0`: a call finding every slot taken is refused. */
  readonly maxQueue: number;
  /**
   * The longest a call may expect to wait for a slot, ms: a call whose expected wait is longer is
   * refused at once. A queued call waits for its slot (or its deadline) even when the estimate
   * proves short; only one still waiting after {@link QUEUE_TIMEOUT_FACTOR} times this bound (the
   * executions stalled) is refused then.
   */
  readonly maxQueueWaitMs: number;
  /**
   * The average execution time the gate steers for, ms (decision 0046); `0` or unset: the slots
   * stay `maxConcurrent`. Otherwise, once per average execution time, the slots shrink by a
   * quarter (down to `minConcurrent`) while the moving average is above the target, and grow by
   * one (up to `maxConcurrent`) while it is below and calls had to wait or were refused. Other
   * processes' load shows up as longer executions, so the gate sheds it too.
   */
  readonly targetExecutionMs?: number;
  /** The fewest slots an adaptive gate keeps. Default 1. */
  readonly minConcurrent?: number;
}

/** Time for a gate: the monotonic clock and one-shot timers; tests pass a fake one. */
export interface AdmissionClock {
  now(): number;
  /** Runs `run` after `ms`; the returned function cancels it. */
  schedule(ms: number, run: () => void): () => void;
}

/** Options of {@link ProcessAdmission}. */
export interface ProcessAdmissionOptions {
  /** The gated method, `package.Service/Method` (errors' metadata and metric labels). */
  readonly method: string;
  readonly clock?: AdmissionClock;
  /** Where admissions and refusals are counted; none, nothing is recorded. */
  readonly metrics?: AdmissionMetrics;
}

/** Why a gate refused a call: the `limit` of the OVERLOADED error and of the refusal metric. */
export type OverloadLimit = 'queue_full' | 'queue_wait' | 'queue_timeout';

interface Waiter {
  readonly admit: () => void;
  /** Removes the waiter's timer and abort listener. */
  readonly detach: () => void;
}

const systemClock: AdmissionClock = {
  now: () => performance.now(),
  schedule: (ms, run) => {
    const timer = setTimeout(run, ms);
    timer.unref();
    return () => {
      clearTimeout(timer);
    };
  },
};

/** Weight of the newest call in the moving average of execution times. */
const SMOOTHING = 0.2;
/** The smallest retry delay a refusal suggests, ms (a retry sooner would only be refused again). */
const MIN_RETRY_MS = 5;
/**
 * The fewest slots the services' adaptive gates keep (their `minConcurrent`): two, so that one slow
 * call never holds the whole process and a gate whose target is too low still serves.
 */
export const ADAPTIVE_MIN_SLOTS = 2;
/**
 * How many times `maxQueueWaitMs` a queued call waits before it is refused after all. A refusal
 * after a wait is the worst answer (the caller waited and got nothing, and its retry queues
 * again), so the bound is enforced on arrival by the expected wait and this timeout only catches
 * executions that stopped ending, where the moving average no longer describes them.
 */
export const QUEUE_TIMEOUT_FACTOR = 3;
/** What an adaptive gate keeps of its slots when executions are slower than its target. */
const DECREASE = 0.75;

/**
 * Per-process admission of one expensive method (decision 0033): at most `maxConcurrent` calls
 * execute, at most `maxQueue` wait in FIFO order, and none is let in to wait when it can expect to
 * wait longer than `maxQueueWaitMs`. The expected wait of a newcomer is its place in the queue
 * times the moving average of execution times divided by the slots; when it exceeds the bound, or
 * the queue is full, the call is refused at once with RESOURCE_EXHAUSTED `OVERLOADED` and a
 * `google.rpc.RetryInfo` of that expected wait, without ever taking a queue slot (decision 0047:
 * a queued call is refused only after {@link QUEUE_TIMEOUT_FACTOR} times the bound). A queued call
 * whose signal aborts (cancelled, deadline) leaves the queue at once. Each admitted call holds a
 * ticket it releases exactly once; releasing hands the slot to the head of the queue in the same
 * turn, so newcomers never overtake waiters.
 */
export class ProcessAdmission {
  readonly #limits: ProcessAdmissionLimits;
  readonly #method: string;
  readonly #clock: AdmissionClock;
  readonly #metrics: AdmissionMetrics | undefined;
  readonly #queue: Waiter[] = [];
  #inFlight = 0;
  /** Moving average of execution times, ms; undefined until a call has ended. */
  #executionMs: number | undefined;
  /** Calls that may execute at once now: `maxConcurrent`, or less when the gate adapts. */
  #slots: number;
  /** When the slots last changed (or the gate was made). */
  #adjustedAt: number;
  /** Whether a call found every slot taken since the slots last changed. */
  #saturated = false;

  constructor(limits: ProcessAdmissionLimits, options: ProcessAdmissionOptions) {
    this.#limits = limits;
    this.#method = options.method;
    this.#clock = options.clock ?? systemClock;
    this.#metrics = options.metrics;
    this.#slots = limits.maxConcurrent;
    this.#adjustedAt = this.#clock.now();
  }

  /** Calls that may execute at once now (`maxConcurrent` unless the gate adapts). */
  get slots(): number {
    return this.#slots;
  }

  /** Calls executing now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Calls waiting for a slot now. */
  get queued(): number {
    return this.#queue.length;
  }

  /** The moving average of execution times, ms (undefined before the first call ended). */
  get executionMs(): number | undefined {
    return this.#executionMs;
  }

  /**
   * The wait a call at `position` of the queue (1: next) can expect, ms: that many calls must end
   * first, and the gate's slots end in one average execution time.
   */
  expectedWaitMs(position: number): number {
    const execution = this.#executionMs ?? 0;
    return (position * execution) / this.#slots;
  }

  /**
   * Admits a call: resolves with its ticket when it may execute (at once when a slot is free and
   * nobody waits), or rejects with OVERLOADED, or with `signal.reason` when the call ends while
   * it waits.
   */
  admit(signal?: AbortSignal): Promise<AdmissionTicket> {
    const { maxConcurrent, maxQueue, maxQueueWaitMs } = this.#limits;
    if (maxConcurrent <= 0) return Promise.resolve(NO_TICKET);
    if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
    if (this.#inFlight < this.#slots && this.#queue.length === 0) {
      return Promise.resolve(this.#start(this.#clock.now(), undefined));
    }
    this.#saturated = true;
    const position = this.#queue.length + 1;
    if (position > maxQueue || maxQueueWaitMs <= 0) {
      return Promise.reject(this.#refuse('queue_full', position));
    }
    if (this.expectedWaitMs(position) > maxQueueWaitMs) {
      return Promise.reject(this.#refuse('queue_wait', position));
    }
    return new Promise<AdmissionTicket>((resolve, reject) => {
      const enqueuedAt = this.#clock.now();
      const leave = () => {
        const index = this.#queue.indexOf(waiter);
        if (index >= 0) this.#queue.splice(index, 1);
        waiter.detach();
      };
      const onAbort = () => {
        leave();
        reject(signal?.reason as Error);
      };
      const cancelTimer = this.#clock.schedule(QUEUE_TIMEOUT_FACTOR * maxQueueWaitMs, () => {
        leave();
        // Its own place is gone: what the next waiter can expect is the useful hint.
        reject(this.#refuse('queue_timeout', 1));
      });
      const waiter: Waiter = {
        admit: () => {
          resolve(this.#start(enqueuedAt, this.#clock.now()));
        },
        detach: () => {
          cancelTimer();
          signal?.removeEventListener('abort', onAbort);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(waiter);
    });
  }

  /** Takes a slot; `arrivedAt` is when the call arrived, `at` when it got the slot (now if unset). */
  #start(arrivedAt: number, at: number | undefined): AdmissionTicket {
    this.#inFlight += 1;
    const startedAt = at ?? arrivedAt;
    this.#metrics?.admitted.inc({ method: this.#method });
    this.#metrics?.queueWait.observe({ method: this.#method }, (startedAt - arrivedAt) / 1000);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#inFlight -= 1;
        const now = this.#clock.now();
        const took = now - startedAt;
        this.#executionMs =
          this.#executionMs === undefined ? took : this.#executionMs + SMOOTHING * (took - this.#executionMs);
        this.#adapt(now, this.#executionMs);
        this.#dispatch();
      },
    };
  }

  /**
   * Moves the slots toward the target execution time, at most once per average execution time, so
   * that the calls admitted under the last count have ended before it is judged.
   */
  #adapt(now: number, executionMs: number): void {
    const { maxConcurrent, targetExecutionMs = 0, minConcurrent = 1 } = this.#limits;
    if (targetExecutionMs <= 0 || now - this.#adjustedAt < executionMs) return;
    const floor = Math.min(Math.max(1, minConcurrent), maxConcurrent);
    let slots = this.#slots;
    if (executionMs > targetExecutionMs) slots = Math.max(floor, Math.floor(slots * DECREASE));
    else if (this.#saturated) slots = Math.min(maxConcurrent, slots + 1);
    if (slots === this.#slots) return;
    this.#slots = slots;
    this.#adjustedAt = now;
    this.#saturated = false;
  }

  /** Hands free slots to the head of the queue. */
  #dispatch(): void {
    while (this.#inFlight < this.#slots) {
      const next = this.#queue.shift();
      if (next === undefined) return;
      next.detach();
      next.admit();
    }
  }

  #refuse(limit: OverloadLimit, position: number): Error {
    const { maxConcurrent, maxQueue, maxQueueWaitMs } = this.#limits;
    this.#metrics?.refused.inc({ method: this.#method, limit });
    const expected = this.#executionMs === undefined ? maxQueueWaitMs : this.expectedWaitMs(position);
    const retryMs = Math.max(MIN_RETRY_MS, Math.ceil(expected));
    const slots = this.#slots;
    const why =
      limit === 'queue_full'
        ? `all ${slots} slots are taken and ${maxQueue} calls are waiting`
        : limit === 'queue_wait'
          ? `the expected wait (${retryMs} ms) exceeds the queueing bound of ${maxQueueWaitMs} ms`
          : `no slot freed within ${QUEUE_TIMEOUT_FACTOR} times the queueing bound of ${maxQueueWaitMs} ms`;
    return errors.overloaded(`the server is overloaded: ${why}; retry after ${retryMs} ms`, retryMs, {
      method: this.#method,
      limit,
      max_concurrent: maxConcurrent,
      slots,
      max_queue: maxQueue,
      max_queue_wait_ms: maxQueueWaitMs,
    });
  }
}

const NO_TICKET: AdmissionTicket = { release: () => undefined };

/**
 * A gate for `method` whose admissions and refusals go to the process's metrics, with its queue
 * depth and calls in flight as gauges (`engram_admission_queue_depth`, `engram_admission_in_flight`).
 */
export function processAdmission(
  metrics: ServiceMetrics,
  method: string,
  limits: ProcessAdmissionLimits,
  clock?: AdmissionClock,
): ProcessAdmission {
  const gate = new ProcessAdmission(limits, {
    method,
    metrics: admissionMetrics(metrics.registry),
    ...(clock !== undefined ? { clock } : {}),
  });
  metrics.gauge({
    name: 'engram_admission_queue_depth',
    help: 'Calls waiting in the process admission queue, by method.',
    labelNames: ['method'],
    sample: () => Promise.resolve([{ labels: { method }, value: gate.queued }]),
  });
  metrics.gauge({
    name: 'engram_admission_slots',
    help: 'Calls the process admission gate lets execute at once now (adaptive gates change it), by method.',
    labelNames: ['method'],
    sample: () => Promise.resolve([{ labels: { method }, value: gate.slots }]),
  });
  metrics.gauge({
    name: 'engram_admission_in_flight',
    help: 'Calls executing under the process admission gate, by method.',
    labelNames: ['method'],
    sample: () => Promise.resolve([{ labels: { method }, value: gate.inFlight }]),
  });
  return gate;
}

/**
 * A unary handler behind `gate`: the call waits for its slot (its own signal ends the wait) and
 * releases it when the handler's answer or failure is known.
 */
export function admitted<Req, Res>(
  gate: ProcessAdmission,
  handler: (request: Req, context: HandlerContext) => Res | Promise<Res>,
): (request: Req, context: HandlerContext) => Promise<Res> {
  return async (request, context) => {
    const ticket = await gate.admit(context.signal);
    try {
      return await handler(request, context);
    } finally {
      ticket.release();
    }
  };
}
