import { Code, ConnectError, createContextKey, type Interceptor } from '@connectrpc/connect';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  trace,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
export { activeTraceFields, traceFields } from '@engram/telemetry';

/** Where finished spans go: nowhere (ids are still generated and propagated), stdout, or OTLP/HTTP. */
export type TraceExporter = 'off' | 'console' | 'otlp';

/** Options of {@link initTracing}. */
export interface TracingOptions {
  /** `service.name` of the spans, e.g. `engram-governance`. */
  readonly serviceName: string;
  readonly exporter: TraceExporter;
  /** OTLP/HTTP base URL (`/v1/traces` is appended); default `http://localhost:4318`. */
  readonly otlpEndpoint?: string;
}

/** The process's tracing, once set up. */
export interface Tracing {
  readonly exporter: TraceExporter;
  /** Exports the spans still buffered (at shutdown). */
  flush(): Promise<void>;
}

let installed: Tracing | undefined;

/**
 * Sets up tracing for the whole process, once (later calls return the first set-up): a real
 * tracer provider, so that every RPC gets a trace id and span id even with the exporter off (the
 * ids correlate log lines across services), the AsyncLocalStorage context manager (the active
 * span follows async calls), and the W3C `traceparent` propagator.
 */
export function initTracing(options: TracingOptions): Tracing {
  if (installed !== undefined) return installed;
  const spanProcessors: SpanProcessor[] = [];
  if (options.exporter === 'console') spanProcessors.push(new SimpleSpanProcessor(new ConsoleSpanExporter()));
  if (options.exporter === 'otlp') {
    const base = (options.otlpEndpoint ?? 'http://localhost:4318').replace(/\/+$/, '');
    spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url: `${base}/v1/traces` })));
  }
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    spanProcessors,
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  installed = {
    exporter: options.exporter,
    flush: () => provider.forceFlush(),
  };
  return installed;
}

/** The tracer of Engram's own spans; sets up tracing without an exporter if nothing did yet. */
export function engramTracer(): Tracer {
  initTracing({ serviceName: 'engram', exporter: 'off' });
  return trace.getTracer('@engram/runtime');
}

const propagator = new W3CTraceContextPropagator();

const headerGetter: TextMapGetter<Headers> = {
  keys: (headers) => [...headers.keys()],
  get: (headers, key) => headers.get(key) ?? undefined,
};
const headerSetter: TextMapSetter<Headers> = {
  set: (headers, key, value) => {
    headers.set(key, value);
  },
};

/** The trace context carried by `traceparent`/`tracestate` headers (on top of `parent`). */
export function extractTraceContext(headers: Headers, parent: Context = ROOT_CONTEXT): Context {
  return propagator.extract(parent, headers, headerGetter);
}

/** Writes `traceparent` (and `tracestate`) for the span of `ctx` into `headers`; no span, no header. */
export function injectTraceContext(headers: Headers, ctx: Context = context.active()): void {
  propagator.inject(ctx, headers, headerSetter);
}

/**
 * The trace context of the call being handled (its server span), set by the server interceptor:
 * `forwardedCallOptions` reads it, so a downstream call joins the trace even where the async
 * context was lost.
 */
export const traceContextKey = createContextKey<Context | undefined>(undefined, {
  description: 'OpenTelemetry context of the call being handled',
});

/**
 * Runs `fn` outside any trace. A background loop re-armed from work that a request started (a
 * timer set inside a hand-off sweep woken by FlushSession) would otherwise inherit that
 * request's trace through the async context, and attribute all its later rounds to it.
 */
export function withoutTrace<T>(fn: () => T): T {
  return context.with(ROOT_CONTEXT, fn);
}

/** Server-side codes that mean the server failed (OpenTelemetry's gRPC conventions). */
const SERVER_ERROR_CODES: ReadonlySet<Code> = new Set([
  Code.Unknown,
  Code.DeadlineExceeded,
  Code.Unimplemented,
  Code.Internal,
  Code.Unavailable,
  Code.DataLoss,
]);

/** Ends a span with its gRPC status. Server spans count only server faults as errors. */
export function endRpcSpan(span: Span, code: Code | undefined, kind: SpanKind): void {
  span.setAttribute('rpc.grpc.status_code', code ?? 0);
  if (code !== undefined && (kind === SpanKind.CLIENT || SERVER_ERROR_CODES.has(code))) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: Code[code] });
  }
  span.end();
}

/** Attributes of an RPC span (OpenTelemetry RPC conventions). */
export function rpcAttributes(serviceTypeName: string, methodName: string) {
  return { 'rpc.system': 'grpc', 'rpc.service': serviceTypeName, 'rpc.method': methodName };
}

/**
 * The client side of tracing, for transports to other services (network or in-process): a
 * CLIENT span per call, child of the active span (or of the `traceparent` the call options
 * already carry), whose context is sent as `traceparent`. Streams are measured to their end.
 */
export function createClientTracingInterceptor(): Interceptor {
  return (next) => async (req) => {
    let parent = context.active();
    if (trace.getSpan(parent) === undefined && req.header.has('traceparent')) {
      parent = extractTraceContext(req.header, parent);
    }
    const span = engramTracer().startSpan(
      `${req.service.typeName}/${req.method.name}`,
      { kind: SpanKind.CLIENT, attributes: rpcAttributes(req.service.typeName, req.method.name) },
      parent,
    );
    const active = trace.setSpan(parent, span);
    injectTraceContext(req.header, active);
    const fail = (error: unknown) => {
      endRpcSpan(span, ConnectError.from(error).code, SpanKind.CLIENT);
    };
    try {
      const res = await context.with(active, () => next(req));
      if (!res.stream) {
        endRpcSpan(span, undefined, SpanKind.CLIENT);
        return res;
      }
      const messages = res.message;
      async function* measured() {
        let ended = false;
        try {
          yield* messages;
          ended = true;
          endRpcSpan(span, undefined, SpanKind.CLIENT);
        } catch (error) {
          ended = true;
          fail(error);
          throw error;
        } finally {
          // The caller stopped reading early.
          if (!ended) endRpcSpan(span, Code.Canceled, SpanKind.CLIENT);
        }
      }
      return { ...res, message: measured() };
    } catch (error) {
      fail(error);
      throw error;
    }
  };
}
