import { Code, ConnectError } from '@connectrpc/connect';
import type { ErrorReason } from '@engram/contracts/common';
import { ErrorInfoSchema, RetryInfoSchema } from '@engram/contracts/grpc';

/**
 * The reasons Engram may put in `google.rpc.ErrorInfo.reason`: the names of
 * `engram.common.v1.ErrorReason` without their `ERROR_REASON_` prefix (protobuf-es already strips it).
 */
export type Reason = Exclude<keyof typeof ErrorReason, 'UNSPECIFIED'>;

/** Identifiers attached to an error. Never message contents, memory text or secrets. */
export type ErrorMetadata = Readonly<Record<string, string | number | boolean>>;

/**
 * A failure the domain anticipates: it carries the gRPC code to answer with, a reason clients can
 * branch on, and identifying metadata. Thrown by domain and adapter code; translated to a
 * `ConnectError` with a `google.rpc.ErrorInfo` detail by the error boundary ({@link toConnectError}).
 */
export class EngramError extends Error {
  override readonly name = 'EngramError';

  constructor(
    readonly code: Code,
    readonly reason: Reason,
    message: string,
    readonly metadata: ErrorMetadata = {},
    options?: { cause?: unknown; retryDelayMs?: number },
  ) {
    super(message, options);
    this.retryDelayMs = options?.retryDelayMs;
  }

  /** When set, the boundary adds a `google.rpc.RetryInfo` with this delay (RESOURCE_EXHAUSTED, UNAVAILABLE). */
  readonly retryDelayMs: number | undefined;
}

/** Type guard for {@link EngramError}. */
export function isEngramError(value: unknown): value is EngramError {
  return value instanceof EngramError;
}

/** RESOURCE_EXHAUSTED the client may retry after `retryDelayMs` (also in the metadata). */
function retryLater(reason: Reason, message: string, retryDelayMs: number, metadata?: ErrorMetadata) {
  return new EngramError(
    Code.ResourceExhausted,
    reason,
    message,
    { ...metadata, retry_after_ms: retryDelayMs },
    { retryDelayMs },
  );
}

/** Constructors for the common cases, so call sites read as the domain speaks. */
export const errors = {
  invalidArgument: (reason: Reason, message: string, metadata?: ErrorMetadata) =>
    new EngramError(Code.InvalidArgument, reason, message, metadata),
  fieldRequired: (field: string) =>
    new EngramError(Code.InvalidArgument, 'FIELD_REQUIRED', `${field} is required`, { field }),
  fieldInvalid: (field: string, why: string) =>
    new EngramError(Code.InvalidArgument, 'FIELD_INVALID', `${field} is invalid: ${why}`, { field }),
  notFound: (name: string) =>
    new EngramError(Code.NotFound, 'RESOURCE_NOT_FOUND', `${name} was not found`, { name }),
  alreadyExists: (name: string) =>
    new EngramError(Code.AlreadyExists, 'RESOURCE_ALREADY_EXISTS', `${name} already exists`, { name }),
  permissionDenied: (reason: Reason, message: string, metadata?: ErrorMetadata) =>
    new EngramError(Code.PermissionDenied, reason, message, metadata),
  unauthenticated: (reason: Reason, message: string, metadata?: ErrorMetadata) =>
    new EngramError(Code.Unauthenticated, reason, message, metadata),
  resourceExhausted: (reason: Reason, message: string, metadata?: ErrorMetadata) =>
    new EngramError(Code.ResourceExhausted, reason, message, metadata),
  /** RESOURCE_EXHAUSTED `RATE_LIMITED` with a `google.rpc.RetryInfo` of `retryDelayMs`. */
  rateLimited: (message: string, retryDelayMs: number, metadata?: ErrorMetadata) =>
    retryLater('RATE_LIMITED', message, retryDelayMs, metadata),
  /** RESOURCE_EXHAUSTED `OVERLOADED` (the process is at its limit) with a `google.rpc.RetryInfo`. */
  overloaded: (message: string, retryDelayMs: number, metadata?: ErrorMetadata) =>
    retryLater('OVERLOADED', message, retryDelayMs, metadata),
  failedPrecondition: (reason: Reason, message: string, metadata?: ErrorMetadata) =>
    new EngramError(Code.FailedPrecondition, reason, message, metadata),
  unavailable: (dependency: string, message: string, options?: { cause?: unknown }) =>
    new EngramError(Code.Unavailable, 'DEPENDENCY_UNAVAILABLE', message, { dependency }, options),
} as const;

