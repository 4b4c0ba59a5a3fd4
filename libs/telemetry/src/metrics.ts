import { Code } from '@connectrpc/connect';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export type { Registry };

let processRegistry: Registry | undefined;

/**
 * The one Prometheus registry of this process, with the default process metrics (CPU, memory,
 * event loop, GC). Every server, worker and library of the process registers here, so the
 * all-in-one process exposes one coherent `/metrics`.
 */
export function metricsRegistry(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** A metric of `registry` by name, created on first use (two servers in one process share it). */
function metric<M>(registry: Registry, name: string, create: () => M): M {
  return (registry.getSingleMetric(name) as M | undefined) ?? create();
}

/** RPC latency buckets, seconds: from a cache hit to a long extraction. */
const RPC_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** What the server interceptor records per call. */
export interface RpcMetrics {
  /** `engram_rpc_requests_total{method, code}`. */
  readonly requests: Counter<'method' | 'code'>;
  /** `engram_rpc_duration_seconds{method, code}`: until the response (or its stream) ended. */
  readonly duration: Histogram<'method' | 'code'>;
}

/** The RPC metrics of `registry` (the process registry by default). */
export function rpcMetrics(registry: Registry = metricsRegistry()): RpcMetrics {
  return {
    requests: metric(
      registry,
      'engram_rpc_requests_total',
      () =>
        new Counter({
          name: 'engram_rpc_requests_total',
          help: 'RPCs handled, by method (package.Service/Method) and gRPC status code.',
          labelNames: ['method', 'code'] as const,
          registers: [registry],
        }),
    ),
    duration: metric(
      registry,
      'engram_rpc_duration_seconds',
      () =>
        new Histogram({
          name: 'engram_rpc_duration_seconds',
          help: 'RPC latency until the response or its stream ended, by method and gRPC status code.',
          labelNames: ['method', 'code'] as const,
          buckets: RPC_BUCKETS,
          registers: [registry],
        }),
    ),
  };
}

/** The canonical gRPC name of a status code (`OK`, `INVALID_ARGUMENT`, `CANCELLED`, …). */
export function grpcCodeName(code: Code | undefined): string {
  if (code === undefined) return 'OK';
  if (code === Code.Canceled) return 'CANCELLED';
  const name = Code[code] as string | undefined;
  return name === undefined ? String(code) : name.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
}

/** Model call latency buckets, seconds. */
const MODEL_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120];

/** What a model client records per call. */
export interface ModelMetrics {
  /** `engram_model_call_duration_seconds{model, operation, outcome}`, outcome `ok` or `error`. */
  readonly duration: Histogram<'model' | 'operation' | 'outcome'>;
  /** `engram_model_tokens_total{model, operation, kind}`, kind `prompt` or `completion`. */
  readonly tokens: Counter<'model' | 'operation' | 'kind'>;
}

/** The chat-model metrics of `registry` (the process registry by default). */
export function modelMetrics(registry: Registry = metricsRegistry()): ModelMetrics {
  return {
    duration: metric(
      registry,
      'engram_model_call_duration_seconds',
      () =>
        new Histogram({
          name: 'engram_model_call_duration_seconds',
          help: 'Chat model call latency (streams: until the last chunk), by model, operation and outcome.',
          labelNames: ['model', 'operation', 'outcome'] as const,
          buckets: MODEL_BUCKETS,
          registers: [registry],
        }),
    ),
    tokens: metric(
      registry,
      'engram_model_tokens_total',
      () =>
        new Counter({
          name: 'engram_model_tokens_total',
          help: 'Tokens reported by the chat model, by model, operation and kind (prompt, completion).',
          labelNames: ['model', 'operation', 'kind'] as const,
          registers: [registry],
        }),
    ),
  };
}

