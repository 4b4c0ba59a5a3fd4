import { createHash } from 'node:crypto';
import { Code } from '@connectrpc/connect';
import type { Transaction } from 'kysely';
import { errors, isEngramError } from '@engram/errors';
import type { Store } from './database.js';
import { isDuplicate } from './errors.js';
import type { Database, RequestIdsTable } from './schema.js';
import { inTransaction, run, type TransactionOptions } from './store-context.js';

/** A client-chosen idempotency key: 1–64 characters of `[A-Za-z0-9_-]` (docs/api-conventions.md). */
const REQUEST_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** INVALID_ARGUMENT `FIELD_INVALID` unless `requestId` is empty (none) or a valid request id. */
export function checkRequestId(requestId: string, field = 'request_id'): void {
  if (requestId !== '' && !REQUEST_ID.test(requestId)) {
    throw errors.fieldInvalid(field, '1-64 characters of [A-Za-z0-9_-]');
  }
}

/**
 * The key under which `caller`'s request id for `method` (the full `package.Service/Method`) is
 * remembered; undefined when the request carries none.
 */
export function requestKeyOf(
  caller: { readonly tenantId: string; readonly subject: string },
  method: string,
  requestId: string,
): RequestKey | undefined {
  return requestId === ''
    ? undefined
    : { tenantId: caller.tenantId, subject: caller.subject, method, requestId };
}

/** Who asked, for what: a request id is unique per tenant, caller and method. */
export interface RequestKey {
  readonly tenantId: string;
  readonly subject: string;
  readonly method: string;
  readonly requestId: string;
}

/** How long a request id is remembered: at least the 24 hours the API promises. */
export const REQUEST_ID_TTL_MS = 48 * 60 * 60 * 1000;

/** sha256 of a canonical JSON rendering (sorted keys) of a request, for reuse detection. */
export function requestHash(request: unknown): string {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(
        Object.keys(value)
          .sort()
          .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
      );
    }
    return typeof value === 'bigint' ? value.toString() : value;
  };
  return createHash('sha256')
    .update(JSON.stringify(canonical(request)))
    .digest('hex');
}

/**
 * Idempotent writes: `write` runs once per request id, in one transaction with the record of the
 * request id. A retry with the same id and body gets the first result back (and writes nothing);
 * with a different body it fails with INVALID_ARGUMENT `REQUEST_ID_REUSED`. Two concurrent first
 * attempts race on the primary key: the loser's transaction rolls back and it returns the winner's
 * result. `options` are the write transaction's ({@link TransactionOptions}).
 */
export async function idempotent<R>(
  store: Store,
  key: RequestKey | undefined,
  request: unknown,
  write: (trx: Transaction<Database>) => Promise<R>,
  now = Date.now(),
  options: TransactionOptions = {},
): Promise<{ result: R; replayed: boolean }> {
  if (key === undefined || key.requestId === '') {
    return { result: await inTransaction(store, write, options), replayed: false };
  }
  const hash = requestHash(request);
  const previous = await findResult<R>(store, key, hash, now);
  if (previous !== undefined) return { result: previous, replayed: true };
  // An expired record of the same id no longer counts. Removed outside the write transaction: a
  // delete there would take gap locks on MySQL and deadlock two concurrent first attempts.
  await run(store, (db) =>
    db
      .deleteFrom('request_ids')
      .where('tenant_id', '=', key.tenantId)
      .where('subject', '=', key.subject)
      .where('method', '=', key.method)
      .where('request_id', '=', key.requestId)
      .where('expires_at', '<=', now)
      .execute(),
  );
  try {
    const result = await inTransaction(
      store,
      async (trx) => {
        const written = await write(trx);
        await trx
          .insertInto('request_ids')
          .values(requestIdRow(key, hash, written, now))
          .execute();
        return written;
      },
      options,
    );
    return { result, replayed: false };
  } catch (error) {
    // The other attempt won the race (duplicate key), or the engine chose us as a deadlock victim.
    if (!isDuplicate(error) && !(isEngramError(error) && error.code === Code.Aborted)) throw error;
    const winner = await findResult<R>(store, key, hash, now);
    if (winner === undefined) throw error;
    return { result: winner, replayed: true };
  }
}

/** The record of `key`'s first result, remembered for {@link REQUEST_ID_TTL_MS}. */
function requestIdRow(key: RequestKey, hash: string, result: unknown, now: number): RequestIdsTable {
  return {
    tenant_id: key.tenantId,
    subject: key.subject,
    method: key.method,
    request_id: key.requestId,
    request_hash: hash,
    result_json: JSON.stringify(result),
    created_at: now,
    expires_at: now + REQUEST_ID_TTL_MS,
  };
}

async function findResult<R>(
  store: Store,
  key: RequestKey,
  hash: string,
  now: number,
): Promise<R | undefined> {
  const row = await run(store, (db) =>
    db
      .selectFrom('request_ids')
      .select(['request_hash', 'result_json', 'expires_at'])
      .where('tenant_id', '=', key.tenantId)
      .where('subject', '=', key.subject)
      .where('method', '=', key.method)
      .where('request_id', '=', key.requestId)
      .executeTakeFirst(),
  );
  if (row === undefined || row.expires_at <= now) return undefined;
  if (row.request_hash !== hash) {
    throw errors.invalidArgument(
      'REQUEST_ID_REUSED',
      'request_id was already used with a different request',
      {
        request_id: key.requestId,
      },
    );
  }
  return JSON.parse(row.result_json) as R;
}

/**
 * The first result of a request id, if that request already completed (for writes that span
 * several transactions and record their request id in the last one). Throws REQUEST_ID_REUSED
 * when the id was used with a different request.
 */
export async function previousResult<R>(
  store: Store,
  key: RequestKey,
  request: unknown,
  now = Date.now(),
): Promise<R | undefined> {
  return findResult<R>(store, key, requestHash(request), now);
}

/**
 * Records the result of a request id whose work is not a single transaction of this store (e.g. a
 * streamed model answer appended through another service), so that a retry finds it with
 * {@link previousResult}. When the id is already recorded (a concurrent retry won), the first
 * record is kept.
 */
export async function rememberResult(
  store: Store,
  key: RequestKey,
  request: unknown,
  result: unknown,
  now = Date.now(),
): Promise<void> {
  try {
    await run(store, (db) =>
      db
        .insertInto('request_ids')
        .values(requestIdRow(key, requestHash(request), result, now))
        .execute(),
    );
  } catch (error) {
    if (!isDuplicate(error)) throw error;
  }
}

/** Forgets every recorded result of `method` in a tenant (e.g. a session's Chat replays). */
export async function forgetResults(store: Store, tenantId: string, method: string): Promise<number> {
  return run(store, async (db) =>
    Number(
      (
        await db
          .deleteFrom('request_ids')
          .where('tenant_id', '=', tenantId)
          .where('method', '=', method)
          .executeTakeFirst()
      ).numDeletedRows,
    ),
  );
}

/** Forgets expired request ids (housekeeping). */
export async function pruneRequestIds(store: Store, now = Date.now()): Promise<number> {
  return run(store, async (db) =>
    Number(
      (await db.deleteFrom('request_ids').where('expires_at', '<=', now).executeTakeFirst()).numDeletedRows,
    ),
  );
}
