import { errors } from '@engram/errors';
import type { Principal } from './auth.js';

/** Per-principal limits of one class of calls (decision 0026). `0` turns a limit off. */
export interface AdmissionLimits {
  /** Calls of the class one principal may have in flight at once. */
  readonly maxConcurrent: number;
  /** Calls of the class one principal may start per minute, on average. */
  readonly ratePerMinute: number;
}

/** Options of {@link PrincipalAdmission}. */
export interface AdmissionOptions {
  /** Names the class in errors' metadata, e.g. `documents`. */
  readonly name: string;
  /** Retry hint when the concurrency limit refuses a call, ms (no slot has a known end). */
  readonly busyRetryMs?: number;
  /** The clock, ms; tests pass their own. */
  readonly now?: () => number;
}

/** An admitted call: release it exactly once when it ends (later calls do nothing). */
export interface AdmissionTicket {
  release(): void;
}

interface PrincipalState {
  inFlight: number;
  /** Token bucket: calls that may start now, refilled at `ratePerMinute`, at most `burst`. */
  tokens: number;
  refilledAt: number;
}

/** Burst of the token bucket: ten seconds' worth of the rate, at least one call. */
export const burstOf = (ratePerMinute: number): number => Math.max(1, Math.ceil(ratePerMinute / 6));

/** Principals tracked before idle ones (nothing in flight, bucket full) are dropped. */
const SWEEP_ABOVE = 10_000;
const DEFAULT_BUSY_RETRY_MS = 1_000;

/**
 * Per-principal admission of one class of expensive calls: at most `maxConcurrent` in flight and
 * a token bucket of `ratePerMinute` (burst {@link burstOf}) for each principal (tenant and
 * subject of the verified credential), so one caller cannot starve the others. A refused call is
 * RESOURCE_EXHAUSTED `RATE_LIMITED` with a `google.rpc.RetryInfo`: for the rate, when the next
 * token is due; for concurrency, `busyRetryMs`. Limits hold per process (each replica counts its
 * own calls). Nothing but counters is kept, and idle principals are forgotten.
 */
export class PrincipalAdmission {
  readonly #limits: AdmissionLimits;
  readonly #name: string;
  readonly #busyRetryMs: number;
  readonly #now: () => number;
  readonly #burst: number;
  readonly #states = new Map<string, PrincipalState>();

  constructor(limits: AdmissionLimits, options: AdmissionOptions) {
    this.#limits = limits;
    this.#name = options.name;
    this.#busyRetryMs = options.busyRetryMs ?? DEFAULT_BUSY_RETRY_MS;
    this.#now = options.now ?? Date.now;
    this.#burst = burstOf(limits.ratePerMinute);
  }

  /** Admits a call of `principal` to `method` (named in the error), or throws RATE_LIMITED. */
  admit(principal: Principal, method: string): AdmissionTicket {
    const { maxConcurrent, ratePerMinute } = this.#limits;
    const key = JSON.stringify([principal.tenantId, principal.subject]);
    const now = this.#now();
    const state = this.#states.get(key) ?? { inFlight: 0, tokens: this.#burst, refilledAt: now };
    if (ratePerMinute > 0) {
      const refill = ((now - state.refilledAt) * ratePerMinute) / 60_000;
      state.tokens = Math.min(this.#burst, state.tokens + refill);
      state.refilledAt = now;
    }
    const metadata = { method };
    if (maxConcurrent > 0 && state.inFlight >= maxConcurrent) {
      throw errors.rateLimited(
        `too many ${this.#name} calls in flight for this caller (at most ${maxConcurrent})`,
        this.#busyRetryMs,
        { ...metadata, limit: 'concurrency', max_concurrent: maxConcurrent },
      );
    }
    if (ratePerMinute > 0 && state.tokens < 1) {
      const retryMs = Math.ceil(((1 - state.tokens) * 60_000) / ratePerMinute);
      throw errors.rateLimited(
        `too many ${this.#name} calls for this caller (at most ${ratePerMinute} a minute)`,
        retryMs,
        { ...metadata, limit: 'rate', per_minute: ratePerMinute },
      );
    }
    if (ratePerMinute > 0) state.tokens -= 1;
    state.inFlight += 1;
    if (!this.#states.has(key)) {
      if (this.#states.size >= SWEEP_ABOVE) this.#sweep(now);
      this.#states.set(key, state);
    }
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        state.inFlight -= 1;
      },
    };
  }

  /** Principals currently tracked (for tests). */
  get tracked(): number {
    return this.#states.size;
  }

  #sweep(now: number): void {
    const { ratePerMinute } = this.#limits;
    for (const [key, state] of this.#states) {
      const tokens =
        ratePerMinute > 0 ? state.tokens + ((now - state.refilledAt) * ratePerMinute) / 60_000 : this.#burst;
      if (state.inFlight === 0 && tokens >= this.#burst) this.#states.delete(key);
    }
  }
}
