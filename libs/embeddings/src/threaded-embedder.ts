import { Worker } from 'node:worker_threads';
import type { Code } from '@connectrpc/connect';
import { EngramError, errors, type Reason } from '@engram/errors';
import { BilingualEmbedder, type BilingualMix } from './bilingual-embedder.js';
import {
  measureEmbedding,
  type EmbedOptions,
  type Embedder,
  type EmbeddingKind,
  type EmbeddingResult,
} from './embedder.js';
import { LocalEmbedder } from './local-embedder.js';
import { MINILM_MODEL_NAME, type LocalModelName } from './local-model.js';

/** How to build a local embedder: what a thread needs to build the same one (plain data). */
export type LocalEmbedderRecipe = (
  | { readonly kind: 'local'; readonly modelRoot: string; readonly model?: LocalModelName }
  | { readonly kind: 'bilingual'; readonly modelRoot: string; readonly mix?: BilingualMix }
) & {
  /** ONNX Runtime intra-op threads per model (LocalEmbedderOptions.threads); default 1. */
  readonly threads?: number;
  /**
   * The scheduling niceness of a {@link ThreadedEmbedder}'s thread (0–19; default 0, unchanged):
   * set on Linux, where it is a per-thread attribute, before the model loads, so ONNX Runtime's
   * threads inherit it. Background embedding at a higher niceness yields the cores to the calls
   * the process serves whenever they compete (decision 0047). Ignored elsewhere.
   */
  readonly nice?: number;
};

/** The embedder of a recipe: one local model, or the bilingual pair (bge-small-zh + MiniLM). */
export function localEmbedder(recipe: LocalEmbedderRecipe): Embedder {
  const { modelRoot } = recipe;
  const common = { modelRoot, ...(recipe.threads === undefined ? {} : { threads: recipe.threads }) };
  if (recipe.kind === 'local')
    return new LocalEmbedder({ ...common, ...(recipe.model === undefined ? {} : { model: recipe.model }) });
  return new BilingualEmbedder({
    primary: new LocalEmbedder(common),
    secondary: new LocalEmbedder({ ...common, model: MINILM_MODEL_NAME }),
    ...(recipe.mix === undefined ? {} : { mix: recipe.mix }),
  });
}

/** A request to the thread. */
export type ThreadRequest =
  | {
      readonly type: 'embed';
      readonly id: number;
      readonly texts: readonly string[];
      readonly kind: EmbeddingKind;
    }
  | { readonly type: 'close' };

/** An error as it crosses the thread boundary. */
export interface ThreadError {
  readonly message: string;
  readonly code?: Code;
  readonly reason?: string;
  readonly metadata?: Record<string, string | number | boolean>;
}

/** The thread's answer to one `embed`. */
export type ThreadReply =
  | { readonly id: number; readonly vectors: Float32Array[]; readonly truncated: boolean[] }
  | { readonly id: number; readonly error: ThreadError };

