import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { VectorSimilarities } from '@engram/vector-index';
import {
  ageDays,
  compareIds,
  cosine,
  decayFactor,
  MS_PER_DAY,
  normalize,
  rank,
  type RankingCandidate,
  type RankingOptionsInput,
} from './ranking.js';

const NOW = Date.UTC(2025, 0, 31);
const DIM = 4;

/** A unit vector of dimension DIM (or e1 when the draw is all zeros). */
const unitVector = fc
  .array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: DIM, maxLength: DIM })
  .map((xs) => {
    const norm = Math.hypot(...xs);
    return norm < 1e-6 ? Float32Array.from([1, 0, 0, 0]) : Float32Array.from(xs.map((x) => x / norm));
  });

/** A candidate body; the id is assigned by position so that ids are unique. */
const candidateBody = fc.record({
  dense: fc.option(fc.double({ min: -1, max: 1, noNaN: true }), { nil: undefined }),
  text: fc.option(fc.double({ min: 0, max: 50, noNaN: true }), { nil: undefined }),
  vector: unitVector,
  occurredAt: fc.option(fc.integer({ min: NOW - 400 * MS_PER_DAY, max: NOW + 10 * MS_PER_DAY }), {
    nil: undefined,
  }),
  createdAt: fc.integer({ min: NOW - 400 * MS_PER_DAY, max: NOW + 10 * MS_PER_DAY }),
});

const candidates = fc
  .array(candidateBody, { maxLength: 30 })
  .map((bodies): RankingCandidate[] =>
    bodies.map((b, i) => ({ id: `items/${String(i).padStart(2, '0')}`, ...b })),
  );

const weight = fc.double({ min: 0, max: 1, noNaN: true });
const options = fc
  .record({
    vectorWeight: weight,
    textWeight: weight,
    fusion: fc.constantFrom('SCORE', 'MIN_MAX', 'RRF' as const),
    rrfK: fc.integer({ min: 1, max: 1000 }),
    recency: fc.constantFrom('BOUNDED', 'MULTIPLICATIVE' as const),
    recencyWeight: weight,
    timeWindowWeight: weight,
    rerankWeight: weight,
    newerFirst: fc.boolean(),
    coverageThreshold: weight,
    adaptiveWeights: fc.boolean(),
    newerFirstSimilarity: fc.double({ min: -1, max: 1, noNaN: true }),
    newerFirstRelevance: weight,
    decayEnabled: fc.boolean(),
    halfLifeDays: fc.double({ min: 0.01, max: 36_500, noNaN: true }),
    mmrEnabled: fc.boolean(),
    mmrLambda: weight,
    topK: fc.integer({ min: 1, max: 100 }),
    minScore: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 1, noNaN: true })),
  })
  .filter((o) => o.vectorWeight > 0 || o.textWeight > 0);

/** A time window the query may name, or none. */
const windows = fc.option(
  fc
    .tuple(
      fc.integer({ min: NOW - 400 * MS_PER_DAY, max: NOW }),
      fc.integer({ min: 1, max: 100 * MS_PER_DAY }),
    )
    .map(([gte, length]) => ({ gte, lt: gte + length })),
  { nil: undefined },
);
const contexts = fc.record({
  denseExhausted: fc.boolean(),
  textExhausted: fc.boolean(),
  window: windows,
  lexicalCoverage: fc.option(weight, { nil: undefined }),
});

