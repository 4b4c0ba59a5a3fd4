import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Code } from '@connectrpc/connect';
import { afterAll, describe, expect, it } from '@jest/globals';
import BetterSqlite3 from 'better-sqlite3';
import fc from 'fast-check';
import { seededRandom, startQdrant } from '@engram/testing';
import { createEmbeddedStore, EMBEDDED_INDEX_FILE } from '../src/embedded-store.js';
import { pointMatchesFilter } from '../src/filter-semantics.js';
import { pointId } from '../src/point-id.js';
import type {
  IndexFilter,
  ItemKind,
  Point,
  PointPayload,
  PointScope,
  ScoredPoint,
  SparseVector,
  VectorStore,
} from '../src/port.js';
import { createQdrantStore } from '../src/qdrant-store.js';
import { basePayload, HOUR, NOW, randomUnit, unit, vectorIndexContract } from './contract.js';

const directories: string[] = [];

/** A fresh directory for one store, removed after the file. */
function freshPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'engram-embedded-'));
  directories.push(dir);
  return join(dir, 'index');
}

afterAll(() => {
  for (const dir of directories) rmSync(dir, { recursive: true, force: true });
});

vectorIndexContract('embedded', async () => {
  const store = createEmbeddedStore({ path: freshPath() });
  return { store, dispose: () => store.close() };
});

// ---------------------------------------------------------------------------------------------
// Fixtures and the brute-force reference
// ---------------------------------------------------------------------------------------------

/** The contract's base payload, created at NOW. */
const payload = (sourceId: string, overrides: Partial<PointPayload> = {}): PointPayload =>
  basePayload(sourceId, { createdAt: NOW, ...overrides });

function point(
  id: string,
  dense: readonly number[],
  overrides: Partial<PointPayload> = {},
  sparse?: SparseVector,
): Point {
  return { id, dense, sparse: sparse ?? { indices: [], values: [] }, payload: payload(id, overrides) };
}

/** Cosine on float32-rounded unit vectors, as the index stores them. */
function cosine(a: readonly number[], b: readonly number[]): number {
  const fa = Float32Array.from(unit(a));
  const fb = Float32Array.from(unit(b));
  let dot = 0;
  for (let i = 0; i < fa.length; i++) dot += fa[i]! * fb[i]!;
  return dot;
}

function expectedDense(points: readonly Point[], query: readonly number[], filter: IndexFilter) {
  return new Map(
    points
      .filter((p) => pointMatchesFilter(p.payload, filter))
      .map((p) => [p.id, cosine(p.dense as number[], query)] as const),
  );
}

/** Σ q · idf · d with Qdrant's IDF over the whole collection (points with terms), matching rows only. */
function expectedSparse(points: readonly Point[], query: SparseVector, filter: IndexFilter) {
  const withTerms = points.filter((p) => p.sparse.indices.length > 0);
  const containing = (term: number) => withTerms.filter((p) => p.sparse.indices.includes(term)).length;
  const idf = (term: number) =>
    Math.log(1 + (withTerms.length - containing(term) + 0.5) / (containing(term) + 0.5));
  const scores = new Map<string, number>();
  for (const p of points) {
    if (!pointMatchesFilter(p.payload, filter)) continue;
    const shared = query.indices.flatMap((term, q) => {
      const at = p.sparse.indices.indexOf(term);
      return at < 0 ? [] : [query.values[q]! * idf(term) * Math.fround(p.sparse.values[at]!)];
    });
    if (shared.length > 0)
      scores.set(
        p.id,
        shared.reduce((a, b) => a + b, 0),
      );
  }
  return scores;
}

/**
 * Asserts `actual` is a correct top-`limit` of `expected` (id → score of every matching point):
 * the right length, every hit a matching point with its score, scores non-increasing, and each
 * rank's score equal to the reference's at that rank (so ties may come in either order, nothing
 * better may be missing).
 */
function expectTopK(actual: readonly ScoredPoint[], expected: Map<string, number>, limit: number): void {
  const ranked = [...expected.values()].sort((a, b) => b - a).slice(0, limit);
  expect(actual).toHaveLength(ranked.length);
  expect(new Set(actual.map((r) => r.id)).size).toBe(actual.length);
  actual.forEach((hit, i) => {
    const truth = expected.get(hit.id);
    expect(truth).toBeDefined();
    expect(Math.abs(hit.score - truth!)).toBeLessThan(1e-5);
    expect(Math.abs(hit.score - ranked[i]!)).toBeLessThan(1e-5);
    if (i > 0) expect(hit.score).toBeLessThanOrEqual(actual[i - 1]!.score + 1e-9);
  });
}

/**
 * The same ranking from two adapters: scores equal at every rank (float32 precision); ids equal
 * except within exact ties (Qdrant orders ties by internal offset, this adapter by id), including
 * a tie cut at the limit.
 */
