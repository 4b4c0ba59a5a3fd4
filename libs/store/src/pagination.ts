import { createHash } from 'node:crypto';
import { sql, type ExpressionOrFactory, type Kysely, type SelectQueryBuilder, type SqlBool } from 'kysely';
import { errors } from '@engram/errors';
import type { Store } from './database.js';
import type { Database } from './schema.js';
import { run } from './store-context.js';

/**
 * Opaque page tokens for keyset pagination. A token carries the last key of the previous page and
 * a fingerprint of the query it belongs to, so a token reused with other filters is refused
 * (INVALID_ARGUMENT `PAGE_TOKEN_INVALID`) instead of silently skipping rows.
 */
export interface PageRequest {
  /** Maximum items; already clamped to the method's documented maximum by the caller. */
  readonly pageSize: number;
  /** From the previous response; empty for the first page. */
  readonly pageToken?: string;
}

export interface Page<T> {
  readonly items: T[];
  /** Empty on the last page. */
  readonly nextPageToken: string;
}

function fingerprint(query: unknown): string {
  return createHash('sha256').update(JSON.stringify(query)).digest('base64url').slice(0, 16);
}

/** Encodes the position after `lastKey` for the query described by `query`. */
export function encodePageToken(lastKey: string | number, query: unknown): string {
  return Buffer.from(JSON.stringify({ k: lastKey, q: fingerprint(query) })).toString('base64url');
}

/** Decodes a page token for `query`; undefined for the first page. */
export function decodePageToken(token: string | undefined, query: unknown): string | number | undefined {
  if (token === undefined || token === '') return undefined;
  try {
    const decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as {
      k?: unknown;
      q?: unknown;
    };
    if (
      (typeof decoded.k === 'string' || typeof decoded.k === 'number') &&
      decoded.q === fingerprint(query)
    ) {
      return decoded.k;
    }
  } catch {
    // fall through
  }
  throw errors.invalidArgument('PAGE_TOKEN_INVALID', 'page_token is invalid or belongs to another query', {
    field: 'page_token',
  });
}

/** Builds a page from `pageSize + 1` fetched rows: the extra row only says whether more exist. */
export function toPage<Row, Item>(
  rows: Row[],
  pageSize: number,
  keyOf: (row: Row) => string | number,
  map: (row: Row) => Item,
  query: unknown,
): Page<Item> {
  const more = rows.length > pageSize;
  const pageRows = more ? rows.slice(0, pageSize) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    items: pageRows.map(map),
    nextPageToken: more && last !== undefined ? encodePageToken(keyOf(last), query) : '',
  };
}

/** A page key: what a page token carries of the last row of the previous page. */
export type PageKey = string | number;

/**
 * The order of a keyset-paginated list: how it sorts, the condition "after the row with this key"
 * that starts the next page, and the key of a row.
 */
export interface Keyset<DB, TB extends keyof DB, O> {
  /** Output columns and directions, most significant first. */
  readonly orderBy: readonly (readonly [keyof O & string, 'asc' | 'desc'])[];
  /** The rows after the one whose key is `key` (decoded from a page token of this list). */
  readonly after: (key: PageKey) => ExpressionOrFactory<DB, TB, SqlBool>;
  readonly keyOf: (row: O) => PageKey;
}

/** The columns of `O` that can key a page. */
type KeyColumn<O> = { [C in keyof O & string]: O[C] extends PageKey ? C : never }[keyof O & string];

/**
 * A list ordered by one unique column: `after` is `column < key` when descending, `column > key`
 * when ascending, with the key read back as `parse` says (ids as strings, sequences as numbers).
 */
export function keysetOn<DB, TB extends keyof DB, O>(
  column: KeyColumn<O>,
  direction: 'asc' | 'desc',
  parse: (key: PageKey) => PageKey,
): Keyset<DB, TB, O> {
  return {
    orderBy: [[column, direction]],
    // `sql.ref`: the column is a type parameter here, which the expression builder's names cannot be.
    after: (key) => (eb) => eb(sql.ref(column), direction === 'desc' ? '<' : '>', parse(key)),
    keyOf: (row) => row[column] as PageKey,
  };
}

/** A keyset-paginated list of a repository. */
export interface KeysetList<DB, TB extends keyof DB, O, Item> {
  /**
   * The list's parameters, which a page token is bound to: a token issued for other parameters is
   * refused with INVALID_ARGUMENT `PAGE_TOKEN_INVALID`.
   */
  readonly query: unknown;
  /** The rows listed, filtered (neither ordered nor limited). */
  readonly rows: (db: Kysely<Database>) => SelectQueryBuilder<DB, TB, O>;
  readonly order: Keyset<DB, TB, O>;
  readonly toItem: (row: O) => Item;
}

/**
 * One page of a keyset-paginated list: decodes the page token, reads `pageSize + 1` rows after
 * its key in the list's order (the extra row only says whether more exist) and encodes the key of
 * the page's last row into the next token.
 */
export async function keysetPage<DB, TB extends keyof DB, O, Item>(
  store: Store,
  page: PageRequest,
  list: KeysetList<DB, TB, O, Item>,
): Promise<Page<Item>> {
  const after = decodePageToken(page.pageToken, list.query);
  const rows = await run(store, (db) => {
    let q = list.rows(db);
    if (after !== undefined) q = q.where(list.order.after(after));
    for (const [column, direction] of list.order.orderBy) q = q.orderBy(column, direction);
    return q.limit(page.pageSize + 1).execute();
  });
  return toPage(rows, page.pageSize, list.order.keyOf, list.toItem, list.query);
}
