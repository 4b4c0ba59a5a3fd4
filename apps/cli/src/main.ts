/**
 * The `engram` command line: a client of a running Engram over gRPC (see program.ts for the
 * commands, docs/decisions/0019-cli.md for the choices).
 */
import { run } from './program.js';

// A reader that stops early (`engram token | head -1`) is not an error of ours.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

const code = await run(process.argv.slice(2), {
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
});
process.exitCode = code;
