import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { errors } from '@engram/errors';
import { describeOpenAIError, retryAfterMs, retryableOpenAIError } from '@engram/errors/openai';
import {
  checkOpen,
  checkTexts,
  measureEmbedding,
  normalize,
  type EmbedOptions,
  type Embedder,
  type EmbeddingKind,
  type EmbeddingResult,
} from './embedder.js';

/** Options of {@link OpenAIEmbedder}; defaults are filled in by its constructor. */
export interface OpenAIEmbedderOptions {
  /** The API root, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`. */
  readonly baseURL: string;
  /** Sent as a bearer token. Servers without authentication accept any value. */
  readonly apiKey: string;
  /** The provider's model name, e.g. `text-embedding-3-small`. */
  readonly model: string;
  /** The vector length the model returns; every response is checked against it. */
  readonly dimensions: number;
  /**
   * Also send `dimensions` in the request, for models that can shorten their vectors
   * (`text-embedding-3-*`). Default `false`: many OpenAI-compatible servers reject the field.
   */
  readonly requestDimensions?: boolean;
  /** Texts per request. Default 64. */
  readonly batchSize?: number;
  /** Retries of a request after a 408, 429 or 5xx answer, a timeout or a connection error. Default 4. */
  readonly maxRetries?: number;
  /** Backoff before the first retry, doubling per retry with full jitter. Default 500 ms. */
  readonly initialBackoffMs?: number;
  /** Upper bound of one backoff, including a server's `Retry-After`. Default 8000 ms. */
  readonly maxBackoffMs?: number;
  /** Timeout of one HTTP request. Default 30000 ms. */
  readonly timeoutMs?: number;
  /** Prefixed to texts embedded as `query` (some models want an instruction). Default: none. */
  readonly queryInstruction?: string;
}

/**
 * An {@link Embedder} over any OpenAI-compatible `/embeddings` endpoint (OpenAI, Azure-style
 * gateways, vLLM, Ollama, LM Studio...). Texts go in batches of `batchSize`, one request at a time.
 *
 * Retries are our own loop (the client's `maxRetries` is 0): the client's backoff sleep cannot be
 * cancelled and obeys any `Retry-After`, while this loop aborts with the caller's signal, caps the
 * server's delay at `maxBackoffMs`, and retries only 408, 429, 5xx, timeouts and connection errors.
 * When retries run out, or on any other error status, `embed` rejects with UNAVAILABLE
 * (`dependency: embeddings`); a vector of the wrong length rejects with INVALID_ARGUMENT.
 * Vectors are re-normalized (not every compatible server returns unit vectors). The remote
 * model's input limit is unknown here: `truncated` is always `false`; the server truncates or
 * rejects over-long input (a 4xx, reported as UNAVAILABLE with its status).
 */
export class OpenAIEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  private readonly client: OpenAI;
  private readonly providerModel: string;
  private readonly requestDimensions: boolean;
  private readonly batchSize: number;
  private readonly maxRetries: number;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly queryInstruction: string;
  private closed = false;

  constructor(options: OpenAIEmbedderOptions) {
    if (!Number.isInteger(options.dimensions) || options.dimensions <= 0) {
      throw errors.fieldInvalid('dimensions', 'must be a positive integer');
    }
    const batchSize = options.batchSize ?? 64;
    if (!Number.isInteger(batchSize) || batchSize <= 0) {
      throw errors.fieldInvalid('batchSize', 'must be a positive integer');
    }
    this.providerModel = options.model;
    this.model = `openai:${options.model}`;
    this.dimensions = options.dimensions;
    this.requestDimensions = options.requestDimensions ?? false;
    this.batchSize = batchSize;
    this.maxRetries = options.maxRetries ?? 4;
    this.initialBackoffMs = options.initialBackoffMs ?? 500;
    this.maxBackoffMs = options.maxBackoffMs ?? 8000;
    this.queryInstruction = options.queryInstruction ?? '';
    this.client = new OpenAI({
      baseURL: options.baseURL,
      apiKey: options.apiKey,
      maxRetries: 0,
      timeout: options.timeoutMs ?? 30_000,
    });
  }

  async embed(
    texts: readonly string[],
    kind: EmbeddingKind,
    options: EmbedOptions = {},
  ): Promise<EmbeddingResult> {
    const { signal } = options;
    checkOpen(this.closed, this.model);
    checkTexts(texts);
    signal?.throwIfAborted();
    const prefix = kind === 'query' ? this.queryInstruction : '';
    const vectors: Float32Array[] = [];
    await measureEmbedding(this.model, texts.length, async () => {
      for (let start = 0; start < texts.length; start += this.batchSize) {
        const batch = texts.slice(start, start + this.batchSize).map((text) => prefix + text);
        vectors.push(...(await this.embedBatch(batch, signal)));
      }
    });
    return {
      vectors,
      truncated: vectors.map(() => false),
      model: this.model,
      dimensions: this.dimensions,
    };
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private async embedBatch(input: string[], signal: AbortSignal | undefined): Promise<Float32Array[]> {
    const response = await this.request(input, signal);
    if (response.data.length !== input.length) {
      throw errors.unavailable(
        'embeddings',
        `embedding service returned ${response.data.length} vectors for ${input.length} texts`,
      );
    }
    const vectors = new Array<Float32Array>(input.length);
    for (const item of response.data) {
      const embedding = item.embedding as unknown;
      if (!Array.isArray(embedding) || !embedding.every((x) => typeof x === 'number')) {
        throw errors.unavailable('embeddings', 'embedding service returned a vector that is not numbers');
      }
      if (embedding.length !== this.dimensions) {
        throw errors.invalidArgument(
          'FIELD_INVALID',
          `model ${this.providerModel} returned ${embedding.length}-dimensional vectors, ` +
            `but ${this.dimensions} are configured`,
          { field: 'dimensions', expected: this.dimensions, actual: embedding.length },
        );
      }
      if (!Number.isInteger(item.index) || item.index < 0 || item.index >= input.length) {
        throw errors.unavailable('embeddings', `embedding service returned index ${item.index}`);
      }
      vectors[item.index] = normalize(Float32Array.from(embedding));
    }
    // Sparse until every index arrived once.
    if (Object.keys(vectors).length !== input.length) {
      throw errors.unavailable('embeddings', 'embedding service returned duplicate indexes');
    }
    return vectors;
  }

  private async request(input: string[], signal: AbortSignal | undefined) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.client.embeddings.create(
          {
            model: this.providerModel,
            input,
            // Compatible servers do not all decode base64, the client's default.
            encoding_format: 'float',
            ...(this.requestDimensions ? { dimensions: this.dimensions } : {}),
          },
          { signal },
        );
      } catch (error) {
        if (signal?.aborted === true) throw signal.reason;
        if (!retryableOpenAIError(error) || attempt >= this.maxRetries) {
          const tries = attempt + 1;
          throw errors.unavailable(
            'embeddings',
            `embedding service ${this.client.baseURL} failed after ${tries} ${tries === 1 ? 'attempt' : 'attempts'}: ${describeOpenAIError(error)}`,
            { cause: error },
          );
        }
        const backoff = Math.random() * Math.min(this.maxBackoffMs, this.initialBackoffMs * 2 ** attempt);
        const delay = Math.min(this.maxBackoffMs, retryAfterMs(error) ?? backoff);
        try {
          await sleep(delay, undefined, signal === undefined ? undefined : { signal });
        } catch {
          throw signal?.reason;
        }
      }
    }
  }
}
