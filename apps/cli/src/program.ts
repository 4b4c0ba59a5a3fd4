import { Command, CommanderError, Option } from 'commander';
import { collect } from './actions.js';
import { DEFAULT_ADDR, cliEnv } from './auth.js';
import { registerAppend } from './commands/append.js';
import { registerChat } from './commands/chat.js';
import { registerContext } from './commands/context.js';
import { registerForgetUser } from './commands/forget-user.js';
import { registerIngest } from './commands/ingest.js';
import { registerMcp } from './commands/mcp.js';
import { registerMemories } from './commands/memories.js';
import { registerPortability } from './commands/portability.js';
import { registerRemember } from './commands/remember.js';
import { registerSearch } from './commands/search.js';
import { registerSessions } from './commands/sessions.js';
import { registerStatus } from './commands/status.js';
import { registerToken } from './commands/token.js';
import type { CliIo, CliRuntime } from './context.js';
import { EXIT, cliErrorFromCall, type CliError, type ExitCode } from './errors.js';
import { stringifyJson } from './output.js';

const HELP_FOOTER = `
Environment:
  ENGRAM_ADDR       server address (default ${DEFAULT_ADDR})
  ENGRAM_TOKEN      bearer token; without it (or with --user/--org/--role) a token is minted
                    from ENGRAM_JWT_SECRET or <ENGRAM_DATA_DIR>/jwt-secret (made by \`npm start\`)
  ENGRAM_USER       user of minted tokens (default local)
  ENGRAM_DATA_DIR   data directory of the local server (default .engram)
  NO_COLOR          no colours (also off when stdout is not a terminal)

Exit codes: 0 ok, 1 the server answered an error, 2 usage error, 3 server not reachable,
4 no usable token or token rejected.`;

/** The `engram` program. `io` supplies the streams and environment. */
export function createProgram(io: CliRuntime): Command {
  const program = new Command('engram');
  program
    .description('The Engram command line: ingest, remember, search, build contexts, manage memories.')
    .addOption(new Option('--json', 'print one JSON document on stdout (for scripts)'))
    .addOption(
      new Option('-u, --user <user>', 'mint a local token for this user (default ENGRAM_USER or local)'),
    )
    .addOption(
      new Option('--org <org>', 'org membership of the minted token (repeatable)').argParser(collect),
    )
    .addOption(
      // Not `--role`: commands have their own (`append --role user`, `token --role admin`).
      new Option(
        '--with-role <role>',
        'role of the minted token: admin, platform, service (repeatable)',
      ).argParser(collect),
    )
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .exitOverride()
    .showSuggestionAfterError(true)
    .addHelpText('after', HELP_FOOTER);
  registerIngest(program, io);
  registerRemember(program, io);
  registerAppend(program, io);
  registerChat(program, io);
  registerSearch(program, io);
  registerContext(program, io);
  registerMemories(program, io);
  registerSessions(program, io);
  registerForgetUser(program, io);
  registerPortability(program, io);
  registerToken(program, io);
  registerStatus(program, io);
  registerMcp(program, io);
  return program;
}

/** Runs the command line and returns the exit code (never throws). */
export async function run(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  const runtime: CliRuntime = { ...io, state: { exitCode: EXIT.OK } };
  const program = createProgram(runtime);
  const json = argv.includes('--json');
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return runtime.state.exitCode as ExitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are successes; anything else commander reports is a usage error.
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return EXIT.OK;
      if (error.code === 'commander.help' && error.exitCode === 0) return EXIT.OK;
      if (json) io.stdout.write(`${stringifyJson({ error: { kind: 'usage', message: error.message } })}\n`);
      return EXIT.USAGE;
    }
    const failure: CliError = cliErrorFromCall(error, cliEnv(io.env).addr);
    io.stderr.write(`engram: ${failure.message}\n`);
    if (json)
      io.stdout.write(`${stringifyJson({ error: { message: failure.message, ...failure.details } })}\n`);
    return failure.exitCode;
  }
}
