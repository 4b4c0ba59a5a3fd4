import { Code } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { isEngramError } from '@engram/errors';
import { mapDatabaseError } from './errors.js';

/** A driver error as mysql2 raises it. */
const driverError = (message: string, fields: Record<string, unknown>) =>
  Object.assign(new Error(message), fields);

describe('mapDatabaseError (mysql)', () => {
  const unavailable = (error: unknown) => {
    const mapped = mapDatabaseError(error, 'mysql');
    return (
      isEngramError(mapped) && mapped.code === Code.Unavailable && mapped.reason === 'DEPENDENCY_UNAVAILABLE'
    );
  };

  it('reads an outage from known connection codes, a killed connection and a dead client connection', () => {
    expect(unavailable(driverError('connect ECONNREFUSED', { code: 'ECONNREFUSED', fatal: true }))).toBe(
      true,
    );
    expect(
      unavailable(driverError('Server shutdown in progress', { code: 'ER_SERVER_SHUTDOWN', errno: 1053 })),
    ).toBe(true);
    // MariaDB kills the connections of a shutting-down server; mysql2 has no code name for 1927.
    expect(unavailable(driverError('Connection was killed', { errno: 1927, fatal: true }))).toBe(true);
    // A command on a connection the server closed: no code, fatal.
    expect(
      unavailable(driverError("Can't add new command when connection is in closed state", { fatal: true })),
    ).toBe(true);
  });

  it('leaves a statement’s own failure alone, even when the driver closes the connection for it', () => {
    const tooLarge = driverError('Got a packet bigger than max_allowed_packet', {
      code: 'ER_NET_PACKET_TOO_LARGE',
      errno: 1153,
      fatal: true,
    });
    expect(mapDatabaseError(tooLarge, 'mysql')).toBe(tooLarge);
    const syntax = driverError('You have an error in your SQL syntax', {
      code: 'ER_PARSE_ERROR',
      errno: 1064,
    });
    expect(mapDatabaseError(syntax, 'mysql')).toBe(syntax);
    const plain = new Error('not a driver error');
    expect(mapDatabaseError(plain, 'mysql')).toBe(plain);
  });
});
