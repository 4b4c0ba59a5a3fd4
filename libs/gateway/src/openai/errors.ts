/**
 * Failures as OpenAI-style error answers: `{ error: { message, type, param, code } }` with the HTTP
 * status that fits the gRPC code, `code` = the `google.rpc.ErrorInfo` reason, `param` = its
 * `field`, and the ErrorInfo metadata kept as `metadata` (an extra key OpenAI clients ignore).
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { RetryInfoSchema } from '@engram/contracts/grpc';
import { errorInfoOf, isEngramError } from '@engram/errors';

/** A failure as the proxy answers it. */
export interface OpenAiFailure {
  readonly status: number;
  readonly message: string;
  /** OpenAI's error type: `invalid_request_error`, `authentication_error`, … */
  readonly type: string;
  readonly param: string | null;
  /** The ErrorInfo reason, e.g. `FIELD_INVALID`; null when the failure has none. */
  readonly code: string | null;
  readonly metadata: Readonly<Record<string, string>>;
  /** From the failure's `google.rpc.RetryInfo`, whole seconds: the `Retry-After` header. */
  readonly retryAfterSeconds?: number;
}

/** HTTP status by gRPC code (google.rpc.Code's documented HTTP mapping). */
const STATUS: Readonly<Partial<Record<Code, number>>> = {
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 400,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

/** The status of a reason whose code alone would say something else. */
const STATUS_BY_REASON: Readonly<Record<string, number>> = {
  // No upstream model: the proxy cannot serve (issue 20), not a bad request.
  MODEL_NOT_CONFIGURED: 503,
  MESSAGE_TOO_LARGE: 413,
};

/** OpenAI's error `type` for an HTTP status. */
export function errorTypeOf(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** A failure the proxy itself answers with (routing, body), before any RPC. */
export function proxyFailure(
  status: number,
  reason: string,
  message: string,
  metadata: Readonly<Record<string, string>> = {},
): OpenAiFailure {
  return {
    status,
    message,
    type: errorTypeOf(status),
    param: metadata['field'] ?? null,
    code: reason,
    metadata,
  };
}

/**
 * Any failure (an RPC's ConnectError, an EngramError of the proxy's own checks, anything else) as
 * an OpenAI error: code, reason, metadata and retry delay kept; an error without an ErrorInfo is
 * a 500 whose message says only that.
 */
export function openAiFailureOf(error: unknown): OpenAiFailure {
  let code: Code;
  let reason: string | undefined;
  let message: string;
  let metadata: Record<string, string>;
  let retryMs: number | undefined;
  if (isEngramError(error)) {
    ({ code, reason, message } = error);
    metadata = Object.fromEntries(Object.entries(error.metadata).map(([k, v]) => [k, String(v)]));
    retryMs = error.retryDelayMs;
  } else {
    const failure = ConnectError.from(error);
    const info = errorInfoOf(failure);
    if (info === undefined && (failure.code === Code.Internal || failure.code === Code.Unknown)) {
      return proxyFailure(500, 'INTERNAL', 'internal error');
    }
    code = failure.code;
    reason = info?.reason;
    message = failure.rawMessage;
    metadata = { ...(info?.metadata ?? {}) };
    const delay = failure.findDetails(RetryInfoSchema)[0]?.retryDelay;
    if (delay !== undefined) retryMs = Number(delay.seconds) * 1000 + delay.nanos / 1e6;
  }
  const status = (reason === undefined ? undefined : STATUS_BY_REASON[reason]) ?? STATUS[code] ?? 500;
  return {
    ...proxyFailure(status, reason ?? '', message, metadata),
    code: reason ?? null,
    ...(retryMs === undefined ? {} : { retryAfterSeconds: Math.max(1, Math.ceil(retryMs / 1000)) }),
  };
}

/** The JSON body of a failure. */
export function errorBodyOf(failure: OpenAiFailure) {
  const { message, type, param, code, metadata } = failure;
  return { error: { message, type, param, code, metadata } };
}
