import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { ErrorInfoSchema } from '@engram/contracts/grpc';
import { retryDelayOf } from '@engram/errors';

/** How the CLI retries a refused call (docs/decisions/0033-process-admission.md). */
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
  const hinted = retryDelayOf(connectError);
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

/** `grpc-timeout` (`30000m`, `5S`, …) in ms. */
function parseGrpcTimeout(value: string | null): number | undefined {
  const match = value === null ? null : /^(\d{1,8})([HMSmun])$/.exec(value);
  if (match === null) return undefined;
  const units: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };
  return Number(match[1]) * (units[match[2] ?? 'm'] ?? 1);
}

/** Options of {@link retryInterceptor}. */
export interface RetryInterceptorOptions {
  readonly policy?: RetryPolicy;
  readonly now?: () => number;
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly random?: () => number;
  /** Told of each retry (the CLI says nothing; tests count). */
  readonly onRetry?: (attempt: number, delayMs: number, error: ConnectError) => void;
}

const abortableSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });

/**
 * Retries unary calls per {@link retryDelayMs}, within the call's own deadline (each attempt
 * sends the time left as its `grpc-timeout`). Streaming calls are never retried: their messages
 * may already be consumed.
 */
export function retryInterceptor(options: RetryInterceptorOptions = {}): Interceptor {
  const policy = options.policy ?? DEFAULT_RETRY_POLICY;
  const now = options.now ?? (() => performance.now());
  const sleep = options.sleep ?? abortableSleep;
  return (next) => async (request) => {
    if (request.stream) return next(request);
    const started = now();
    const timeoutMs = parseGrpcTimeout(request.header.get('grpc-timeout'));
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(request);
      } catch (error) {
        const remaining = timeoutMs === undefined ? undefined : timeoutMs - (now() - started);
        const delay = retryDelayMs(error, attempt, remaining, policy, options.random);
        if (delay === undefined || request.signal.aborted) throw error;
        options.onRetry?.(attempt, delay, ConnectError.from(error));
        await sleep(delay, request.signal);
        if (timeoutMs !== undefined) {
          const left = Math.max(1, Math.floor(timeoutMs - (now() - started)));
          request.header.set('grpc-timeout', `${left}m`);
        }
      }
    }
  };
}
