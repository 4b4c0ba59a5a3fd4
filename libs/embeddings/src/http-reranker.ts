import { setTimeout as sleep } from 'node:timers/promises';
import { errors } from '@engram/errors';
import { rerankerInvalid, unitScore, type RerankOptions, type Reranker } from './reranker.js';

/** The two request shapes of the common `/rerank` APIs. */
export type RerankApi = 'cohere' | 'tei';

export interface HttpRerankerOptions {
  /**
   * The endpoint root: `POST {baseURL}/rerank` is called, e.g. `http://127.0.0.1:8080` (TEI) or
   * `https://api.jina.ai/v1` / `http://127.0.0.1:8000/v1` (vLLM, Cohere-compatible).
   */
  readonly baseURL: string;
  /** The model name sent with `cohere` requests (TEI serves one model and ignores it). */
  readonly model: string;
  /** Sent as a bearer token when set. */
  readonly apiKey?: string;
  /**
   * `cohere` (default): `{model, query, documents, top_n}` → `{results: [{index, relevance_score}]}`
   * (Cohere, Jina, vLLM, Xinference, LocalAI). `tei`: `{query, texts, raw_scores: false,
   * truncate: true}` → `[{index, score}]` (Hugging Face text-embeddings-inference). Either answer
   * shape is accepted from both.
   */
  readonly api?: RerankApi;
  /** Timeout of one request. Default 10 000 ms. */
  readonly timeoutMs?: number;
  /** Retries after a 408, 429, 5xx answer or a connection error. Default 2. */
  readonly maxRetries?: number;
  /** Backoff before the first retry, doubling. Default 200 ms. */
  readonly initialBackoffMs?: number;
}

interface ScoredIndex {
  readonly index: number;
  readonly score: number;
}

/** Reads either answer shape; undefined when it is neither. */
function scoresOf(body: unknown): ScoredIndex[] | undefined {
  const list = Array.isArray(body)
    ? body
    : typeof body === 'object' && body !== null && Array.isArray((body as { results?: unknown }).results)
      ? (body as { results: unknown[] }).results
      : undefined;
  if (list === undefined) return undefined;
  const out: ScoredIndex[] = [];
  for (const item of list) {
    if (typeof item !== 'object' || item === null) return undefined;
    const { index, score, relevance_score: relevance } = item as Record<string, unknown>;
    const value = typeof relevance === 'number' ? relevance : score;
    if (typeof index !== 'number' || !Number.isInteger(index) || typeof value !== 'number') return undefined;
    out.push({ index, score: value });
  }
  return out;
}

function retryable(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * A {@link Reranker} over an HTTP `/rerank` endpoint. Every document must get exactly one score
 * back (an answer that misses or repeats an index is UNAVAILABLE with `failure: output_invalid`);
 * scores outside [0, 1] are taken as logits (`unitScore`). Transport failures, timeouts and error
 * statuses are UNAVAILABLE `DEPENDENCY_UNAVAILABLE` (`dependency: reranker`) after the retries.
 * Query and documents are never logged.
 */
export class HttpReranker implements Reranker {
  readonly model: string;
  readonly #url: string;
  readonly #options: HttpRerankerOptions;
  #closed = false;

  constructor(options: HttpRerankerOptions) {
    this.#options = options;
    this.#url = `${options.baseURL.replace(/\/+$/, '')}/rerank`;
    this.model = `http:${options.model}`;
  }

  async rerank(query: string, documents: readonly string[], options: RerankOptions = {}): Promise<number[]> {
    if (this.#closed) throw errors.failedPrecondition('STATE_CONFLICT', `reranker ${this.model} is closed`);
    if (documents.length === 0) return [];
    const {
      api = 'cohere',
      apiKey,
      model,
      timeoutMs = 10_000,
      maxRetries = 2,
      initialBackoffMs = 200,
    } = this.#options;
    const body =
      api === 'tei'
        ? { query, texts: documents, raw_scores: false, truncate: true }
        : { model, query, documents, top_n: documents.length, return_documents: false };
    let attempt = 0;
    for (;;) {
      options.signal?.throwIfAborted();
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout]);
      let response: Response;
      try {
        response = await fetch(this.#url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(apiKey === undefined || apiKey === '' ? {} : { authorization: `Bearer ${apiKey}` }),
          },
          body: JSON.stringify(body),
          signal,
        });
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason;
        if (attempt < maxRetries) {
          await sleep(initialBackoffMs * 2 ** attempt++, undefined, { signal: options.signal });
          continue;
        }
        const why = timeout.aborted ? `timed out after ${timeoutMs} ms` : (error as Error).message;
        throw errors.unavailable('reranker', `the reranker could not be reached: ${why}`, { cause: error });
      }
      if (!response.ok) {
        await response.body?.cancel();
        if (retryable(response.status) && attempt < maxRetries) {
          await sleep(initialBackoffMs * 2 ** attempt++, undefined, { signal: options.signal });
          continue;
        }
        throw errors.unavailable('reranker', `the reranker answered HTTP ${response.status}`);
      }
      let parsed: unknown;
      try {
        parsed = await response.json();
      } catch {
        if (options.signal?.aborted) throw options.signal.reason;
        throw rerankerInvalid('the reranker answered something that is not JSON');
      }
      const scored = scoresOf(parsed);
      if (scored === undefined)
        throw rerankerInvalid('the reranker answer has neither shape of the /rerank APIs');
      const scores = new Array<number | undefined>(documents.length).fill(undefined);
      for (const { index, score } of scored) {
        if (
          index < 0 ||
          index >= documents.length ||
          scores[index] !== undefined ||
          !Number.isFinite(score)
        ) {
          throw rerankerInvalid(`the reranker answered an invalid or repeated index ${index}`);
        }
        scores[index] = unitScore(score);
      }
      if (scores.some((s) => s === undefined)) {
        throw rerankerInvalid(`the reranker scored ${scored.length} of ${documents.length} documents`);
      }
      return scores as number[];
    }
  }

  close(): Promise<void> {
    this.#closed = true;
    return Promise.resolve();
  }
}
