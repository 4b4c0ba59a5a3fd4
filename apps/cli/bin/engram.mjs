#!/usr/bin/env node
// The `engram` command: runs the TypeScript sources of this workspace with tsx (the same way
// `npm start` runs the server), passing the arguments and the exit code through.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const result = spawnSync(
  process.execPath,
  ['--conditions=@engram/source', '--import', 'tsx', main, ...process.argv.slice(2)],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
