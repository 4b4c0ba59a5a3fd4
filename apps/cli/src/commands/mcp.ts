import { Readable, Writable } from 'node:stream';
import { Option, type Command } from 'commander';
import { runMcpStdio } from '@engram/gateway';
import { createLogger } from '@engram/runtime';
import { action } from '../actions.js';
import type { CliRuntime } from '../context.js';
import { localTimeZone } from './shared.js';

/** The process's stream as the stdio transport needs it (Node's stdin and stdout always are). */
function stream<T>(value: unknown, kind: abstract new (...args: never[]) => T): T {
  if (value instanceof kind) return value;
  throw new Error(`engram mcp needs ${kind.name} stdio streams`);
}

const LOG_LEVELS = ['silent', 'error', 'warn', 'info', 'debug'] as const;

/**
 * `engram mcp`: the Engram tools for a desktop or IDE agent, as an MCP server on stdio. It calls
 * the server at ENGRAM_ADDR with the CLI's own credential (ENGRAM_TOKEN, or a token minted from
 * the local secret), so every tool runs as that user. Stdout carries only the protocol; log lines
 * (JSON) go to stderr.
 */
export function registerMcp(program: Command, io: CliRuntime): void {
  program
    .command('mcp')
    .description('serve the Engram tools to an MCP client (Claude Desktop, Cursor, VS Code) over stdio')
    .addOption(
      new Option('--log-level <level>', 'log level of the lines written to stderr')
        .choices(LOG_LEVELS)
        .default('warn'),
    )
    .addHelpText(
      'after',
      '\nMCP client configuration: {"command": "npx", "args": ["engram", "mcp"], "env": {"ENGRAM_ADDR": "http://127.0.0.1:50051"}}\nSee docs/mcp.md.',
    )
    .action(
      action(io, async ({ connect }, command) => {
        const options = command.opts<{ logLevel: (typeof LOG_LEVELS)[number] }>();
        const connection = await connect();
        const logger = createLogger(
          { service: 'engram-mcp', level: options.logLevel, format: 'json' },
          io.stderr,
        );
        await runMcpStdio(connection, {
          subject: connection.credential.subject,
          logger,
          timeZone: localTimeZone(),
          stdin: stream(io.stdin, Readable),
          stdout: stream(io.stdout, Writable),
        });
      }),
    );
}
