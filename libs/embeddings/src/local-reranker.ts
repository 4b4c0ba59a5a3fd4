import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  AutoModelForSequenceClassification,
  AutoTokenizer,
  env,
  type PreTrainedModel,
  type PreTrainedTokenizer,
  type Tensor,
} from '@huggingface/transformers';
import { errors } from '@engram/errors';
import { inferenceSessionOptions, inferenceThreads, resolveModelRoot } from './local-model.js';
import { unitScore, type RerankOptions, type Reranker } from './reranker.js';

export interface LocalRerankerOptions {
  /** The model root (`ENGRAM_MODEL_DIR`); default `<workspace>/.models`. */
  readonly modelRoot?: string;
  /**
   * The model's folder under the root, e.g. `cross-encoder/ms-marco-MiniLM-L-6-v2` or
   * `BAAI/bge-reranker-base`: a Hugging Face sequence-classification export with `config.json`,
   * `tokenizer.json`, `tokenizer_config.json` and `onnx/model.onnx` (or `onnx/model_quantized.onnx`).
   */
  readonly model: string;
  /** Input limit of a (query, document) pair in tokens. Default 512. */
  readonly maxTokens?: number;
  /**
   * Pairs per inference. Default 1: each pair alone, so a pair's score never depends on the others
   * (an int8 graph quantizes activations per batch). Larger batches pad the pairs to the longest
   * and are faster on CPU (docs/benchmarks.md "Rerank stage").
   */
  readonly batchSize?: number;
  /**
   * ONNX Runtime intra-op threads of the session; `0` is ORT's default (one per core). Default
   * `DEFAULT_INFERENCE_THREADS` (1), as the local embedders.
   */
  readonly threads?: number;
}

interface Loaded {
  readonly tokenizer: PreTrainedTokenizer;
  readonly model: PreTrainedModel;
}

/**
 * A {@link Reranker} running a cross-encoder placed in the models directory by the operator (none
 * ships with Engram: no cross-encoder is published on the npm registry, TOOLCHAIN.md). Each
 * (query, document) pair is one inference, like the local embedders; the score is the logistic
 * function of a single logit, or the probability of the positive class of two. Missing files are
 * FAILED_PRECONDITION `MODEL_NOT_CONFIGURED` naming them, at `load()` (service start) or first use.
 */
export class LocalReranker implements Reranker {
  readonly model: string;
  readonly #root: string;
  readonly #name: string;
  readonly #maxTokens: number;
  readonly #batchSize: number;
  readonly #threads: number;
  #loaded: Promise<Loaded> | undefined;
  #tail: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(options: LocalRerankerOptions) {
    this.#root = resolveModelRoot(options.modelRoot);
    this.#name = options.model;
    this.#maxTokens = options.maxTokens ?? 512;
    this.#batchSize = options.batchSize ?? 1;
    if (!Number.isInteger(this.#batchSize) || this.#batchSize < 1) {
      throw errors.fieldInvalid('batchSize', 'must be a positive integer');
    }
    this.#threads = inferenceThreads(options.threads);
    this.model = `onnx:${options.model}`;
  }

  /** The ONNX file transformers.js will load, or undefined when none is there. */
  #dtype(): 'fp32' | 'q8' | undefined {
    const dir = join(this.#root, this.#name);
    for (const file of ['config.json', 'tokenizer.json']) {
      if (!existsSync(join(dir, file))) return undefined;
    }
    if (existsSync(join(dir, 'onnx', 'model.onnx'))) return 'fp32';
    if (existsSync(join(dir, 'onnx', 'model_quantized.onnx'))) return 'q8';
    return undefined;
  }

  /** Loads the model now (e.g. at service start) instead of on the first call. */
  async load(): Promise<void> {
    await this.#acquire();
  }

  #acquire(): Promise<Loaded> {
    if (this.#loaded === undefined) {
      const loading = (async () => {
        const dtype = this.#dtype();
        if (dtype === undefined) {
          throw errors.failedPrecondition(
            'MODEL_NOT_CONFIGURED',
            `no cross-encoder in ${join(this.#root, this.#name)}: it needs config.json, tokenizer.json and ` +
              'onnx/model.onnx (or onnx/model_quantized.onnx)',
            { model: this.#name },
          );
        }
        env.allowRemoteModels = false;
        env.allowLocalModels = true;
        env.localModelPath = this.#root;
        const [tokenizer, model] = await Promise.all([
          AutoTokenizer.from_pretrained(this.#name, { local_files_only: true }),
          AutoModelForSequenceClassification.from_pretrained(this.#name, {
            local_files_only: true,
            dtype,
            session_options: inferenceSessionOptions(this.#threads),
          }),
        ]);
        return { tokenizer, model };
      })();
      this.#loaded = loading;
      loading.catch(() => {
        if (this.#loaded === loading) this.#loaded = undefined;
      });
    }
    return this.#loaded;
  }

  async rerank(query: string, documents: readonly string[], options: RerankOptions = {}): Promise<number[]> {
    if (this.#closed) throw errors.failedPrecondition('STATE_CONFLICT', `reranker ${this.model} is closed`);
    const { tokenizer, model } = await this.#acquire();
    const scores: number[] = [];
    for (let from = 0; from < documents.length; from += this.#batchSize) {
      const batch = documents.slice(from, from + this.#batchSize);
      options.signal?.throwIfAborted();
      const run = this.#tail.then(async () => {
        options.signal?.throwIfAborted();
        // Documents are cut to the room the query leaves (transformers.js's own pair truncation
        // can leave its tensors of unequal length), so the tokenizer never truncates.
        const room = Math.max(
          1,
          this.#maxTokens - tokenizer.encode(query, { add_special_tokens: false }).length - 3,
        );
        const fitted = batch.map((document) => {
          const ids = tokenizer.encode(document, { add_special_tokens: false });
          return ids.length <= room
            ? document
            : tokenizer.decode(ids.slice(0, room), { skip_special_tokens: true });
        });
        const inputs = tokenizer(
          batch.map(() => query),
          { text_pair: fitted, padding: batch.length > 1, truncation: false },
        );
        const { logits } = (await model(inputs)) as { logits: Tensor };
        const values = Array.from(logits.data as Float32Array);
        const labels = logits.dims.at(-1) ?? 1;
        logits.dispose();
        return batch.map((_, i) => {
          const row = values.slice(i * labels, (i + 1) * labels);
          const [first = 0, last = 0] = [row[0], row.at(-1)];
          if (labels === 1) return unitScore(first);
          // Two classes: the probability of the second (relevant), by softmax.
          return 1 / (1 + Math.exp(first - last));
        });
      });
      this.#tail = run.catch(() => undefined);
      scores.push(...(await run));
    }
    return scores;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const loaded = await this.#loaded?.catch(() => undefined);
    await this.#tail;
    await loaded?.model.dispose();
  }
}
