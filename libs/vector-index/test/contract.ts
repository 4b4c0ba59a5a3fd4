import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { choices, seededRandom } from '@engram/testing';
import { pointMatchesFilter } from '../src/filter-semantics.js';
import type {
  CollectionSpec,
  IndexFilter,
  ItemKind,
  Point,
  PointPayload,
  PointScope,
  ScoredPoint,
  SearchQuery,
  SparseVector,
  VectorIndex,
  VectorStore,
} from '../src/index.js';
import { MATRIX_MAX_POINTS, STAGED_STATUS, pointId } from '../src/index.js';

/**
 * The VectorIndex contract: one suite, identical assertions, for every adapter (Qdrant, embedded).
 *
 * What an adapter must do beyond the port's types, as asserted here:
 * - Filters mean what `pointMatchesFilter` (src/filter-semantics.ts) says, applied before the
 *   top-k cut; expectations are computed by brute force over the fixture with that predicate.
 * - Dense scores are cosine similarities (vectors may be stored normalized: fixtures use unit
 *   vectors, so a round trip is exact up to float32).
 * - Sparse scores are Σ q·idf·d with Qdrant's IDF modifier, idf = ln(1 + (N − n + 0.5)/(n + 0.5)),
 *   where N is the number of points in the whole collection with a non-empty sparse vector (every
 *   tenant, whatever the filter) and n the number of those containing the term. Points sharing no
 *   term with the query are not returned. (Qdrant keeps counting deleted points until it vacuums,
 *   so the IDF is only asserted on insert-only data.)
 * - Errors: a vector of the wrong dimension → EngramError INVALID_ARGUMENT (`FIELD_INVALID`), and
 *   nothing of that call is written; `ensureCollection` with another model or dimensions →
 *   FAILED_PRECONDITION (`STATE_CONFLICT`); `setAlias` to a missing collection → NOT_FOUND.
 * - Fetch returns the stored points (any order) and leaves out unknown ids.
 * - Scroll lists the matching points in ascending id order (string order of the lower-case UUID),
 *   `after` exclusive; `next` is the last id of a page that has a successor, absent on the last.
 */
export interface OpenedStore {
  readonly store: VectorStore;
  readonly dispose: () => Promise<void>;
}

const DIMS = 8;
const SPEC: CollectionSpec = { model: 'contract-model@1', dimensions: DIMS };
/** The fixed "now" of the fixtures (2027-01-15T08:00:00Z), and an hour. */
export const NOW = 1_800_000_000_000;
export const HOUR = 3_600_000;

/** `values` scaled to unit length. */
export function unit(values: readonly number[]): number[] {
  const norm = Math.sqrt(values.reduce((s, v) => s + v * v, 0));
  return values.map((v) => v / norm);
}

/** A random unit vector. */
export function randomUnit(random: () => number, dims = DIMS): number[] {
  return unit(Array.from({ length: dims }, () => random() * 2 - 1));
}

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return dot / Math.sqrt(na * nb);
}

const NO_TERMS: SparseVector = { indices: [], values: [] };

/** A MEMORY of `sourceId`: tenant t1, SELF scope of u1, ACTIVE, created an hour before NOW; `overrides` applied. */
export function basePayload(sourceId: string, overrides: Partial<PointPayload> = {}): PointPayload {
  return {
    tenantId: 't1',
    kind: 'MEMORY',
    sourceId,
    scope: 'SELF',
    ownerId: 'u1',
    orgId: '',
    status: 'ACTIVE',
    createdAt: NOW - HOUR,
    ...overrides,
  };
}

function point(
  sourceId: string,
  dense: readonly number[] | Float32Array,
  overrides: Partial<PointPayload> = {},
  sparse: SparseVector = NO_TERMS,
): Point {
  const payload = basePayload(sourceId, overrides);
  return { id: pointId(payload.kind, sourceId), dense, sparse, payload };
}

/** A varied fixture: two tenants, three owners, two orgs, all kinds, optional fields present or not. */
function fixture(count: number, seed: number): Point[] {
  const random = seededRandom(seed);
  const { pick } = choices(random);
  const points: Point[] = [];
  for (let i = 0; i < count; i++) {
    const kind = pick<ItemKind>(['MEMORY', 'MEMORY', 'CHUNK', 'ROUND']);
    const scope = pick<PointScope>(['SELF', 'SELF', 'ORG', 'PLATFORM']);
    const payload: { -readonly [K in keyof PointPayload]?: PointPayload[K] } = {
      tenantId: i % 5 === 4 ? 't2' : 't1',
      kind,
      scope,
      ownerId: pick(['u1', 'u2', 'u3']),
      orgId: scope === 'ORG' ? pick(['o1', 'o2']) : '',
      status: kind === 'CHUNK' ? 'READY' : pick(['ACTIVE', 'ACTIVE', 'ARCHIVED']),
      createdAt: NOW - Math.floor(random() * 100) * HOUR,
    };
    if (kind === 'MEMORY') payload.memoryType = pick(['FACT', 'EPISODE', 'EVENT']);
    if (kind === 'CHUNK') payload.documentId = pick(['d1', 'd2']);
    if (kind === 'ROUND' || (kind === 'MEMORY' && random() < 0.5)) payload.sessionId = pick(['s1', 's2']);
    if (random() < 0.6) payload.namespace = pick(['n1', 'n2']);
    if (random() < 0.6) payload.evergreen = random() < 0.5;
    if (random() < 0.7) payload.occurredAt = NOW - Math.floor(random() * 50) * HOUR;
    if (random() < 0.5) payload.expiresAt = NOW + (Math.floor(random() * 20) - 10) * HOUR;
    // Not from `random`, so the other fields stay what they were before this field existed.
    if (i % 3 !== 0) payload.sourceUpdatedAt = (payload.createdAt ?? NOW) + i;
    points.push(point(`p${i}`, randomUnit(random), payload));
  }
  return points;
}

/** The expected top-k by cosine among the points the reference predicate accepts. */
function expectedDense(
  points: readonly Point[],
  query: readonly number[],
  filter: IndexFilter,
  limit: number,
) {
  return points
    .filter((p) => p.dense !== undefined && pointMatchesFilter(p.payload, filter))
    .map((p) => ({ id: p.id, score: cosine(p.dense!, query) }))
    .sort((a, b) => b.score - a.score)
    .slice(0, limit);
}

function ids(results: readonly { id: string }[]): string[] {
  return results.map((r) => r.id);
}

function sorted(values: readonly string[]): string[] {
  return [...values].sort();
}

/** Asserts the result order and scores of a search against an expectation. */
function expectRanking(
  actual: readonly ScoredPoint[],
  expected: readonly { id: string; score: number }[],
): void {
  expect(ids(actual)).toEqual(ids(expected));
  actual.forEach((r, i) => {
    expect(r.score).toBeCloseTo(expected[i]?.score ?? Number.NaN, 4);
  });
}

/** Qdrant's IDF modifier. */
function idf(total: number, containing: number): number {
  return Math.log(1 + (total - containing + 0.5) / (containing + 0.5));
}

