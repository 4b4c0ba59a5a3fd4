/**
 * @engram/telemetry: structured logs and Prometheus metrics, shared by the server runtime and by
 * the libraries that report their own work (model calls, embedding batches). One registry per
 * process; log lines carry the active span's ids and never contents.
 */
export { createLogger, resolveLogFormat, type LogFormat, type Logger } from './logger.js';
export {
  admissionMetrics,
  embeddingMetrics,
  grpcCodeName,
  indexPassMetrics,
  metricsRegistry,
  modelMetrics,
  registerSampledGauge,
  rpcMetrics,
  scopedMetrics,
  searchStageMetrics,
  type AdmissionMetrics,
  type EmbeddingMetrics,
  type GaugeSample,
  type IndexPassMetrics,
  type ModelMetrics,
  type Registry,
  type RpcMetrics,
  type SampledGaugeSpec,
  type SearchStageMetrics,
  type ServiceMetrics,
} from './metrics.js';
export { activeTraceFields, traceFields } from './trace-fields.js';
