import { randomUUID } from 'node:crypto';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { SpanKind, context, trace } from '@opentelemetry/api';
import { EngramError, isEngramError, loggableError, toConnectError } from '@engram/errors';
import type { Logger, RpcMetrics } from '@engram/telemetry';
import { grpcCodeName } from '@engram/telemetry';
import { principalKey, type Authenticator } from './auth.js';
import { requestIdKey } from './context-keys.js';
import {
  endRpcSpan,
  engramTracer,
  extractTraceContext,
  rpcAttributes,
  traceContextKey,
  traceFields,
} from './tracing.js';

/** Options of {@link createServerInterceptor}. */
export interface ServerInterceptorOptions {
  readonly authenticate: Authenticator;
  readonly logger: Logger;
  /** `ErrorInfo.domain` for a service's fully-qualified name, e.g. `engram.governance`. */
  readonly domainOf: (serviceTypeName: string) => string;
  /** Services reachable without a credential (health, reflection). */
  readonly publicServices: ReadonlySet<string>;
  /** Most messages a client stream may send. */
  readonly maxStreamMessages: number;
  /** Where to count calls and their latency; none, no metrics. */
  readonly metrics?: RpcMetrics;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Caps the number of messages a client stream may send (RESOURCE_EXHAUSTED beyond). */
async function* limitStream<T>(messages: AsyncIterable<T>, limit: number): AsyncGenerator<T> {
  let count = 0;
  for await (const message of messages) {
    count += 1;
    if (count > limit) {
      throw new EngramError(
        Code.ResourceExhausted,
        'STREAM_TOO_LONG',
        `client stream exceeds ${limit} messages`,
        { limit },
      );
    }
    yield message;
  }
}

/**
 * The one server interceptor, outermost first: trace context (a SERVER span, child of the
 * caller's `traceparent`, active while the handler runs), request id, authentication (except
 * public services), client-stream limits, the error boundary, and at the end of each call (of its
 * stream, for streaming responses) one structured log line, the span's status and the RPC
 * metrics, all with the code the client sees.
 */
export function createServerInterceptor(options: ServerInterceptorOptions): Interceptor {
  const { authenticate, logger, domainOf, publicServices, maxStreamMessages, metrics } = options;
  const tracer = engramTracer();
  return (next) => (req) => {
    const started = performance.now();
    const method = `${req.service.typeName}/${req.method.name}`;
    const parent = extractTraceContext(req.header);
    const span = tracer.startSpan(
      method,
      { kind: SpanKind.SERVER, attributes: rpcAttributes(req.service.typeName, req.method.name) },
      parent,
    );
    const traceContext = trace.setSpan(parent, span);
    req.contextValues.set(traceContextKey, traceContext);
    const header = req.header.get('x-request-id');
    const requestId = header !== null && REQUEST_ID.test(header) ? header : randomUUID();
    req.contextValues.set(requestIdKey, requestId);
    const domain = domainOf(req.service.typeName);
    let subject: string | undefined;
    let tenant: string | undefined;
    let finished = false;

    const finish = (code: Code | undefined, cause?: unknown) => {
      if (finished) return;
      finished = true;
      const seconds = (performance.now() - started) / 1000;
      const line = {
        requestId,
        method,
        code: code === undefined ? 'OK' : Code[code],
        durationMs: Math.round(seconds * 100_000) / 100,
        subject,
        tenant,
        // Explicit: a stream ends outside the handler's async context.
        ...traceFields(span),
      };
      // Without SQL text, parameters or quoted values (finding 11): identifiers only.
      if (cause !== undefined) {
        logger.error({ ...line, err: loggableError(cause) }, 'rpc failed with an internal error');
      } else logger.info(line, 'rpc');
      const labels = { method, code: grpcCodeName(code) };
      metrics?.requests.inc(labels);
      metrics?.duration.observe(labels, seconds);
      endRpcSpan(span, code, SpanKind.SERVER);
    };
    const fail = (error: unknown): ConnectError => {
      // A handler that threw a plain AbortError because its signal fired really failed with the
      // signal's reason (DEADLINE_EXCEEDED, CANCELED, or shutdown).
      const cause: unknown =
        req.signal.aborted && !isEngramError(error) && !(error instanceof ConnectError)
          ? req.signal.reason
          : error;
      const mapped = toConnectError(cause, { domain, requestId });
      finish(mapped.error.code, mapped.internal ? cause : undefined);
      return mapped.error;
    };

    const handle = async () => {
      try {
        if (!publicServices.has(req.service.typeName)) {
          const principal = await authenticate(req.header.get('authorization'));
          subject = principal.subject;
          tenant = principal.tenantId;
          req.contextValues.set(principalKey, principal);
        }
        const limited: typeof req = req.stream
          ? { ...req, message: limitStream(req.message, maxStreamMessages) }
          : req;
        const res = await next(limited);
        res.header.set('x-request-id', requestId);
        if (!res.stream) {
          finish(undefined);
          return res;
        }
        const messages = res.message[Symbol.asyncIterator]();
        async function* guarded() {
          try {
            for (;;) {
              // The handler's generator resumes inside the call's trace context.
              const result = await context.with(traceContext, () => messages.next());
              if (result.done === true) break;
              yield result.value;
            }
            finish(undefined);
          } catch (error) {
            throw fail(error);
          } finally {
            if (!finished) {
              // The client went away before the end of the stream.
              finish(Code.Canceled);
              await messages.return?.();
            }
          }
        }
        return { ...res, message: guarded() };
      } catch (error) {
        throw fail(error);
      }
    };
    return context.with(traceContext, handle);
  };
}