export function vectorIndexContract(name: string, open: () => Promise<OpenedStore>): void {
  describe(`VectorIndex contract (${name})`, () => {
    let opened: OpenedStore | undefined;
    const created: string[] = [];
    let sequence = 0;

    const store = (): VectorStore => {
      if (opened === undefined) throw new Error('the store did not open');
      return opened.store;
    };
    /** A name no other test or run uses. */
    const uniqueName = (label: string): string =>
      `contract_${label}_${process.pid}_${Date.now().toString(36)}_${sequence++}`;
    /** A new, uniquely named collection, deleted after the suite. */
    const freshName = (label: string): string => {
      const collection = uniqueName(label);
      created.push(collection);
      return collection;
    };
    const freshIndex = async (label: string, spec: CollectionSpec = SPEC): Promise<VectorIndex> => {
      const index = store().index(freshName(label));
      await index.ensureCollection(spec);
      return index;
    };

    beforeAll(async () => {
      opened = await open();
    });

    afterAll(async () => {
      if (opened === undefined) return;
      for (const collection of created)
        await opened.store.deleteCollection(collection).catch(() => undefined);
      await opened.dispose();
    });

    describe('ensureCollection', () => {
      it('creates the collection and reports its model and dimensions', async () => {
        const index = store().index(freshName('create'));
        expect(await index.spec()).toBeUndefined();
        await index.ensureCollection(SPEC);
        expect(await index.spec()).toEqual(SPEC);
        expect(await store().listCollections()).toContain(index.name);
        expect(await index.count()).toBe(0);
      });

      it('is idempotent: a second call with the same spec keeps the points', async () => {
        const index = await freshIndex('idem');
        await index.upsert([point('a', randomUnit(seededRandom(1)))]);
        await index.ensureCollection(SPEC);
        await index.ensureCollection({ ...SPEC });
        expect(await index.count()).toBe(1);
      });

      it('refuses a spec with another model or other dimensions', async () => {
        const index = await freshIndex('refuse');
        await expect(
          index.ensureCollection({ model: 'another-model', dimensions: DIMS }),
        ).rejects.toMatchObject({
          code: Code.FailedPrecondition,
          reason: 'STATE_CONFLICT',
        });
        await expect(
          index.ensureCollection({ model: SPEC.model, dimensions: DIMS * 2 }),
        ).rejects.toMatchObject({
          code: Code.FailedPrecondition,
          reason: 'STATE_CONFLICT',
        });
        expect(await index.spec()).toEqual(SPEC);
      });

      it('deleteCollection removes the collection and its points', async () => {
        const index = await freshIndex('drop');
        await index.upsert([point('a', randomUnit(seededRandom(2)))]);
        await store().deleteCollection(index.name);
        expect(await store().listCollections()).not.toContain(index.name);
        expect(await index.spec()).toBeUndefined();
        await index.ensureCollection(SPEC);
        expect(await index.count()).toBe(0);
      });
    });

    describe('upsert and fetch', () => {
      it('round-trips payloads and both vectors', async () => {
        const index = await freshIndex('roundtrip');
        const random = seededRandom(3);
        const full = point(
          'full',
          randomUnit(random),
          {
            tenantId: 't9',
            kind: 'CHUNK',
            scope: 'ORG',
            ownerId: 'u7',
            orgId: 'o7',
            status: 'READY',
            memoryType: 'FACT',
            namespace: 'ns',
            evergreen: true,
            sessionId: 's7',
            documentId: 'd7',
            occurredAt: NOW - 5 * HOUR,
            createdAt: NOW - 4 * HOUR,
            expiresAt: NOW + 3 * HOUR,
            sourceUpdatedAt: NOW - 2 * HOUR,
          },
          { indices: [3, 17, 4_000_000_000], values: [0.5, 1.25, 2] },
        );
        const minimal = point('minimal', new Float32Array(randomUnit(random)), {}, NO_TERMS);
        await index.upsert([full, minimal]);

        const fetched = await index.fetch([full.id, minimal.id], { withVectors: true });
        expect(sorted(ids(fetched))).toEqual(sorted([full.id, minimal.id]));
        for (const expected of [full, minimal]) {
          const actual = fetched.find((p) => p.id === expected.id)!;
          expect(actual.payload).toEqual(expected.payload);
          expect(actual.dense).toHaveLength(DIMS);
          Array.from(actual.dense!).forEach((v, i) => {
            expect(v).toBeCloseTo(expected.dense![i] ?? Number.NaN, 5);
          });
          expect([...actual.sparse.indices]).toEqual([...expected.sparse.indices]);
          actual.sparse.values.forEach((v, i) => {
            expect(v).toBeCloseTo(expected.sparse.values[i] ?? Number.NaN, 6);
          });
        }
        // Optional fields that were absent stay absent (not null).
        const minimalPayload = fetched.find((p) => p.id === minimal.id)!.payload;
        expect(Object.keys(minimalPayload).sort()).toEqual(Object.keys(minimal.payload).sort());
      });

      it('fetch leaves out unknown ids and returns payloads without vectors when not asked', async () => {
        const index = await freshIndex('fetch');
        const a = point('a', randomUnit(seededRandom(4)));
        await index.upsert([a]);
        const unknown = pointId('MEMORY', 'never-written');
        const fetched = await index.fetch([unknown, a.id]);
        expect(ids(fetched)).toEqual([a.id]);
        expect(fetched[0]?.payload).toEqual(a.payload);
        expect(await index.fetch([])).toEqual([]);
        expect(await index.fetch([unknown])).toEqual([]);
      });

      it('stores sourceUpdatedAt and returns it from fetch, scroll and both searches', async () => {
        const index = await freshIndex('source-updated');
        const random = seededRandom(8);
        const query = randomUnit(random);
        const terms: SparseVector = { indices: [9], values: [1] };
        const stamped = point('stamped', query, { sourceUpdatedAt: NOW - 123 }, terms);
        const unstamped = point('unstamped', randomUnit(random), {}, terms);
        await index.upsert([stamped, unstamped]);
        const payloadsOf = async (): Promise<Map<string, PointPayload>[]> => {
          const fetched = await index.fetch([stamped.id, unstamped.id]);
          const scrolled = (await index.scroll({ tenantId: 't1' }, { limit: 10 })).points;
          const dense = await index.searchDense(query, { tenantId: 't1' }, 10);
          const sparse = await index.searchSparse(terms, { tenantId: 't1' }, 10);
          return [fetched, scrolled, dense, sparse].map(
            (found) => new Map(found.map((p) => [p.id, p.payload])),
          );
        };
        for (const found of await payloadsOf()) {
          expect(found.get(stamped.id)).toEqual(stamped.payload);
          expect(found.get(stamped.id)?.sourceUpdatedAt).toBe(NOW - 123);
          expect(found.get(unstamped.id)).toEqual(unstamped.payload);
          expect(Object.keys(found.get(unstamped.id) ?? {})).not.toContain('sourceUpdatedAt');
        }
        // A replacement replaces it; a replacement without it drops it.
        await index.upsert([point('stamped', query, { sourceUpdatedAt: NOW }, terms)]);
        for (const found of await payloadsOf()) expect(found.get(stamped.id)?.sourceUpdatedAt).toBe(NOW);
        await index.upsert([point('stamped', query, {}, terms)]);
        for (const found of await payloadsOf())
          expect(Object.keys(found.get(stamped.id) ?? {})).not.toContain('sourceUpdatedAt');
      });

      it('is idempotent by id: writing a point twice keeps one point with the last payload', async () => {
        const index = await freshIndex('upsert-idem');
        const random = seededRandom(5);
        const first = point('same', randomUnit(random), { status: 'ACTIVE' });
        const second = point('same', randomUnit(random), { status: 'ARCHIVED' });
        await index.upsert([first]);
        await index.upsert([first]);
        await index.upsert([second]);
        expect(await index.count()).toBe(1);
        expect((await index.fetch([first.id]))[0]?.payload.status).toBe('ARCHIVED');
        await index.upsert([first, second]);
        expect(await index.count()).toBe(1);
      });

      it('writes many points in one call', async () => {
        const index = await freshIndex('bulk');
        const points = fixture(700, 6);
        await index.upsert(points);
        expect(await index.count()).toBe(700);
        const sample = [points[0]!, points[350]!, points[699]!];
        expect(sorted(ids(await index.fetch(ids(sample))))).toEqual(sorted(ids(sample)));
      });

      it('accepts empty writes', async () => {
        const index = await freshIndex('empty');
        await index.upsert([]);
        await index.delete([]);
        expect(await index.count()).toBe(0);
      });

      it('rejects a dense vector of the wrong dimension and writes nothing of that call', async () => {
        const index = await freshIndex('dims');
        const random = seededRandom(7);
        const good = point('good', randomUnit(random));
        const bad = point('bad', randomUnit(random, DIMS + 1));
        await expect(index.upsert([good, bad])).rejects.toMatchObject({
          code: Code.InvalidArgument,
          reason: 'FIELD_INVALID',
        });
        expect(await index.count()).toBe(0);
        expect(await index.fetch([good.id])).toEqual([]);
        await expect(
          index.searchDense(randomUnit(random, DIMS - 1), { tenantId: 't1' }, 5),
        ).rejects.toMatchObject({
          code: Code.InvalidArgument,
          reason: 'FIELD_INVALID',
        });
      });
    });

    describe('dense search', () => {
      const points = fixture(150, 11);
      let index: VectorIndex;
      beforeAll(async () => {
        index = await freshIndex('dense');
        await index.upsert(points);
      });

      it('returns the exact cosine order within the filter', async () => {
        const random = seededRandom(12);
        const filters: IndexFilter[] = [
          { tenantId: 't1' },
          { tenantId: 't2' },
          { tenantId: 't1', visibleTo: { subject: 'u1', orgIds: ['o1'], platform: false } },
          { tenantId: 't1', kinds: ['MEMORY'], notExpiredAt: NOW },
        ];
        for (const filter of filters) {
          for (let q = 0; q < 3; q++) {
            const query = randomUnit(random);
            expectRanking(
              await index.searchDense(query, filter, 10),
              expectedDense(points, query, filter, 10),
            );
          }
        }
      });

      it('returns the payload of each hit and respects the limit', async () => {
        const query = randomUnit(seededRandom(13));
        const results = await index.searchDense(query, { tenantId: 't1' }, 3);
        expect(results).toHaveLength(3);
        for (const r of results) expect(r.payload).toEqual(points.find((p) => p.id === r.id)?.payload);
        expect(await index.searchDense(query, { tenantId: 't1' }, 0)).toEqual([]);
        expect(await index.searchDense(query, { tenantId: 'nobody' }, 5)).toEqual([]);
      });

      it('accepts a Float32Array query', async () => {
        const query = randomUnit(seededRandom(14));
        const results = await index.searchDense(new Float32Array(query), { tenantId: 't1' }, 5);
        expect(ids(results)).toEqual(ids(expectedDense(points, query, { tenantId: 't1' }, 5)));
      });

      it('does not lose results under a selective filter (filtering happens before the top-k cut)', async () => {
        const selective = await freshIndex('selective');
        const random = seededRandom(15);
        const query = randomUnit(random);
        // 2,000 points of other owners almost identical to the query…
        const crowd: Point[] = [];
        for (let i = 0; i < 2_000; i++) {
          const noise = randomUnit(random).map((v) => v * 0.05);
          crowd.push(
            point(`crowd${i}`, unit(query.map((v, d) => v + (noise[d] ?? 0))), { ownerId: `other${i % 7}` }),
          );
        }
        // …and the subject's 3 points, far from it.
        const mine = [0, 1, 2].map((i) =>
          point(`mine${i}`, unit(query.map((v) => -v + random() * 0.5)), { ownerId: 'me' }),
        );
        await selective.upsert([...crowd, ...mine]);
        const filter: IndexFilter = {
          tenantId: 't1',
          visibleTo: { subject: 'me', orgIds: [], platform: false },
        };
        const results = await selective.searchDense(query, filter, 3);
        expectRanking(results, expectedDense([...crowd, ...mine], query, filter, 3));
        expect(sorted(ids(results))).toEqual(sorted(ids(mine)));
      });
    });

    describe('sparse search', () => {
      it('ranks by IDF-weighted dot product with collection-wide statistics', async () => {
        const index = await freshIndex('sparse');
        const COMMON = 1;
        const MEDIUM = 2;
        const RARE = 3;
        const OTHER = 4;
        const docs: Point[] = [
          point('s0', randomUnit(seededRandom(20)), {}, { indices: [COMMON, RARE], values: [1, 1] }),
          point('s1', randomUnit(seededRandom(21)), {}, { indices: [COMMON, MEDIUM], values: [2, 1] }),
          point('s2', randomUnit(seededRandom(22)), {}, { indices: [COMMON], values: [3] }),
          point('s3', randomUnit(seededRandom(23)), {}, { indices: [MEDIUM, OTHER], values: [0.5, 1] }),
          point('s4', randomUnit(seededRandom(24)), {}, { indices: [OTHER], values: [1] }),
          point('s5', randomUnit(seededRandom(25)), {}, NO_TERMS),
          // Other tenants' points count in the statistics but never appear in t1's results.
          point(
            'x0',
            randomUnit(seededRandom(26)),
            { tenantId: 't2' },
            { indices: [COMMON, MEDIUM], values: [1, 1] },
          ),
          point('x1', randomUnit(seededRandom(27)), { tenantId: 't2' }, { indices: [COMMON], values: [1] }),
        ];
        await index.upsert(docs);

        const query: SparseVector = { indices: [COMMON, MEDIUM, RARE], values: [1, 0.5, 1] };
        const withTerms = docs.filter((d) => d.sparse.indices.length > 0);
        const total = withTerms.length;
        const containing = (term: number) => withTerms.filter((d) => d.sparse.indices.includes(term)).length;
        const score = (doc: Point) =>
          query.indices.reduce((sum, term, qi) => {
            const di = doc.sparse.indices.indexOf(term);
            if (di < 0) return sum;
            return (
              sum + (query.values[qi] ?? 0) * idf(total, containing(term)) * (doc.sparse.values[di] ?? 0)
            );
          }, 0);
        const expected = docs
          .filter((d) => d.payload.tenantId === 't1' && score(d) > 0)
          .map((d) => ({ id: d.id, score: score(d) }))
          .sort((a, b) => b.score - a.score);

        const results = await index.searchSparse(query, { tenantId: 't1' }, 10);
        expectRanking(results, expected);
        // s4 and s5 share no term with the query.
        expect(ids(results)).not.toContain(docs[4]!.id);
        expect(ids(results)).not.toContain(docs[5]!.id);
      });

      it('weighs a rare term above a common one', async () => {
        const index = await freshIndex('rare');
        const docs = [
          point('common-only', randomUnit(seededRandom(30)), {}, { indices: [10], values: [1] }),
          point('rare-only', randomUnit(seededRandom(31)), {}, { indices: [11], values: [1] }),
          ...Array.from({ length: 8 }, (_, i) =>
            point(
              `filler${i}`,
              randomUnit(seededRandom(40 + i)),
              { tenantId: 't2' },
              { indices: [10, 12], values: [1, 1] },
            ),
          ),
        ];
        await index.upsert(docs);
        const results = await index.searchSparse(
          { indices: [10, 11], values: [1, 1] },
          { tenantId: 't1' },
          2,
        );
        expect(ids(results)).toEqual([docs[1]!.id, docs[0]!.id]);
        expect(results[0]!.score).toBeGreaterThan(results[1]!.score);
      });

      it('applies filters and returns nothing for an empty query', async () => {
        const index = await freshIndex('sparse-filter');
        const docs = [
          point('mine', randomUnit(seededRandom(50)), { ownerId: 'u1' }, { indices: [5], values: [1] }),
          point('theirs', randomUnit(seededRandom(51)), { ownerId: 'u2' }, { indices: [5], values: [2] }),
        ];
        await index.upsert(docs);
        const filter: IndexFilter = {
          tenantId: 't1',
          visibleTo: { subject: 'u1', orgIds: [], platform: false },
        };
        expect(ids(await index.searchSparse({ indices: [5], values: [1] }, filter, 10))).toEqual([
          docs[0]!.id,
        ]);
        expect(await index.searchSparse(NO_TERMS, { tenantId: 't1' }, 10)).toEqual([]);
      });
    });

    describe('filters', () => {
      const points = fixture(240, 60);
      const query = randomUnit(seededRandom(61));
      let index: VectorIndex;
      beforeAll(async () => {
        index = await freshIndex('filters');
        await index.upsert(points);
      });

      /** Searches with a limit above the fixture size: the result set is everything that matches. */
      const matching = async (filter: IndexFilter) =>
        sorted(ids(await index.searchDense(query, filter, 1_000)));
      const expected = (filter: IndexFilter) =>
        sorted(points.filter((p) => pointMatchesFilter(p.payload, filter)).map((p) => p.id));
      const payloads = async (filter: IndexFilter) =>
        (await index.searchDense(query, filter, 1_000)).map((r) => r.payload);

      it('never returns another tenant’s point', async () => {
        for (const tenantId of ['t1', 't2']) {
          const found = await payloads({ tenantId });
          expect(found.length).toBeGreaterThan(0);
          expect(found.every((p) => p.tenantId === tenantId)).toBe(true);
        }
        // Even a query that is exactly another tenant's point.
        const foreign = points.find((p) => p.payload.tenantId === 't2')!;
        const results = await index.searchDense(foreign.dense!, { tenantId: 't1' }, 5);
        expect(ids(results)).not.toContain(foreign.id);
        expect(await index.searchDense(query, { tenantId: 't3' }, 10)).toEqual([]);
      });

      it('never returns another owner’s SELF point', async () => {
        const found = await payloads({
          tenantId: 't1',
          visibleTo: { subject: 'u1', orgIds: ['o1', 'o2'], platform: true },
        });
        expect(found.filter((p) => p.scope === 'SELF').every((p) => p.ownerId === 'u1')).toBe(true);
        expect(found.some((p) => p.scope === 'SELF')).toBe(true);
      });

      it('returns ORG points only to members of that org', async () => {
        const found = await payloads({
          tenantId: 't1',
          visibleTo: { subject: 'u2', orgIds: ['o1'], platform: false },
        });
        const org = found.filter((p) => p.scope === 'ORG');
        expect(org.length).toBeGreaterThan(0);
        expect(org.every((p) => p.orgId === 'o1')).toBe(true);
        const none = await payloads({
          tenantId: 't1',
          visibleTo: { subject: 'u2', orgIds: [], platform: false },
        });
        expect(none.some((p) => p.scope === 'ORG')).toBe(false);
      });

      it('returns PLATFORM points only with the platform role', async () => {
        const without = await payloads({
          tenantId: 't1',
          visibleTo: { subject: 'u3', orgIds: [], platform: false },
        });
        expect(without.some((p) => p.scope === 'PLATFORM')).toBe(false);
        const withRole = await payloads({
          tenantId: 't1',
          visibleTo: { subject: 'u3', orgIds: [], platform: true },
        });
        expect(withRole.some((p) => p.scope === 'PLATFORM')).toBe(true);
      });

      const table: ReadonlyArray<readonly [string, IndexFilter]> = [
        ['tenant only', { tenantId: 't1' }],
        [
          'visible to u1 without orgs',
          { tenantId: 't1', visibleTo: { subject: 'u1', orgIds: [], platform: false } },
        ],
        [
          'visible to u2 in o1 and o2',
          { tenantId: 't1', visibleTo: { subject: 'u2', orgIds: ['o1', 'o2'], platform: false } },
        ],
        [
          'visible to a platform operator',
          { tenantId: 't1', visibleTo: { subject: 'ops', orgIds: [], platform: true } },
        ],
        ['kinds', { tenantId: 't1', kinds: ['CHUNK', 'ROUND'] }],
        ['scopes', { tenantId: 't1', scopes: ['ORG'] }],
        ['owners', { tenantId: 't1', ownerIds: ['u2', 'u3'] }],
        ['orgs', { tenantId: 't1', orgIds: ['o2'] }],
        ['memory types', { tenantId: 't1', memoryTypes: ['FACT', 'EVENT'] }],
        ['statuses', { tenantId: 't1', statuses: ['ARCHIVED'] }],
        ['namespaces', { tenantId: 't1', namespaces: ['n1'] }],
        ['sessions', { tenantId: 't1', sessionIds: ['s2'] }],
        ['documents', { tenantId: 't1', documentIds: ['d1'] }],
        ['source ids', { tenantId: 't1', sourceIds: ['p0', 'p1', 'p2', 'p3', 'p7'] }],
        ['evergreen', { tenantId: 't1', evergreen: true }],
        ['not evergreen (absent counts as false)', { tenantId: 't1', evergreen: false }],
        [
          'occurred in a window',
          { tenantId: 't1', occurredAt: { gte: NOW - 30 * HOUR, lt: NOW - 10 * HOUR } },
        ],
        ['created since', { tenantId: 't1', createdAt: { gte: NOW - 20 * HOUR } }],
        ['created before', { tenantId: 't1', createdAt: { lt: NOW - 50 * HOUR } }],
        ['not expired', { tenantId: 't1', notExpiredAt: NOW }],
        ['empty lists mean any', { tenantId: 't1', kinds: [], statuses: [], occurredAt: {} }],
        [
          'everything at once',
          {
            tenantId: 't1',
            visibleTo: { subject: 'u1', orgIds: ['o1'], platform: true },
            kinds: ['MEMORY', 'ROUND'],
            statuses: ['ACTIVE'],
            createdAt: { gte: NOW - 80 * HOUR },
            notExpiredAt: NOW,
          },
        ],
      ];

      it.each(table)('%s: search and count see exactly the matching points', async (_label, filter) => {
        const want = expected(filter);
        expect(want.length).toBeGreaterThan(0); // the fixture exercises every filter
        expect(await matching(filter)).toEqual(want);
        expect(await index.count(filter)).toBe(want.length);
      });

      it('keeps points without expiresAt and drops expired ones for notExpiredAt', async () => {
        const found = await payloads({ tenantId: 't1', notExpiredAt: NOW });
        expect(found.some((p) => p.expiresAt === undefined)).toBe(true);
        expect(found.some((p) => p.expiresAt !== undefined)).toBe(true);
        expect(found.every((p) => p.expiresAt === undefined || p.expiresAt > NOW)).toBe(true);
      });
    });

    describe('scroll', () => {
      const points = fixture(240, 90);
      let index: VectorIndex;
      beforeAll(async () => {
        index = await freshIndex('scroll');
        await index.upsert(points);
      });

      /** The matching points in ascending id order (code-unit order of the lower-case UUID). */
      const expected = (filter: IndexFilter) =>
        points
          .filter((p) => pointMatchesFilter(p.payload, filter))
          .map((p) => ({ id: p.id, payload: p.payload }))
          .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

      /** Follows `next` from `after` to the last page, checking the shape of every page. */
      const scrollAll = async (filter: IndexFilter, limit: number, after?: string) => {
        const all: { id: string; payload: PointPayload }[] = [];
        let pages = 0;
        let cursor = after;
        for (;;) {
          const page = await index.scroll(filter, {
            limit,
            ...(cursor !== undefined ? { after: cursor } : {}),
          });
          pages++;
          all.push(...page.points);
          if (page.next === undefined) {
            expect(page.points.length).toBeLessThanOrEqual(limit);
            return { points: all, pages };
          }
          // A page with a successor is full, and its cursor is its last id.
          expect(page.points).toHaveLength(limit);
          expect(page.next).toBe(page.points[limit - 1]!.id);
          cursor = page.next;
          if (pages > points.length) throw new Error('scroll does not end');
        }
      };

      it('pages through every matching point exactly once, in ascending id order, with payloads', async () => {
        const filter: IndexFilter = { tenantId: 't1' };
        const want = expected(filter);
        expect(want.length).toBeGreaterThan(100);
        // The ids spread over the whole UUID range, so the order is checked across the high bit.
        expect(want[0]!.id < '4').toBe(true);
        expect(want[want.length - 1]!.id > 'c').toBe(true);
        const paged = await scrollAll(filter, 7);
        expect(paged.points).toEqual(want);
        expect(paged.pages).toBe(Math.ceil(want.length / 7));
        // One page when the limit covers everything, also when it is exactly the count.
        expect(await index.scroll(filter, { limit: 1_000 })).toStrictEqual({ points: want });
        expect(await index.scroll(filter, { limit: want.length })).toStrictEqual({ points: want });
        expect(await index.scroll(filter, { limit: want.length - 1 })).toStrictEqual({
          points: want.slice(0, -1),
          next: want[want.length - 2]!.id,
        });
      });

      it('starts right after `after`, whether or not that id exists', async () => {
        const filter: IndexFilter = { tenantId: 't1' };
        const want = expected(filter);
        const middle = want[40]!.id;
        expect((await scrollAll(filter, 11, middle)).points).toEqual(want.slice(41));
        const between = '80000000-0000-0000-0000-000000000000';
        expect((await scrollAll(filter, 11, between)).points).toEqual(want.filter((p) => p.id > between));
        expect(
          (await index.scroll(filter, { limit: 1, after: '00000000-0000-0000-0000-000000000000' })).points,
        ).toEqual(want.slice(0, 1));
      });

      it('returns no points and no next after the end', async () => {
        const filter: IndexFilter = { tenantId: 't1' };
        const want = expected(filter);
        const last = want[want.length - 1]!.id;
        expect(await index.scroll(filter, { limit: 5, after: last })).toStrictEqual({ points: [] });
        expect(
          await index.scroll(filter, { limit: 5, after: 'ffffffff-ffff-ffff-ffff-ffffffffffff' }),
        ).toStrictEqual({ points: [] });
        expect(await index.scroll({ tenantId: 't3' }, { limit: 5 })).toStrictEqual({ points: [] });
      });

      it('respects tenant and visibility filters', async () => {
        const filters: IndexFilter[] = [
          { tenantId: 't2' },
          { tenantId: 't1', visibleTo: { subject: 'u1', orgIds: [], platform: false } },
          { tenantId: 't1', visibleTo: { subject: 'u2', orgIds: ['o1'], platform: true } },
          { tenantId: 't2', visibleTo: { subject: 'u3', orgIds: ['o1', 'o2'], platform: false } },
          { tenantId: 't1', kinds: ['MEMORY'], statuses: ['ACTIVE'], notExpiredAt: NOW },
        ];
        for (const filter of filters) {
          const want = expected(filter);
          expect(want.length).toBeGreaterThan(5);
          const paged = await scrollAll(filter, 5);
          expect(paged.points).toEqual(want);
          expect(paged.points.every((p) => p.payload.tenantId === filter.tenantId)).toBe(true);
        }
      });

      it('rejects a limit outside 1–1000, an `after` that is not a point id and a missing tenant', async () => {
        const invalid = { code: Code.InvalidArgument };
        for (const limit of [0, 1_001, 2.5, -1])
          await expect(index.scroll({ tenantId: 't1' }, { limit })).rejects.toMatchObject(invalid);
        for (const after of ['p1', '', points[0]!.id.toUpperCase()])
          await expect(index.scroll({ tenantId: 't1' }, { limit: 5, after })).rejects.toMatchObject(invalid);
        await expect(index.scroll({ tenantId: '' }, { limit: 5 })).rejects.toMatchObject(invalid);
      });
    });

    describe('delete and count', () => {
      it('deletes by ids, ignoring unknown ones', async () => {
        const index = await freshIndex('delete-ids');
        const points = fixture(20, 70);
        await index.upsert(points);
        await index.delete([points[0]!.id, points[1]!.id, pointId('MEMORY', 'unknown')]);
        expect(await index.count()).toBe(18);
        expect(await index.fetch([points[0]!.id, points[1]!.id])).toEqual([]);
      });

      it('deletes by filter exactly the matching points of that tenant', async () => {
        const index = await freshIndex('delete-filter');
        const points = fixture(120, 71);
        await index.upsert(points);
        const filter: IndexFilter = { tenantId: 't1', kinds: ['CHUNK'], documentIds: ['d1'] };
        const doomed = points.filter((p) => pointMatchesFilter(p.payload, filter));
        expect(doomed.length).toBeGreaterThan(0);
        await index.deleteByFilter(filter);
        expect(await index.count()).toBe(points.length - doomed.length);
        expect(await index.count(filter)).toBe(0);
        // The other tenant's chunks of a document with the same id are untouched.
        const other: IndexFilter = { tenantId: 't2', kinds: ['CHUNK'], documentIds: ['d1'] };
        expect(await index.count(other)).toBe(
          points.filter((p) => pointMatchesFilter(p.payload, other)).length,
        );
      });

      it('counts all points without a filter and the matching ones with it', async () => {
        const index = await freshIndex('count');
        const points = fixture(60, 72);
        await index.upsert(points);
        expect(await index.count()).toBe(60);
        for (const filter of [
          { tenantId: 't1' },
          { tenantId: 't2' },
          { tenantId: 't1', statuses: ['ARCHIVED'] },
        ]) {
          expect(await index.count(filter)).toBe(
            points.filter((p) => pointMatchesFilter(p.payload, filter)).length,
          );
        }
      });
    });

    describe('lexical-first points (no dense vector yet)', () => {
      /** A point written without its dense vector, due since `since`. */
      const pending = (
        sourceId: string,
        since: number,
        overrides: Partial<PointPayload> = {},
        sparse: SparseVector = NO_TERMS,
      ): Point => {
        const payload = basePayload(sourceId, { ...overrides, densePendingSince: since });
        return { id: pointId(payload.kind, sourceId), sparse, payload };
      };
      const TERM: SparseVector = { indices: [7], values: [1] };

      it('are invisible to dense search and found by sparse search, filters, scroll, count and fetch', async () => {
        const index = await freshIndex('pending');
        const random = seededRandom(100);
        const query = randomUnit(random);
        const full = point('full', randomUnit(random), {}, TERM);
        const lexical = pending('lexical', NOW, { namespace: 'n1' }, TERM);
        const theirs = pending('theirs', NOW + 1, { ownerId: 'u2', namespace: 'n1' }, TERM);
        await index.upsert([full, lexical, theirs]);

        expect(ids(await index.searchDense(query, { tenantId: 't1' }, 10))).toEqual([full.id]);
        const sparse = await index.searchSparse(TERM, { tenantId: 't1' }, 10);
        expect(sorted(ids(sparse))).toEqual(sorted([full.id, lexical.id, theirs.id]));
        expect(sparse.find((r) => r.id === lexical.id)?.payload).toEqual(lexical.payload);
        const mine: IndexFilter = {
          tenantId: 't1',
          visibleTo: { subject: 'u1', orgIds: [], platform: false },
          namespaces: ['n1'],
        };
        expect(ids(await index.searchSparse(TERM, mine, 10))).toEqual([lexical.id]);
        expect(await index.count()).toBe(3);
        expect(await index.count(mine)).toBe(1);
        const scrolled = (await index.scroll({ tenantId: 't1' }, { limit: 10 })).points;
        expect(scrolled.find((p) => p.id === lexical.id)).toEqual({
          id: lexical.id,
          payload: lexical.payload,
        });
        expect(scrolled).toHaveLength(3);

        const [fetched] = await index.fetch([lexical.id], { withVectors: true });
        expect(fetched?.payload).toEqual(lexical.payload);
        expect(fetched?.payload.densePendingSince).toBe(NOW);
        expect(fetched).not.toHaveProperty('dense');
        expect([...fetched!.sparse.indices]).toEqual([7]);
        expect((await index.fetch([lexical.id]))[0]?.payload).toEqual(lexical.payload);

        await index.deleteByFilter({ tenantId: 't1', sourceIds: ['theirs'] });
        expect(await index.count()).toBe(2);
        expect(await index.countPendingDense()).toBe(1);
      });

      it('setStatus changes only the status of the matching points; staged points are not the dense stage’s work', async () => {
        const index = await freshIndex('staged');
        const random = seededRandom(104);
        const chunk = (sourceId: string, since: number, overrides: Partial<PointPayload> = {}) =>
          pending(
            sourceId,
            since,
            { kind: 'CHUNK', status: STAGED_STATUS, documentId: 'd1', ...overrides },
            TERM,
          );
        const c1 = chunk('c1', NOW + 1);
        const c2 = chunk('c2', NOW + 2);
        const other = chunk('c3', NOW + 3, { documentId: 'd2' });
        const theirs = chunk('c4', NOW + 4, { tenantId: 't2' });
        const memory = pending('m1', NOW + 5, {}, TERM);
        const embedded = point('c5', randomUnit(random), {
          kind: 'CHUNK',
          status: STAGED_STATUS,
          documentId: 'd1',
        });
        await index.upsert([c1, c2, other, theirs, memory, embedded]);
        const active: IndexFilter = { tenantId: 't1', statuses: ['ACTIVE'] };
        expect(ids(await index.pendingDense(10))).toEqual([memory.id]);
        expect(await index.countPendingDense()).toBe(1);
        expect(await index.countPendingDense({ tenantId: 't1', kinds: ['CHUNK'] })).toBe(0);
        expect(ids(await index.searchSparse(TERM, active, 10))).toEqual([memory.id]);

        const document: IndexFilter = {
          tenantId: 't1',
          kinds: ['CHUNK'],
          documentIds: ['d1'],
          statuses: [STAGED_STATUS],
        };
        await index.setStatus(document, 'ACTIVE');
        expect(await index.count(document)).toBe(0);
        const after = await index.fetch([c1.id, c2.id, other.id, theirs.id, embedded.id], {
          withVectors: true,
        });
        const byId = new Map(after.map((p) => [p.id, p]));
        for (const p of [c1, c2]) {
          expect(byId.get(p.id)?.payload).toEqual({ ...p.payload, status: 'ACTIVE' });
          expect([...byId.get(p.id)!.sparse.indices]).toEqual([...TERM.indices]);
          expect(byId.get(p.id)).not.toHaveProperty('dense');
        }
        expect(byId.get(embedded.id)?.payload.status).toBe('ACTIVE');
        expect(byId.get(embedded.id)?.dense).toHaveLength(DIMS);
        expect(byId.get(other.id)?.payload.status).toBe(STAGED_STATUS);
        expect(byId.get(theirs.id)?.payload.status).toBe(STAGED_STATUS);
        // Now searchable, and due for their dense vectors in their marks' order.
        expect(sorted(ids(await index.searchSparse(TERM, active, 10)))).toEqual(
          sorted([c1.id, c2.id, memory.id]),
        );
        expect(ids(await index.pendingDense(10))).toEqual([c1.id, c2.id, memory.id]);
        expect(await index.countPendingDense()).toBe(3);
        expect(await index.count()).toBe(6);

        await expect(index.setStatus(document, '')).rejects.toMatchObject({ code: Code.InvalidArgument });
        await expect(index.setStatus({ tenantId: '' }, 'ACTIVE')).rejects.toMatchObject({
          code: Code.InvalidArgument,
        });
        // Nothing matching: nothing changes.
        await index.setStatus({ tenantId: 't9' }, 'ACTIVE');
        expect(await index.count({ tenantId: 't1', statuses: [STAGED_STATUS] })).toBe(1);
      });

      it('an upsert replaces a point wholly: pending → with its vector → pending again', async () => {
        const index = await freshIndex('pending-replace');
        const random = seededRandom(101);
        const vector = randomUnit(random);
        const lexical = pending('p', NOW, {}, TERM);
        await index.upsert([lexical]);
        expect(await index.countPendingDense()).toBe(1);
        expect(await index.searchDense(vector, { tenantId: 't1' }, 5)).toEqual([]);

        const embedded = point('p', vector, {}, TERM);
        await index.upsert([embedded]);
        expect(await index.countPendingDense()).toBe(0);
        expect(await index.pendingDense(10)).toEqual([]);
        const hits = await index.searchDense(vector, { tenantId: 't1' }, 5);
        expect(ids(hits)).toEqual([embedded.id]);
        expect(hits[0]?.score).toBeCloseTo(1, 5);
        expect(hits[0]?.payload).toEqual(embedded.payload);
        expect(Object.keys(hits[0]!.payload)).not.toContain('densePendingSince');
        const [withVector] = await index.fetch([embedded.id], { withVectors: true });
        expect(withVector?.dense).toHaveLength(DIMS);

        await index.upsert([pending('p', NOW + 5, {}, TERM)]);
        expect(await index.countPendingDense()).toBe(1);
        expect(await index.searchDense(vector, { tenantId: 't1' }, 5)).toEqual([]);
        expect(ids(await index.searchSparse(TERM, { tenantId: 't1' }, 5))).toEqual([embedded.id]);
        const [again] = await index.fetch([embedded.id], { withVectors: true });
        expect(again).not.toHaveProperty('dense');
        expect(again?.payload.densePendingSince).toBe(NOW + 5);
        expect(await index.count()).toBe(1);
      });

      it('rejects a point without dense and without a mark, or with both, and writes nothing of that call', async () => {
        const index = await freshIndex('pending-invalid');
        const random = seededRandom(102);
        const good = point('good', randomUnit(random));
        const goodPending = pending('good-pending', NOW);
        const { densePendingSince: _dropped, ...unmarked } = goodPending.payload;
        const invalid: Point[] = [
          { id: pointId('MEMORY', 'no-mark'), sparse: NO_TERMS, payload: unmarked },
          { ...point('both', randomUnit(random)), payload: basePayload('both', { densePendingSince: NOW }) },
          pending('fraction', NOW + 0.5),
          pending('negative', -1),
          pending('nan', Number.NaN),
          // Dimensions are checked only for points that have a dense vector.
          point('wrong-size', randomUnit(random, DIMS + 1)),
        ];
        for (const bad of invalid) {
          await expect(index.upsert([good, goodPending, bad])).rejects.toMatchObject({
            code: Code.InvalidArgument,
            reason: 'FIELD_INVALID',
          });
        }
        expect(await index.count()).toBe(0);
        expect(await index.countPendingDense()).toBe(0);
        await index.upsert([good, goodPending]);
        expect(await index.count()).toBe(2);
      });

      it('pendingDense lists due points of every tenant, oldest mark first (ties by id), by kind and limit', async () => {
        const index = await freshIndex('pending-order');
        const random = seededRandom(103);
        const points: Point[] = [
          point('done', randomUnit(random)),
          pending('m1', NOW + 30),
          pending('m2', NOW + 10, { tenantId: 't2' }),
          pending('c1', NOW + 20, { kind: 'CHUNK', status: 'READY', documentId: 'd1' }),
          pending('r1', NOW + 20, { kind: 'ROUND', sessionId: 's1' }),
          pending('m3', NOW + 20),
          pending('m4', NOW + 40, { tenantId: 't3' }),
        ];
        await index.upsert(points);
        const due = points.filter((p) => p.dense === undefined);
        const order = [...due].sort(
          (a, b) =>
            a.payload.densePendingSince! - b.payload.densePendingSince! ||
            (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
        );
        expect(await index.pendingDense(1_000)).toEqual(order.map((p) => ({ id: p.id, payload: p.payload })));
        expect(await index.countPendingDense()).toBe(6);
        const tenantOf = (p: Point) => p.payload.tenantId;
        for (const tenantId of ['t1', 't2', 't3', 'nobody']) {
          expect(await index.countPendingDense({ tenantId })).toBe(
            due.filter((p) => tenantOf(p) === tenantId).length,
          );
        }
        expect(await index.countPendingDense({ tenantId: 't1', kinds: ['CHUNK', 'ROUND'] })).toBe(
          due.filter((p) => tenantOf(p) === 't1' && p.payload.kind !== 'MEMORY').length,
        );
        expect(await index.countPendingDense({ tenantId: 't1', kinds: [] })).toBe(
          due.filter((p) => tenantOf(p) === 't1').length,
        );
        await expect(index.countPendingDense({ tenantId: '' })).rejects.toMatchObject({
          code: Code.InvalidArgument,
        });
        await expect(
          index.countPendingDense({ tenantId: 't1', kinds: ['BOGUS' as ItemKind] }),
        ).rejects.toMatchObject({
          code: Code.InvalidArgument,
          reason: 'FIELD_INVALID',
        });
        // Every limit cuts the same order, also inside the three-way tie at NOW + 20.
        for (let limit = 1; limit <= 7; limit++)
          expect(ids(await index.pendingDense(limit))).toEqual(ids(order).slice(0, limit));
        expect(ids(await index.pendingDense(10, ['CHUNK', 'ROUND']))).toEqual(
          ids(order.filter((p) => p.payload.kind !== 'MEMORY')),
        );
        expect(ids(await index.pendingDense(2, ['MEMORY']))).toEqual(
          ids(order.filter((p) => p.payload.kind === 'MEMORY')).slice(0, 2),
        );
        expect(ids(await index.pendingDense(10, []))).toEqual(ids(order));

        for (const limit of [0, 1_001, 2.5, -1])
          await expect(index.pendingDense(limit)).rejects.toMatchObject({
            code: Code.InvalidArgument,
            reason: 'FIELD_INVALID',
          });
        await expect(index.pendingDense(5, ['BOGUS' as ItemKind])).rejects.toMatchObject({
          code: Code.InvalidArgument,
          reason: 'FIELD_INVALID',
        });

        await index.delete([points[2]!.id]);
        await index.upsert([point('m1', randomUnit(random))]);
        expect(await index.countPendingDense()).toBe(4);
        expect(ids(await index.pendingDense(10))).toEqual(
          ids(order.filter((p) => p.id !== points[2]!.id && p.id !== points[1]!.id)),
        );
      });

      it('countPendingDense counts all tenants, or one tenant and its kinds', async () => {
        const index = await freshIndex('pending-count');
        const random = seededRandom(104);
        await index.upsert([
          point('done', randomUnit(random)),
          pending('m1', NOW),
          pending('m2', NOW + 1),
          pending('c1', NOW + 2, { kind: 'CHUNK', status: 'READY', documentId: 'd1' }),
          pending('x1', NOW + 3, { tenantId: 't2' }),
          point('x2', randomUnit(random), { tenantId: 't2' }),
        ]);
        expect(await index.countPendingDense()).toBe(4);
        expect(await index.countPendingDense({ tenantId: 't1' })).toBe(3);
        expect(await index.countPendingDense({ tenantId: 't1', kinds: ['MEMORY'] })).toBe(2);
        expect(await index.countPendingDense({ tenantId: 't1', kinds: ['CHUNK', 'ROUND'] })).toBe(1);
        expect(await index.countPendingDense({ tenantId: 't1', kinds: [] })).toBe(3);
        expect(await index.countPendingDense({ tenantId: 't2' })).toBe(1);
        expect(await index.countPendingDense({ tenantId: 't3' })).toBe(0);
        expect(await index.countPendingDense({ tenantId: 't2', kinds: ['ROUND'] })).toBe(0);
        await expect(index.countPendingDense({ tenantId: '' })).rejects.toMatchObject({
          code: Code.InvalidArgument,
        });
        await expect(
          index.countPendingDense({ tenantId: 't1', kinds: ['BOGUS' as ItemKind] }),
        ).rejects.toMatchObject({ code: Code.InvalidArgument, reason: 'FIELD_INVALID' });
      });
    });

    describe('similarities', () => {
      // More points than MATRIX_MAX_POINTS, so asking for all of them takes Qdrant's other path.
      const points = fixture(MATRIX_MAX_POINTS + 20, 333);
      const lexicalFirst: Point = {
        id: pointId('MEMORY', 'similar-lexical'),
        sparse: { indices: [1], values: [1] },
        payload: basePayload('similar-lexical', { densePendingSince: NOW }),
      };
      const missing = '00000000-0000-4000-8000-0000000000ff';
      let index: VectorIndex;
      let stored: Map<string, readonly number[] | Float32Array>;
      beforeAll(async () => {
        index = await freshIndex('similar');
        await index.upsert([...points, lexicalFirst]);
        const fetched = await index.fetch(
          points.map((p) => p.id),
          { withVectors: true },
        );
        stored = new Map(fetched.map((p) => [p.id, p.dense!]));
      });
      const dot = (a: string, b: string) => {
        const [va, vb] = [stored.get(a)!, stored.get(b)!];
        let sum = 0;
        for (let d = 0; d < DIMS; d++) sum += va[d]! * vb[d]!;
        return sum;
      };

      it('answers every pair of the asked points that have a dense vector, as their stored vectors’ dot product', async () => {
        const asked = points.slice(0, 40).map((p) => p.id);
        const sims = await index.similarities([...asked, asked[3]!, lexicalFirst.id, missing]);
        expect(sims.size).toBe(40);
        for (const a of asked) {
          expect(sims.has(a)).toBe(true);
          expect(sims.of(a, a)).toBeUndefined();
          expect(sims.of(a, lexicalFirst.id)).toBeUndefined();
          expect(sims.of(missing, a)).toBeUndefined();
          for (const b of asked) {
            if (a === b) continue;
            expect(sims.of(a, b)).toBeCloseTo(dot(a, b), 5);
          }
        }
        expect(sims.has(lexicalFirst.id)).toBe(false);
        expect(sims.has(missing)).toBe(false);
        // A point that was not asked for has no similarity, even though it has a vector.
        expect(sims.of(asked[0]!, points[45]!.id)).toBeUndefined();
      });

      it('answers as many points as a search can keep and more, up to every point', async () => {
        const all = points.map((p) => p.id);
        const sims = await index.similarities(all);
        expect(sims.size).toBe(points.length);
        const random = seededRandom(334);
        for (let k = 0; k < 200; k++) {
          const a = all[Math.floor(random() * all.length)]!;
          const b = all[Math.floor(random() * all.length)]!;
          if (a === b) continue;
          expect(sims.of(a, b)).toBeCloseTo(dot(a, b), 5);
        }
      });

      it('has no pair for fewer than two distinct points with a dense vector', async () => {
        for (const ids of [[], [points[0]!.id], [points[0]!.id, points[0]!.id]]) {
          const sims = await index.similarities(ids);
          expect(sims.size).toBe(0);
          expect(sims.of(points[0]!.id, points[1]!.id)).toBeUndefined();
        }
        // Nor when only one of the asked points has a dense vector: it has nothing to be compared with.
        const oneWithVector = await index.similarities([points[0]!.id, lexicalFirst.id, missing]);
        expect(oneWithVector.size).toBe(0);
        expect(oneWithVector.has(points[0]!.id)).toBe(false);
        expect(oneWithVector.of(points[0]!.id, lexicalFirst.id)).toBeUndefined();
      });
    });

    describe('searchBatch', () => {
      const points = fixture(150, 110);
      const random = seededRandom(111);
      // A few lexical-first points among them, sharing terms with the sparse queries.
      const extra: Point[] = [0, 1, 2].map((i) => ({
        id: pointId('MEMORY', `lexical${i}`),
        sparse: { indices: [1, 2 + i], values: [4, 4] },
        payload: basePayload(`lexical${i}`, { densePendingSince: NOW + i }),
      }));
      const withTerms = points.map((p, i) => ({
        ...p,
        sparse: { indices: [1 + (i % 4), 10 + (i % 7)], values: [1 + (i % 3), 0.5] },
      }));
      let index: VectorIndex;
      beforeAll(async () => {
        index = await freshIndex('batch');
        await index.upsert([...withTerms, ...extra]);
      });
      const filters: IndexFilter[] = [
        { tenantId: 't1' },
        { tenantId: 't1', visibleTo: { subject: 'u1', orgIds: ['o1'], platform: false } },
        { tenantId: 't2', kinds: ['MEMORY', 'CHUNK'] },
      ];
      const queries: SearchQuery[] = filters.flatMap((filter, i) => [
        { dense: randomUnit(random), filter, limit: 5 + i },
        { dense: new Float32Array(randomUnit(random)), filter, limit: 3 },
        { sparse: { indices: [1, 2, 11], values: [1, 0.5, 2] }, filter, limit: 8 },
        { sparse: { indices: [3], values: [1] }, filter, limit: 4 },
      ]);
      const single = (q: SearchQuery, filter = q.filter as IndexFilter) =>
        'dense' in q
          ? index.searchDense(q.dense, filter, q.limit)
          : index.searchSparse(q.sparse, filter, q.limit);

      it('answers each query as the single search would, in order', async () => {
        const answers = await index.searchBatch(queries);
        expect(answers).toHaveLength(queries.length);
        for (let i = 0; i < queries.length; i++) {
          const expected = await single(queries[i]!);
          expect(expected.length).toBeGreaterThan(0);
          expect(ids(answers[i]!)).toEqual(ids(expected));
          expectRanking(answers[i]!, expected);
          answers[i]!.forEach((hit, k) => {
            expect(hit.payload).toEqual(expected[k]!.payload);
            expect(hit).not.toHaveProperty('vector');
          });
        }
        // The lexical-first points take part in sparse answers only.
        const found = new Set(answers.flatMap((a, i) => ('dense' in queries[i]! ? ids(a) : [])));
        for (const p of extra) expect(found.has(p.id)).toBe(false);
        const sparseFound = answers.flatMap((a, i) => ('sparse' in queries[i]! ? ids(a) : []));
        expect(extra.some((p) => sparseFound.includes(p.id))).toBe(true);
      });

      it('answers a union filter as one query: the best `limit` over its members’ answers, each point once', async () => {
        const unions: IndexFilter[][] = [
          [
            {
              tenantId: 't1',
              kinds: ['MEMORY'],
              visibleTo: { subject: 'u1', orgIds: ['o1'], platform: false },
            },
            { tenantId: 't1', kinds: ['CHUNK'] },
            { tenantId: 't1', kinds: ['ROUND'], evergreen: false },
          ],
          // Overlapping members: a point matching both counts once.
          [{ tenantId: 't1' }, { tenantId: 't1', kinds: ['MEMORY'] }],
          [{ tenantId: 't2', kinds: ['CHUNK'] }],
        ];
        const bodies = [
          { dense: randomUnit(random), limit: 12 },
          { sparse: { indices: [1, 2, 11], values: [1, 0.5, 2] }, limit: 10 },
        ];
        for (const members of unions) {
          const asked: SearchQuery[] = bodies.map((b) => ({ ...b, filter: { anyOf: members } }));
          const answers = await index.searchBatch(asked);
          for (let q = 0; q < asked.length; q++) {
            const perMember = await Promise.all(members.map((m) => single(asked[q]!, m)));
            const merged = new Map<string, ScoredPoint>();
            for (const hit of perMember.flat()) if (!merged.has(hit.id)) merged.set(hit.id, hit);
            const expected = [...merged.values()].sort((a, b) => b.score - a.score).slice(0, asked[q]!.limit);
            const got = answers[q]!;
            expect(expected.length).toBeGreaterThan(0);
            expect(new Set(ids(got)).size).toBe(got.length);
            expect(got.map((h) => h.score)).toHaveLength(expected.length);
            got.forEach((h, k) => {
              expect(h.score).toBeCloseTo(expected[k]!.score, 4);
            });
            // Same points, except where equal scores straddle the cut.
            const last = expected[expected.length - 1]!.score;
            const above = (list: readonly ScoredPoint[]) =>
              ids(list.filter((h) => h.score > last + 1e-6)).sort();
            expect(above(got)).toEqual(above(expected));
            for (const h of got) expect(members.some((m) => pointMatchesFilter(h.payload, m))).toBe(true);
          }
        }
      });

      it('refuses an empty union, a union across tenants and a member without a tenant', async () => {
        const dense = randomUnit(random);
        for (const anyOf of [[], [{ tenantId: 't1' }, { tenantId: 't2' }], [{ tenantId: '' }]]) {
          await expect(
            index.searchBatch([{ dense, filter: { anyOf: anyOf }, limit: 3 }]),
          ).rejects.toMatchObject({ code: Code.InvalidArgument });
        }
      });

      it('answers an empty batch, zero limits and term-less sparse queries with empty lists', async () => {
        expect(await index.searchBatch([])).toEqual([]);
        const answers = await index.searchBatch([
          { dense: randomUnit(random), filter: { tenantId: 't1' }, limit: 0 },
          { sparse: NO_TERMS, filter: { tenantId: 't1' }, limit: 5 },
          { dense: randomUnit(random), filter: { tenantId: 'nobody' }, limit: 5 },
          queries[0]!,
        ]);
        expect(answers.slice(0, 3)).toEqual([[], [], []]);
        expect(ids(answers[3]!)).toEqual(ids(await single(queries[0]!)));
        expect(await index.searchBatch([{ sparse: NO_TERMS, filter: { tenantId: 't1' }, limit: 5 }])).toEqual(
          [[]],
        );
      });

      it('rejects the whole batch when one query is invalid', async () => {
        const good = queries[0]!;
        const bad: SearchQuery[] = [
          { dense: randomUnit(random, DIMS + 1), filter: { tenantId: 't1' }, limit: 5 },
          { dense: randomUnit(random), filter: { tenantId: 't1' }, limit: -1 },
          { dense: randomUnit(random), filter: { tenantId: 't1' }, limit: 1.5 },
          { sparse: { indices: [1, 2], values: [1] }, filter: { tenantId: 't1' }, limit: 5 },
          { dense: [Number.NaN, ...randomUnit(random).slice(1)], filter: { tenantId: 't1' }, limit: 5 },
        ];
        for (const query of bad)
          await expect(index.searchBatch([good, query])).rejects.toMatchObject({
            code: Code.InvalidArgument,
            reason: 'FIELD_INVALID',
          });
        await expect(
          index.searchBatch([good, { dense: randomUnit(random), filter: { tenantId: '' }, limit: 5 }]),
        ).rejects.toMatchObject({ code: Code.InvalidArgument });
      });
    });

    describe('aliases', () => {
      it('reads and writes the target of an alias, and swaps it atomically', async () => {
        const first = await freshIndex('alias-a');
        const second = await freshIndex('alias-b');
        const query = randomUnit(seededRandom(80));
        const one = point('one', query);
        const two = point('two', query);
        await first.upsert([one]);
        await second.upsert([two]);
        const alias = uniqueName('alias');

        expect(await store().aliasTarget(alias)).toBeUndefined();
        await store().setAlias(alias, first.name);
        expect(await store().aliasTarget(alias)).toBe(first.name);
        const viaAlias = store().index(alias);
        expect(await viaAlias.spec()).toEqual(SPEC);
        expect(ids(await viaAlias.searchDense(query, { tenantId: 't1' }, 5))).toEqual([one.id]);

        // Searches running during repeated swaps always see exactly one of the two collections.
        const swap = { running: true };
        const seen = new Set<string>();
        const searches = (async () => {
          let runs = 0;
          while (swap.running || runs < 5) {
            const found = ids(await viaAlias.searchDense(query, { tenantId: 't1' }, 5));
            expect(found.length).toBe(1);
            seen.add(found[0]!);
            runs++;
          }
        })();
        for (let i = 0; i < 6; i++) {
          await store().setAlias(alias, i % 2 === 0 ? second.name : first.name);
        }
        swap.running = false;
        await searches;
        expect([...seen].every((id) => id === one.id || id === two.id)).toBe(true);

        await store().setAlias(alias, second.name);
        expect(await store().aliasTarget(alias)).toBe(second.name);
        expect(ids(await viaAlias.searchDense(query, { tenantId: 't1' }, 5))).toEqual([two.id]);
        // Writes through the alias land in the target.
        await viaAlias.upsert([point('three', query)]);
        expect(await second.count()).toBe(2);
        expect(await first.count()).toBe(1);
      });

      it('refuses an alias to a missing collection', async () => {
        await expect(store().setAlias(uniqueName('alias-x'), uniqueName('missing'))).rejects.toMatchObject({
          code: Code.NotFound,
        });
      });
    });
  });
}
