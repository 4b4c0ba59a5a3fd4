/**
 * Finding 11 of issue 18: an unmapped database error is logged by the error boundary without the
 * SQL text, its parameters or the values MariaDB quotes in its message. The error is a real one:
 * a `sub` longer than the `owner_id` column (what an authenticator without the claim bounds let
 * through), from the store's own repository, against MariaDB.
 */
import { Writable } from 'node:stream';
import { createClient } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RetrievalService } from '@engram/contracts/retrieval';
import { SessionRepository, inTransaction, type Store } from '@engram/store';
import { dialects } from '../../store/test/harness.js';
import { createInProcessTransport, createLogger, principalKey, registration } from '../src/index.js';
import type { Authenticator } from '../src/index.js';

/** A pino destination that keeps the raw lines. */
function logCapture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((l) => l.trim() !== ''),
      );
      done();
    },
  });
  return { destination, lines };
}

const mariadb = dialects.find((d) => d.name === 'mariadb');
if (mariadb === undefined) throw new Error('the store harness has no MariaDB dialect');

describe('the error boundary’s log line for a MariaDB error', () => {
  let store: Store;
  let dispose: () => Promise<void>;
  beforeAll(async () => {
    ({ store, dispose } = await mariadb.open());
  });
  afterAll(async () => {
    await dispose();
  });

  it('carries the driver code, never the SQL, its parameters or the values', async () => {
    const marker = 'Pl4nted-Owner-Value-';
    const owner = marker.repeat(10); // 200 characters: longer than owner_id (128)
    // Stands in for an authenticator that did not bound the claims: the subject reaches SQL.
    const authenticate: Authenticator = () =>
      Promise.resolve({ subject: owner, tenantId: 't1', orgIds: [], roles: [], token: 'x.y.z' });
    const capture = logCapture();
    const logger = createLogger({ service: 'test', level: 'info' }, capture.destination);
    const service = registration(RetrievalService, {
      async search(_request, ctx) {
        const principal = ctx.values.get(principalKey);
        await inTransaction(store, (trx) =>
          new SessionRepository(store).createSession(trx, {
            tenantId: 't1',
            ownerId: principal?.subject ?? '',
            displayName: `${marker}display`,
          }),
        );
        return {};
      },
    });
    const transport = createInProcessTransport(() => ({
      services: [service],
      authenticate,
      logger,
      limits: { maxMessageBytes: 1 << 20, maxStreamMessages: 10, maxTimeoutMs: 10_000 },
    }));
    await expect(createClient(RetrievalService, transport).search({ query: 'q' })).rejects.toThrow(
      /internal error/,
    );
    const failed = capture.lines.filter((l) => l.includes('rpc failed with an internal error'));
    expect(failed).toHaveLength(1);
    const line = failed[0] ?? '';
    // The line names the caller (an identifier, as on every line) and nothing the SQL held.
    const { err, subject } = JSON.parse(line) as { err: Record<string, unknown>; subject: string };
    expect(subject).toBe(owner);
    expect(err).toMatchObject({ code: 'ER_DATA_TOO_LONG', errno: 1406 });
    const logged = JSON.stringify(err);
    expect(logged).not.toContain(marker);
    expect(logged).not.toMatch(/insert into/i);
    expect(Object.keys(err)).not.toEqual(expect.arrayContaining(['sql']));
    expect(Object.keys(err).filter((k) => ['sql', 'sqlMessage', 'parameters', 'values'].includes(k))).toEqual(
      [],
    );
    expect(line.split(marker).length - 1).toBe(10); // the subject field only
  });
});
