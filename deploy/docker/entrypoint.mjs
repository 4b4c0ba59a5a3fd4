#!/usr/bin/env node
// The image's entry point: starts one Engram process, chosen by the first argument or by
// ENGRAM_SERVICE (the argument wins), from the compiled `dist/` of its package. It imports the
// process's main module into this same Node process (no child, no shell), so SIGTERM reaches the
// server's own graceful-shutdown handler directly and the exit code is the process's own.
//
//   ENGRAM_SERVICE=governance|ingestion|retrieval|context|all-in-one|migrate
//
// `migrate` applies the database migrations (the image's `npm run migrate`) and exits;
// `wait-for-migrations` waits until they are applied (deploy/docker/wait-for-migrations.mjs).
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Every process the image can run, and its compiled main module relative to the app root. */
export const ENTRY_POINTS = Object.freeze({
  governance: 'services/governance/dist/main.js',
  ingestion: 'services/ingestion/dist/main.js',
  retrieval: 'services/retrieval/dist/main.js',
  context: 'services/context/dist/main.js',
  'all-in-one': 'services/all-in-one/dist/main.js',
  migrate: 'libs/store/dist/migrate-cli.js',
  // Not a service: the Kubernetes init container that waits for the migration Job.
  'wait-for-migrations': 'deploy/docker/wait-for-migrations.mjs',
});

/**
 * The main module to run for `argv` (arguments after the script) and `env`, or an error message.
 * @param {readonly string[]} argv
 * @param {Readonly<Record<string, string | undefined>>} env
 * @returns {{ service: string, entry: string } | { error: string }}
 */
export function selectEntry(argv, env) {
  const service = argv[0] ?? env['ENGRAM_SERVICE'] ?? '';
  const names = Object.keys(ENTRY_POINTS).join('|');
  if (service === '') return { error: `no service chosen: pass one of ${names} or set ENGRAM_SERVICE` };
  if (!Object.hasOwn(ENTRY_POINTS, service)) {
    return { error: `unknown service "${service}": expected one of ${names}` };
  }
  return { service, entry: ENTRY_POINTS[service] };
}

const isMain = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  // The app root: ENGRAM_APP_ROOT, else two levels up from deploy/docker/.
  const root = resolve(
    process.env['ENGRAM_APP_ROOT'] ?? join(dirname(fileURLToPath(import.meta.url)), '..', '..'),
  );
  const selected = selectEntry(process.argv.slice(2), process.env);
  if ('error' in selected) {
    process.stderr.write(`[engram] ${selected.error}\n`);
    process.exit(64);
  }
  const path = join(root, selected.entry);
  if (!existsSync(path)) {
    process.stderr.write(`[engram] ${selected.service}: ${path} is missing (was \`npm run build\` run?)\n`);
    process.exit(66);
  }
  process.env['ENGRAM_SERVICE'] = selected.service;
  await import(pathToFileURL(path).href);
}
