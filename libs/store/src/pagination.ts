import { createHash } from 'node:crypto';
import { errors } from '@engram/errors';

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
