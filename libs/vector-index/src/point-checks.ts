import { errors } from '@engram/errors';
import type { ItemKind, PendingScope, Point } from './port.js';

/**
 * Validation both adapters share, so a bad request gets the same INVALID_ARGUMENT from either,
 * before anything is written or sent.
 */

const KINDS: readonly ItemKind[] = ['MEMORY', 'CHUNK', 'ROUND'];

/** The most points one {@link VectorIndex.pendingDense} call returns. */
export const MAX_PENDING_LIMIT = 1_000;

/** A search limit: a non-negative integer (0 answers nothing). */
export function checkLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 0)
    throw errors.fieldInvalid('limit', 'must be a non-negative integer');
}

/**
 * Lexical-first points (decision 0032): a point without `dense` must carry
 * `payload.densePendingSince` (epoch milliseconds, a non-negative integer: Qdrant orders and
 * counts by it through an integer index), a point with `dense` must not.
 */
export function checkPendingMark(point: Point): void {
  const mark = point.payload.densePendingSince;
  if (point.dense === undefined) {
    if (mark === undefined)
      throw errors.fieldInvalid(
        'point.dense',
        'a point without a dense vector must carry payload.densePendingSince',
      );
    if (typeof mark !== 'number' || !Number.isSafeInteger(mark) || mark < 0)
      throw errors.fieldInvalid('payload.densePendingSince', 'must be epoch milliseconds (an integer ≥ 0)');
  } else if (mark !== undefined) {
    throw errors.fieldInvalid(
      'payload.densePendingSince',
      'must be absent on a point that has its dense vector',
    );
  }
}

/** The arguments of `pendingDense`: a limit of 1–1000 and known kinds. */
export function checkPendingOptions(limit: number, kinds: readonly ItemKind[] | undefined): void {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PENDING_LIMIT)
    throw errors.fieldInvalid('limit', `must be an integer from 1 to ${MAX_PENDING_LIMIT}`);
  for (const kind of kinds ?? [])
    if (!KINDS.includes(kind)) throw errors.fieldInvalid('kinds', `must be among ${KINDS.join(', ')}`);
}

/** The scope of `countPendingDense`: a tenant (never empty) and known kinds. */
export function checkPendingScope(of: PendingScope): void {
  if (of.tenantId === '') throw errors.fieldRequired('tenantId');
  for (const kind of of.kinds ?? [])
    if (!KINDS.includes(kind)) throw errors.fieldInvalid('kinds', `must be among ${KINDS.join(', ')}`);
}