function expectSameRanking(mine: readonly ScoredPoint[], theirs: readonly ScoredPoint[]): void {
  expect(mine).toHaveLength(theirs.length);
  mine.forEach((hit, i) => {
    expect(hit.score).toBeCloseTo(theirs[i]!.score, 5);
    if (hit.id === theirs[i]!.id) return;
    const there = theirs.find((t) => t.id === hit.id);
    const tiedWith = there?.score ?? theirs[theirs.length - 1]!.score;
    expect(Math.abs(tiedWith - hit.score)).toBeLessThan(1e-6);
  });
}

// Small vocabularies, so that random filters actually select something.
const TENANTS = ['t1', 't2'];
const OWNERS = ['u1', 'u2', 'u3'];

const ids = (found: readonly { id: string }[]): string[] => found.map((p) => p.id);
const ORGS = ['o1', 'o2'];
const KINDS: ItemKind[] = ['MEMORY', 'CHUNK', 'ROUND'];
const SCOPES: PointScope[] = ['SELF', 'ORG', 'PLATFORM'];
const STATUSES = ['ACTIVE', 'ARCHIVED'];
const TYPES = ['FACT', 'EVENT'];
const NAMES = ['n1', 'n2'];
const SESSIONS = ['s1', 's2'];
const DOCS = ['d1', 'd2'];
const HOURS = 20;

const payloadArb = (sourceId: string): fc.Arbitrary<PointPayload> =>
  fc
    .record({
      tenantId: fc.constantFrom(...TENANTS),
      kind: fc.constantFrom(...KINDS),
      scope: fc.constantFrom(...SCOPES),
      ownerId: fc.constantFrom(...OWNERS),
      org: fc.constantFrom(...ORGS),
      status: fc.constantFrom(...STATUSES),
      memoryType: fc.option(fc.constantFrom(...TYPES), { nil: undefined }),
      namespace: fc.option(fc.constantFrom(...NAMES), { nil: undefined }),
      evergreen: fc.option(fc.boolean(), { nil: undefined }),
      sessionId: fc.option(fc.constantFrom(...SESSIONS), { nil: undefined }),
      documentId: fc.option(fc.constantFrom(...DOCS), { nil: undefined }),
      occurredAt: fc.option(fc.integer({ min: 0, max: HOURS }), { nil: undefined }),
      createdAt: fc.integer({ min: 0, max: HOURS }),
      expiresAt: fc.option(fc.integer({ min: 0, max: HOURS }), { nil: undefined }),
    })
    .map((r) => {
      const p: { -readonly [K in keyof PointPayload]?: PointPayload[K] } = {
        tenantId: r.tenantId,
        kind: r.kind,
        sourceId,
        scope: r.scope,
        ownerId: r.ownerId,
        orgId: r.scope === 'ORG' ? r.org : '',
        status: r.status,
        createdAt: NOW + r.createdAt * HOUR,
      };
      if (r.memoryType !== undefined) p.memoryType = r.memoryType;
      if (r.namespace !== undefined) p.namespace = r.namespace;
      if (r.evergreen !== undefined) p.evergreen = r.evergreen;
      if (r.sessionId !== undefined) p.sessionId = r.sessionId;
      if (r.documentId !== undefined) p.documentId = r.documentId;
      if (r.occurredAt !== undefined) p.occurredAt = NOW + r.occurredAt * HOUR;
      if (r.expiresAt !== undefined) p.expiresAt = NOW + r.expiresAt * HOUR;
      return p as PointPayload;
    });

const sparseArb: fc.Arbitrary<SparseVector> = fc
  .uniqueArray(fc.integer({ min: 0, max: 30 }), { maxLength: 6 })
  .chain((terms) => {
    const indices = [...terms].sort((a, b) => a - b);
    return fc
      .array(fc.double({ min: 0.1, max: 3, noNaN: true }), {
        minLength: indices.length,
        maxLength: indices.length,
      })
      .map((values) => ({ indices, values }));
  });

const pointsArb = (dims: number): fc.Arbitrary<Point[]> =>
  fc.integer({ min: 1, max: 120 }).chain((n) =>
    fc.tuple(
      ...Array.from({ length: n }, (_, i) =>
        fc
          .tuple(
            payloadArb(`s${i}`),
            fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: dims, maxLength: dims }),
            sparseArb,
          )
          .filter(([, dense]) => dense.some((v) => Math.abs(v) > 1e-3))
          .map(([p, dense, sparse]): Point => ({ id: `id-${i}`, dense, sparse, payload: p })),
      ),
    ),
  );

const listArb = <T>(values: readonly T[]): fc.Arbitrary<T[] | undefined> =>
  fc.option(fc.subarray([...values]), { nil: undefined });
