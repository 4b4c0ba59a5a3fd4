// Builds @engram/client into dist/ (JavaScript + declarations), self-contained: the generated
// contracts of libs/contracts (a private workspace package that is never published) are compiled
// in as dist/contracts/, so the tarball depends only on @bufbuild/protobuf and @connectrpc/*.
//
// How: copy src/ (without tests) and libs/contracts/src/ into a temporary staging directory,
// rewrite each `@engram/contracts/<module>` import to the relative path of its copy, and run the
// repository's tsc on the two entry points (only what they import is emitted). Nothing generated
// is committed: the copy lives only for the build.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const repoRoot = resolve(packageRoot, '../..');
const contractsSrc = join(repoRoot, 'libs/contracts/src');
const dist = join(packageRoot, 'dist');
const ENTRY_POINTS = ['index.ts', 'node.ts'];
const CONTRACTS_IMPORT = /(from\s+|import\s*\(\s*)'@engram\/contracts\/([a-z-]+)'/g;

/** Every file under `dir`, recursively. */
function filesUnder(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** `@engram/contracts/<module>` in `file` → the relative path of the staged `contracts/<module>.js`. */
function rewriteContractImports(file, stagedSrc) {
  const text = readFileSync(file, 'utf8');
  const rewritten = text.replace(CONTRACTS_IMPORT, (_, keyword, module) => {
    let target = relative(dirname(file), join(stagedSrc, 'contracts', `${module}.js`))
      .split(sep)
      .join('/');
    if (!target.startsWith('.')) target = `./${target}`;
    return `${keyword}'${target}'`;
  });
  if (rewritten !== text) writeFileSync(file, rewritten);
}

/** Copies the sources into `stage/src` (SDK) and `stage/src/contracts` (generated contracts). */
function stageSources(stage) {
  const stagedSrc = join(stage, 'src');
  cpSync(join(packageRoot, 'src'), stagedSrc, {
    recursive: true,
    filter: (source) => !source.endsWith('.spec.ts'),
  });
  cpSync(contractsSrc, join(stagedSrc, 'contracts'), {
    recursive: true,
    filter: (source) => !source.endsWith('.spec.ts'),
  });
  for (const file of filesUnder(stagedSrc)) {
    if (file.endsWith('.ts') && !file.startsWith(join(stagedSrc, 'contracts') + sep)) {
      rewriteContractImports(file, stagedSrc);
    }
  }
  return stagedSrc;
}

/** The staging tsconfig: the repository's strict base, emitting JS and declarations into dist/. */
function writeTsconfig(stage, stagedSrc) {
  const tsconfig = {
    extends: join(repoRoot, 'tsconfig.base.json'),
    compilerOptions: {
      rootDir: stagedSrc,
      outDir: dist,
      lib: ['ES2023', 'DOM'],
      types: [],
      customConditions: [],
      declaration: true,
      sourceMap: false,
      noEmit: false,
      noEmitOnError: true,
    },
    files: ENTRY_POINTS.map((entry) => join(stagedSrc, entry)),
  };
  const path = join(stage, 'tsconfig.json');
  writeFileSync(path, JSON.stringify(tsconfig, null, 2));
  return path;
}

/** Fails the build if an emitted file still names the private contracts package. */
function assertSelfContained() {
  const leaks = filesUnder(dist).filter((file) => readFileSync(file, 'utf8').includes('@engram/contracts'));
  if (leaks.length > 0) {
    throw new Error(
      `dist still imports @engram/contracts: ${leaks.map((f) => relative(packageRoot, f)).join(', ')}`,
    );
  }
}

const stage = mkdtempSync(join(packageRoot, '.build-'));
try {
  const stagedSrc = stageSources(stage);
  const tsconfig = writeTsconfig(stage, stagedSrc);
  rmSync(dist, { recursive: true, force: true });
  const tsc = createRequire(join(repoRoot, 'package.json')).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', tsconfig], { stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`tsc failed with exit status ${String(result.status)}`);
  assertSelfContained();
  process.stdout.write(`@engram/client built into ${relative(repoRoot, dist)}\n`);
} finally {
  rmSync(stage, { recursive: true, force: true });
}