interface Pending {
  readonly resolve: (result: EmbeddingResult) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The thread: the compiled entry next to the compiled module; from the TypeScript sources (tsx, the
 * `@engram/source` condition), a bootstrap that registers tsx in the thread first (a worker's
 * `--import` flag does not apply to its entry).
 */
function startThread(recipe: LocalEmbedderRecipe): Worker {
  if (!import.meta.url.endsWith('.ts')) {
    return new Worker(new URL('./embedder-thread.js', import.meta.url), { workerData: recipe });
  }
  const entry = new URL('./embedder-thread.ts', import.meta.url).href;
  const execArgv = process.execArgv.some((a) => a.includes('@engram/source'))
    ? [...process.execArgv]
    : [...process.execArgv, '--conditions=@engram/source'];
  // Resolved here, so the thread finds tsx whatever its working directory.
  const tsx = typeof import.meta.resolve === 'function' ? import.meta.resolve('tsx/esm/api') : 'tsx/esm/api';
  const bootstrap = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); })`;
  return new Worker(bootstrap, { eval: true, workerData: recipe, execArgv });
}

/**
 * An embedder whose model runs on a worker thread (decision 0032): a local model's inference is
 * synchronous native work that holds the event loop for each text (tens of milliseconds per
 * passage), so the indexer's dense stage embeds on its own thread and the main thread keeps
 * routing searches and writes meanwhile. The thread builds the same embedder from `recipe`
 * (`model` and `dimensions` are the main thread's copy's, which never loads its model here).
 * `signal` rejects the call at once; the thread finishes the text it is on. The embedding metrics
 * (`engram_embedding_*`) are recorded here, on the calling thread, under this embedder's `model`:
 * the thread's own metrics registry is never scraped.
 */
export class ThreadedEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #next = 0;
  #closed = false;
  #exited: Promise<void>;

  constructor(recipe: LocalEmbedderRecipe) {
    const description = localEmbedder(recipe);
    this.model = description.model;
    this.dimensions = description.dimensions;
    void description.close();
    this.#worker = startThread(recipe);
    this.#worker.unref();
    this.#worker.on('message', (reply: ThreadReply) => {
      this.#settle(reply);
    });
    this.#exited = new Promise((resolve) => {
      this.#worker.once('exit', () => {
        this.#failAll(errors.unavailable('model', 'the embedding thread exited'));
        resolve();
      });
    });
    this.#worker.on('error', (error) => {
      this.#failAll(errors.unavailable('model', `the embedding thread failed: ${error.message}`));
    });
  }

  embed(texts: readonly string[], kind: EmbeddingKind, options: EmbedOptions = {}): Promise<EmbeddingResult> {
    if (this.#closed) return Promise.reject(errors.unavailable('model', `embedder ${this.model} is closed`));
    const { signal } = options;
    if (signal?.aborted === true) return Promise.reject(abortReason(signal));
    if (texts.length === 0)
      return Promise.resolve({ vectors: [], truncated: [], model: this.model, dimensions: this.dimensions });
    const id = (this.#next += 1);
    return measureEmbedding(this.model, texts.length, () => this.#request(id, texts, kind, signal));
  }

  #request(
    id: number,
    texts: readonly string[],
    kind: EmbeddingKind,
    signal: AbortSignal | undefined,
  ): Promise<EmbeddingResult> {
    return new Promise<EmbeddingResult>((resolve, reject) => {
      const onAbort = () => {
        this.#pending.delete(id);
        if (signal !== undefined) reject(abortReason(signal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, {
        resolve: (result) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(result);
        },
        reject: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      });
      this.#worker.ref();
      const request: ThreadRequest = { type: 'embed', id, texts: [...texts], kind };
      this.#worker.postMessage(request);
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const request: ThreadRequest = { type: 'close' };
    this.#worker.postMessage(request);
    await this.#exited;
  }

  #settle(reply: ThreadReply): void {
    const pending = this.#pending.get(reply.id);
    this.#pending.delete(reply.id);
    if (this.#pending.size === 0) this.#worker.unref();
    if (pending === undefined) return; // aborted meanwhile
    if ('error' in reply) pending.reject(fromThreadError(reply.error));
    else
      pending.resolve({
        vectors: reply.vectors,
        truncated: reply.truncated,
        model: this.model,
        dimensions: this.dimensions,
      });
  }

  #failAll(error: Error): void {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }
}

/** What an aborted call rejects with: the signal's reason (an Error, as AbortSignal makes it). */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error(String(reason));
}

/** An error for the other side of the thread boundary (an EngramError keeps its code and reason). */
export function toThreadError(error: unknown): ThreadError {
  if (error instanceof EngramError) {
    return {
      message: error.message,
      code: error.code,
      reason: error.reason,
      metadata: { ...error.metadata },
    };
  }
  return { message: error instanceof Error ? error.message : String(error) };
}

/** The error a thread reported, as the caller sees it. */
export function fromThreadError(error: ThreadError): Error {
  if (error.code !== undefined && error.reason !== undefined)
    return new EngramError(error.code, error.reason as Reason, error.message, error.metadata ?? {});
  return new Error(error.message);
}