const rangeArb = fc.option(
  fc.record(
    {
      gte: fc.integer({ min: 0, max: HOURS }).map((h) => NOW + h * HOUR),
      lt: fc.integer({ min: 0, max: HOURS }).map((h) => NOW + h * HOUR),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);

const filterArb: fc.Arbitrary<IndexFilter> = fc
  .record({
    tenantId: fc.constantFrom(...TENANTS, 't-none'),
    visibleTo: fc.option(
      fc.record({
        subject: fc.constantFrom(...OWNERS, 'nobody'),
        orgIds: fc.subarray(ORGS),
        platform: fc.boolean(),
      }),
      { nil: undefined },
    ),
    kinds: listArb(KINDS),
    scopes: listArb(SCOPES),
    ownerIds: listArb(OWNERS),
    orgIds: listArb(ORGS),
    memoryTypes: listArb(TYPES),
    statuses: listArb(STATUSES),
    namespaces: listArb(NAMES),
    sessionIds: listArb(SESSIONS),
    documentIds: listArb(DOCS),
    sourceIds: listArb(['s0', 's1', 's2', 's3', 's5', 's8', 's13']),
    evergreen: fc.option(fc.boolean(), { nil: undefined }),
    occurredAt: rangeArb,
    createdAt: rangeArb,
    notExpiredAt: fc.option(
      fc.integer({ min: 0, max: HOURS }).map((h) => NOW + h * HOUR),
      { nil: undefined },
    ),
  })
  // Keep the tenant and up to three other conditions, like real searches (all of them at once
  // would match almost nothing).
  .chain((f) =>
    fc
      .shuffledSubarray(
        Object.keys(f).filter((key) => key !== 'tenantId'),
        { maxLength: 3 },
      )
      .map((keys) => {
        const out: Record<string, unknown> = { tenantId: f.tenantId };
        for (const key of keys) {
          const value = (f as Record<string, unknown>)[key];
          if (value !== undefined) out[key] = value;
        }
        return out as unknown as IndexFilter;
      }),
  );

// ---------------------------------------------------------------------------------------------
// Adapter-specific behaviour
// ---------------------------------------------------------------------------------------------

describe('EmbeddedStore', () => {
  const SPEC = { model: 'test-model@1', dimensions: 8 };

  describe('exactness against brute force (property)', () => {
    // 8 dimensions run the WebAssembly SIMD kernel, 5 the JS loop.
    for (const dims of [8, 5]) {
      it(`dense and sparse top-k and count agree with the reference for any filter (${dims} dims)`, async () => {
        const store = createEmbeddedStore({ path: freshPath() });
        let run = 0;
        try {
          await fc.assert(
            fc.asyncProperty(
              pointsArb(dims),
              fc.array(filterArb, { minLength: 1, maxLength: 4 }),
              fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: dims, maxLength: dims }),
              sparseArb,
              fc.integer({ min: 1, max: 25 }),
              async (points, filters, query, sparseQuery, limit) => {
                fc.pre(query.some((v) => Math.abs(v) > 1e-3));
                const index = store.index(`prop-${dims}-${run++}`);
                await index.ensureCollection({ model: 'm', dimensions: dims });
                await index.upsert(points);
                for (const filter of filters) {
                  expect(await index.count(filter)).toBe(
                    points.filter((p) => pointMatchesFilter(p.payload, filter)).length,
                  );
                  expectTopK(
                    await index.searchDense(query, filter, limit),
                    expectedDense(points, query, filter),
                    limit,
                  );
                  expectTopK(
                    await index.searchSparse(sparseQuery, filter, limit),
                    expectedSparse(points, sparseQuery, filter),
                    limit,
                  );
                }
              },
            ),
            { numRuns: 60, seed: 20_251_129 },
          );
        } finally {
          await store.close();
        }
      });
    }

    it('stays exact through replacements, deletes and compaction', async () => {
      const store = createEmbeddedStore({ path: freshPath() });
      const index = store.index('churn');
      await index.ensureCollection(SPEC);
      const random = seededRandom(99);
      const live = new Map<string, Point>();
      const make = (i: number) =>
        point(
          `c${i}`,
          randomUnit(random, 8),
          {
            tenantId: i % 3 === 0 ? 't2' : 't1',
            ownerId: OWNERS[i % 3]!,
            status: random() < 0.5 ? 'ACTIVE' : 'ARCHIVED',
            sourceUpdatedAt: NOW + i,
          },
          { indices: [i % 7, 7 + (i % 11)], values: [1 + random(), random() + 0.1] },
        );
      // 600 points, then 3 rounds of replacing 500 and deleting 100 (crosses the compaction threshold).
      for (let i = 0; i < 600; i++) live.set(`c${i}`, make(i));
      await index.upsert([...live.values()]);
      for (let round = 0; round < 3; round++) {
        const replaced = Array.from({ length: 500 }, () => make(Math.floor(random() * 600)));
        await index.upsert(replaced);
        for (const p of replaced) live.set(p.id, p);
        const doomed = [...live.keys()].filter(() => random() < 0.04).slice(0, 100);
        await index.delete(doomed);
        for (const id of doomed) live.delete(id);
      }
      const points = [...live.values()];
      const check = async () => {
        expect(await index.count()).toBe(points.length);
        for (const filter of [
          { tenantId: 't1' },
          {
            tenantId: 't1',
            statuses: ['ARCHIVED'],
            visibleTo: { subject: 'u2', orgIds: [], platform: false },
          },
        ] satisfies IndexFilter[]) {
          const query = randomUnit(random, 8);
          expectTopK(await index.searchDense(query, filter, 10), expectedDense(points, query, filter), 10);
          const sparse = { indices: [1, 9], values: [1, 0.5] };
          expectTopK(
            await index.searchSparse(sparse, filter, 10),
            expectedSparse(points, sparse, filter),
            10,
          );
          // Scroll: every matching point once, in id order, with the payload last written.
          const scrolled = await index.scroll(filter, { limit: 1_000 });
          expect(scrolled).toStrictEqual({
            points: points
              .filter((p) => pointMatchesFilter(p.payload, filter))
              .sort((a, b) => (a.id < b.id ? -1 : 1))
              .map((p) => ({ id: p.id, payload: p.payload })),
          });
        }
      };
      await check();
      await store.close();
    });
  });

  describe('int8 quantization (opt-in)', () => {
    /** The same points in a float32 and an int8 store; both closed by the caller. */
    const pair = async (dims: number, count: number, seed: number) => {
      const path = freshPath();
      const random = seededRandom(seed);
      const points: Point[] = Array.from({ length: count }, (_, i) =>
        i % 10 === 9
          ? {
              id: pointId('MEMORY', `q${i}`),
              sparse: { indices: [1], values: [1] },
              payload: payload(`q${i}`, { densePendingSince: NOW + i }),
            }
          : point(
              pointId('MEMORY', `q${i}`),
              randomUnit(random, dims),
              { ownerId: OWNERS[i % 3]! },
              {
                indices: [1],
                values: [1],
              },
            ),
      );
      const writer = createEmbeddedStore({ path });
      await writer.index('c').ensureCollection({ model: 'm', dimensions: dims });
      await writer.index('c').upsert(points);
      await writer.close();
      return { path, points, queries: Array.from({ length: 40 }, () => randomUnit(random, dims)) };
    };

    it.each([64, 20])(
      'ranks nearly as float32 does, with close scores, and skips pending points (%d dims)',
      async (dims) => {
        const { path, points, queries } = await pair(dims, 3_000, dims);
        const filters: IndexFilter[] = [
          { tenantId: 't1' },
          { tenantId: 't1', visibleTo: { subject: 'u2', orgIds: [], platform: false } },
        ];
        const answers = async (quantization: 'none' | 'int8') => {
          const store = createEmbeddedStore({ path, quantization });
          const index = store.index('c');
          const out: ScoredPoint[][] = [];
          for (const filter of filters)
            for (const query of queries) out.push(await index.searchDense(query, filter, 10));
          const [fetched] = await index.fetch([points[0]!.id], { withVectors: true });
          await store.close();
          return { out, fetched };
        };
        const exact = await answers('none');
        const approx = await answers('int8');
        const pending = new Set(points.filter((p) => p.dense === undefined).map((p) => p.id));
        let found = 0;
        let wanted = 0;
        exact.out.forEach((truth, q) => {
          const got = approx.out[q]!;
          expect(got).toHaveLength(truth.length);
          const want = new Set(ids(truth));
          found += ids(got).filter((id) => want.has(id)).length;
          wanted += want.size;
          for (const hit of got) {
            expect(pending.has(hit.id)).toBe(false);
            const reference = truth.find((t) => t.id === hit.id);
            if (reference !== undefined) expect(Math.abs(hit.score - reference.score)).toBeLessThan(0.02);
          }
        });
        expect(found / wanted).toBeGreaterThan(0.9);
        // Fetched vectors are the dequantized ones: close to the stored float32 vector.
        const original = points[0]!.dense!;
        Array.from(approx.fetched!.dense!).forEach((v, d) => {
          expect(Math.abs(v - (original[d] ?? Number.NaN))).toBeLessThan(0.01);
        });
        // The file still holds float32: opened without quantization, the answers are exact again.
        expect((await answers('none')).out).toEqual(exact.out);
      },
    );

    it('stays consistent through replacements and compaction, and rejects an unknown setting', async () => {
      const { path, points, queries } = await pair(64, 2_000, 7);
      const store = createEmbeddedStore({ path, quantization: 'int8' });
      const index = store.index('c');
      const random = seededRandom(8);
      // Rewrite 1,500 points with new vectors: enough dead slots for a compaction.
      const cleaned = points.slice(0, 1_500).map((p) => {
        const { densePendingSince: _, ...rest } = p.payload;
        return { ...p, dense: randomUnit(random, 64), payload: rest };
      });
      await index.upsert(cleaned);
      const all = [...cleaned, ...points.slice(1_500)];
      expect(await index.count()).toBe(2_000);
      expect(await index.countPendingDense()).toBe(all.filter((p) => p.dense === undefined).length);
      const top = await index.searchDense(cleaned[0]!.dense, { tenantId: 't1' }, 1);
      expect(top[0]?.id).toBe(cleaned[0]!.id);
      expect(top[0]?.score).toBeGreaterThan(0.99);
      expect(await index.searchDense(queries[0]!, { tenantId: 't1' }, 10)).toHaveLength(10);
      await store.close();
      expect(() => createEmbeddedStore({ path, quantization: 'int4' as 'int8' })).toThrow(
        expect.objectContaining({ code: Code.InvalidArgument }),
      );
    });
  });

  describe('lexical-first points through compaction', () => {
    it('keeps pending points pending, and out of dense search, when dead slots are compacted away', async () => {
      const store = createEmbeddedStore({ path: freshPath() });
      const index = store.index('c');
      await index.ensureCollection({ model: 'm', dimensions: 8 });
      const random = seededRandom(41);
      const make = (i: number, round: number): Point => {
        const id = pointId('MEMORY', `c${i}`);
        const sparse = { indices: [i % 11], values: [1] };
        // Every third point is lexical-first, its mark growing with the round.
        return i % 3 === 0
          ? { id, sparse, payload: payload(`c${i}`, { densePendingSince: NOW + round * 10_000 + i }) }
          : { id, dense: randomUnit(random, 8), sparse, payload: payload(`c${i}`) };
      };
      const n = 3_000;
      await index.upsert(Array.from({ length: n }, (_, i) => make(i, 0)));
      // Rewriting the first 2,000 leaves 2,000 dead slots: enough to trigger a compaction.
      await index.upsert(Array.from({ length: 2_000 }, (_, i) => make(i, 1)));
      const pendingIds = Array.from({ length: n }, (_, i) => i).filter((i) => i % 3 === 0);
      expect(await index.count()).toBe(n);
      expect(await index.countPendingDense()).toBe(pendingIds.length);
      const expectedOrder = pendingIds
        .map((i) => ({ i, mark: NOW + (i < 2_000 ? 10_000 : 0) + i }))
        .sort((a, b) => a.mark - b.mark)
        .map(({ i }) => pointId('MEMORY', `c${i}`));
      expect(ids(await index.pendingDense(1_000))).toEqual(expectedOrder.slice(0, 1_000));
      const dense = await index.searchDense(randomUnit(random, 8), { tenantId: 't1' }, 1_000);
      expect(dense).toHaveLength(1_000);
      const pendingSet = new Set(expectedOrder);
      expect(dense.some((hit) => pendingSet.has(hit.id))).toBe(false);
      const sparse = await index.searchSparse({ indices: [0], values: [1] }, { tenantId: 't1' }, 1_000);
      expect(sparse.some((hit) => pendingSet.has(hit.id))).toBe(true);
      await store.close();
    });
  });

  describe('filtering before the top-k cut', () => {
    it('returns every visible point when 30 of 20,000 are visible and all others are closer', async () => {
      const store = createEmbeddedStore({ path: freshPath() });
      const index = store.index('selective');
      await index.ensureCollection({ model: 'm', dimensions: 16 });
      const random = seededRandom(7);
      const query = randomUnit(random, 16);
      const crowd = Array.from({ length: 20_000 }, (_, i) =>
        point(
          `crowd${i}`,
          unit(query.map((v) => v + (random() - 0.5) * 0.1)),
          { ownerId: `other${i % 13}` },
          { indices: [1, 2], values: [2, 2] },
        ),
      );
      const mine = Array.from({ length: 30 }, (_, i) =>
        point(
          `mine${i}`,
          unit(query.map((v) => -v + random() * 0.3)),
          { ownerId: 'me' },
          { indices: [2], values: [0.1] },
        ),
      );
      await index.upsert([...crowd, ...mine]);
      const filter: IndexFilter = {
        tenantId: 't1',
        visibleTo: { subject: 'me', orgIds: [], platform: false },
      };
      const dense = await index.searchDense(query, filter, 50);
      expect(dense.map((r) => r.id).sort()).toEqual(mine.map((p) => p.id).sort());
      const sparse = await index.searchSparse({ indices: [1, 2], values: [1, 1] }, filter, 50);
      expect(sparse.map((r) => r.id).sort()).toEqual(mine.map((p) => p.id).sort());
      expect(await index.count(filter)).toBe(30);
      await store.close();
    });
  });

  describe('persistence', () => {
    it('keeps collections, aliases, points, replacements and deletes across close and reopen', async () => {
      const path = freshPath();
      const random = seededRandom(3);
      const points = Array.from({ length: 300 }, (_, i) =>
        point(
          `p${i}`,
          randomUnit(random, 8),
          { ownerId: OWNERS[i % 3]!, evergreen: i % 2 === 0, expiresAt: NOW + i },
          { indices: [i % 5, 10 + (i % 3)], values: [1 + (i % 4), 0.5] },
        ),
      );
      const first = createEmbeddedStore({ path });
      const index = first.index('memories_v1');
      await index.ensureCollection(SPEC);
      await index.upsert(points);
      await index.upsert([{ ...points[0]!, payload: { ...points[0]!.payload, status: 'ARCHIVED' } }]);
      await index.delete([points[1]!.id]);
      await index.setStatus({ tenantId: 't1', sourceIds: ['p2'] }, 'STAGED');
      await first.index('other').ensureCollection({ model: 'other', dimensions: 4 });
      await first.setAlias('memories', 'memories_v1');
      const query = randomUnit(random, 8);
      const filter: IndexFilter = {
        tenantId: 't1',
        visibleTo: { subject: 'u1', orgIds: [], platform: false },
      };
      const sparseQuery = { indices: [1, 11], values: [1, 2] };
      const denseBefore = await index.searchDense(query, filter, 10);
      const sparseBefore = await index.searchSparse(sparseQuery, filter, 10);
      const fetchedBefore = await index.fetch([points[0]!.id, points[2]!.id], { withVectors: true });
      await first.close();

      const second = createEmbeddedStore({ path });
      expect(await second.listCollections()).toEqual(['memories_v1', 'other']);
      expect(await second.aliasTarget('memories')).toBe('memories_v1');
      const reopened = second.index('memories');
      expect(await reopened.spec()).toEqual(SPEC);
      expect(await reopened.count()).toBe(299);
      expect(await reopened.fetch([points[1]!.id])).toEqual([]);
      expect(await reopened.fetch([points[0]!.id, points[2]!.id], { withVectors: true })).toEqual(
        fetchedBefore,
      );
      expect(fetchedBefore[0]!.payload.status).toBe('ARCHIVED');
      // A status set by filter is durable too.
      expect(fetchedBefore[1]!.payload.status).toBe('STAGED');
      expect(await reopened.searchDense(query, filter, 10)).toEqual(denseBefore);
      expect(await reopened.searchSparse(sparseQuery, filter, 10)).toEqual(sparseBefore);
      await second.close();
    });

    it('keeps lexical-first points pending across reopen, and their replacements', async () => {
      const path = freshPath();
      const random = seededRandom(4);
      const lexical = (i: number, since: number): Point => ({
        id: pointId('MEMORY', `l${i}`),
        sparse: { indices: [1, 2 + i], values: [1, 1] },
        payload: payload(`l${i}`, { densePendingSince: since }),
      });
      const full = point(pointId('MEMORY', 'full'), randomUnit(random, 8), {}, { indices: [1], values: [1] });
      const first = createEmbeddedStore({ path });
      const index = first.index('c');
      await index.ensureCollection(SPEC);
      await index.upsert([full, lexical(0, NOW + 2), lexical(1, NOW + 1), lexical(2, NOW + 3)]);
      // l2 gets its vector; full goes back to pending.
      const embedded = { ...lexical(2, 0), dense: randomUnit(random, 8), payload: payload('l2') };
      await index.upsert([
        embedded,
        { ...lexical(9, NOW + 9), id: full.id, payload: { ...full.payload, densePendingSince: NOW + 9 } },
      ]);
      const query = embedded.dense;
      const pendingBefore = await index.pendingDense(10);
      const sparseBefore = await index.searchSparse({ indices: [1], values: [1] }, { tenantId: 't1' }, 10);
      const fetchedBefore = await index.fetch([full.id, embedded.id, lexical(0, 0).id], {
        withVectors: true,
      });
      await first.close();

      const second = createEmbeddedStore({ path });
      const reopened = second.index('c');
      expect(ids(pendingBefore)).toEqual([lexical(1, 0).id, lexical(0, 0).id, full.id]);
      expect(await reopened.pendingDense(10)).toEqual(pendingBefore);
      expect(await reopened.countPendingDense()).toBe(3);
      expect(await reopened.searchSparse({ indices: [1], values: [1] }, { tenantId: 't1' }, 10)).toEqual(
        sparseBefore,
      );
      expect(ids(await reopened.searchDense(query, { tenantId: 't1' }, 10))).toEqual([embedded.id]);
      expect(await reopened.fetch([full.id, embedded.id, lexical(0, 0).id], { withVectors: true })).toEqual(
        fetchedBefore,
      );
      expect(fetchedBefore.filter((p) => p.dense !== undefined).map((p) => p.id)).toEqual([embedded.id]);
      await second.close();
    });

    it('never loses an acknowledged write when the process is killed (SIGKILL)', async () => {
      const path = freshPath();
      const store = fileURLToPath(new URL('../src/embedded-store.ts', import.meta.url));
      const script = join(resolve(path, '..'), 'writer.mjs');
      // Writes batches of 50 forever, printing each acknowledged batch; the test kills it mid-stream.
      writeFileSync(
        script,
        `import { createEmbeddedStore } from ${JSON.stringify(store)};
         const store = createEmbeddedStore({ path: ${JSON.stringify(path)} });
         const index = store.index('c');
         await index.ensureCollection({ model: 'm', dimensions: 8 });
         for (let batch = 0; ; batch++) {
           const points = Array.from({ length: 50 }, (_, i) => ({
             id: 'b' + batch + '-' + i,
             dense: Array.from({ length: 8 }, (_, d) => Math.sin(batch * 50 + i + d)),
             sparse: { indices: [i % 3], values: [1] },
             payload: { tenantId: 't1', kind: 'MEMORY', sourceId: 'b' + batch + '-' + i, scope: 'SELF',
                        ownerId: 'u1', orgId: '', status: 'ACTIVE', createdAt: 1 },
           }));
           await index.upsert(points);
           process.stdout.write('acked ' + batch + '\\n');
         }`,
      );
      const child = spawn(process.execPath, ['--conditions=@engram/source', '--import', 'tsx', script], {
        cwd: fileURLToPath(new URL('../../..', import.meta.url)),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      let acked = -1;
      let lockedWhileRunning: unknown;
      await new Promise<void>((done, fail) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const lines = out.trim().split('\n');
          acked = Number(lines[lines.length - 1]!.split(' ')[1]);
          if (acked >= 5 && lockedWhileRunning === undefined) {
            // The writer owns the file: another process (here: this one) cannot open it.
            try {
              createEmbeddedStore({ path });
              lockedWhileRunning = 'opened';
            } catch (error) {
              lockedWhileRunning = error;
            }
            child.kill('SIGKILL');
          }
        });
        child.on('exit', () => {
          done();
        });
        child.on('error', fail);
      });
      expect(stderr).not.toMatch(/Error/);
      expect(lockedWhileRunning).toMatchObject({ code: Code.Unavailable, reason: 'DEPENDENCY_UNAVAILABLE' });
      const reopened = createEmbeddedStore({ path });
      const index = reopened.index('c');
      const count = await index.count();
      // Every acknowledged batch is there, in whole batches (a transaction per upsert).
      expect(count).toBeGreaterThanOrEqual((acked + 1) * 50);
      expect(count % 50).toBe(0);
      const lastAcked = Array.from({ length: 50 }, (_, i) => `b${acked}-${i}`);
      expect(await index.fetch(lastAcked)).toHaveLength(50);
      await reopened.close();
    });
  });

  describe('schema', () => {
    it('upgrades a schema 1 file (no sourceUpdatedAt column) in place, keeping its points', async () => {
      const path = freshPath();
      const old = point('00000000-0000-4000-8000-000000000001', [1, 0, 0, 0, 0, 0, 0, 0]);
      const first = createEmbeddedStore({ path });
      await first.index('c').ensureCollection(SPEC);
      await first.index('c').upsert([old]);
      await first.close();
      // Turn the file back into what schema 1 wrote.
      const db = new BetterSqlite3(join(path, EMBEDDED_INDEX_FILE));
      db.exec(
        'ALTER TABLE points DROP COLUMN source_updated_at; ALTER TABLE points DROP COLUMN dense_pending_since;' +
          " UPDATE engram_meta SET value = '1'",
      );
      db.close();

      const upgraded = createEmbeddedStore({ path });
      const index = upgraded.index('c');
      expect(await index.fetch([old.id])).toEqual([
        { ...old, dense: [], sparse: { indices: [], values: [] } },
      ]);
      const stamped = point('00000000-0000-4000-8000-000000000002', [0, 1, 0, 0, 0, 0, 0, 0], {
        sourceUpdatedAt: NOW + 1,
      });
      await index.upsert([stamped]);
      await upgraded.close();

      const reopened = createEmbeddedStore({ path });
      expect((await reopened.index('c').scroll({ tenantId: 't1' }, { limit: 10 })).points).toEqual([
        { id: old.id, payload: old.payload },
        { id: stamped.id, payload: stamped.payload },
      ]);
      await reopened.close();
      const check = new BetterSqlite3(join(path, EMBEDDED_INDEX_FILE), { readonly: true });
      expect(check.prepare("SELECT value FROM engram_meta WHERE key = 'schema'").pluck().get()).toBe('3');
      check.close();
    });

    it('upgrades a schema 2 file (no dense_pending_since column) in place; its points keep their vectors', async () => {
      const path = freshPath();
      const old = point('00000000-0000-4000-8000-000000000001', [1, 0, 0, 0, 0, 0, 0, 0], {
        sourceUpdatedAt: NOW,
      });
      const first = createEmbeddedStore({ path });
      await first.index('c').ensureCollection(SPEC);
      await first.index('c').upsert([old]);
      await first.close();
      // Turn the file back into what schema 2 (before lexical-first indexing) wrote.
      const db = new BetterSqlite3(join(path, EMBEDDED_INDEX_FILE));
      db.exec("ALTER TABLE points DROP COLUMN dense_pending_since; UPDATE engram_meta SET value = '2'");
      db.close();

      const upgraded = createEmbeddedStore({ path });
      const index = upgraded.index('c');
      const [fetched] = await index.fetch([old.id], { withVectors: true });
      expect(fetched?.payload).toEqual(old.payload);
      expect(fetched?.dense).toEqual(old.dense);
      expect(await index.countPendingDense()).toBe(0);
      expect((await index.searchDense(old.dense!, { tenantId: 't1' }, 1))[0]?.id).toBe(old.id);
      const lexical: Point = {
        id: '00000000-0000-4000-8000-000000000002',
        sparse: { indices: [4], values: [1] },
        payload: payload('00000000-0000-4000-8000-000000000002', { densePendingSince: NOW + 7 }),
      };
      await index.upsert([lexical]);
      await upgraded.close();

      const reopened = createEmbeddedStore({ path });
      expect(await reopened.index('c').pendingDense(10)).toEqual([
        { id: lexical.id, payload: lexical.payload },
      ]);
      await reopened.close();
      const check = new BetterSqlite3(join(path, EMBEDDED_INDEX_FILE), { readonly: true });
      expect(check.prepare("SELECT value FROM engram_meta WHERE key = 'schema'").pluck().get()).toBe('3');
      check.close();
    });
  });

  describe('errors', () => {
    it('maps failures to EngramErrors', async () => {
      const path = freshPath();
      const store: VectorStore = createEmbeddedStore({ path });
      const index = store.index('c');
      await expect(index.upsert([point('a', [1, 0, 0, 0, 0, 0, 0, 0])])).rejects.toMatchObject({
        code: Code.NotFound,
      });
      await index.ensureCollection(SPEC);
      await expect(index.upsert([point('a', [1, 0])])).rejects.toMatchObject({
        code: Code.InvalidArgument,
        reason: 'FIELD_INVALID',
      });
      await expect(
        index.upsert([point('a', [1, 0, 0, 0, 0, 0, 0, 0], {}, { indices: [2, 2], values: [1, 1] })]),
      ).rejects.toMatchObject({ code: Code.InvalidArgument, reason: 'FIELD_INVALID' });
      await expect(index.searchDense([1, 0, 0, 0, 0, 0, 0, 0], { tenantId: '' }, 3)).rejects.toMatchObject({
        code: Code.InvalidArgument,
        reason: 'FIELD_REQUIRED',
      });
      await expect(store.setAlias('c', 'c')).rejects.toMatchObject({ code: Code.FailedPrecondition });
      // A second handle on the same file is refused: one owner at a time.
      expect(() => createEmbeddedStore({ path })).toThrow(
        expect.objectContaining({ code: Code.Unavailable }),
      );
      await store.close();
      await expect(index.count()).rejects.toMatchObject({ code: Code.Unavailable });
      // A path that cannot be a directory.
      const file = join(resolve(path, '..'), 'plain-file');
      writeFileSync(file, '');
      expect(() => createEmbeddedStore({ path: join(file, 'index') })).toThrow(
        expect.objectContaining({ code: Code.Unavailable, reason: 'DEPENDENCY_UNAVAILABLE' }),
      );
      expect(EMBEDDED_INDEX_FILE).toBe('vectors.sqlite');
    });
  });

  describe('parity with Qdrant', () => {
    it('returns the same ids and scores as the Qdrant adapter for the same data and filters', async () => {
      const qdrant = await startQdrant();
      const embeddedStore = createEmbeddedStore({ path: freshPath() });
      const qdrantStore = createQdrantStore({ url: qdrant.url, exact: true });
      try {
        const dims = 16;
        const spec = { model: 'parity', dimensions: dims };
        const random = seededRandom(2025);
        // Random payloads and sparse vectors from the property generators; UUID ids for Qdrant.
        const points = fc
          .sample(pointsArb(dims), { numRuns: 1, seed: 41 })
          .flat()
          .concat(fc.sample(pointsArb(dims), { numRuns: 15, seed: 42 }).flat())
          .map((p, i) => ({ ...p, id: pointId('MEMORY', `parity-${i}`) }));
        const filters: IndexFilter[] = [
          { tenantId: 't1' },
          { tenantId: 't1', visibleTo: { subject: 'u1', orgIds: ['o1'], platform: false } },
          { tenantId: 't2', visibleTo: { subject: 'u2', orgIds: ['o1', 'o2'], platform: true } },
          ...fc.sample(filterArb, { numRuns: 27, seed: 43 }),
        ];
        const embedded = embeddedStore.index('parity');
        const remote = qdrantStore.index(`parity_${process.pid}`);
        for (const index of [embedded, remote]) {
          await index.ensureCollection(spec);
          await index.upsert(points);
        }
        expect(await remote.count()).toBe(points.length);
        let compared = 0;
        for (const filter of filters) {
          const query = randomUnit(random, dims);
          const terms = { indices: [1, 4, 9, 16, 25], values: [1, 0.5, 2, 1, 0.25] };
          expect(await embedded.count(filter)).toBe(await remote.count(filter));
          // Scroll: the same pages (ids, payloads, cursors), the second one from the first's cursor.
          const page = await embedded.scroll(filter, { limit: 4 });
          expect(page).toEqual(await remote.scroll(filter, { limit: 4 }));
          if (page.next !== undefined) {
            const after = { limit: 4, after: page.next };
            expect(await embedded.scroll(filter, after)).toEqual(await remote.scroll(filter, after));
          }
          for (const [mine, theirs] of [
            [await embedded.searchDense(query, filter, 10), await remote.searchDense(query, filter, 10)],
            [await embedded.searchSparse(terms, filter, 10), await remote.searchSparse(terms, filter, 10)],
          ] as const) {
            expectSameRanking(mine, theirs);
            compared += mine.length;
          }
        }
        expect(compared).toBeGreaterThan(100);
      } finally {
        await embeddedStore.close();
        await qdrantStore.close();
        await qdrant.stop();
      }
    }, 60_000);
  });
});
