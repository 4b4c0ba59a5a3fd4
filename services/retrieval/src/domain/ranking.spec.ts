import { describe, expect, it } from '@jest/globals';
import {
  ageDays,
  compareIds,
  cosine,
  decayFactor,
  degradedOptions,
  MS_PER_DAY,
  mmr,
  normalize,
  rank,
  resolveRankingOptions,
  topByScore,
  type RankingCandidate,
} from './ranking.js';

// Every expected value below is computed by hand in the comments, from the formula on
// `SearchOptions` in proto/engram/retrieval/v1/search.proto (Blueprint §5).

const NOW = Date.UTC(2025, 0, 31);
const daysAgo = (days: number): number => NOW - days * MS_PER_DAY;
const vec = (...xs: number[]): Float32Array => Float32Array.from(xs);
const DIGITS = 12;

/** The seed's formula (blueprint §5), which the hand-computed end-to-end values below follow. */
const SEED = {
  fusion: 'MIN_MAX',
  recency: 'MULTIPLICATIVE',
  timeWindowWeight: 0,
  newerFirst: false,
} as const;

describe('resolveRankingOptions', () => {
  it('applies the defaults, with weights by the query language', () => {
    expect(resolveRankingOptions()).toEqual({
      vectorWeight: 0.2,
      textWeight: 0.8,
      fusion: 'SCORE',
      rrfK: 60,
      recency: 'BOUNDED',
      recencyWeight: 0.05,
      timeWindowWeight: 0.3,
      rerankWeight: 0.7,
      coverageThreshold: 0.5,
      adaptiveWeights: true,
      newerFirst: true,
      newerFirstSimilarity: 0.6,
      newerFirstRelevance: 0.5,
      decayEnabled: true,
      halfLifeDays: 30,
      mmrEnabled: true,
      mmrLambda: 0.7,
      topK: 10,
      minScore: 0,
    });
  });

  it('takes the weights of the query form, and the seed weights with the seed fusion', () => {
    expect(resolveRankingOptions({}, 'STATEMENT')).toMatchObject({
      vectorWeight: 0.9,
      adaptiveWeights: true,
    });
    expect(resolveRankingOptions({}, 'STATEMENT').textWeight).toBeCloseTo(0.1, DIGITS);
    expect(resolveRankingOptions({}, 'KEYWORDS')).toMatchObject({ vectorWeight: 0.2, textWeight: 0.8 });
    expect(resolveRankingOptions({ fusion: 'MIN_MAX' }, 'STATEMENT')).toMatchObject({
      vectorWeight: 0.7,
      adaptiveWeights: false,
    });
    // An explicit weight wins over the form's default, and is not adapted.
    expect(resolveRankingOptions({ textWeight: 0.5 }, 'STATEMENT')).toMatchObject({
      vectorWeight: 0.5,
      textWeight: 0.5,
      adaptiveWeights: false,
    });
  });

  it('raises the default dense weight when the best lexical candidate covers little of the query', () => {
    const c = (coverage: number | undefined, input = {}) =>
      rank(
        [
          { id: 'a', dense: 0.5, text: 3, createdAt: NOW },
          { id: 'b', dense: 0.4, text: 1, createdAt: NOW },
        ],
        { ...input, mmrEnabled: false, newerFirst: false },
        NOW,
        { lexicalCoverage: coverage },
        'QUESTION',
      ).options;
    // Threshold 0.5: coverage ≥ 0.5 keeps 0.2 / 0.8.
    expect(c(0.6)).toMatchObject({ vectorWeight: 0.2 });
    expect(c(undefined)).toMatchObject({ vectorWeight: 0.2 });
    // coverage 0.25: doubt 1 − 0.25 / 0.5 = 0.5 → 0.2 + 0.8 · 0.5 = 0.6 (text 0.4).
    expect(c(0.25).vectorWeight).toBeCloseTo(0.6, DIGITS);
    expect(c(0.25).textWeight).toBeCloseTo(0.4, DIGITS);
    // coverage 0: all dense; threshold 0 or explicit weights: nothing adapted.
    expect(c(0).vectorWeight).toBeCloseTo(1, DIGITS);
    expect(c(0, { coverageThreshold: 0 })).toMatchObject({ vectorWeight: 0.2 });
    expect(c(0, { vectorWeight: 0.3, textWeight: 0.7 })).toMatchObject({
      vectorWeight: 0.3,
      textWeight: 0.7,
    });
  });

  it('defaults the other weight to 1 − the one given', () => {
    // only text 0.4 → vector 1 − 0.4 = 0.6; only vector 0.25 → text 0.75.
    expect(resolveRankingOptions({ textWeight: 0.4 })).toMatchObject({ vectorWeight: 0.6, textWeight: 0.4 });
    expect(resolveRankingOptions({ vectorWeight: 0.25 })).toMatchObject({
      vectorWeight: 0.25,
      textWeight: 0.75,
    });
    // both given: kept as is, need not sum to 1; an explicit 0 is a value.
    expect(resolveRankingOptions({ vectorWeight: 1, textWeight: 1 })).toMatchObject({
      vectorWeight: 1,
      textWeight: 1,
    });
    expect(resolveRankingOptions({ vectorWeight: 0 })).toMatchObject({ vectorWeight: 0, textWeight: 1 });
  });

  it('treats topK 0 as the default, like SearchRequest.top_k', () => {
    expect(resolveRankingOptions({ topK: 0 }).topK).toBe(10);
    expect(resolveRankingOptions({ topK: 3 }).topK).toBe(3);
  });

  it.each([
    [{ vectorWeight: 0, textWeight: 0 }],
    [{ vectorWeight: 1.5 }],
    [{ textWeight: -0.1 }],
    [{ halfLifeDays: 0 }],
    [{ halfLifeDays: 36_501 }],
    [{ mmrLambda: 1.01 }],
    [{ topK: 101 }],
    [{ topK: 2.5 }],
    [{ topK: -1 }],
    [{ minScore: -0.1 }],
    [{ minScore: Number.POSITIVE_INFINITY }],
    [{ vectorWeight: Number.NaN }],
    [{ recencyWeight: 1.5 }],
    [{ timeWindowWeight: -0.5 }],
    [{ rerankWeight: 2 }],
    [{ rrfK: 0 }],
    [{ rrfK: 1.5 }],
    [{ newerFirstSimilarity: 1.1 }],
    [{ newerFirstRelevance: -0.1 }],
    [{ coverageThreshold: 1.5 }],
  ])('rejects %j', (input) => {
    expect(() => resolveRankingOptions(input)).toThrow(RangeError);
  });

  it('rewrites the weights of a degraded answer', () => {
    // vector 0, text 0.7 + 0.3 = 1.
    const degraded = degradedOptions(resolveRankingOptions(SEED));
    expect(degraded.vectorWeight).toBe(0);
    expect(degraded.textWeight).toBeCloseTo(1, DIGITS);
  });
});