/** What an embedder records per batch. */
export interface EmbeddingMetrics {
  /** `engram_embedding_texts_total{model}`: its rate is the embedding throughput. */
  readonly texts: Counter<'model'>;
  /** `engram_embedding_batch_duration_seconds{model, outcome}`. */
  readonly duration: Histogram<'model' | 'outcome'>;
}

/** The embedding metrics of `registry` (the process registry by default). */
export function embeddingMetrics(registry: Registry = metricsRegistry()): EmbeddingMetrics {
  return {
    texts: metric(
      registry,
      'engram_embedding_texts_total',
      () =>
        new Counter({
          name: 'engram_embedding_texts_total',
          help: 'Texts embedded, by model (rate = throughput).',
          labelNames: ['model'] as const,
          registers: [registry],
        }),
    ),
    duration: metric(
      registry,
      'engram_embedding_batch_duration_seconds',
      () =>
        new Histogram({
          name: 'engram_embedding_batch_duration_seconds',
          help: 'Latency of one embedding batch, by model and outcome.',
          labelNames: ['model', 'outcome'] as const,
          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
          registers: [registry],
        }),
    ),
  };
}

/** What a process's admission gates record (`libs/runtime` `ProcessAdmission`, decision 0033). */
export interface AdmissionMetrics {
  /** `engram_admission_admitted_total{method}`: calls that got an execution slot. */
  readonly admitted: Counter<'method'>;
  /** `engram_admission_refused_total{method, limit}`: OVERLOADED answers, by the limit that refused. */
  readonly refused: Counter<'method' | 'limit'>;
  /** `engram_admission_queue_wait_seconds{method}`: how long admitted calls waited for their slot. */
  readonly queueWait: Histogram<'method'>;
}

/** The admission metrics of `registry` (the process registry by default). */
export function admissionMetrics(registry: Registry = metricsRegistry()): AdmissionMetrics {
  return {
    admitted: metric(
      registry,
      'engram_admission_admitted_total',
      () =>
        new Counter({
          name: 'engram_admission_admitted_total',
          help: 'Calls admitted by the process admission gate (now or after queueing), by method.',
          labelNames: ['method'] as const,
          registers: [registry],
        }),
    ),
    refused: metric(
      registry,
      'engram_admission_refused_total',
      () =>
        new Counter({
          name: 'engram_admission_refused_total',
          help: 'Calls refused OVERLOADED by the process admission gate, by method and limit (queue_full, queue_wait, queue_timeout).',
          labelNames: ['method', 'limit'] as const,
          registers: [registry],
        }),
    ),
    queueWait: metric(
      registry,
      'engram_admission_queue_wait_seconds',
      () =>
        new Histogram({
          name: 'engram_admission_queue_wait_seconds',
          help: 'Time admitted calls waited in the admission queue, by method.',
          labelNames: ['method'] as const,
          buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
          registers: [registry],
        }),
    ),
  };
}

/** Search stage buckets, seconds: from a sub-millisecond merge to a query embedding under load. */
const STAGE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

/** What Search records per call (retrieval). */
export interface SearchStageMetrics {
  /** `engram_search_stage_seconds{stage}`: the time of each stage of one Search (search.proto `SearchStageTiming`). */
  readonly duration: Histogram<'stage'>;
}

/** The Search stage metrics of `registry` (the process registry by default). */
export function searchStageMetrics(registry: Registry = metricsRegistry()): SearchStageMetrics {
  return {
    duration: metric(
      registry,
      'engram_search_stage_seconds',
      () =>
        new Histogram({
          name: 'engram_search_stage_seconds',
          help: 'Time of each stage of one Search (plan, embed, candidates, vectors, hydration, rerank, ranking, response).',
          labelNames: ['stage'] as const,
          buckets: STAGE_BUCKETS,
          registers: [registry],
        }),
    ),
  };
}

