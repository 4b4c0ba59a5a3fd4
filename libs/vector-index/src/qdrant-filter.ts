import { errors } from '@engram/errors';
import { filtersOf, isBounded } from './filter-semantics.js';
import type { IndexFilter, PointPayload, QueryFilter, Range } from './port.js';

/**
 * The subset of Qdrant's filter language the adapter emits (REST `Filter`, see
 * https://qdrant.tech/documentation/concepts/filtering/). A nested filter is itself a condition.
 */
export interface QdrantFilter {
  must?: QdrantCondition[];
  should?: QdrantCondition[];
  must_not?: QdrantCondition[];
}

export type QdrantCondition =
  | { key: PayloadKey; match: { value: string | boolean } }
  | { key: PayloadKey; match: { any: string[] } }
  | { key: PayloadKey; range: { gte?: number; gt?: number; lt?: number } }
  | { is_empty: { key: PayloadKey } }
  | QdrantFilter;

/** Payload keys are the {@link PointPayload} field names, stored as they are. */
export type PayloadKey = keyof PointPayload;

/**
 * Translates the typed filter into a Qdrant filter with the meaning of `pointMatchesFilter`
 * (filter-semantics.ts); the unit tests check the two agree on random payloads and filters.
 *
 * - The tenant condition is always the first `must`, so nothing ever crosses tenants.
 * - `visibleTo` becomes one nested `should`: SELF ∧ owner = subject, ORG ∧ orgId ∈ orgs (only when
 *   the subject has orgs), PLATFORM (only with the platform role). Nested in `must`, so at least one
 *   of them has to hold.
 * - Lists become `match.any`; an empty list is "any" and emits nothing (Qdrant's `any: []` would
 *   match nothing).
 * - `evergreen: false` is `must_not evergreen = true`, so points without the flag count as false.
 * - Ranges are `range {gte, lt}` on integer-indexed fields; a missing field does not match.
 * - `notExpiredAt: t` is `should [is_empty expiresAt, expiresAt > t]`. `is_empty` matches a missing
 *   key (and null or []), unlike `is_null`, which only matches an explicit null.
 */
export function toQdrantFilter(filter: IndexFilter): QdrantFilter {
  if (typeof filter.tenantId !== 'string' || filter.tenantId === '')
    throw errors.fieldRequired('filter.tenant_id');
  const must: QdrantCondition[] = [{ key: 'tenantId', match: { value: filter.tenantId } }];
  const mustNot: QdrantCondition[] = [];

  const who = filter.visibleTo;
  if (who !== undefined) {
    const visible: QdrantCondition[] = [
      {
        must: [
          { key: 'scope', match: { value: 'SELF' } },
          { key: 'ownerId', match: { value: who.subject } },
        ],
      },
    ];
    if (who.orgIds.length > 0) {
      visible.push({
        must: [
          { key: 'scope', match: { value: 'ORG' } },
          { key: 'orgId', match: { any: [...who.orgIds] } },
        ],
      });
    }
    if (who.platform) visible.push({ key: 'scope', match: { value: 'PLATFORM' } });
    must.push({ should: visible });
  }

  const anyOf = (key: PayloadKey, values: readonly string[] | undefined): void => {
    if (values !== undefined && values.length > 0) must.push({ key, match: { any: [...values] } });
  };
  anyOf('kind', filter.kinds);
  anyOf('scope', filter.scopes);
  anyOf('ownerId', filter.ownerIds);
  anyOf('orgId', filter.orgIds);
  anyOf('memoryType', filter.memoryTypes);
  anyOf('status', filter.statuses);
  anyOf('namespace', filter.namespaces);
  anyOf('sessionId', filter.sessionIds);
  anyOf('documentId', filter.documentIds);
  anyOf('sourceId', filter.sourceIds);

  if (filter.evergreen === true) must.push({ key: 'evergreen', match: { value: true } });
  if (filter.evergreen === false) mustNot.push({ key: 'evergreen', match: { value: true } });

  const range = (key: PayloadKey, bounds: Range | undefined): void => {
    if (!isBounded(bounds)) return;
    must.push({
      key,
      range: {
        ...(bounds.gte !== undefined ? { gte: bounds.gte } : {}),
        ...(bounds.lt !== undefined ? { lt: bounds.lt } : {}),
      },
    });
  };
  range('occurredAt', filter.occurredAt);
  range('createdAt', filter.createdAt);

  if (filter.notExpiredAt !== undefined) {
    must.push({
      should: [{ is_empty: { key: 'expiresAt' } }, { key: 'expiresAt', range: { gt: filter.notExpiredAt } }],
    });
  }

  return mustNot.length > 0 ? { must, must_not: mustNot } : { must };
}

/**
 * A query's filter in Qdrant's language: {@link toQdrantFilter} of one filter; a union is its
 * tenant as the first `must` (so Qdrant's tenant index still plans the search) and its members'
 * translations as `should`, at least one of which must hold.
 */
export function toQdrantQueryFilter(filter: QueryFilter): QdrantFilter {
  const filters = filtersOf(filter);
  const members = filters.map(toQdrantFilter);
  const [first] = members;
  if (members.length === 1 && first !== undefined) return first;
  return { must: [{ key: 'tenantId', match: { value: filters[0]?.tenantId ?? '' } }], should: members };
}