describe('normalize (step 2)', () => {
  it('min–max normalizes the defined values and gives 0 to missing ones', () => {
    // min 2, max 10, range 8: (10−2)/8 = 1, (4−2)/8 = 0.25, (2−2)/8 = 0, (8−2)/8 = 0.75.
    expect(normalize([10, 4, undefined, 2, 8])).toEqual([1, 0.25, 0, 0, 0.75]);
  });

  it('handles negative cosines', () => {
    // min −0.5, max 0.5, range 1: −0.5 → 0, 0 → 0.5, 0.5 → 1.
    expect(normalize([-0.5, 0, 0.5])).toEqual([0, 0.5, 1]);
  });

  it('gives 1 to every candidate having the signal when all values are equal', () => {
    // max == min: every defined value → 1, missing → 0.
    expect(normalize([0.3, undefined, 0.3])).toEqual([1, 0, 1]);
    expect(normalize([0])).toEqual([1]);
    expect(normalize([undefined, 7])).toEqual([0, 1]);
  });

  it('gives 0 to everyone when no candidate has the signal, and nothing for no candidates', () => {
    expect(normalize([undefined, undefined])).toEqual([0, 0]);
    expect(normalize([])).toEqual([]);
  });

  it('rejects non-finite values', () => {
    expect(() => normalize([1, Number.NaN])).toThrow(RangeError);
    expect(() => normalize([Number.POSITIVE_INFINITY])).toThrow(RangeError);
  });
});