/** Indexer pass buckets, seconds: from an empty lease to a dense batch of long passages. */
const PASS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** What the indexer records per pass (retrieval). */
export interface IndexPassMetrics {
  /**
   * `engram_index_pass_stage_seconds{loop, stage}`: the time of each stage of one indexer pass that
   * had work. Loops: `conversational`, `bulk`, `all` (outbox loops), `dense` (the dense stage).
   * Outbox stages: lease, plan, tokenize, write, complete; dense stages: select, plan, embed, write.
   */
  readonly duration: Histogram<'loop' | 'stage'>;
  /** `engram_index_pass_rows_total{loop}`: outbox rows (or dense points) a pass handled. */
  readonly rows: Counter<'loop'>;
}

/** The indexer pass metrics of `registry` (the process registry by default). */
export function indexPassMetrics(registry: Registry = metricsRegistry()): IndexPassMetrics {
  return {
    duration: metric(
      registry,
      'engram_index_pass_stage_seconds',
      () =>
        new Histogram({
          name: 'engram_index_pass_stage_seconds',
          help: 'Time of each stage of one indexer pass with work, by loop (conversational, bulk, all, dense) and stage.',
          labelNames: ['loop', 'stage'] as const,
          buckets: PASS_BUCKETS,
          registers: [registry],
        }),
    ),
    rows: metric(
      registry,
      'engram_index_pass_rows_total',
      () =>
        new Counter({
          name: 'engram_index_pass_rows_total',
          help: 'Outbox rows (dense stage: pending points) handled by indexer passes, by loop.',
          labelNames: ['loop'] as const,
          registers: [registry],
        }),
    ),
  };
}

/** One sample of a gauge: its labels and value. */
export interface GaugeSample {
  readonly labels?: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A gauge read at scrape time (e.g. a count in the source of truth). */
export interface SampledGaugeSpec {
  /** `engram_…`, base units (seconds), no `_total`. */
  readonly name: string;
  readonly help: string;
  readonly labelNames?: readonly string[];
  /** Current values; a sampler that throws contributes nothing to this scrape. */
  readonly sample: () => Promise<readonly GaugeSample[]>;
}

const samplers = new WeakMap<Gauge, Set<SampledGaugeSpec['sample']>>();

/**
 * Registers a gauge whose values are read at each scrape. Several sources of one gauge (two
 * servers of one kind in a process) add up. Returns a function that removes this source.
 */
export function registerSampledGauge(registry: Registry, spec: SampledGaugeSpec): () => void {
  const gauge = metric(registry, spec.name, () => {
    const created: Gauge = new Gauge({
      name: spec.name,
      help: spec.help,
      labelNames: spec.labelNames ?? [],
      registers: [registry],
      async collect() {
        const results = await Promise.allSettled([...(samplers.get(created) ?? [])].map((s) => s()));
        created.reset();
        for (const result of results) {
          if (result.status !== 'fulfilled') continue;
          for (const { labels, value } of result.value) {
            if (labels === undefined) created.inc(value);
            else created.inc(labels, value);
          }
        }
      },
    });
    samplers.set(created, new Set());
    return created;
  });
  const sources = samplers.get(gauge);
  if (sources === undefined) throw new Error(`metric ${spec.name} exists and is not a sampled gauge`);
  sources.add(spec.sample);
  return () => {
    sources.delete(spec.sample);
  };
}

/**
 * The metrics a service process offers its services: register gauges read at scrape time. The
 * process removes them at shutdown (their sources, e.g. a database, close with it).
 */
export interface ServiceMetrics {
  readonly registry: Registry;
  gauge(spec: SampledGaugeSpec): void;
}

/** A {@link ServiceMetrics} whose gauges `dispose` removes. */
export function scopedMetrics(registry: Registry): ServiceMetrics & { dispose(): void } {
  const removers: (() => void)[] = [];
  return {
    registry,
    gauge(spec) {
      removers.push(registerSampledGauge(registry, spec));
    },
    dispose() {
      for (const remove of removers.splice(0)) remove();
    },
  };
}
