/**
 * The Reranker port: scores how well each of a few candidate texts answers a query, jointly (a
 * cross-encoder reads the query and the text together), for Search's rerank step. Adapters: any
 * HTTP `/rerank` endpoint (`http-reranker.ts`: text-embeddings-inference, vLLM, Jina, Cohere and
 * compatible servers) and a local ONNX cross-encoder (`local-reranker.ts`). Off unless configured.
 */
import { Code } from '@connectrpc/connect';
import { EngramError } from '@engram/errors';

export interface RerankOptions {
  /** Cancels the call. */
  readonly signal?: AbortSignal;
}

export interface Reranker {
  /** A stable id of the model and how it is reached, e.g. `http:bge-reranker-base`. */
  readonly model: string;
  /**
   * One relevance score in [0, 1] per document, in the order given (higher is more relevant).
   * Rejects with UNAVAILABLE `DEPENDENCY_UNAVAILABLE` (`dependency: reranker`) when the model
   * cannot be reached or answers nonsense, or with `signal.reason` when aborted.
   */
  rerank(query: string, documents: readonly string[], options?: RerankOptions): Promise<number[]>;
  close(): Promise<void>;
}

/**
 * A score in [0, 1]: unchanged when already in it (Cohere, Jina and TEI's default answer
 * probabilities), else the logistic function of it (raw cross-encoder logits).
 */
export function unitScore(score: number): number {
  if (!Number.isFinite(score)) throw new RangeError(`rerank score must be finite, got ${score}`);
  if (score >= 0 && score <= 1) return score;
  return 1 / (1 + Math.exp(-score));
}

/** The error of a reranker that answered something unusable. */
export function rerankerInvalid(message: string): Error {
  return new EngramError(Code.Unavailable, 'DEPENDENCY_UNAVAILABLE', message, {
    dependency: 'reranker',
    failure: 'output_invalid',
  });
}
