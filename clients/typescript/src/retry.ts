import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorInfoSchema } from '@engram/contracts/grpc';
import { serverRetryDelayMs } from './errors.js';

/**
 * How the SDK retries a refused call: the rule of the `engram` CLI and the Python smoke client
 * (docs/decisions/0033-process-admission.md), kept identical across clients.
 */
export interface RetryPolicy {
  /** Attempts in all, the first included. */
  readonly maxAttempts: number;
  /** Backoff of an UNAVAILABLE answer without a RetryInfo: this, doubled per attempt, ms. */
  readonly baseDelayMs: number;
  /** The longest wait before a retry, ms: a server asking for more is not retried. */
  readonly maxDelayMs: number;
  /** Extra random wait, as a share of the delay (0.2: up to 20 % more), so refused callers spread out. */
  readonly jitter: number;
}

/** At most 4 attempts, 100 ms doubled, nothing over 10 s, up to 20 % jitter. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 4,
  baseDelayMs: 100,
  maxDelayMs: 10_000,
  jitter: 0.2,
};

/**
 * The wait before attempt `attempt + 1` after `error` ended attempt `attempt` (1-based), ms, or
 * undefined when the call must not be retried:
 * - RESOURCE_EXHAUSTED only with a RetryInfo (OVERLOADED, RATE_LIMITED: the call never started);
 *   without one (a message too large, a quota) retrying cannot help;
 * - UNAVAILABLE that the server answered (an ErrorInfo: SHUTTING_DOWN, DEPENDENCY_UNAVAILABLE),
 *   after its RetryInfo or else exponential backoff; a transport failure (nobody listening) is
 *   reported at once;
 * - never past `maxAttempts`, a delay over `maxDelayMs`, or the call's remaining deadline.
 * The server's delay is a minimum: jitter only adds to it.
 */
export function retryDelayMs(
  error: unknown,
  attempt: number,
  remainingMs: number | undefined,
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
  random: () => number = Math.random,
): number | undefined {
  if (attempt >= policy.maxAttempts) return undefined;
  const connectError = ConnectError.from(error);
  const hinted = serverRetryDelayMs(connectError);
  let delay: number | undefined;
  if (connectError.code === Code.ResourceExhausted) delay = hinted;
  else if (connectError.code === Code.Unavailable) {
    const answered = connectError.findDetails(ErrorInfoSchema).length > 0;
    if (answered) delay = hinted ?? policy.baseDelayMs * 2 ** (attempt - 1);
  }
  if (delay === undefined || delay > policy.maxDelayMs) return undefined;
  const jittered = Math.round(delay + delay * policy.jitter * random());
  if (remainingMs !== undefined && jittered >= remainingMs) return undefined;
  return jittered;
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
