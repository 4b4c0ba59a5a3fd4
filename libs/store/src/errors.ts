import { Code } from '@connectrpc/connect';
import { EngramError, errors, isEngramError, loggableError } from '@engram/errors';

/** Connection-level failures of mysql2 / Node sockets: the database is unreachable. */
const MYSQL_UNAVAILABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_ACCESS_DENIED_ERROR',
  'ER_BAD_DB_ERROR',
  'POOL_CLOSED',
]);

interface DriverError {
  code?: unknown;
  errno?: unknown;
  message?: unknown;
  /** mysql2: the connection is dead (closed, reset, killed by the server). */
  fatal?: unknown;
}

/** MariaDB's ER_CONNECTION_KILLED ("Connection was killed", e.g. by a shutdown); mysql2 has no name for it. */
const MARIADB_CONNECTION_KILLED = 1927;

/**
 * Whether a mysql2 error means the database cannot be reached: a known connection-level code, the
 * server killing the connection, or a fatal error of the client itself (a command on a connection
 * the server closed, "Can't add new command when connection is in closed state", has no code). A
 * fatal error that carries a server error code (`ER_…`, e.g. a packet too large) is the statement's
 * own failure, not an outage.
 */
function mysqlUnreachable(error: DriverError, code: string): boolean {
  if (MYSQL_UNAVAILABLE.has(code) || error.errno === MARIADB_CONNECTION_KILLED) return true;
  return error.fatal === true && !code.startsWith('ER_');
}

/** Whether a MySQL driver error says InnoDB chose this transaction as a deadlock victim. */
export function isDeadlock(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as DriverError).code === 'ER_LOCK_DEADLOCK';
}

/**
 * Maps a database driver error to the error currency of the services, so that no driver detail
 * reaches a client: unreachable database → UNAVAILABLE (`DEPENDENCY_UNAVAILABLE`); duplicate key →
 * ALREADY_EXISTS; foreign key or check violation → FAILED_PRECONDITION; deadlock or lock timeout →
 * ABORTED (retry the transaction). Anything else is rethrown unchanged (INTERNAL at the boundary,
 * which logs it through `loggableError`). A mapped error keeps the driver error as its cause only
 * as `loggableError` shapes it: never the SQL text, its parameters or the values it quotes.
 */
export function mapDatabaseError(error: unknown, dependency: 'mysql' | 'sqlite'): unknown {
  if (isEngramError(error) || typeof error !== 'object' || error === null) return error;
  const raw = (error as DriverError).code;
  const code = typeof raw === 'string' ? raw : '';
  if (dependency === 'mysql') {
    if (mysqlUnreachable(error, code))
      return errors.unavailable('mysql', 'the database is unavailable', { cause: loggableError(error) });
    if (code === 'ER_DUP_ENTRY') return conflict(Code.AlreadyExists, 'RESOURCE_ALREADY_EXISTS', error);
    if (
      code.startsWith('ER_NO_REFERENCED_ROW') ||
      code.startsWith('ER_ROW_IS_REFERENCED') ||
      code === 'ER_CHECK_CONSTRAINT_VIOLATED'
    ) {
      return conflict(Code.FailedPrecondition, 'STATE_CONFLICT', error);
    }
    if (code === 'ER_LOCK_DEADLOCK' || code === 'ER_LOCK_WAIT_TIMEOUT') {
      return conflict(Code.Aborted, 'ETAG_MISMATCH', error);
    }
    return error;
  }
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    return conflict(Code.AlreadyExists, 'RESOURCE_ALREADY_EXISTS', error);
  }
  if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || code === 'SQLITE_CONSTRAINT_CHECK') {
    return conflict(Code.FailedPrecondition, 'STATE_CONFLICT', error);
  }
  if (
    code.startsWith('SQLITE_BUSY') ||
    code.startsWith('SQLITE_LOCKED') ||
    code.startsWith('SQLITE_CANTOPEN') ||
    code.startsWith('SQLITE_IOERR') ||
    code === 'SQLITE_FULL'
  ) {
    return errors.unavailable('sqlite', 'the database is unavailable', { cause: loggableError(error) });
  }
  return error;
}

function conflict(
  code: Code,
  reason: 'RESOURCE_ALREADY_EXISTS' | 'STATE_CONFLICT' | 'ETAG_MISMATCH',
  cause: unknown,
) {
  const message =
    reason === 'RESOURCE_ALREADY_EXISTS'
      ? 'a resource with the same identity already exists'
      : reason === 'ETAG_MISMATCH'
        ? 'a concurrent change conflicted with this one; retry'
        : 'the change conflicts with related data';
  return new EngramError(code, reason, message, {}, { cause: loggableError(cause) });
}

/** Whether a mapped error is a duplicate-key violation (for idempotent inserts). */
export function isDuplicate(error: unknown): boolean {
  return isEngramError(error) && error.code === Code.AlreadyExists;
}

/**
 * ABORTED `ETAG_MISMATCH` for a resource written concurrently: the caller re-reads and retries.
 * Nothing was written.
 */
export function etagMismatch(name: string): EngramError {
  return new EngramError(
    Code.Aborted,
    'ETAG_MISMATCH',
    `${name} was changed concurrently; re-read and retry`,
    { name },
  );
}

/**
 * Runs the inserts of `write`; a duplicate key, which means a concurrent writer inserted the same
 * row first, becomes ABORTED `ETAG_MISMATCH` naming `name` (the caller re-reads and retries).
 * Other errors pass through unchanged.
 */
export async function etagMismatchOnDuplicate(
  dialect: 'mysql' | 'sqlite',
  name: string,
  write: () => Promise<unknown>,
): Promise<void> {
  try {
    await write();
  } catch (error) {
    if (isDuplicate(mapDatabaseError(error, dialect))) throw etagMismatch(name);
    throw error;
  }
}