describe('ageDays and decayFactor (step 4)', () => {
  it('ages from occurredAt, else createdAt, in fractional days, never negative', () => {
    // occurredAt 10 days ago wins over createdAt now: 10.
    expect(ageDays({ occurredAt: daysAgo(10), createdAt: NOW }, NOW)).toBe(10);
    // no occurredAt: createdAt 36 hours ago = 1.5 days.
    expect(ageDays({ createdAt: NOW - 36 * 3_600_000 }, NOW)).toBe(1.5);
    // future times: max(0, negative) = 0.
    expect(ageDays({ occurredAt: NOW + MS_PER_DAY, createdAt: daysAgo(5) }, NOW)).toBe(0);
    expect(ageDays({ createdAt: NOW + 1 }, NOW)).toBe(0);
  });

  it('halves per half-life', () => {
    // exp(−ln2/30 · 0) = 1; exp(−ln2/30 · 30) = 2^−1 = 0.5; exp(−ln2/30 · 60) = 2^−2 = 0.25;
    // exp(−ln2/30 · 15) = 2^−0.5 = 0.70710678118654…; exp(−ln2/7 · 3.5) = 2^−0.5 too.
    expect(decayFactor(0, 30)).toBe(1);
    expect(decayFactor(30, 30)).toBeCloseTo(0.5, DIGITS);
    expect(decayFactor(60, 30)).toBeCloseTo(0.25, DIGITS);
    expect(decayFactor(15, 30)).toBeCloseTo(Math.SQRT1_2, DIGITS);
    expect(decayFactor(3.5, 7)).toBeCloseTo(Math.SQRT1_2, DIGITS);
    // 300 days at 30: 2^−10 = 1/1024 = 0.0009765625.
    expect(decayFactor(300, 30)).toBeCloseTo(0.0009765625, 15);
  });
});

describe('cosine and compareIds', () => {
  it('is the dot product of normalized vectors, 0 when a vector is missing', () => {
    // e1·e1 = 1; e1·e2 = 0; [½,½,½,½]·[½,−½,½,½] = ¼·(1 − 1 + 1 + 1) = ½;
    // [0,0.6,0.8]·[0,0,1] = 0.8 (to float32 precision).
    expect(cosine(vec(1, 0, 0), vec(1, 0, 0))).toBe(1);
    expect(cosine(vec(1, 0), vec(0, 1))).toBe(0);
    expect(cosine(vec(0.5, 0.5, 0.5, 0.5), vec(0.5, -0.5, 0.5, 0.5))).toBe(0.5);
    expect(cosine(vec(0, 0.6, 0.8), vec(0, 0, 1))).toBeCloseTo(0.8, 6);
    expect(cosine(undefined, vec(1))).toBe(0);
    expect(() => cosine(vec(1, 0), vec(1))).toThrow(RangeError);
  });

  it('orders ids by code point (UTF-8 byte) order', () => {
    expect(compareIds('memories/a', 'memories/b')).toBeLessThan(0);
    expect(compareIds('memories/ab', 'memories/a')).toBeGreaterThan(0);
    expect(compareIds('x', 'x')).toBe(0);
    // U+FF21 (UTF-8 EF BC A1) sorts before U+1F600 (F0 9F 98 80), although its UTF-16 unit is larger.
    const [fullwidthA, emoji]: string[] = ['\uff21', '\u{1f600}'];
    expect(compareIds(fullwidthA ?? '', emoji ?? '')).toBeLessThan(0);
    expect([fullwidthA, emoji].sort()).toEqual([emoji, fullwidthA]); // UTF-16 order differs
  });
});

