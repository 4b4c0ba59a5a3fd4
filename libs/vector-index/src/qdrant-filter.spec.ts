import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { pointMatchesFilter, pointMatchesQueryFilter } from './filter-semantics.js';
import type { IndexFilter, ItemKind, PointPayload, PointScope } from './port.js';
import {
  toQdrantFilter,
  toQdrantQueryFilter,
  type QdrantCondition,
  type QdrantFilter,
} from './qdrant-filter.js';

/**
 * Qdrant's filter semantics for the subset we emit, as documented
 * (https://qdrant.tech/documentation/concepts/filtering/): `must` = all, `should` = at least one
 * (when present), `must_not` = none; `match.value`/`match.any` need the key present with an equal
 * value; `range` needs a number within the bounds; `is_empty` holds for a missing key, null or [].
 */
function qdrantMatches(filter: QdrantFilter, payload: PointPayload): boolean {
  const record = payload as unknown as Record<string, unknown>;
  const holds = (condition: QdrantCondition): boolean => {
    if ('is_empty' in condition) {
      const value = record[condition.is_empty.key];
      return value === undefined || value === null || (Array.isArray(value) && value.length === 0);
    }
    if ('key' in condition) {
      const value = record[condition.key];
      if ('match' in condition) {
        if ('value' in condition.match) return value === condition.match.value;
        return typeof value === 'string' && condition.match.any.includes(value);
      }
      if (typeof value !== 'number') return false;
      const { gte, gt, lt } = condition.range;
      return (
        (gte === undefined || value >= gte) &&
        (gt === undefined || value > gt) &&
        (lt === undefined || value < lt)
      );
    }
    return qdrantMatches(condition, payload);
  };
  return (
    (filter.must ?? []).every(holds) &&
    (filter.should === undefined || filter.should.some(holds)) &&
    !(filter.must_not ?? []).some(holds)
  );
}

