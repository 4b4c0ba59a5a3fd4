import { z } from 'zod';
import { llmEnvShape } from '@engram/llm';
import {
  envEnum,
  envInt,
  envString,
  parseEnv,
  serviceEnvSchema,
  ADAPTIVE_MIN_SLOTS,
  type ProcessAdmissionLimits,
} from '@engram/runtime';
import { storeEnvShape } from '@engram/store';

/** Port of the ingestion service when it runs as its own process (`ENGRAM_PORT` overrides). */
export const DEFAULT_PORT = 50062;

/** Ingestion's own settings, shared with the all-in-one process. */
export const ingestionEnvShape = {
  ...storeEnvShape,
  ...llmEnvShape,
  /** Largest document in one IngestDocument request, bytes (the API documents 4 MiB). */
  ENGRAM_MAX_DOCUMENT_BYTES: envInt(4 * 1024 * 1024, 1024, 4 * 1024 * 1024),
  /** Default chunk size in code points when a request does not set one (unset: the measured default). */
  ENGRAM_CHUNK_SIZE: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.coerce
      .number({ error: 'expected an integer from 200 to 8000' })
      .int({ error: 'expected an integer from 200 to 8000' })
      .min(200, { error: 'expected an integer from 200 to 8000' })
      .max(8000, { error: 'expected an integer from 200 to 8000' })
      .optional(),
  ),
  /** Redact secrets (API keys, passwords, card and ID numbers) before anything is stored. */
  ENGRAM_REDACT_SECRETS: envEnum(['on', 'off'], 'on'),
  /** TIME_GAP boundary: a silence longer than this closes the open tail, minutes. */
  ENGRAM_BOUNDARY_GAP_MINUTES: envInt(30, 1, 7 * 24 * 60),
  /** TOKEN_CAP boundary: most o200k_base tokens in one MemCell. */
  ENGRAM_BOUNDARY_TOKEN_CAP: envInt(8_000, 100, 200_000),
  /** MESSAGE_CAP boundary: most messages in one MemCell. */
  ENGRAM_BOUNDARY_MESSAGE_CAP: envInt(50, 2, 1_000),
  /** Extraction attempts per MemCell before it becomes FAILED. */
  ENGRAM_EXTRACTION_MAX_ATTEMPTS: envInt(5, 1, 100),
  /** Document ingestions (IngestDocument, StreamIngestDocument) one principal may run at once; 0: no limit. */
  ENGRAM_INGEST_DOCUMENT_CONCURRENCY: envInt(2, 0, 1_000),
  /** Document ingestions one principal may start per minute (burst: ten seconds' worth); 0: no limit. */
  ENGRAM_INGEST_DOCUMENT_RATE_PER_MIN: envInt(600, 0, 1_000_000),
  /** AppendMessages calls one principal may have in flight at once; 0: no limit. */
  ENGRAM_INGEST_APPEND_CONCURRENCY: envInt(8, 0, 1_000),
  /** AppendMessages calls one principal may start per minute (burst: ten seconds' worth); 0: no limit. */
  ENGRAM_INGEST_APPEND_RATE_PER_MIN: envInt(1_200, 0, 1_000_000),
  /**
   * AppendMessages calls this process executes at once, all callers together (decision 0033);
   * `0` turns the process admission off. Eight on two cores: an append is a short transaction
   * plus redaction and token counting.
   */
  ENGRAM_APPEND_MAX_CONCURRENT: envInt(8, 0, 10_000),
  /** AppendMessages calls that may wait for a slot (FIFO); beyond, RESOURCE_EXHAUSTED `OVERLOADED`. */
  ENGRAM_APPEND_MAX_QUEUE: envInt(64, 0, 100_000),
  /** The longest an AppendMessages may wait for a slot, ms (one expected to wait longer is refused at once). */
  ENGRAM_APPEND_MAX_QUEUE_WAIT_MS: envInt(250, 0, 60_000),
  /**
   * The average AppendMessages execution time the process admission steers for, ms (decision 0046): its
   * slots shrink while executions are slower (down to two) and grow back while they are faster
   * and calls wait. Set it above the method's execution time on an idle machine; `0` keeps
   * `ENGRAM_APPEND_MAX_CONCURRENT` slots.
   */
  ENGRAM_APPEND_TARGET_EXECUTION_MS: envInt(0, 0, 600_000),
} as const;

/** The process admission of AppendMessages (decision 0033) of a configuration. */
export function appendAdmissionLimits(
  config: Pick<
    IngestionDataConfig,
    | 'ENGRAM_APPEND_MAX_CONCURRENT'
    | 'ENGRAM_APPEND_MAX_QUEUE'
    | 'ENGRAM_APPEND_MAX_QUEUE_WAIT_MS'
    | 'ENGRAM_APPEND_TARGET_EXECUTION_MS'
  >,
): ProcessAdmissionLimits {
  return {
    maxConcurrent: config.ENGRAM_APPEND_MAX_CONCURRENT,
    maxQueue: config.ENGRAM_APPEND_MAX_QUEUE,
    maxQueueWaitMs: config.ENGRAM_APPEND_MAX_QUEUE_WAIT_MS,
    targetExecutionMs: config.ENGRAM_APPEND_TARGET_EXECUTION_MS,
    minConcurrent: ADAPTIVE_MIN_SLOTS,
  };
}

/** The default niceness of the topic-shift detector's thread (decision 0047). */
export const SEGMENTER_EMBED_NICE = 10;

/** Where the standalone ingestion process reaches governance (the all-in-one calls it in-process). */
export const governanceEnvShape = {
  ENGRAM_GOVERNANCE_URL: envString(),
  /** The local embedding model's directory, for the offline topic-shift detector (default: the workspace's). */
  ENGRAM_MODEL_DIR: envString(),
  /**
   * Run the offline topic-shift detector's embedding model on a worker thread of its own (`on`), so
   * that its inference never holds the event loop that serves AppendMessages, GetSession and
   * ListMessages; `off` runs it on the event loop. Only the standalone process has its own model
   * (the all-in-one shares retrieval's).
   */
  ENGRAM_SEGMENTER_EMBED_THREAD: envEnum(['on', 'off'], 'on'),
  /**
   * The niceness of that thread on Linux (0–19, decision 0047): the detector judges open tails in
   * the background, so when the cores are short the kernel gives them to the calls first. `0`
   * schedules it like everything else.
   */
  ENGRAM_SEGMENTER_EMBED_NICE: envInt(SEGMENTER_EMBED_NICE, 0, 19),
} as const;

const schema = serviceEnvSchema(DEFAULT_PORT).extend(ingestionEnvShape).extend(governanceEnvShape);

export type IngestionConfig = z.output<typeof schema>;
export type IngestionDataConfig = z.output<z.ZodObject<typeof ingestionEnvShape>>;

/** Parses the environment once, at start; a bad variable fails with its name. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): IngestionConfig {
  return parseEnv(schema, env);
}