describe('selection (step 6)', () => {
  it('without MMR takes the top scores, ties by id', () => {
    const items = [
      { id: 'c', score: 0.5 },
      { id: 'b', score: 0.9 },
      { id: 'a', score: 0.5 },
      { id: 'd', score: 0.1 },
    ];
    const picked = topByScore(items, 3);
    expect(picked.map((p) => p.item.id)).toEqual(['b', 'a', 'c']);
    expect(picked.map((p) => p.mmrScore)).toEqual([0.9, 0.5, 0.5]);
    expect(picked.every((p) => p.mmrPenalty === 0 && p.maxSimilarity === 0)).toBe(true);
  });

  it('MMR trades relevance against similarity to what is already picked', () => {
    // λ = 0.5. x, y identical vectors, z orthogonal.
    // pick 1: 0.5·score: x 0.5, y 0.45, z 0.2 → x (maxSim 0, penalty 0, mmr 0.5).
    // pick 2: y 0.45 − 0.5·1 = −0.05; z 0.2 − 0.5·0 = 0.2 → z (mmr 0.2).
    // pick 3: y: maxSim max(1, 0) = 1, penalty 0.5, mmr −0.05.
    const items = [
      { id: 'x', score: 1, vector: vec(1, 0) },
      { id: 'y', score: 0.9, vector: vec(1, 0) },
      { id: 'z', score: 0.4, vector: vec(0, 1) },
    ];
    const picked = mmr(items, 0.5, 10);
    expect(picked.map((p) => p.item.id)).toEqual(['x', 'z', 'y']);
    expect(picked.map((p) => p.maxSimilarity)).toEqual([0, 0, 1]);
    expect(picked.map((p) => p.mmrPenalty)).toEqual([0, 0, 0.5]);
    expect(picked[0]?.mmrScore).toBe(0.5);
    expect(picked[1]?.mmrScore).toBe(0.2);
    expect(picked[2]?.mmrScore).toBeCloseTo(-0.05, DIGITS);
    // topK cuts the greedy loop.
    expect(mmr(items, 0.5, 2).map((p) => p.item.id)).toEqual(['x', 'z']);
    expect(mmr(items, 0.5, 2).length).toBe(2);
  });

  it('MMR breaks ties by higher score, then by id', () => {
    // λ = 0.5; after p (score 1, vector e1): q: 0.5·0.75 − 0.5·0.5 = 0.375 − 0.25 = 0.125,
    // r: 0.5·0.25 − 0.5·0 = 0.125 → equal objective (all dyadic, so exactly equal in binary
    // floating point), q has the higher score → q. (cos(q, p) = 0.5·1 = 0.5, exact in float32.)
    const items = [
      { id: 'r', score: 0.25, vector: vec(0, 1, 0, 0) },
      { id: 'p', score: 1, vector: vec(1, 0, 0, 0) },
      { id: 'q', score: 0.75, vector: vec(0.5, 0.5, 0.5, 0.5) },
    ];
    const picked = mmr(items, 0.5, 10);
    expect(picked.map((p) => p.item.id)).toEqual(['p', 'q', 'r']);
    expect(picked[1]?.mmrScore).toBe(0.125);
    // Reversed roles: r listed first changes nothing.
    expect(mmr([...items].reverse(), 0.5, 10).map((p) => p.item.id)).toEqual(['p', 'q', 'r']);
    // Equal scores and vectors: the smaller id first, whatever the input order.
    const twins = [
      { id: 'w2', score: 0.5, vector: vec(1, 0) },
      { id: 'w1', score: 0.5, vector: vec(1, 0) },
    ];
    expect(mmr(twins, 0.7, 10).map((p) => p.item.id)).toEqual(['w1', 'w2']);
  });

  it('MMR counts a negative similarity as the max over the picked set, but 0 for the first pick', () => {
    // λ = 0.5; a first (0.5·1 = 0.5 > 0.5·0.2 = 0.1); b is opposite to a: maxSim −1,
    // penalty 0.5·−1 = −0.5, mmr 0.1 + 0.5 = 0.6.
    const picked = mmr(
      [
        { id: 'a', score: 1, vector: vec(1, 0) },
        { id: 'b', score: 0.2, vector: vec(-1, 0) },
      ],
      0.5,
      10,
    );
    expect(picked.map((p) => [p.item.id, p.maxSimilarity, p.mmrPenalty, p.mmrScore])).toEqual([
      ['a', 0, 0, 0.5],
      ['b', -1, -0.5, 0.6],
    ]);
  });

  it('MMR treats a missing vector as similarity 0', () => {
    // λ = 0.5: after a, b (no vector): 0.5·0.8 − 0 = 0.4 vs c (duplicate of a): 0.5·0.9 − 0.5 = −0.05.
    const picked = mmr(
      [
        { id: 'a', score: 1, vector: vec(1, 0) },
        { id: 'b', score: 0.8 },
        { id: 'c', score: 0.9, vector: vec(1, 0) },
      ],
      0.5,
      10,
    );
    expect(picked.map((p) => p.item.id)).toEqual(['a', 'b', 'c']);
    expect(picked[1]?.maxSimilarity).toBe(0);
  });
});

