import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorInfoSchema, RetryInfoSchema } from '@engram/contracts/grpc';

/** Everything an {@link EngramError} is made of, for building one by hand. */
export interface EngramErrorInit {
  readonly code: Code;
  readonly message: string;
  readonly reason?: string | undefined;
  readonly domain?: string | undefined;
  readonly metadata?: Readonly<Record<string, string>>;
  readonly retryDelayMs?: number | undefined;
  readonly requestId?: string | undefined;
  readonly cause?: unknown;
}

/**
 * The one error every SDK method throws: a failed call's gRPC status, with the
 * `google.rpc.ErrorInfo` the server attached (branch on `reason`, not on the message).
 */
export class EngramError extends Error {
  /** The status code (numerically the gRPC code). */
  readonly code: Code;
  /** The gRPC name of `code`, e.g. `NOT_FOUND`. */
  readonly codeName: string;
  /**
   * The ErrorInfo reason: an `engram.common.v1.ErrorReason` name without its prefix
   * (`RESOURCE_NOT_FOUND`, `FIELD_INVALID`, …); undefined when the server sent none (for example
   * a transport failure). Treat an unknown reason like `code` alone.
   */
  readonly reason: string | undefined;
  /** The service that answered, e.g. `engram.governance`. */
  readonly domain: string | undefined;
  /** The ErrorInfo metadata: identifiers such as `field` or `limit_bytes`, never content. */
  readonly metadata: Readonly<Record<string, string>>;
  /** The server's `google.rpc.RetryInfo` delay, ms, when it sent one. */
  readonly retryDelayMs: number | undefined;
  /** The `request_id` the failed call carried (the same on every attempt). */
  readonly requestId: string | undefined;

  /** The message is prefixed with the code name and reason, so a logged error says what it is. */
  constructor(init: EngramErrorInit) {
    const codeName = grpcCodeName(init.code);
    const label = init.reason === undefined ? codeName : `${codeName} ${init.reason}`;
    super(`${label}: ${init.message}`, { cause: init.cause });
    this.name = 'EngramError';
    this.code = init.code;
    this.codeName = codeName;
    this.reason = init.reason;
    this.domain = init.domain;
    this.metadata = { ...(init.metadata ?? {}) };
    this.retryDelayMs = init.retryDelayMs;
    this.requestId = init.requestId;
  }
}

/** Whether `value` is an {@link EngramError}. */
export function isEngramError(value: unknown): value is EngramError {
  return value instanceof EngramError;
}

/** `Code.NotFound` → `NOT_FOUND`: the name the gRPC specification and the docs use. */
export function grpcCodeName(code: Code): string {
  const name = Code[code] as string | undefined;
  if (name === undefined) return `CODE_${String(code)}`;
  return name.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
}

/** The `google.rpc.RetryInfo` delay of `error`, ms, if it has one. */
export function serverRetryDelayMs(error: ConnectError): number | undefined {
  const delay = error.findDetails(RetryInfoSchema)[0]?.retryDelay;
  if (delay === undefined) return undefined;
  return Number(delay.seconds) * 1000 + Math.ceil(delay.nanos / 1e6);
}

/**
 * Whether `error` is an abort (a DOMException `AbortError`). Checked by name: a DOMException from
 * another realm (a worker, a test sandbox) is not an `instanceof Error` here.
 */
function isAbort(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError';
}

/**
 * `error` (a ConnectError, an abort, a network failure, anything thrown) as an
 * {@link EngramError}; an EngramError is returned as it is.
 */
export function toEngramError(error: unknown, requestId?: string): EngramError {
  if (error instanceof EngramError) return error;
  const connectError = isAbort(error)
    ? new ConnectError('the call was cancelled', Code.Canceled, undefined, undefined, error)
    : ConnectError.from(error);
  const info = connectError.findDetails(ErrorInfoSchema)[0];
  return new EngramError({
    code: connectError.code,
    message: connectError.rawMessage,
    reason: info?.reason,
    domain: info?.domain,
    metadata: info?.metadata ?? {},
    retryDelayMs: serverRetryDelayMs(connectError),
    requestId,
    cause: error,
  });
}

/** `value`, a field the server always sets; its absence is a broken answer, reported as INTERNAL. */
export function answered<T>(value: T | undefined, what: string): T {
  if (value === undefined) {
    throw new EngramError({ code: Code.Internal, message: `the server's answer has no ${what}` });
  }
  return value;
}