describe('toQdrantFilter', () => {
  it('always puts the tenant first in must', () => {
    expect(toQdrantFilter({ tenantId: 't1' })).toEqual({
      must: [{ key: 'tenantId', match: { value: 't1' } }],
    });
  });

  it('refuses a filter without a tenant', () => {
    expect(() => toQdrantFilter({ tenantId: '' })).toThrow(/tenant_id is required/);
  });

  it('translates visibility into one should of SELF-owner, ORG-member and PLATFORM clauses', () => {
    const filter = toQdrantFilter({
      tenantId: 't1',
      visibleTo: { subject: 'u1', orgIds: ['o1', 'o2'], platform: true },
    });
    expect(filter.must?.[1]).toEqual({
      should: [
        {
          must: [
            { key: 'scope', match: { value: 'SELF' } },
            { key: 'ownerId', match: { value: 'u1' } },
          ],
        },
        {
          must: [
            { key: 'scope', match: { value: 'ORG' } },
            { key: 'orgId', match: { any: ['o1', 'o2'] } },
          ],
        },
        { key: 'scope', match: { value: 'PLATFORM' } },
      ],
    });
  });

  it('leaves out the ORG clause without orgs and the PLATFORM clause without the role', () => {
    const filter = toQdrantFilter({
      tenantId: 't1',
      visibleTo: { subject: 'u1', orgIds: [], platform: false },
    });
    expect(filter.must?.[1]).toEqual({
      should: [
        {
          must: [
            { key: 'scope', match: { value: 'SELF' } },
            { key: 'ownerId', match: { value: 'u1' } },
          ],
        },
      ],
    });
  });

  it('turns lists into match.any and ignores empty lists', () => {
    const filter = toQdrantFilter({
      tenantId: 't1',
      kinds: ['MEMORY', 'CHUNK'],
      statuses: [],
      namespaces: ['n'],
    });
    expect(filter.must).toEqual([
      { key: 'tenantId', match: { value: 't1' } },
      { key: 'kind', match: { any: ['MEMORY', 'CHUNK'] } },
      { key: 'namespace', match: { any: ['n'] } },
    ]);
  });

  it('treats evergreen false as "not true", so a missing flag counts as false', () => {
    expect(toQdrantFilter({ tenantId: 't1', evergreen: false }).must_not).toEqual([
      { key: 'evergreen', match: { value: true } },
    ]);
    expect(toQdrantFilter({ tenantId: 't1', evergreen: true }).must?.[1]).toEqual({
      key: 'evergreen',
      match: { value: true },
    });
  });

  it('emits ranges with only the given bounds and skips unbounded ones', () => {
    expect(toQdrantFilter({ tenantId: 't1', occurredAt: { gte: 5 }, createdAt: {} }).must).toEqual([
      { key: 'tenantId', match: { value: 't1' } },
      { key: 'occurredAt', range: { gte: 5 } },
    ]);
    expect(toQdrantFilter({ tenantId: 't1', createdAt: { gte: 1, lt: 9 } }).must?.[1]).toEqual({
      key: 'createdAt',
      range: { gte: 1, lt: 9 },
    });
  });

  it('keeps points without expiresAt or expiring later than notExpiredAt', () => {
    expect(toQdrantFilter({ tenantId: 't1', notExpiredAt: 42 }).must?.[1]).toEqual({
      should: [{ is_empty: { key: 'expiresAt' } }, { key: 'expiresAt', range: { gt: 42 } }],
    });
  });

  it('means exactly what pointMatchesFilter means (property)', () => {
    const tenants = fc.constantFrom('t1', 't2');
    const users = fc.constantFrom('u1', 'u2', 'u3');
    const orgs = fc.constantFrom('o1', 'o2', 'o3');
    const kinds = fc.constantFrom<ItemKind>('MEMORY', 'CHUNK', 'ROUND');
    const scopes = fc.constantFrom<PointScope>('SELF', 'ORG', 'PLATFORM');
    const words = fc.constantFrom('a', 'b', 'c');
    const time = fc.integer({ min: 0, max: 20 });
    const list = <T>(arb: fc.Arbitrary<T>) =>
      fc.option(fc.uniqueArray(arb, { maxLength: 3 }), { nil: undefined });
    const range = fc.record({ gte: time, lt: time }, { requiredKeys: [] });

    const payload: fc.Arbitrary<PointPayload> = fc
      .record(
        {
          tenantId: tenants,
          kind: kinds,
          sourceId: words,
          scope: scopes,
          ownerId: users,
          orgId: fc.oneof(fc.constant(''), orgs),
          status: fc.constantFrom('ACTIVE', 'ARCHIVED'),
          memoryType: words,
          namespace: words,
          evergreen: fc.boolean(),
          sessionId: words,
          documentId: words,
          occurredAt: time,
          createdAt: time,
          expiresAt: time,
        },
        {
          requiredKeys: ['tenantId', 'kind', 'sourceId', 'scope', 'ownerId', 'orgId', 'status', 'createdAt'],
        },
      )
      .map((p) => p as PointPayload);

    const filter: fc.Arbitrary<IndexFilter> = fc
      .record(
        {
          tenantId: tenants,
          visibleTo: fc.record({
            subject: users,
            orgIds: fc.uniqueArray(orgs, { maxLength: 2 }),
            platform: fc.boolean(),
          }),
          kinds: list(kinds),
          scopes: list(scopes),
          ownerIds: list(users),
          orgIds: list(orgs),
          memoryTypes: list(words),
          statuses: list(fc.constantFrom('ACTIVE', 'ARCHIVED')),
          namespaces: list(words),
          sessionIds: list(words),
          documentIds: list(words),
          sourceIds: list(words),
          evergreen: fc.boolean(),
          occurredAt: range,
          createdAt: range,
          notExpiredAt: time,
        },
        { requiredKeys: ['tenantId'] },
      )
      .map((f) => f as IndexFilter);

    fc.assert(
      fc.property(payload, filter, (p, f) => {
        expect(qdrantMatches(toQdrantFilter(f), p)).toBe(pointMatchesFilter(p, f));
      }),
      { numRuns: 3_000 },
    );
    // A union of one tenant's filters: a point matches when it matches any member.
    const union = fc
      .tuple(tenants, fc.array(filter, { minLength: 1, maxLength: 4 }))
      .map(([tenantId, members]) => members.map((m) => ({ ...m, tenantId })));
    fc.assert(
      fc.property(payload, union, (p, members) => {
        const translated = toQdrantQueryFilter({ anyOf: members });
        expect(qdrantMatches(translated, p)).toBe(pointMatchesQueryFilter(p, { anyOf: members }));
        expect(translated.must?.[0]).toEqual({ key: 'tenantId', match: { value: members[0]!.tenantId } });
      }),
      { numRuns: 1_000 },
    );
  });

  it('is deterministic and never mutates its input (property)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string(), { maxLength: 4 }), fc.integer(), (values, t) => {
        const input: IndexFilter = { tenantId: 't', namespaces: values, notExpiredAt: t };
        const before = JSON.stringify(input);
        expect(toQdrantFilter(input)).toEqual(toQdrantFilter(input));
        expect(JSON.stringify(input)).toBe(before);
      }),
    );
  });
});