/** Options of {@link toConnectError}. */
export interface ErrorBoundaryOptions {
  /** `ErrorInfo.domain`: the answering service, e.g. `engram.governance`. */
  readonly domain: string;
  /** Correlates the client-visible INTERNAL error with the server log line. */
  readonly requestId: string;
}

function errorInfo(reason: Reason, domain: string, metadata: ErrorMetadata) {
  return {
    desc: ErrorInfoSchema,
    value: {
      reason,
      domain,
      metadata: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, String(v)])),
    },
  };
}

function retryInfo(delayMs: number) {
  const ms = Math.max(0, Math.ceil(delayMs));
  const retryDelay = { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 };
  return { desc: RetryInfoSchema, value: { retryDelay } };
}

/** The `google.rpc.RetryInfo` delay a received error carries, ms (what {@link retryInfo} sent), if any. */
export function retryDelayOf(error: ConnectError): number | undefined {
  const delay = error.findDetails(RetryInfoSchema)[0]?.retryDelay;
  if (delay === undefined) return undefined;
  return Number(delay.seconds) * 1000 + Math.ceil(delay.nanos / 1e6);
}

/** Reasons for errors that the RPC framework itself raises without an `ErrorInfo`. */
const frameworkReasons: Partial<Record<Code, Reason>> = {
  [Code.Unimplemented]: 'NOT_IMPLEMENTED',
  [Code.DeadlineExceeded]: 'DEADLINE_EXCEEDED',
  [Code.Canceled]: 'CANCELLED',
  [Code.ResourceExhausted]: 'MESSAGE_TOO_LARGE',
  [Code.InvalidArgument]: 'FIELD_INVALID',
  [Code.Unavailable]: 'DEPENDENCY_UNAVAILABLE',
  [Code.NotFound]: 'RESOURCE_NOT_FOUND',
};

/**
 * The single error boundary: turns anything thrown by a handler into the `ConnectError` sent on
 * the wire. Domain errors keep their code and reason; framework errors (unimplemented method,
 * deadline, cancellation, oversized message) gain an `ErrorInfo`; anything else becomes INTERNAL
 * with only the request id exposed. Returns `internal: true` when the caller must log the cause.
 */
export function toConnectError(
  error: unknown,
  options: ErrorBoundaryOptions,
): { error: ConnectError; internal: boolean } {
  const { domain, requestId } = options;
  if (isEngramError(error)) {
    return {
      error: new ConnectError(error.message, error.code, undefined, [
        errorInfo(error.reason, domain, error.metadata),
        ...(error.retryDelayMs === undefined ? [] : [retryInfo(error.retryDelayMs)]),
      ]),
      internal: false,
    };
  }
  if (error instanceof ConnectError) {
    if (error.findDetails(ErrorInfoSchema).length > 0) {
      // An error another service answered with, passed on: its code and details, never the
      // headers and trailers it arrived with (they would corrupt this response).
      const passed = new ConnectError(error.rawMessage, error.code, undefined, undefined, error.cause);
      passed.details.push(...error.details);
      return { error: passed, internal: false };
    }
    const reason = frameworkReasons[error.code];
    if (reason !== undefined) {
      const metadata: Record<string, string> = {};
      if (reason === 'NOT_IMPLEMENTED') metadata['method'] = error.rawMessage.split(' ')[0] ?? '';
      return {
        error: new ConnectError(
          error.rawMessage,
          error.code,
          error.metadata,
          [errorInfo(reason, domain, metadata)],
          error.cause,
        ),
        internal: false,
      };
    }
    // A code we did not anticipate from the framework (e.g. a protocol error): keep the code,
    // attach the request id so the log line can be found.
    if (error.code !== Code.Internal && error.code !== Code.Unknown) {
      return {
        error: new ConnectError(error.rawMessage, error.code, error.metadata, [
          errorInfo('INTERNAL', domain, { request_id: requestId }),
        ]),
        internal: false,
      };
    }
  }
  return {
    error: new ConnectError(`internal error (request id ${requestId})`, Code.Internal, undefined, [
      errorInfo('INTERNAL', domain, { request_id: requestId }),
    ]),
    internal: true,
  };
}

/** The `ErrorInfo` of a received error, if any: a convenience for clients and tests. */
export function errorInfoOf(error: unknown) {
  const connectError = ConnectError.from(error);
  return connectError.findDetails(ErrorInfoSchema)[0];
}

/** Socket-level failures: the peer could not be reached or went away. */
const NETWORK_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);

