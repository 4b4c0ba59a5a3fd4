import { errors } from '@engram/errors';
import { embeddingMetrics } from '@engram/telemetry';

/**
 * What a text is embedded as. Retrieval models may embed a search query differently from the
 * passage it should find (e.g. an instruction prefix); documents are everything that is stored.
 */
export type EmbeddingKind = 'query' | 'document';

/** Per-call options of {@link Embedder.embed}. */
export interface EmbedOptions {
  /** Cancels the call: checked between texts (local) or passed to the HTTP request (remote). */
  readonly signal?: AbortSignal;
}

/** The vectors of one {@link Embedder.embed} call, in the order of its texts. */
export interface EmbeddingResult {
  /** One L2-normalized vector of length {@link dimensions} per text. */
  readonly vectors: Float32Array[];
  /**
   * Per text: `true` when it exceeded the model's input limit and only its beginning was embedded.
   * Reported so callers can chunk or flag the text; never silent.
   */
  readonly truncated: boolean[];
  /** The model id that produced the vectors (see {@link Embedder.model}). */
  readonly model: string;
  /** The length of every vector. */
  readonly dimensions: number;
}

/**
 * The port through which Engram turns text into dense vectors. Vectors of different models (or of
 * one model with a different dimension) are never comparable: every stored vector records
 * {@link model} and {@link dimensions}, and a collection holds the vectors of exactly one pair.
 */
export interface Embedder {
  /** A stable id of the model and its variant, e.g. `BAAI/bge-small-zh-v1.5@q8` or `openai:<model>`. */
  readonly model: string;
  /** The length of the vectors this embedder returns. */
  readonly dimensions: number;
  /**
   * Embeds `texts` (each non-empty) as queries or documents. An empty array gives an empty result.
   * Rejects with an `EngramError` (INVALID_ARGUMENT for bad input or a dimension mismatch,
   * UNAVAILABLE when the model cannot be reached, FAILED_PRECONDITION when the local model files
   * are missing or fail verification), or with `signal.reason` when aborted.
   */
  embed(texts: readonly string[], kind: EmbeddingKind, options?: EmbedOptions): Promise<EmbeddingResult>;
  /** Releases the model or client; `embed` rejects afterwards. Idempotent. */
  close(): Promise<void>;
}

/**
 * Runs one `embed` call's work for `texts` texts and records it in the process's metrics:
 * `engram_embedding_texts_total` (throughput) on success and the call's latency either way.
 */
export async function measureEmbedding<T>(model: string, texts: number, work: () => Promise<T>): Promise<T> {
  if (texts === 0) return work();
  const metrics = embeddingMetrics();
  const started = performance.now();
  try {
    const result = await work();
    metrics.texts.inc({ model }, texts);
    metrics.duration.observe({ model, outcome: 'ok' }, (performance.now() - started) / 1000);
    return result;
  } catch (error) {
    metrics.duration.observe({ model, outcome: 'error' }, (performance.now() - started) / 1000);
    throw error;
  }
}

/** Scales `vector` to unit length in place (a zero vector stays zero) and returns it. */
export function normalize(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const x of vector) sum += x * x;
  if (sum === 0) return vector;
  const scale = 1 / Math.sqrt(sum);
  for (let i = 0; i < vector.length; i++) vector[i] = (vector[i] ?? 0) * scale;
  return vector;
}

/** Validates the texts of an `embed` call; shared by the adapters so they agree on the contract. */
export function checkTexts(texts: readonly string[]): void {
  texts.forEach((text, i) => {
    if (typeof text !== 'string') throw errors.fieldInvalid(`texts[${i}]`, 'must be a string');
    if (text.length === 0) throw errors.fieldInvalid(`texts[${i}]`, 'must not be empty');
  });
}

/** Throws an `EngramError` when an embedder is used after `close()`. */
export function checkOpen(closed: boolean, model: string): void {
  if (closed) throw errors.failedPrecondition('STATE_CONFLICT', `embedder ${model} is closed`, { model });
}
