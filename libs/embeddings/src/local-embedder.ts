import { env, pipeline, type FeatureExtractionPipeline, type Tensor } from '@huggingface/transformers';
import { errors } from '@engram/errors';
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
import {
  LOCAL_MODELS,
  LOCAL_MODEL_NAME,
  inferenceSessionOptions,
  inferenceThreads,
  resolveModelRoot,
  verifyLocalModel,
  type LocalModelName,
  type LocalModelSpec,
} from './local-model.js';

/**
 * bge's recommended instruction for short retrieval queries. Not applied by default: on MADial-Bench
 * zh it changed recall@5/@10/@25 by at most 0.002 (dialogue-context queries) or 0.023 (last user turn),
 * well inside the ±0.05 noise of that set; pass it as `queryInstruction` to opt in.
 */
export const BGE_ZH_QUERY_INSTRUCTION = '为这个句子生成表示以用于检索相关文章：';

/** Options of {@link LocalEmbedder}; defaults are filled in by its constructor. */
export interface LocalEmbedderOptions {
  /**
   * The directory containing `BAAI/bge-small-zh-v1.5` (services pass `ENGRAM_MODEL_DIR`).
   * Default: `<workspace>/.models`, where `npm install` puts the model.
   */
  readonly modelRoot?: string;
  /**
   * Which local model: `BAAI/bge-small-zh-v1.5` (default; 512 dimensions, CLS pooling) or
   * `sentence-transformers/all-MiniLM-L6-v2` (English; 384 dimensions, mean pooling; int8).
   */
  readonly model?: LocalModelName;
  /**
   * Run another ONNX variant of the model than the installed one (`fp32` → `onnx/model.onnx`),
   * for tools and tests that compare variants; it needs `verify: false`, since only the installed
   * files have pinned hashes. Default: the model's own (`q8`).
   */
  readonly dtype?: 'q8' | 'fp32';
  /** Check the files against their pinned sha256 before loading. Default true. */
  readonly verify?: boolean;
  /** Prefixed to texts embedded as `query`. Default: none (see {@link BGE_ZH_QUERY_INSTRUCTION}). */
  readonly queryInstruction?: string;
  /**
   * ONNX Runtime intra-op threads of the model's session; `0` is ORT's default (one per core).
   * Default `DEFAULT_INFERENCE_THREADS` (1). Embedders of one process that share a model
   * share its session only when they ask for the same count.
   */
  readonly threads?: number;
}

/** bge-small-zh's input limit in tokens, [CLS] and [SEP] included (`max_position_embeddings`). */
export const LOCAL_MAX_TOKENS = LOCAL_MODELS[LOCAL_MODEL_NAME].maxTokens;
/** The length of bge-small-zh's vectors. */
export const LOCAL_DIMENSIONS = LOCAL_MODELS[LOCAL_MODEL_NAME].dimensions;
/** The id recorded with every vector of bge-small-zh: the model and its int8 (q8) variant. */
export const LOCAL_MODEL_ID = LOCAL_MODELS[LOCAL_MODEL_NAME].id;

/** A loaded model shared by every {@link LocalEmbedder} of the process that uses the same root. */
interface SharedModel {
  readonly extractor: FeatureExtractionPipeline;
  /** The promise under which {@link shared} holds this model. */
  loaded: Promise<SharedModel> | undefined;
  /** Open embedders using it; disposed when the last one closes. */
  users: number;
  /** Tail of the inference queue: one inference at a time per process. */
  tail: Promise<unknown>;
}

/** Loaded (or loading) models by model root and name: one pipeline per process, root and model. */
const shared = new Map<string, Promise<SharedModel>>();
/** Loads run one after another because `env.localModelPath` is process-global. */
let loads: Promise<unknown> = Promise.resolve();

function loadShared(
  modelRoot: string,
  spec: LocalModelSpec,
  verify: boolean,
  threads: number,
): Promise<SharedModel> {
  const key = sharedKey(modelRoot, spec, threads);
  const existing = shared.get(key);
  if (existing !== undefined) return existing;
  const loading = loads.then(async (): Promise<SharedModel> => {
    if (verify) await verifyLocalModel(modelRoot, spec.name as LocalModelName);
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.localModelPath = modelRoot;
    const extractor = await pipeline('feature-extraction', spec.name, {
      dtype: spec.dtype,
      local_files_only: true,
      session_options: inferenceSessionOptions(threads),
    });
    return { extractor, loaded: undefined, users: 0, tail: Promise.resolve() };
  });
  void loading.then(
    (model) => (model.loaded = loading),
    () => undefined,
  );
  loads = loading.catch(() => undefined);
  shared.set(key, loading);
  // A failed load is forgotten, so a later call retries (e.g. after `npm run fetch-model`).
  loading.catch(() => shared.delete(key));
  return loading;
}

/** Which shared pipeline a root and model variant use. */
function sharedKey(modelRoot: string, spec: LocalModelSpec, threads: number): string {
  return `${modelRoot}\0${spec.name}\0${spec.dtype}\0${threads}`;
}

/** Runs `task` after every inference queued before it on `model`. */
function exclusive<T>(model: SharedModel, task: () => Promise<T>): Promise<T> {
  const run = model.tail.then(task, task);
  model.tail = run.catch(() => undefined);
  return run;
}

