import { errors } from '@engram/errors';
import type { ScrollOptions } from './port.js';

/** The most points one scroll page holds. */
export const MAX_SCROLL_LIMIT = 1_000;

/** A point id as the adapters write it (see point-id.ts); its string order is Qdrant's order. */
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Rejects scroll options both adapters would not read alike: a `limit` outside 1–1000, or an
 * `after` that is not a canonical lower-case UUID (Qdrant would parse an upper-case one to the
 * same id, while string order puts it elsewhere).
 */
export function checkScrollOptions(options: ScrollOptions): void {
  const { limit, after } = options;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SCROLL_LIMIT)
    throw errors.fieldInvalid('limit', `must be an integer from 1 to ${MAX_SCROLL_LIMIT}`);
  if (after !== undefined && (typeof after !== 'string' || !CANONICAL_UUID.test(after)))
    throw errors.fieldInvalid('after', 'must be a point id (a lower-case UUID)');
}
