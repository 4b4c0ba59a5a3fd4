import { Code, ConnectError } from '@connectrpc/connect';
import { errorInfoOf } from '@engram/runtime';
import { upperSnake } from './format.js';

/** Exit codes of the `engram` command (docs/decisions/0019-cli.md). */
export const EXIT = {
  /** Done. */
  OK: 0,
  /** The server answered with an error (or a command found the result wanting, e.g. a failed ingestion). */
  SERVER_ERROR: 1,
  /** The command line was wrong: unknown command or option, missing argument, missing `--yes`. */
  USAGE: 2,
  /** No server answered at the address. */
  UNREACHABLE: 3,
  /** No usable credential, or the server rejected the token. */
  TOKEN: 4,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A failure the CLI reports as one line on stderr (and as `{"error": …}` with `--json`). */
export class CliError extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
    /** Machine-readable details for `--json`. */
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export function isCliError(error: unknown): error is CliError {
  return error instanceof CliError;
}

/** A usage error (exit 2). */
export function usageError(message: string): CliError {
  return new CliError(EXIT.USAGE, message, { kind: 'usage' });
}

// Socket errors that mean "nobody is listening there".
const UNREACHABLE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
]);

function errnoOf(error: unknown): string | undefined {
  for (let cause: unknown = error, depth = 0; cause !== undefined && depth < 5; depth++) {
    if (typeof cause === 'object' && cause !== null) {
      const code = (cause as { code?: unknown }).code;
      if (typeof code === 'string' && UNREACHABLE_ERRNOS.has(code)) return code;
      cause = (cause as { cause?: unknown }).cause;
    } else break;
  }
  return undefined;
}

/**
 * Classifies a failed call: the server not reachable (exit 3), the token refused (exit 4), or an
 * answered error (exit 1). An UNAVAILABLE the server judged itself carries an ErrorInfo (e.g.
 * `DEPENDENCY_UNAVAILABLE`); one without it comes from the transport.
 */
export function cliErrorFromCall(error: unknown, addr: string): CliError {
  if (isCliError(error)) return error;
  const connectError = ConnectError.from(error);
  const info = errorInfoOf(connectError);
  const reason = info?.reason ?? '';
  const metadata = info?.metadata ?? {};
  const errno = errnoOf(error);
  if (errno !== undefined || (connectError.code === Code.Unavailable && info === undefined)) {
    return new CliError(EXIT.UNREACHABLE, `no Engram server at ${addr}; start one with \`npm start\``, {
      kind: 'unreachable',
      addr,
      cause: errno ?? connectError.rawMessage,
    });
  }
  const code = upperSnake(Code[connectError.code]);
  const details = { kind: 'server', code, reason, serverMessage: connectError.rawMessage, metadata };
  if (connectError.code === Code.Unauthenticated) {
    return new CliError(
      EXIT.TOKEN,
      `token rejected by ${addr}: ${connectError.rawMessage}${reason === '' ? '' : ` (${reason})`}`,
      details,
    );
  }
  return new CliError(
    EXIT.SERVER_ERROR,
    `${code}${reason === '' ? '' : ` ${reason}`}: ${connectError.rawMessage}`,
    details,
  );
}