/**
 * One local model as an {@link Embedder}: BAAI/bge-small-zh-v1.5 (int8 ONNX, 512 dimensions, CLS
 * pooling; the default) or all-MiniLM-L6-v2 (int8 ONNX, 384 dimensions, mean pooling), normalized,
 * through transformers.js, fully offline (the services combine both, see BilingualEmbedder). The model files are verified against pinned
 * hashes before the first load; the model loads lazily on first use (or {@link load}).
 *
 * One text per inference call: the ONNX graph quantizes activations dynamically per tensor, so a
 * text inside a padded batch gets a slightly different vector than alone, and batching gave no
 * speed-up on 2 cores. Batches are accepted and run sequentially; inferences from concurrent calls
 * interleave text by text, so a query does not wait for a whole indexing batch.
 */
export class LocalEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  readonly modelRoot: string;
  readonly spec: LocalModelSpec;
  private readonly verify: boolean;
  private readonly queryInstruction: string;
  private readonly threads: number;
  private acquired: Promise<SharedModel> | undefined;
  private closed = false;

  constructor(options: LocalEmbedderOptions = {}) {
    this.modelRoot = resolveModelRoot(options.modelRoot);
    const installed: LocalModelSpec = LOCAL_MODELS[options.model ?? LOCAL_MODEL_NAME];
    const dtype = options.dtype ?? installed.dtype;
    if (dtype !== installed.dtype && options.verify !== false) {
      throw errors.fieldInvalid(
        'dtype',
        `only the installed ${installed.dtype} files are verified: pass verify: false`,
      );
    }
    this.spec =
      dtype === installed.dtype ? installed : { ...installed, dtype, id: `${installed.name}@${dtype}` };
    this.verify = options.verify ?? true;
    this.model = this.spec.id;
    this.dimensions = this.spec.dimensions;
    this.queryInstruction = options.queryInstruction ?? '';
    this.threads = inferenceThreads(options.threads);
  }

  /** Verifies and loads the model now instead of on the first `embed` (e.g. at service start). */
  async load(): Promise<void> {
    checkOpen(this.closed, this.model);
    await this.acquire();
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
    const vectors: Float32Array[] = [];
    const truncated: boolean[] = [];
    await measureEmbedding(this.model, texts.length, async () => {
      const model = await this.acquire();
      const prefix = kind === 'query' ? this.queryInstruction : '';
      for (const text of texts) {
        signal?.throwIfAborted();
        const one = await exclusive(model, async () => {
          // Aborted while queued behind other callers: do not spend an inference on it.
          signal?.throwIfAborted();
          return embedOne(model.extractor, this.spec, prefix + text);
        });
        vectors.push(one.vector);
        truncated.push(one.truncated);
      }
    });
    return { vectors, truncated, model: this.model, dimensions: this.dimensions };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const acquired = this.acquired;
    this.acquired = undefined;
    if (acquired === undefined) return;
    const model = await acquired.catch(() => undefined);
    if (model === undefined) return;
    model.users -= 1;
    if (model.users > 0) return;
    // The last user: later embedders of this root load the model afresh.
    const key = sharedKey(this.modelRoot, this.spec, this.threads);
    if (model.loaded === shared.get(key)) shared.delete(key);
    await model.tail;
    await model.extractor.dispose();
  }

  private acquire(): Promise<SharedModel> {
    if (this.acquired === undefined) {
      const acquired = loadShared(this.modelRoot, this.spec, this.verify, this.threads).then((model) => {
        model.users += 1;
        return model;
      });
      this.acquired = acquired;
      // Let a failed load be retried by the next call.
      acquired.catch(() => {
        if (this.acquired === acquired) this.acquired = undefined;
      });
    }
    return this.acquired;
  }
}

/**
 * Embeds one text: counts its tokens, truncates explicitly at the limit, pools the last hidden
 * state ([CLS] vector, or the mean over the tokens of the only, unpadded sequence) and normalizes.
 */
async function embedOne(
  extractor: FeatureExtractionPipeline,
  spec: LocalModelSpec,
  text: string,
): Promise<{ vector: Float32Array; truncated: boolean }> {
  const { tokenizer } = extractor;
  let inputs = tokenizer(text);
  const tokens = inputs.input_ids.dims[1] ?? 0;
  const truncated = tokens > spec.maxTokens;
  if (truncated) inputs = tokenizer(text, { truncation: true, max_length: spec.maxTokens });
  const outputs = (await extractor.model(inputs)) as { last_hidden_state: Tensor };
  const hidden = outputs.last_hidden_state; // [1, tokens, hidden]
  const data = hidden.data as Float32Array;
  const dims = spec.dimensions;
  let pooled: Float32Array;
  if (spec.pooling === 'cls') {
    // [CLS] is the first token of the only sequence: the first `dims` values.
    pooled = Float32Array.from(data.subarray(0, dims));
  } else {
    // Mean over the tokens of the only (unpadded) sequence.
    const count = data.length / dims;
    pooled = new Float32Array(dims);
    data.forEach((x, k) => (pooled[k % dims] = (pooled[k % dims] ?? 0) + x));
    pooled.forEach((x, i) => (pooled[i] = x / count));
  }
  hidden.dispose();
  return { vector: normalize(pooled), truncated };
}
