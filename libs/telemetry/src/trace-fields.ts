import { context, isSpanContextValid, trace, type Span } from '@opentelemetry/api';

/** `trace_id` and `span_id` of a span, for log lines; empty when the span has no valid ids. */
export function traceFields(span: Span | undefined): { trace_id?: string; span_id?: string } {
  const spanContext = span?.spanContext();
  if (spanContext === undefined || !isSpanContextValid(spanContext)) return {};
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}

/** Log fields of the active span (pino `mixin`). */
export function activeTraceFields(): { trace_id?: string; span_id?: string } {
  return traceFields(trace.getSpan(context.active()));
}
