import type { Command } from 'commander';
import { cliEnv, type CliEnv, type IdentityFlags } from './auth.js';
import { connect, type Connection } from './connection.js';
import { createOutput, type Output } from './output.js';

/** What the process gives the CLI: streams and environment (replaceable in tests). */
export interface CliIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean };
}

/** What one run of the command line accumulates. */
export interface RunState {
  /** The exit code a command chose without failing (e.g. some files not ingested). */
  exitCode: number;
}

/** The process's streams plus the state of this run. */
export interface CliRuntime extends CliIo {
  readonly state: RunState;
}

/** Options every command accepts (before or after its name). */
export interface GlobalOptions {
  readonly json?: boolean;
  readonly user?: string;
  readonly org?: string[];
  readonly withRole?: string[];
}

/** What a command's action works with. */
export interface CommandContext {
  readonly env: CliEnv;
  readonly out: Output;
  readonly io: CliIo;
  readonly identity: IdentityFlags;
  /** Resolves the credential and opens the clients (once per run). */
  readonly connect: () => Promise<Connection>;
  /** Sets the exit code of a run that completes (output already written). */
  readonly setExitCode: (code: number) => void;
}

/** Builds the context of a command from its parsed options (`optsWithGlobals`). */
export function commandContext(io: CliRuntime, command: Command): CommandContext {
  // Identity and --json are the program's own options: a command's `--role` (append's
  // user|assistant, token's claims) is not the identity's.
  let root = command;
  while (root.parent !== null) root = root.parent;
  const globals = root.opts<GlobalOptions>();
  const env = cliEnv(io.env);
  const identity: IdentityFlags = { user: globals.user, orgs: globals.org, roles: globals.withRole };
  const out = createOutput({
    json: globals.json === true,
    env: io.env,
    stdout: io.stdout,
    stderr: io.stderr,
  });
  let connection: Promise<Connection> | undefined;
  return {
    env,
    out,
    io,
    identity,
    connect: () => (connection ??= connect(env, identity)),
    setExitCode: (code) => {
      io.state.exitCode = code;
    },
  };
}