describe('ranking properties', () => {
  it('normalizes every signal into [0, 1], missing values to 0, extremes to 0 and 1', () => {
    fc.assert(
      fc.property(
        fc.array(fc.option(fc.double({ min: -1e6, max: 1e6, noNaN: true }), { nil: undefined })),
        (values) => {
          const norm = normalize(values);
          expect(norm).toHaveLength(values.length);
          const defined = values.filter((v): v is number => v !== undefined);
          norm.forEach((n, i) => {
            expect(n >= 0 && n <= 1).toBe(true);
            if (values[i] === undefined) expect(n).toBe(0);
          });
          if (defined.length > 0) {
            const max = Math.max(...defined);
            const min = Math.min(...defined);
            values.forEach((v, i) => {
              if (v === max) expect(norm[i]).toBe(1);
              if (v === min && min !== max) expect(norm[i]).toBe(0);
            });
          }
        },
      ),
    );
  });

  it('decays monotonically with age, from 1 at age 0, within (0, 1]', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 3_650, noNaN: true }),
        fc.double({ min: 0, max: 3_650, noNaN: true }),
        fc.double({ min: 0.01, max: 36_500, noNaN: true }),
        (x, y, halfLife) => {
          const [young, old] = x <= y ? [x, y] : [y, x];
          expect(decayFactor(young, halfLife)).toBeGreaterThanOrEqual(decayFactor(old, halfLife));
          expect(decayFactor(0, halfLife)).toBe(1);
          expect(decayFactor(old, halfLife)).toBeLessThanOrEqual(1);
          expect(decayFactor(old, halfLife)).toBeGreaterThanOrEqual(0);
        },
      ),
    );
  });

  it('never ages negatively', () => {
    fc.assert(
      fc.property(fc.integer(), fc.option(fc.integer(), { nil: undefined }), (createdAt, occurredAt) => {
        expect(ageDays({ createdAt, occurredAt }, NOW)).toBeGreaterThanOrEqual(0);
      }),
    );
  });

  it('returns at most topK unique results, ranked 1…n, above minScore, explained consistently', () => {
    fc.assert(
      fc.property(candidates, options, contexts, (cs, opts, context) => {
        const { results, minScoreDropped, options: applied } = rank(cs, opts, NOW, context);
        // Weights may have moved to the signal some candidate has; every other option is as given.
        expect({ ...applied, vectorWeight: 0, textWeight: 0 }).toEqual({
          ...opts,
          vectorWeight: 0,
          textWeight: 0,
        });
        expect(applied.vectorWeight + applied.textWeight).toBeCloseTo(
          opts.vectorWeight + opts.textWeight,
          12,
        );
        expect(results.length).toBeLessThanOrEqual(opts.topK);
        expect(results.length).toBe(Math.min(opts.topK, cs.length - minScoreDropped));
        expect(new Set(results.map((r) => r.id)).size).toBe(results.length);
        results.forEach((r, i) => {
          const b = r.breakdown;
          expect(r.rank).toBe(i + 1);
          expect(opts.recency === 'MULTIPLICATIVE' ? r.score : b.relevance).toBeGreaterThanOrEqual(
            opts.minScore,
          );
          expect(b.finalScore).toBe(r.score);
          expect(b.vectorNormalized >= 0 && b.vectorNormalized <= 1).toBe(true);
          expect(b.textNormalized >= 0 && b.textNormalized <= 1).toBe(true);
          expect(b.fused).toBe(
            applied.vectorWeight * b.vectorNormalized + applied.textWeight * b.textNormalized,
          );
          expect([1, 1 - opts.timeWindowWeight]).toContain(b.timeWindowFactor);
          if (context.window === undefined) expect(b.timeWindowFactor).toBe(1);
          expect(b.relevance).toBe(b.fused * b.timeWindowFactor);
          // In (0, 1] mathematically; underflows to 0 beyond ~1 075 half-lives (e.g. 400 days at 0.01).
          expect(b.decayFactor).toBeGreaterThanOrEqual(0);
          expect(b.decayFactor).toBeLessThanOrEqual(1);
          if (!opts.decayEnabled) expect([b.decayFactor, b.recencyMultiplier]).toEqual([1, 1]);
          else if (opts.recency === 'MULTIPLICATIVE') expect(b.recencyMultiplier).toBe(b.decayFactor);
          else {
            // Bounded: age never takes more than recencyWeight of the relevance away.
            expect(b.recencyMultiplier).toBeGreaterThanOrEqual(1 - opts.recencyWeight - 1e-15);
            expect(b.recencyMultiplier).toBeLessThanOrEqual(1);
          }
          expect(r.score).toBe(b.relevance * b.recencyMultiplier);
          if (opts.mmrEnabled) {
            expect(b.mmrPenalty).toBe((1 - opts.mmrLambda) * b.maxSimilarity);
            expect(b.mmrScore).toBe(opts.mmrLambda * r.score - b.mmrPenalty);
            if (i === 0 && b.supersedes === undefined) expect(b.maxSimilarity).toBe(0);
          } else {
            expect([b.maxSimilarity, b.mmrPenalty, b.mmrScore]).toEqual([0, 0, r.score]);
          }
        });
      }),
    );
  });

  it('places a newer statement only before an older, similar, comparably relevant one', () => {
    fc.assert(
      fc.property(candidates, options, (cs, opts) => {
        const o = { ...opts, newerFirst: true };
        const { results } = rank(cs, o, NOW);
        const byId = new Map(cs.map((c) => [c.id, c]));
        const all = new Map(
          rank(cs, { ...o, newerFirst: false, mmrEnabled: false, topK: 100, minScore: 0 }, NOW).results.map(
            (r) => [r.id, r],
          ),
        );
        const time = (c: RankingCandidate) => c.occurredAt ?? c.createdAt;
        results.forEach((r, i) => {
          const older = r.breakdown.supersedes;
          if (older === undefined) return;
          const a = byId.get(older)!;
          const b = byId.get(r.id)!;
          expect(time(b)).toBeGreaterThan(time(a) + 60_000);
          expect(cosine(a.vector, b.vector)).toBeGreaterThanOrEqual(o.newerFirstSimilarity);
          // Comparably relevant: by relevance, or by the dense signal alone.
          const [nb, na] = [all.get(r.id)!.breakdown, all.get(older)!.breakdown];
          expect(
            nb.relevance >= o.newerFirstRelevance * na.relevance ||
              (b.dense !== undefined && nb.vectorNormalized >= o.newerFirstRelevance * na.vectorNormalized),
          ).toBe(true);
          // The older one is not dropped for it: it is not among the results before it.
          expect(results.slice(0, i).some((x) => x.id === older)).toBe(false);
        });
      }),
    );
  });

  it('with λ = 1 (or MMR off) returns the score order, ties by id', () => {
    fc.assert(
      fc.property(candidates, options, (cs, opts) => {
        const o = { ...opts, newerFirst: false };
        const all = rank(cs, { ...o, mmrEnabled: false, topK: 100, minScore: 0 }, NOW).results;
        const expected = [...all]
          .sort((a, b) => (a.score !== b.score ? b.score - a.score : compareIds(a.id, b.id)))
          .map((r) => r.id);
        expect(all.map((r) => r.id)).toEqual(expected);
        const withLambda1 = rank(cs, { ...o, mmrEnabled: true, mmrLambda: 1 }, NOW).results;
        const withoutMmr = rank(cs, { ...o, mmrEnabled: false }, NOW).results;
        expect(withLambda1.map((r) => r.id)).toEqual(withoutMmr.map((r) => r.id));
      }),
    );
  });

  it('selects greedily: every pick maximizes the MMR objective among what was left', () => {
    fc.assert(
      fc.property(candidates, options, (cs, opts) => {
        const o: RankingOptionsInput = { ...opts, mmrEnabled: true, minScore: 0, newerFirst: false };
        const { results } = rank(cs, o, NOW);
        const scores = new Map(
          rank(cs, { ...o, mmrEnabled: false, topK: 100 }, NOW).results.map((r) => [r.id, r.score]),
        );
        const vectors = new Map(cs.map((c) => [c.id, c.vector]));
        const dot = (a: string, b: string): number => {
          const va = vectors.get(a) ?? new Float32Array(DIM);
          const vb = vectors.get(b) ?? new Float32Array(DIM);
          let s = 0;
          for (let k = 0; k < DIM; k++) s += (va[k] ?? 0) * (vb[k] ?? 0);
          return s;
        };
        const lambda = opts.mmrLambda;
        results.forEach((picked, i) => {
          const before = results.slice(0, i).map((r) => r.id);
          const chosen = new Set(results.slice(0, i + 1).map((r) => r.id));
          const objective = (id: string): number => {
            const sim = before.length === 0 ? 0 : Math.max(...before.map((s) => dot(id, s)));
            return lambda * (scores.get(id) ?? 0) - (1 - lambda) * sim;
          };
          for (const id of scores.keys()) {
            if (chosen.has(id)) continue;
            expect(objective(id)).toBeLessThanOrEqual(picked.breakdown.mmrScore + 1e-12);
          }
        });
      }),
    );
  });

  it('respects the weights: scaling both weights scales every fused score (seed fusion)', () => {
    fc.assert(
      fc.property(candidates, fc.double({ min: 0.01, max: 0.5, noNaN: true }), (cs, w) => {
        const base = {
          fusion: 'MIN_MAX',
          decayEnabled: false,
          mmrEnabled: false,
          newerFirst: false,
          topK: 100,
        } as const;
        const textOnly = rank(cs, { ...base, vectorWeight: 0, textWeight: w }, NOW).results;
        for (const r of textOnly) expect(r.score).toBe(w * r.breakdown.textNormalized);
        const denseOnly = rank(cs, { ...base, vectorWeight: w, textWeight: 0 }, NOW).results;
        for (const r of denseOnly) expect(r.score).toBe(w * r.breakdown.vectorNormalized);
        const doubled = new Map(
          rank(cs, { ...base, vectorWeight: 2 * w, textWeight: 2 * w }, NOW).results.map((r) => [
            r.id,
            r.score,
          ]),
        );
        const single = rank(cs, { ...base, vectorWeight: w, textWeight: w }, NOW).results;
        for (const r of single) expect(doubled.get(r.id)).toBeCloseTo(2 * r.score, 12);
      }),
    );
  });

  it('ranks the same from similarities by id (the index’s) as from the candidates’ own vectors', () => {
    fc.assert(
      fc.property(
        candidates,
        fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }),
        options,
        contexts,
        (cs, withoutVector, opts, context) => {
          // Some candidates have no stored vector (lexical-first points).
          const mixed = cs.map((c, i) => (withoutVector[i] === true ? { ...c, vector: undefined } : c));
          const vectors = new Map(
            mixed.flatMap((c) => (c.vector === undefined ? [] : [[c.id, c.vector] as const])),
          );
          const similarities = new VectorSimilarities(vectors);
          const bare = mixed.map((c) => ({ ...c, vector: undefined }));
          const fromVectors = rank(mixed, opts, NOW, context);
          const fromIndex = rank(bare, opts, NOW, {
            ...context,
            similarity: (a, b) => similarities.of(a, b),
          });
          expect(fromIndex.results.map((r) => [r.id, r.breakdown.mmrPenalty])).toEqual(
            fromVectors.results.map((r) => [r.id, r.breakdown.mmrPenalty]),
          );
        },
      ),
    );
  });

  it('is deterministic under permutation of its input', () => {
    fc.assert(
      fc.property(
        candidates.chain((cs) =>
          fc.tuple(fc.constant(cs), fc.shuffledSubarray(cs, { minLength: cs.length })),
        ),
        options,
        contexts,
        ([cs, shuffled], opts, context) => {
          const a = rank(cs, opts, NOW, context).results.map((r) => r.id);
          const b = rank(shuffled, opts, NOW, context).results.map((r) => r.id);
          expect(b).toEqual(a);
        },
      ),
    );
  });
});
