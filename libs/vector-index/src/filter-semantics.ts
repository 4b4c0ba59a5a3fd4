import { errors } from '@engram/errors';
import type { IndexFilter, PointPayload, QueryFilter, Range } from './port.js';

/**
 * What an {@link IndexFilter} means, as a plain predicate over one payload: the reference every
 * adapter must agree with. The Qdrant translation is property-tested against it, the contract
 * suite computes its expectations with it, and an in-process adapter can use it directly.
 *
 * - `tenantId` must be equal; every other condition narrows (AND).
 * - `visibleTo`: the subject's SELF points, ORG points of its orgs, PLATFORM points only with the
 *   platform role.
 * - A list condition that is absent or empty means "any"; otherwise the field must be present and
 *   equal to one of the values (so `memoryTypes: ['FACT']` never matches a chunk, which has none).
 * - `evergreen`: an absent flag counts as `false`.
 * - A range with a bound needs the field present and within [gte, lt); `{}` means "any".
 * - `notExpiredAt: t` keeps points without `expiresAt` or with `expiresAt > t`.
 */
export function pointMatchesFilter(payload: PointPayload, filter: IndexFilter): boolean {
  if (payload.tenantId !== filter.tenantId) return false;
  const who = filter.visibleTo;
  if (who !== undefined) {
    const visible =
      (payload.scope === 'SELF' && payload.ownerId === who.subject) ||
      (payload.scope === 'ORG' && who.orgIds.includes(payload.orgId)) ||
      (payload.scope === 'PLATFORM' && who.platform);
    if (!visible) return false;
  }
  return (
    oneOf(payload.kind, filter.kinds) &&
    oneOf(payload.scope, filter.scopes) &&
    oneOf(payload.ownerId, filter.ownerIds) &&
    oneOf(payload.orgId, filter.orgIds) &&
    oneOf(payload.memoryType, filter.memoryTypes) &&
    oneOf(payload.status, filter.statuses) &&
    oneOf(payload.namespace, filter.namespaces) &&
    oneOf(payload.sessionId, filter.sessionIds) &&
    oneOf(payload.documentId, filter.documentIds) &&
    oneOf(payload.sourceId, filter.sourceIds) &&
    (filter.evergreen === undefined || (payload.evergreen ?? false) === filter.evergreen) &&
    within(payload.occurredAt, filter.occurredAt) &&
    within(payload.createdAt, filter.createdAt) &&
    (filter.notExpiredAt === undefined ||
      payload.expiresAt === undefined ||
      payload.expiresAt > filter.notExpiredAt)
  );
}

function oneOf(value: string | undefined, allowed: readonly string[] | undefined): boolean {
  if (allowed === undefined || allowed.length === 0) return true;
  return value !== undefined && allowed.includes(value);
}

/** Whether a range has at least one bound. */
export function isBounded(range: Range | undefined): range is Range {
  return range !== undefined && (range.gte !== undefined || range.lt !== undefined);
}

function within(value: number | undefined, range: Range | undefined): boolean {
  if (!isBounded(range)) return true;
  if (value === undefined) return false;
  return (range.gte === undefined || value >= range.gte) && (range.lt === undefined || value < range.lt);
}

/**
 * The filters of a query's filter: itself, or the union's members. INVALID_ARGUMENT for an empty
 * union (`FIELD_REQUIRED`) or one whose members are of different tenants (`FIELD_INVALID`); each
 * member is then checked by the adapter as any filter is.
 */
export function filtersOf(filter: QueryFilter): readonly IndexFilter[] {
  if (!('anyOf' in filter)) return [filter];
  const members: readonly IndexFilter[] = filter.anyOf;
  if (members.length === 0) throw errors.fieldRequired('filter.any_of');
  const tenant = members[0]?.tenantId;
  if (members.some((m) => m.tenantId !== tenant)) {
    throw errors.fieldInvalid('filter.any_of', 'the filters of a union must be of one tenant');
  }
  return members;
}

/** A point matches a query's filter when it matches the filter, or any member of the union. */
export function pointMatchesQueryFilter(payload: PointPayload, filter: QueryFilter): boolean {
  return filtersOf(filter).some((f) => pointMatchesFilter(payload, f));
}
