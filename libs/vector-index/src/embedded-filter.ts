/* eslint-disable @typescript-eslint/no-non-null-assertion -- typed-array kernels: every index is
   below `rows` or a list's length by construction, which `noUncheckedIndexedAccess` cannot see; a
   `?? 0` in these loops would turn a real bug into a silent zero score. */
import { errors } from '@engram/errors';
import { isBounded } from './filter-semantics.js';
import type { IndexFilter, Range, Visibility } from './port.js';

/**
 * The embedded adapter's filter evaluation: {@link selectMatching} narrows the rows of a
 * collection to those matching an {@link IndexFilter}, over typed payload columns, pass by pass,
 * before any vector is scored. It means exactly what `pointMatchesFilter` (filter-semantics.ts)
 * says; the integration tests check the two agree on random payloads and filters:
 * every condition narrows (AND); an empty or absent list means "any"; a list condition never
 * matches a point without that field; an absent `evergreen` counts as false; a range with a bound
 * needs the field, `{}` means "any"; `notExpiredAt` keeps points that never expire.
 */

/** Rejects a filter that could cross tenants. */
export function checkFilter(filter: IndexFilter): void {
  if (typeof filter.tenantId !== 'string' || filter.tenantId === '')
    throw errors.fieldRequired('filter.tenant_id');
}

/** Codes of interned strings; {@link ABSENT} for a missing optional field. */
export const ABSENT = -1;
/** The code of a string no point has: it matches nothing. */
export const UNKNOWN = -2;

/** The payload as columns, one entry per row slot; strings are interned to integer codes. */
export interface PayloadColumns {
  /** Rows in use (live or dead); a dead row has tenant {@link ABSENT}. */
  readonly rows: number;
  readonly tenant: Int32Array;
  readonly kind: Int32Array;
  readonly scope: Int32Array;
  readonly owner: Int32Array;
  readonly org: Int32Array;
  readonly status: Int32Array;
  readonly memoryType: Int32Array;
  readonly namespace: Int32Array;
  readonly session: Int32Array;
  readonly document: Int32Array;
  readonly source: Int32Array;
  /** -1 absent, 0 false, 1 true. */
  readonly evergreen: Int8Array;
  /** NaN when absent. */
  readonly occurredAt: Float64Array;
  readonly createdAt: Float64Array;
  readonly expiresAt: Float64Array;
  /** The code of `value`, or {@link UNKNOWN} if no row has ever held it. */
  code(value: string): number;
  /**
   * Writes into `out` the slots whose scope makes them visible to `viewer` in some tenant (SELF
   * rows of the subject, ORG rows of its orgs, PLATFORM rows for the role), possibly including
   * dead rows; returns how many. From an index, so the cost follows the visible set.
   */
  visibleSlots(viewer: Visibility, out: Int32Array): number;
}

/** Keeps the slots `out[0..n)` that satisfy a condition, in place; returns how many remain. */
type Pass = (out: Int32Array, n: number) => number;

function keepCodes(column: Int32Array, codes: readonly number[]): Pass {
  const known = codes.filter((c) => c !== UNKNOWN);
  if (known.length === 0) return () => 0;
  if (known.length === 1) {
    const only = known[0]!;
    return (out, n) => {
      let m = 0;
      for (let i = 0; i < n; i++) {
        const slot = out[i]!;
        if (column[slot] === only) out[m++] = slot;
      }
      return m;
    };
  }
  const set = new Set(known);
  return (out, n) => {
    let m = 0;
    for (let i = 0; i < n; i++) {
      const slot = out[i]!;
      if (set.has(column[slot]!)) out[m++] = slot;
    }
    return m;
  };
}

function keepRange(column: Float64Array, range: Range): Pass {
  const gte = range.gte ?? -Infinity;
  const lt = range.lt ?? Infinity;
  return (out, n) => {
    let m = 0;
    for (let i = 0; i < n; i++) {
      const slot = out[i]!;
      const v = column[slot]!;
      // NaN (absent) fails both comparisons.
      if (v >= gte && v < lt) out[m++] = slot;
    }
    return m;
  };
}

/**
 * Writes the slots of the rows matching `filter` into `out` (ascending) and returns their number.
 * `out` must hold at least `columns.rows` entries. Cost: with `visibleTo`, the visible rows from
 * the scope index; without, one pass over the tenant column; then passes over the survivors only.
 * The slots come out ascending without `visibleTo`, in no particular order with it.
 */
export function selectMatching(columns: PayloadColumns, filter: IndexFilter, out: Int32Array): number {
  const tenant = columns.code(filter.tenantId);
  if (tenant === UNKNOWN) return 0;
  const tenants = columns.tenant;
  let n = 0;
  if (filter.visibleTo === undefined) {
    for (let slot = 0; slot < columns.rows; slot++) if (tenants[slot] === tenant) out[n++] = slot;
  } else {
    // Visible rows from the scope index, then the tenant (which also drops dead rows).
    const candidates = columns.visibleSlots(filter.visibleTo, out);
    for (let i = 0; i < candidates; i++) {
      const slot = out[i]!;
      if (tenants[slot] === tenant) out[n++] = slot;
    }
  }

  const passes: Pass[] = [];
  const lists: [readonly string[] | undefined, Int32Array][] = [
    [filter.kinds, columns.kind],
    [filter.scopes, columns.scope],
    [filter.ownerIds, columns.owner],
    [filter.orgIds, columns.org],
    [filter.memoryTypes, columns.memoryType],
    [filter.statuses, columns.status],
    [filter.namespaces, columns.namespace],
    [filter.sessionIds, columns.session],
    [filter.documentIds, columns.document],
    [filter.sourceIds, columns.source],
  ];
  for (const [values, column] of lists) {
    if (values !== undefined && values.length > 0)
      passes.push(
        keepCodes(
          column,
          values.map((v) => columns.code(v)),
        ),
      );
  }
  if (filter.evergreen !== undefined) {
    // -1 (absent) counts as false.
    const want = filter.evergreen;
    const column = columns.evergreen;
    passes.push((slots, count) => {
      let m = 0;
      for (let i = 0; i < count; i++) if ((column[slots[i]!] === 1) === want) slots[m++] = slots[i]!;
      return m;
    });
  }
  if (isBounded(filter.occurredAt)) passes.push(keepRange(columns.occurredAt, filter.occurredAt));
  if (isBounded(filter.createdAt)) passes.push(keepRange(columns.createdAt, filter.createdAt));
  if (filter.notExpiredAt !== undefined) {
    const at = filter.notExpiredAt;
    const column = columns.expiresAt;
    passes.push((slots, count) => {
      let m = 0;
      for (let i = 0; i < count; i++) {
        const v = column[slots[i]!]!;
        if (Number.isNaN(v) || v > at) slots[m++] = slots[i]!;
      }
      return m;
    });
  }
  for (const pass of passes) {
    if (n === 0) break;
    n = pass(out, n);
  }
  return n;
}
