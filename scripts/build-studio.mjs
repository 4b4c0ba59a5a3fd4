// Builds Engram Studio (apps/studio → apps/studio/dist) when its sources changed since the last
// build, so that `npm start` always serves the current app at /studio. `--force` always builds.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const app = join(root, 'apps/studio');
const stampFile = join(app, 'dist/.source-hash');
const inputs = [
  join(app, 'src'),
  join(app, 'index.html'),
  join(app, 'vite.config.ts'),
  join(app, 'package.json'),
  join(root, 'libs/contracts/src'),
];

/** A hash of every input file's path, size and modification time. */
function sourceHash() {
  const hash = createHash('sha256');
  const visit = (path) => {
    const info = statSync(path);
    if (info.isDirectory()) {
      for (const name of readdirSync(path).sort()) visit(join(path, name));
    } else if (!path.endsWith('.spec.ts')) {
      hash.update(`${relative(root, path)}\0${String(info.size)}\0${String(info.mtimeMs)}\n`);
    }
  };
  for (const input of inputs) visit(input);
  return hash.digest('hex');
}

const hash = sourceHash();
const force = process.argv.includes('--force');
if (!force && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === hash) process.exit(0);
const { build } = await import('vite');
const started = Date.now();
await build({ root: app, configFile: join(app, 'vite.config.ts'), logLevel: 'warn' });
writeFileSync(stampFile, hash);
process.stderr.write(`[build-studio] built apps/studio/dist in ${String(Date.now() - started)} ms\n`);