/** Whether an error was caused, at any depth, by a socket or HTTP/2 session failure. */
function networkCause(error: unknown): boolean {
  // Duck-typed: errors of Node's own sockets may come from another realm (e.g. under a test runner).
  for (let cause = error, depth = 0; typeof cause === 'object' && cause !== null && depth < 5; depth++) {
    const { code } = cause as { code?: unknown };
    if (typeof code === 'string' && (NETWORK_ERRORS.has(code) || code.startsWith('ERR_HTTP2_'))) return true;
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Maps a failed call to another Engram service (or other dependency) onto the error to answer
 * with: a transport failure (the dependency unreachable, or answering UNAVAILABLE or UNIMPLEMENTED
 * without an `ErrorInfo` of its own) becomes UNAVAILABLE `DEPENDENCY_UNAVAILABLE` naming
 * `dependency`; an answer with an `ErrorInfo` keeps its code and reason (the dependency judged the
 * request), and anything else (a deadline, a cancellation) is returned as a `ConnectError`.
 */
export function dependencyFailure(dependency: string, error: unknown): Error {
  if (isEngramError(error)) return error;
  const connectError = ConnectError.from(error);
  const judged = connectError.findDetails(ErrorInfoSchema).length > 0;
  const transport =
    connectError.code === Code.Unavailable ||
    connectError.code === Code.Unimplemented ||
    // connect-node reports a refused or reset connection as INTERNAL, with the socket error as cause.
    ((connectError.code === Code.Internal || connectError.code === Code.Unknown) &&
      networkCause(connectError));
  if (!judged && transport) {
    return errors.unavailable(dependency, `${dependency} could not be reached: ${connectError.rawMessage}`, {
      cause: error,
    });
  }
  return connectError;
}

/** Whether an error comes from a SQL driver (mysql2 attaches the statement and the server's message). */
function isSqlError(error: object): boolean {
  return 'sql' in error || 'sqlMessage' in error || 'sqlState' in error;
}

/**
 * A SQL driver's message without the values it quotes (`Duplicate entry 'alice@…' for key …`,
 * `Incorrect integer value: '…'`): quoted text becomes `'?'` unless it names a column, key,
 * table, database or constraint.
 */
function withoutSqlValues(message: string): string {
  return message.replace(
    /(\b(?:column|key|table|database|constraint|index)\s+)?'(?:[^'\\]|\\.|'')*'/gi,
    (quoted, name?: string) => (name !== undefined ? quoted : "'?'"),
  );
}

/** The message of an error as it may be logged. */
function loggableMessage(error: object, message: string): string {
  return (isSqlError(error) ? withoutSqlValues(message) : message).slice(0, 1024);
}

/** Fields of driver errors that identify the failure without carrying data. */
const IDENTIFYING_FIELDS = ['code', 'errno', 'sqlState', 'reason', 'metadata'] as const;

/**
 * An error as it may be logged (finding 11 of issue 18): name, message, stack, the identifying
 * fields (`code`, `errno`, `sqlState`; an EngramError's `reason` and `metadata`) and the cause
 * chain, never what a driver attached of the request: the SQL text (`sql`, with MySQL's values
 * interpolated), `parameters`, `values`, and the values the server quotes in `sqlMessage` and the
 * message. Every log line with an error goes through this or {@link describeError}.
 */
export function loggableError(error: unknown, depth = 0): Record<string, unknown> {
  if (typeof error !== 'object' || error === null) {
    return { type: typeof error, message: String(error).slice(0, 1024) };
  }
  const source = error as Record<string, unknown>;
  const name = error instanceof Error ? error.name : typeof error;
  const rawMessage = typeof source['message'] === 'string' ? source['message'] : '';
  const message = loggableMessage(error, rawMessage);
  const out: Record<string, unknown> = { type: name, message };
  if (typeof source['stack'] === 'string') {
    const stack = source['stack'];
    const head = `${name}: ${rawMessage}`;
    // The stack's first line repeats the message; the frames carry no data.
    out['stack'] = stack.startsWith(head)
      ? `${name}: ${message}${stack.slice(head.length)}`
      : stack.split('\n').slice(1).join('\n');
  }
  for (const field of IDENTIFYING_FIELDS) {
    if (source[field] !== undefined) out[field] = source[field];
  }
  const cause = source['cause'];
  if (cause !== undefined && depth < 5) out['cause'] = loggableError(cause, depth + 1);
  return out;
}

/** An error in one line for a log: its name and message (without SQL values), never a payload. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${loggableMessage(error, error.message)}`.slice(0, 1024);
  return String(error).slice(0, 1024);
}