describe('rank (end to end)', () => {
  // Five candidates; vectors are L2-normalized.
  //   a: dense 0.9,  text 10, [1,0,0],     occurred now (created 100 days ago: occurredAt wins)
  //   b: dense 0.85, text 10, [1,0,0],     created now (a near-duplicate of a)
  //   c: dense 0.8,  no text, [0,1,0],     created now
  //   d: no dense,   text 6,  [0,0.6,0.8], occurred 30 days ago, created now
  //   e: dense 0.1,  text 2,  [0,0,1],     created 2 days in the future → age 0
  //
  // Step 2, dense: min 0.1, max 0.9, range 0.8 →
  //   a (0.9−0.1)/0.8 = 1, b 0.75/0.8 = 0.9375, c 0.7/0.8 = 0.875, d 0 (missing), e 0.
  // Step 2, text: min 2, max 10, range 8 → a 1, b 1, c 0 (missing), d 4/8 = 0.5, e 0.
  // Step 3, fused = 0.7·vec + 0.3·text →
  //   a 0.7 + 0.3 = 1; b 0.65625 + 0.3 = 0.95625; c 0.6125; d 0.15; e 0.
  // Step 4, decay (half-life 30) → a 1, b 1, c 1, d 2^−1 = 0.5, e 1 (future → age 0).
  //   score: a 1, b 0.95625, c 0.6125, d 0.075, e 0.
  // Pure score order: a, b, c, d, e.
  // Step 6, MMR λ = 0.7:
  //   pick 1: 0.7·score: a 0.7, b 0.669375, c 0.42875, d 0.0525, e 0 → a (penalty 0).
  //     sims to a: b 1, c 0, d 0, e 0.
  //   pick 2: b 0.669375 − 0.3·1 = 0.369375; c 0.42875 − 0 = 0.42875; d 0.0525; e 0 → c.
  //     sims to c: b 0, d 0.6, e 0 → maxSim b 1, d 0.6, e 0.
  //   pick 3: b 0.369375; d 0.0525 − 0.3·0.6 = −0.1275; e 0 → b (maxSim 1, penalty 0.3).
  //     sims to b: d 0, e 0 → maxSim d 0.6, e 0.
  //   pick 4: d −0.1275; e 0 − 0 = 0 → e (maxSim 0).
  //     sim(d, e) = 0.8 → maxSim d max(0.6, 0.8) = 0.8.
  //   pick 5: d 0.0525 − 0.3·0.8 = 0.0525 − 0.24 = −0.1875 (maxSim 0.8, penalty 0.24).
  // MMR order: a, c, b, e, d.
  const candidates: RankingCandidate[] = [
    { id: 'd', text: 6, vector: vec(0, 0.6, 0.8), occurredAt: daysAgo(30), createdAt: NOW, lexicalRank: 3 },
    { id: 'b', dense: 0.85, text: 10, vector: vec(1, 0, 0), createdAt: NOW, denseRank: 2, lexicalRank: 2 },
    {
      id: 'a',
      dense: 0.9,
      text: 10,
      vector: vec(1, 0, 0),
      occurredAt: NOW,
      createdAt: daysAgo(100),
      denseRank: 1,
      lexicalRank: 1,
    },
    { id: 'e', dense: 0.1, text: 2, vector: vec(0, 0, 1), createdAt: NOW + 2 * MS_PER_DAY, denseRank: 4 },
    { id: 'c', dense: 0.8, vector: vec(0, 1, 0), createdAt: NOW, denseRank: 3 },
  ];

  it('computes every step of every breakdown', () => {
    const { results, minScoreDropped, options } = rank(candidates, SEED, NOW);
    expect(options).toEqual(resolveRankingOptions(SEED));
    expect(minScoreDropped).toBe(0);
    expect(results.map((r) => r.id)).toEqual(['a', 'c', 'b', 'e', 'd']);
    expect(results.map((r) => r.rank)).toEqual([1, 2, 3, 4, 5]);

    const expected = {
      a: {
        vectorRaw: 0.9,
        vectorNormalized: 1,
        denseRank: 1,
        textRaw: 10,
        textNormalized: 1,
        lexicalRank: 1,
        fused: 1,
        ageDays: 0,
        decayFactor: 1,
        recencyMultiplier: 1,
        maxSimilarity: 0,
        mmrPenalty: 0,
        mmrScore: 0.7,
        finalScore: 1,
      },
      c: {
        vectorRaw: 0.8,
        vectorNormalized: 0.875,
        denseRank: 3,
        textRaw: undefined,
        textNormalized: 0,
        lexicalRank: 0,
        fused: 0.6125,
        ageDays: 0,
        decayFactor: 1,
        recencyMultiplier: 1,
        maxSimilarity: 0,
        mmrPenalty: 0,
        mmrScore: 0.42875,
        finalScore: 0.6125,
      },
      b: {
        vectorRaw: 0.85,
        vectorNormalized: 0.9375,
        denseRank: 2,
        textRaw: 10,
        textNormalized: 1,
        lexicalRank: 2,
        fused: 0.95625,
        ageDays: 0,
        decayFactor: 1,
        recencyMultiplier: 1,
        maxSimilarity: 1,
        mmrPenalty: 0.3,
        mmrScore: 0.369375,
        finalScore: 0.95625,
      },
      e: {
        vectorRaw: 0.1,
        vectorNormalized: 0,
        denseRank: 4,
        textRaw: 2,
        textNormalized: 0,
        lexicalRank: 0,
        fused: 0,
        ageDays: 0,
        decayFactor: 1,
        recencyMultiplier: 1,
        maxSimilarity: 0,
        mmrPenalty: 0,
        mmrScore: 0,
        finalScore: 0,
      },
      d: {
        vectorRaw: undefined,
        vectorNormalized: 0,
        denseRank: 0,
        textRaw: 6,
        textNormalized: 0.5,
        lexicalRank: 3,
        fused: 0.15,
        ageDays: 30,
        decayFactor: 0.5,
        recencyMultiplier: 0.5,
        maxSimilarity: 0.8,
        mmrPenalty: 0.24,
        mmrScore: -0.1875,
        finalScore: 0.075,
      },
    } as const;
    for (const result of results) {
      const want = expected[result.id as keyof typeof expected];
      expect(result.score).toBeCloseTo(want.finalScore, DIGITS);
      for (const [key, value] of Object.entries(want)) {
        const got = result.breakdown[key as keyof typeof result.breakdown];
        if (value === undefined) expect(got).toBeUndefined();
        else
          expect(got).toBeCloseTo(
            value,
            key === 'maxSimilarity' || key === 'mmrPenalty' || key === 'mmrScore' ? 6 : DIGITS,
          );
      }
    }
  });

  it('returns the pure score order without MMR or with λ = 1', () => {
    // Without MMR: a 1, b 0.95625, c 0.6125, d 0.075, e 0; mmrScore = score, no penalty.
    const plain = rank(candidates, { ...SEED, mmrEnabled: false }, NOW).results;
    expect(plain.map((r) => r.id)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(plain.every((r) => r.breakdown.mmrScore === r.score && r.breakdown.mmrPenalty === 0)).toBe(true);
    expect(plain.every((r) => r.breakdown.maxSimilarity === 0)).toBe(true);
    // λ = 1: objective 1·score − 0·maxSim = score → same order.
    expect(rank(candidates, { ...SEED, mmrLambda: 1 }, NOW).results.map((r) => r.id)).toEqual([
      'a',
      'b',
      'c',
      'd',
      'e',
    ]);
  });

  it('drops scores below minScore before selection and counts them', () => {
    // minScore 0.1: d 0.075 and e 0 are dropped → MMR over a, b, c: a, c, b.
    const outcome = rank(candidates, { ...SEED, minScore: 0.1 }, NOW);
    expect(outcome.minScoreDropped).toBe(2);
    expect(outcome.results.map((r) => r.id)).toEqual(['a', 'c', 'b']);
    // minScore 0.075 keeps d (score ≥ minScore); a score equal to the threshold passes.
    // d's score is 0.15·2^−1 computed with exp, so compare to the exact value produced.
    const dScore =
      rank(candidates, { ...SEED, mmrEnabled: false }, NOW).results.find((r) => r.id === 'd')?.score ?? 1;
    expect(rank(candidates, { ...SEED, minScore: dScore }, NOW).minScoreDropped).toBe(1);
  });

  it('returns at most topK in selection order', () => {
    expect(rank(candidates, { ...SEED, topK: 2 }, NOW).results.map((r) => r.id)).toEqual(['a', 'c']);
    expect(rank(candidates, { ...SEED, topK: 2, mmrEnabled: false }, NOW).results.map((r) => r.id)).toEqual([
      'a',
      'b',
    ]);
  });

  it('uses the given weights, half-life and decay switch', () => {
    // Text only (vector 0, text 1): fused = text → a 1, b 1, d 0.5, c 0, e 0;
    // decay off: d 0.5. Order without MMR: a, b (tie by id), d, c, e (0-scores by id).
    const textOnly = rank(
      candidates,
      { ...SEED, vectorWeight: 0, textWeight: 1, decayEnabled: false, mmrEnabled: false },
      NOW,
    );
    expect(textOnly.results.map((r) => [r.id, r.score])).toEqual([
      ['a', 1],
      ['b', 1],
      ['d', 0.5],
      ['c', 0],
      ['e', 0],
    ]);
    expect(textOnly.results.find((r) => r.id === 'd')?.breakdown.decayFactor).toBe(1);
    expect(textOnly.results.find((r) => r.id === 'd')?.breakdown.ageDays).toBe(30);
    // Half-life 15: d is two half-lives old → 2^−2 = 0.25; score 0.15·0.25 = 0.0375.
    const d = rank(candidates, { ...SEED, halfLifeDays: 15 }, NOW).results.find((r) => r.id === 'd');
    expect(d?.breakdown.decayFactor).toBeCloseTo(0.25, DIGITS);
    expect(d?.score).toBeCloseTo(0.0375, DIGITS);
  });

  it('normalizes over the candidates it is given, with the equal-values case', () => {
    // One dense candidate and one lexical candidate: each signal has a single value → 1.
    // x: fused 0.7·1 = 0.7; y: fused 0.3·1 = 0.3. Orthogonal vectors → MMR keeps x, y.
    const { results } = rank(
      [
        { id: 'x', dense: 0.42, vector: vec(1, 0), createdAt: NOW },
        { id: 'y', text: 3.3, vector: vec(0, 1), createdAt: NOW },
      ],
      SEED,
      NOW,
    );
    expect(results.map((r) => [r.id, r.breakdown.vectorNormalized, r.breakdown.textNormalized])).toEqual([
      ['x', 1, 0],
      ['y', 0, 1],
    ]);
    expect(results[0]?.score).toBeCloseTo(0.7, DIGITS);
    expect(results[1]?.score).toBeCloseTo(0.3, DIGITS);
  });

  it('answers nothing for no candidates and rejects duplicate ids', () => {
    expect(rank([], {}, NOW)).toMatchObject({ results: [], minScoreDropped: 0 });
    const dup: RankingCandidate = { id: 'a', dense: 0.1, createdAt: NOW };
    expect(() => rank([dup, dup], {}, NOW)).toThrow(RangeError);
  });
});

describe('newer statements first (step 7)', () => {
  // old: the older statement, most relevant; new: 40 days later, similar vector (cos 0.8),
  // relevance ≥ half of old's; newer2: later still, also similar to old (cos 0.6) but less; noise:
  // newest, unrelated (cos 0).
  const unit = (...xs: number[]) => {
    const n = Math.hypot(...xs);
    return Float32Array.from(xs.map((x) => x / n));
  };
  const candidates: RankingCandidate[] = [
    {
      id: 'old',
      dense: 0.9,
      text: 10,
      vector: unit(1, 0, 0),
      occurredAt: daysAgo(100),
      createdAt: NOW,
      denseRank: 1,
      lexicalRank: 1,
    },
    {
      id: 'new',
      dense: 0.85,
      text: 6,
      vector: unit(0.8, 0.6, 0),
      occurredAt: daysAgo(60),
      createdAt: NOW,
      denseRank: 2,
      lexicalRank: 2,
    },
    {
      id: 'newer2',
      dense: 0.8,
      text: 5,
      vector: unit(0.6, 0, 0.8),
      occurredAt: daysAgo(30),
      createdAt: NOW,
      denseRank: 3,
      lexicalRank: 3,
    },
    {
      id: 'noise',
      dense: 0.1,
      text: 1,
      vector: unit(0, 0, 1),
      occurredAt: daysAgo(1),
      createdAt: NOW,
      denseRank: 4,
      lexicalRank: 4,
    },
  ];
  const base = { mmrEnabled: false, decayEnabled: false } as const;
  const order = (input: object, context = {}) =>
    rank(candidates, { ...base, ...input }, NOW, { currentState: true, ...context }).results.map((r) => [
      r.id,
      r.breakdown.supersedes,
    ]);

  it('takes the most similar newer statement before the older one, once, and keeps the older one next', () => {
    // Without: old, new, newer2, noise by score.
    expect(order({ newerFirst: false }).map(([id]) => id)).toEqual(['old', 'new', 'newer2', 'noise']);
    // With: old is picked first; new (cos 0.8 ≥ 0.6, later, comparably relevant) and newer2
    // (cos 0.6) qualify; the most similar, new, goes first; then old is taken (it gave its turn
    // once already), then newer2 (old no longer waiting), then noise.
    expect(order({})).toEqual([
      ['new', 'old'],
      ['old', undefined],
      ['newer2', undefined],
      ['noise', undefined],
    ]);
  });

  it('needs similarity, a later time and comparable relevance', () => {
    // Similarity 0.85 required: new (0.8) and newer2 (0.6) fall short → nothing moves.
    expect(order({ newerFirstSimilarity: 0.85 }).map(([id]) => id)).toEqual([
      'old',
      'new',
      'newer2',
      'noise',
    ]);
    // Relevance 0.99 of the older's, in relevance and in the dense signal: nothing qualifies.
    expect(order({ newerFirstRelevance: 0.99 }).map(([id]) => id)).toEqual(['old', 'new', 'newer2', 'noise']);
  });

  it('applies only to questions about how things stand now, and never within a named time', () => {
    expect(order({}, { currentState: false }).map(([id]) => id)).toEqual(['old', 'new', 'newer2', 'noise']);
    const window = { gte: daysAgo(200), lt: NOW };
    expect(order({}, { window }).map(([id]) => id)).toEqual(['old', 'new', 'newer2', 'noise']);
  });
});
