/**
 * The pure ranking step of Search: steps 2–7 of the formula on `SearchOptions` in
 * proto/engram/retrieval/v1/search.proto. No I/O: the caller fetches and merges the dense and
 * lexical candidates, drops drifted rows, asks the reranker (when one is configured) and hands the
 * survivors here.
 *
 * 1. default weights by the query's form (question, keywords or statement), the dense one raised
 *    when the best lexical candidate covers less than `coverageThreshold` of the query's terms;
 * 2. per-signal normalization over the candidates having the signal, by the fusion:
 *    SCORE (default) — min–max, anchored at 0 when the signal's candidate list was exhausted (the
 *    index returned every match, so the weakest candidate is not a meaningful "irrelevant" anchor);
 *    MIN_MAX (the seed) — plain min–max; RRF — `(k + 1) / (k + rank)`;
 *    a signal no candidate has gives its weight to the other (SCORE and RRF);
 * 3. `fused = vectorWeight · vectorNormalized + textWeight · textNormalized`; with a reranker,
 *    `fused = rerankWeight · rerank + (1 − rerankWeight) · fused`;
 * 4. `relevance = fused · windowFactor` (1 inside the query's time window or without one,
 *    `1 − timeWindowWeight` outside);
 * 5. recency, `decay = exp(−ln 2 / halfLifeDays · ageDays)`: BOUNDED (default)
 *    `score = relevance · (1 − recencyWeight + recencyWeight · decay)` (1 when the query names a
 *    time), MULTIPLICATIVE (the seed) `score = relevance · decay`;
 * 6. candidates below `minScore` are dropped (their relevance in BOUNDED, their score in
 *    MULTIPLICATIVE), before selection;
 * 7. greedy MMR selection (or plain top-k by score), ties by higher score then by id in ascending
 *    byte (code point) order; with `newerFirst`, an item whose newer statement of the same subject
 *    (similar stored vectors, comparable relevance, later) is still unselected gives its turn to it.
 *
 * All arithmetic is IEEE-754 double precision; times are epoch milliseconds.
 */

/** Milliseconds in a day: ages are fractional days. */
export const MS_PER_DAY = 86_400_000;

/** One merged candidate (a point from the dense list, the lexical list, or both). */
export interface RankingCandidate {
  /** The item's resource name; unique within one call; the final tie-breaker. */
  readonly id: string;
  /** Raw cosine similarity to the query (`vector_raw`), when among the dense candidates. */
  readonly dense?: number | undefined;
  /** Raw BM25 score (`text_raw`), when among the lexical candidates. */
  readonly text?: number | undefined;
  /**
   * The item's stored dense vector, L2-normalized (as every embedder returns and the index
   * stores), so that cosine similarity is the dot product. Unset when vectors are unavailable:
   * its similarity to anything is then 0.
   */
  readonly vector?: Float32Array | undefined;
  /** When the item happened (epoch ms); the decay uses it when set. */
  readonly occurredAt?: number | undefined;
  /** When the item was created (epoch ms); the decay falls back to it. */
  readonly createdAt: number;
  /** 1-based position in the dense candidate list, passed through to the breakdown (default 0). */
  readonly denseRank?: number | undefined;
  /** 1-based position in the lexical candidate list, passed through to the breakdown (default 0). */
  readonly lexicalRank?: number | undefined;
  /** The reranker's relevance in [0, 1], when a reranker scored this candidate. */
  readonly rerank?: number | undefined;
}

/** How the two signals are combined (`SearchOptions.fusion`). */
export type Fusion = 'SCORE' | 'MIN_MAX' | 'RRF';
/** How age enters the score (`SearchOptions.recency`). */
export type Recency = 'BOUNDED' | 'MULTIPLICATIVE';

/** Facts about one search that the ranking depends on besides its options. */
export interface RankingContext {
  /** The dense candidate list holds every match (fewer than the limit came back). */
  readonly denseExhausted?: boolean;
  /** The lexical candidate list holds every match. */
  readonly textExhausted?: boolean;
  /** The time the query names (`[gte, lt)`, epoch ms), from its date expressions. */
  readonly window?: { readonly gte?: number; readonly lt?: number } | undefined;
  /**
   * The query asks how something stands now (`asksCurrentState`): only then are newer statements
   * of a subject placed first. Default true (the ranking alone cannot tell).
   */
  readonly currentState?: boolean;
  /**
   * The share of the query's distinct lexical terms found in the best lexical candidate, in
   * [0, 1]; unset when there is no lexical candidate (or no query term).
   */
  readonly lexicalCoverage?: number | undefined;
  /**
   * The cosine similarity of two candidates' stored dense vectors, by candidate id; undefined when
   * either has none. Unset: computed from the candidates' `vector`s. Search passes the index's
   * similarities here instead of the vectors themselves (decision 0044).
   */
  readonly similarity?: ((a: string, b: string) => number | undefined) | undefined;
}

/** The ranking knobs with every default applied (what `SearchStats.applied_options` echoes). */
export interface RankingOptions {
  readonly vectorWeight: number;
  readonly textWeight: number;
  readonly fusion: Fusion;
  /** The `k` of reciprocal-rank fusion, integer in [1, 1000]. */
  readonly rrfK: number;
  readonly recency: Recency;
  /** BOUNDED only: the largest share of relevance that age can take away, in [0, 1]. */
  readonly recencyWeight: number;
  /** How much an item outside the query's time window loses, in [0, 1]. */
  readonly timeWindowWeight: number;
  /** With a reranker: its share of the fused relevance, in [0, 1]. */
  readonly rerankWeight: number;
  /**
   * Default weights only: below this lexical coverage the dense weight rises (0 turns it off),
   * in [0, 1].
   */
  readonly coverageThreshold: number;
  /** Neither weight was given: the weights are the defaults of the query form, adapted. */
  readonly adaptiveWeights: boolean;
  /** Place a newer statement of the same subject before the older one it follows (step 7). */
  readonly newerFirst: boolean;
  /** The cosine similarity of two items' stored vectors from which they are "the same subject". */
  readonly newerFirstSimilarity: number;
  /** The newer item's relevance must be at least this share of the older one's, in [0, 1]. */
  readonly newerFirstRelevance: number;
  readonly decayEnabled: boolean;
  readonly halfLifeDays: number;
  readonly mmrEnabled: boolean;
  readonly mmrLambda: number;
  /** Maximum number of results, integer in [1, 100]. */
  readonly topK: number;
  /** Minimum final score, finite and ≥ 0; 0 keeps every candidate. */
  readonly minScore: number;
}

/** The knobs as a request gives them: every field optional (an explicit 0 is a value). */
export type RankingOptionsInput = { readonly [K in keyof RankingOptions]?: RankingOptions[K] | undefined };

/** The query languages the ranking tells apart (the bilingual embedder's mix, the date grammar). */
export type QueryLanguage = 'en' | 'zh';

/** What kind of text a query is (`domain/query.ts` `queryForm`). */
export type QueryForm = 'QUESTION' | 'STATEMENT' | 'KEYWORDS';

/**
 * The default dense weight per query form (the text weight is `1 − it`), chosen on the tuning
 * splits (docs/benchmarks.md "Recall by default"): a question or keywords name what they look for,
 * and the lexical signal finds it best (LoCoMo); a statement — a conversational message searched
 * for the memories it calls up — is matched by meaning (MADial-Bench). Per-language weights were
 * measured too and added nothing once the form and the lexical coverage set the weights.
 */
export const DEFAULT_VECTOR_WEIGHTS: Readonly<Record<QueryForm, number>> = {
  QUESTION: 0.2,
  KEYWORDS: 0.2,
  STATEMENT: 0.9,
};
/**
 * Below this share of the query's distinct terms found in the best lexical candidate, the lexical
 * signal is not sure of itself and the default dense weight rises linearly to the whole (at none).
 */
export const DEFAULT_COVERAGE_THRESHOLD = 0.5;

/** The seed's dense weight (blueprint §5; the text weight is `1 − it`), kept for the MIN_MAX formula. */
export const SEED_VECTOR_WEIGHT = 0.7;
export const DEFAULT_FUSION: Fusion = 'SCORE';
export const DEFAULT_RRF_K = 60;
export const MAX_RRF_K = 1000;
export const DEFAULT_RECENCY: Recency = 'BOUNDED';
export const DEFAULT_RECENCY_WEIGHT = 0.05;
export const DEFAULT_TIME_WINDOW_WEIGHT = 0.3;
export const DEFAULT_RERANK_WEIGHT = 0.7;
export const DEFAULT_NEWER_FIRST_SIMILARITY = 0.6;
export const DEFAULT_NEWER_FIRST_RELEVANCE = 0.5;
/** A newer statement must be this much later than the older one (ms): not the same turn. */
export const NEWER_FIRST_MIN_GAP_MS = 60_000;
export const DEFAULT_HALF_LIFE_DAYS = 30;
export const MAX_HALF_LIFE_DAYS = 36_500;
export const DEFAULT_MMR_LAMBDA = 0.7;
export const DEFAULT_TOP_K = 10;
export const MAX_TOP_K = 100;

/** How one result's score came about: the fields of `ScoreBreakdown` in search.proto. */
export interface ScoreBreakdown {
  /** Raw cosine similarity; undefined when not a dense candidate. */
  readonly vectorRaw: number | undefined;
  /** Min–max normalized dense signal in [0, 1]; 0 when `vectorRaw` is undefined. */
  readonly vectorNormalized: number;
  readonly denseRank: number;
  /** Raw BM25 score; undefined when not a lexical candidate. */
  readonly textRaw: number | undefined;
  /** Min–max normalized lexical signal in [0, 1]; 0 when `textRaw` is undefined. */
  readonly textNormalized: number;
  readonly lexicalRank: number;
  /** `vectorWeight · vectorNormalized + textWeight · textNormalized` (with the reranker's share). */
  readonly fused: number;
  /** The reranker's relevance in [0, 1]; undefined without a reranker. */
  readonly rerankScore: number | undefined;
  /** 1 inside the query's time window (or without one), `1 − timeWindowWeight` outside. */
  readonly timeWindowFactor: number;
  /** `fused · timeWindowFactor`: what `minScore` applies to with BOUNDED recency. */
  readonly relevance: number;
  /** What the score multiplies relevance by for age: BOUNDED `1 − w + w · decay`, MULTIPLICATIVE `decay`. */
  readonly recencyMultiplier: number;
  /** Age in fractional days (≥ 0) at `now`. */
  readonly ageDays: number;
  /** `exp(−ln 2 / halfLifeDays · ageDays)`; 1 when decay is disabled. */
  readonly decayFactor: number;
  /** Largest cosine similarity to the results selected before it; 0 for the first or without MMR. */
  readonly maxSimilarity: number;
  /** The older candidate this item was placed before as the newer statement of its subject, if any. */
  readonly supersedes: string | undefined;
  /** `(1 − mmrLambda) · maxSimilarity`; 0 without MMR. */
  readonly mmrPenalty: number;
  /** `mmrLambda · finalScore − mmrPenalty`, the objective it was selected with; `finalScore` without MMR. */
  readonly mmrScore: number;
  /** `relevance · recencyMultiplier`, the result's score. */
  readonly finalScore: number;
}

export interface RankedResult {
  readonly id: string;
  /** 1-based position (selection order). */
  readonly rank: number;
  /** `relevance · recencyMultiplier` (equal to `breakdown.finalScore`). */
  readonly score: number;
  readonly breakdown: ScoreBreakdown;
}

export interface RankingOutcome {
  /** At most `topK` results in selection order (with MMR, `score` need not decrease). */
  readonly results: readonly RankedResult[];
  /** Candidates dropped because they were below `minScore` (`SearchStats.min_score_dropped`). */
  readonly minScoreDropped: number;
  /** The options actually used (weights as applied: a signal no candidate had gave its weight away). */
  readonly options: RankingOptions;
}

/**
 * Applies the defaults of `SearchOptions`: when only one weight is set the other defaults to
 * `1 − it`; when neither is, the weights of the query's form ({@link DEFAULT_VECTOR_WEIGHTS};
 * the seed's 0.7 / 0.3 with the MIN_MAX fusion), which `rank` then adapts to the lexical
 * coverage; `topK` 0 or unset means 10. Throws a RangeError for a value outside its documented
 * range (the request validation should have answered FIELD_INVALID before).
 */
export function resolveRankingOptions(
  input: RankingOptionsInput = {},
  form: QueryForm = 'QUESTION',
): RankingOptions {
  const { vectorWeight: vw, textWeight: tw } = input;
  const fusion = input.fusion ?? DEFAULT_FUSION;
  const defaultVector = fusion === 'MIN_MAX' ? SEED_VECTOR_WEIGHT : DEFAULT_VECTOR_WEIGHTS[form];
  const vectorWeight = vw ?? (tw === undefined ? defaultVector : 1 - tw);
  const textWeight = tw ?? (vw === undefined ? 1 - defaultVector : 1 - vw);
  const options: RankingOptions = {
    vectorWeight,
    textWeight,
    fusion,
    rrfK: input.rrfK ?? DEFAULT_RRF_K,
    recency: input.recency ?? DEFAULT_RECENCY,
    recencyWeight: input.recencyWeight ?? DEFAULT_RECENCY_WEIGHT,
    timeWindowWeight: input.timeWindowWeight ?? DEFAULT_TIME_WINDOW_WEIGHT,
    rerankWeight: input.rerankWeight ?? DEFAULT_RERANK_WEIGHT,
    coverageThreshold: input.coverageThreshold ?? DEFAULT_COVERAGE_THRESHOLD,
    adaptiveWeights: input.adaptiveWeights ?? (vw === undefined && tw === undefined && fusion !== 'MIN_MAX'),
    newerFirst: input.newerFirst ?? true,
    newerFirstSimilarity: input.newerFirstSimilarity ?? DEFAULT_NEWER_FIRST_SIMILARITY,
    newerFirstRelevance: input.newerFirstRelevance ?? DEFAULT_NEWER_FIRST_RELEVANCE,
    decayEnabled: input.decayEnabled ?? true,
    halfLifeDays: input.halfLifeDays ?? DEFAULT_HALF_LIFE_DAYS,
    mmrEnabled: input.mmrEnabled ?? true,
    mmrLambda: input.mmrLambda ?? DEFAULT_MMR_LAMBDA,
    topK: input.topK === undefined || input.topK === 0 ? DEFAULT_TOP_K : input.topK,
    minScore: input.minScore ?? 0,
  };
  validateOptions(options);
  return options;
}

function inUnit(value: number): boolean {
  return value >= 0 && value <= 1;
}

function validateOptions(o: RankingOptions): void {
  if (!inUnit(o.vectorWeight)) throw new RangeError(`vectorWeight must be in [0, 1], got ${o.vectorWeight}`);
  if (!inUnit(o.textWeight)) throw new RangeError(`textWeight must be in [0, 1], got ${o.textWeight}`);
  if (o.vectorWeight === 0 && o.textWeight === 0) {
    throw new RangeError('vectorWeight and textWeight may not both be 0');
  }
  if (!(o.halfLifeDays > 0 && o.halfLifeDays <= MAX_HALF_LIFE_DAYS)) {
    throw new RangeError(`halfLifeDays must be in (0, ${MAX_HALF_LIFE_DAYS}], got ${o.halfLifeDays}`);
  }
  if (!inUnit(o.mmrLambda)) throw new RangeError(`mmrLambda must be in [0, 1], got ${o.mmrLambda}`);
  if (!inUnit(o.recencyWeight))
    throw new RangeError(`recencyWeight must be in [0, 1], got ${o.recencyWeight}`);
  if (!inUnit(o.timeWindowWeight)) {
    throw new RangeError(`timeWindowWeight must be in [0, 1], got ${o.timeWindowWeight}`);
  }
  if (!inUnit(o.rerankWeight)) throw new RangeError(`rerankWeight must be in [0, 1], got ${o.rerankWeight}`);
  if (!inUnit(o.coverageThreshold)) {
    throw new RangeError(`coverageThreshold must be in [0, 1], got ${o.coverageThreshold}`);
  }
  if (!(o.newerFirstSimilarity >= -1 && o.newerFirstSimilarity <= 1)) {
    throw new RangeError(`newerFirstSimilarity must be in [-1, 1], got ${o.newerFirstSimilarity}`);
  }
  if (!inUnit(o.newerFirstRelevance)) {
    throw new RangeError(`newerFirstRelevance must be in [0, 1], got ${o.newerFirstRelevance}`);
  }
  if (!Number.isInteger(o.rrfK) || o.rrfK < 1 || o.rrfK > MAX_RRF_K) {
    throw new RangeError(`rrfK must be an integer in [1, ${MAX_RRF_K}], got ${o.rrfK}`);
  }
  if (!Number.isInteger(o.topK) || o.topK < 1 || o.topK > MAX_TOP_K) {
    throw new RangeError(`topK must be an integer in [1, ${MAX_TOP_K}], got ${o.topK}`);
  }
  if (!(Number.isFinite(o.minScore) && o.minScore >= 0)) {
    throw new RangeError(`minScore must be finite and ≥ 0, got ${o.minScore}`);
  }
}

/**
 * The weights of a degraded (lexical-only) answer: the dense signal is missing for every candidate,
 * so `vectorWeight = 0` and `textWeight = vectorWeight + textWeight`, keeping the score scale.
 */
export function degradedOptions(options: RankingOptions): RankingOptions {
  return {
    ...options,
    vectorWeight: 0,
    textWeight: options.vectorWeight + options.textWeight,
    adaptiveWeights: false,
  };
}

/**
 * Min–max normalization of one signal: `(raw − min) / (max − min)` over the defined values; every
 * defined value gets 1 when they are all equal (including a single one); undefined gets 0.
 * Throws a RangeError for a non-finite value.
 */
export function normalize(values: readonly (number | undefined)[]): number[] {
  return minMax(values);
}

/**
 * The SCORE fusion's normalization: min–max, except that when the candidate list was exhausted
 * (every match is a candidate) the lower anchor is `min(floor, min)` — for BM25 and cosine the
 * floor is 0, "nothing in common" — so that the weakest of a few matches is not pushed to 0 by
 * construction. All defined values equal (including one) → 1; undefined → 0.
 */
export function normalizeAnchored(
  values: readonly (number | undefined)[],
  exhausted: boolean,
  floor = 0,
): number[] {
  return minMax(values, exhausted ? floor : undefined);
}

/** `(v − low) / (max − low)` clamped to [0, 1], `low` = min(`anchor`, min) (the min without one). */
function minMax(values: readonly (number | undefined)[], anchor?: number): number[] {
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    if (v === undefined) continue;
    if (!Number.isFinite(v)) throw new RangeError(`signal values must be finite, got ${v}`);
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const low = anchor === undefined ? min : Math.min(anchor, min);
  const range = max - low;
  return values.map((v) => {
    if (v === undefined) return 0;
    if (max === low) return 1;
    // Rounding is monotone, so (v − low) ≤ range and the quotient stays in [0, 1]; the clamp only
    // guards against an overflowing range with extreme inputs.
    return Math.min(1, Math.max(0, (v - low) / range));
  });
}

/** Reciprocal-rank normalization `(k + 1) / (k + rank)`: 1 for the first, 0 without a rank. */
export function reciprocalRank(rank: number | undefined, k: number): number {
  return rank === undefined || rank < 1 ? 0 : (k + 1) / (k + rank);
}

/** Age in fractional days of an item at `now`, from `occurredAt` else `createdAt`; never negative. */
export function ageDays(
  item: { readonly occurredAt?: number | undefined; readonly createdAt: number },
  now: number,
): number {
  const t = item.occurredAt ?? item.createdAt;
  return Math.max(0, (now - t) / MS_PER_DAY);
}

/** `exp(−ln 2 / halfLifeDays · ageDays)`: 1 at age 0, ½ at one half-life. */
export function decayFactor(age: number, halfLifeDays: number): number {
  return Math.exp((-Math.LN2 / halfLifeDays) * age);
}

/** Cosine similarity of two L2-normalized vectors (their dot product); 0 when either is missing. */
export function cosine(a: Float32Array | undefined, b: Float32Array | undefined): number {
  if (a === undefined || b === undefined) return 0;
  if (a.length !== b.length) {
    throw new RangeError(`dense vectors differ in dimensions: ${a.length} vs ${b.length}`);
  }
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += (a[i] ?? 0) * (b[i] ?? 0);
  return dot;
}

/** Ascending byte order of the UTF-8 encodings (= code point order) of two strings. */
export function compareIds(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca !== cb) return codePointOrder(ca) - codePointOrder(cb);
  }
  return a.length - b.length;
}

/** Maps UTF-16 code units so that surrogates (supplementary code points) sort above U+E000–U+FFFF. */
function codePointOrder(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit < 0xe000 ? unit + 0x2000 : unit - 0x800;
}

/** What selection needs of a scored candidate. */
export interface Selectable {
  readonly id: string;
  readonly score: number;
  readonly vector?: Float32Array | undefined;
}

/** One selected item with the MMR terms it was selected with. */
export interface Selection<T extends Selectable> {
  readonly item: T;
  readonly maxSimilarity: number;
  readonly mmrPenalty: number;
  readonly mmrScore: number;
  /** The id of the item it was taken before because it is the newer statement of its subject. */
  readonly supersedes?: string | undefined;
}

/**
 * Whether `newer` is to be placed before `older` (step 7), given the cosine similarity of their
 * stored vectors (undefined when either has none). Unset: never.
 */
export type NewerRule<T> = (newer: T, older: T, similarity: number | undefined) => boolean;

/** The cosine similarity of two items' stored vectors; undefined when either has none. */
export type PairSimilarity<T> = (a: T, b: T) => number | undefined;

/** {@link PairSimilarity} from the items' own `vector`s. */
export function vectorSimilarity<T extends Selectable>(a: T, b: T): number | undefined {
  return a.vector === undefined || b.vector === undefined ? undefined : cosine(a.vector, b.vector);
}

/**
 * The item to take instead of `chosen` (at index `index` of `pool`): among the other items that are
 * newer statements of its subject (`rule`), the one most similar to it (cosine of the stored
 * vectors; ties to the better score) — one step, never a chain, so that the replacement stays about what was
 * chosen, and once per item (`superseded`): the next time the item is picked it is taken, so an
 * older statement follows its newer one instead of sinking. Returns that index and the id it was
 * taken instead of, or `index` alone.
 */
function newestOf<T extends Selectable>(
  pool: readonly { item: T }[],
  index: number,
  rule: NewerRule<T> | undefined,
  superseded: Set<string>,
  similarity: PairSimilarity<T>,
): { index: number; supersedes?: string } {
  const chosen = pool[index]?.item;
  // An item gives its turn once: the next time it is picked, it is taken.
  if (rule === undefined || chosen === undefined || superseded.has(chosen.id)) return { index };
  let best = -1;
  let bestSimilarity = -Infinity;
  let incumbent: T | undefined;
  pool.forEach(({ item }, i) => {
    if (i === index) return;
    const sim = similarity(item, chosen);
    if (sim === undefined || !rule(item, chosen, sim)) return;
    if (
      sim > bestSimilarity ||
      (sim === bestSimilarity && incumbent !== undefined && byScoreThenId(item, incumbent) < 0)
    ) {
      best = i;
      bestSimilarity = sim;
      incumbent = item;
    }
  });
  if (best === -1) return { index };
  superseded.add(chosen.id);
  return { index: best, supersedes: chosen.id };
}

/** Higher score first, then id ascending: the order without MMR and the MMR tie-breaker. */
function byScoreThenId(a: Selectable, b: Selectable): number {
  if (a.score !== b.score) return b.score - a.score;
  return compareIds(a.id, b.id);
}

/**
 * Without MMR: the `topK` highest scores; penalty 0 and `mmrScore = score`. With `newer`, an item
 * whose newer statement is still unselected gives its turn to it.
 */
export function topByScore<T extends Selectable>(
  items: readonly T[],
  topK: number,
  newer?: NewerRule<T>,
  similarity: PairSimilarity<T> = vectorSimilarity,
): Selection<T>[] {
  const remaining = [...items].sort(byScoreThenId).map((item) => ({ item }));
  const selected: Selection<T>[] = [];
  const superseded = new Set<string>();
  while (selected.length < topK && remaining.length > 0) {
    const { index, supersedes } = newestOf(remaining, 0, newer, superseded, similarity);
    const [chosen] = remaining.splice(index, 1);
    if (chosen === undefined) break;
    const item = chosen.item;
    selected.push({
      item,
      maxSimilarity: 0,
      mmrPenalty: 0,
      mmrScore: item.score,
      ...(supersedes === undefined ? {} : { supersedes }),
    });
  }
  return selected;
}

/**
 * Greedy maximal marginal relevance: repeatedly picks the item maximizing
 * `lambda · score − (1 − lambda) · maxSim`, where `maxSim` is its largest cosine similarity to the
 * items already picked (0 for the first pick), until `topK` are picked or none is left. Ties go to
 * the higher score, then to the smaller id.
 */
export function mmr<T extends Selectable>(
  items: readonly T[],
  lambda: number,
  topK: number,
  newer?: NewerRule<T>,
  similarity: PairSimilarity<T> = vectorSimilarity,
): Selection<T>[] {
  const remaining = items.map((item) => ({ item, maxSim: 0 }));
  const selected: Selection<T>[] = [];
  const superseded = new Set<string>();
  while (selected.length < topK && remaining.length > 0) {
    let best = 0;
    let bestScore = -Infinity;
    for (let i = 0; i < remaining.length; i++) {
      const r = remaining[i];
      if (r === undefined) continue;
      const value = lambda * r.item.score - (1 - lambda) * r.maxSim;
      const incumbent = remaining[best];
      if (
        value > bestScore ||
        (value === bestScore && incumbent !== undefined && byScoreThenId(r.item, incumbent.item) < 0)
      ) {
        best = i;
        bestScore = value;
      }
    }
    const replaced = newestOf(remaining, best, newer, superseded, similarity);
    const [chosen] = remaining.splice(replaced.index, 1);
    if (chosen === undefined) break;
    const penalty = (1 - lambda) * chosen.maxSim;
    selected.push({
      item: chosen.item,
      maxSimilarity: chosen.maxSim,
      mmrPenalty: penalty,
      mmrScore: lambda * chosen.item.score - penalty,
      ...(replaced.supersedes === undefined ? {} : { supersedes: replaced.supersedes }),
    });
    // The similarity to the selected set is a max over a non-empty set from now on (it may be < 0).
    for (const r of remaining) {
      const sim = similarity(r.item, chosen.item) ?? 0;
      r.maxSim = selected.length === 1 ? sim : Math.max(r.maxSim, sim);
    }
  }
  return selected;
}

interface Scored extends Selectable {
  readonly candidate: RankingCandidate;
  readonly vectorNormalized: number;
  readonly textNormalized: number;
  readonly fused: number;
  readonly timeWindowFactor: number;
  readonly relevance: number;
  readonly ageDays: number;
  readonly decayFactor: number;
  readonly recencyMultiplier: number;
}

function inWindow(t: number, window: NonNullable<RankingContext['window']>): boolean {
  return (window.gte === undefined || t >= window.gte) && (window.lt === undefined || t < window.lt);
}

/**
 * Default weights follow the lexical signal's confidence: when its best candidate holds less than
 * `coverageThreshold` of the query's terms (`coverage`), the dense weight rises linearly towards
 * the whole.
 */
function adaptedWeights(requested: RankingOptions, coverage: number | undefined): RankingOptions {
  if (!(requested.adaptiveWeights && requested.coverageThreshold > 0 && coverage !== undefined)) {
    return requested;
  }
  const total = requested.vectorWeight + requested.textWeight;
  const doubt = Math.max(0, 1 - coverage / requested.coverageThreshold);
  const vectorWeight = requested.vectorWeight + (total - requested.vectorWeight) * doubt;
  return { ...requested, vectorWeight, textWeight: total - vectorWeight };
}

/** Both signals of every candidate normalized to [0, 1] by the fusion of `options`. */
function normalizedSignals(
  candidates: readonly RankingCandidate[],
  options: RankingOptions,
  context: RankingContext,
): { vectorNormalized: number[]; textNormalized: number[] } {
  const dense = candidates.map((c) => c.dense);
  const text = candidates.map((c) => c.text);
  switch (options.fusion) {
    case 'MIN_MAX':
      return { vectorNormalized: normalize(dense), textNormalized: normalize(text) };
    case 'SCORE':
      return {
        vectorNormalized: normalizeAnchored(dense, context.denseExhausted ?? false),
        textNormalized: normalizeAnchored(text, context.textExhausted ?? false),
      };
    case 'RRF':
      for (const v of [...dense, ...text]) {
        if (v !== undefined && !Number.isFinite(v))
          throw new RangeError(`signal values must be finite, got ${v}`);
      }
      return {
        vectorNormalized: candidates.map((c) =>
          c.dense === undefined ? 0 : reciprocalRank(c.denseRank, options.rrfK),
        ),
        textNormalized: candidates.map((c) =>
          c.text === undefined ? 0 : reciprocalRank(c.lexicalRank, options.rrfK),
        ),
      };
  }
}

/**
 * Ranks the merged candidates of one search at the reference time `now` (epoch ms), for a query
 * of `form` (its default weights). Throws a RangeError for invalid options, duplicate ids or
 * non-finite signal values.
 */
export function rank(
  candidates: readonly RankingCandidate[],
  input: RankingOptionsInput = {},
  now: number = Date.now(),
  context: RankingContext = {},
  form: QueryForm = 'QUESTION',
): RankingOutcome {
  const requested = adaptedWeights(resolveRankingOptions(input, form), context.lexicalCoverage);
  const ids = new Set<string>();
  for (const c of candidates) {
    if (ids.has(c.id)) throw new RangeError(`duplicate candidate id ${c.id}`);
    ids.add(c.id);
  }

  // A signal that no candidate has (no lexical match at all, say) gives its weight to the other,
  // so that scores keep their scale (SCORE and RRF; the seed formula keeps its weights).
  let options = requested;
  if (requested.fusion !== 'MIN_MAX' && candidates.length > 0) {
    const total = requested.vectorWeight + requested.textWeight;
    const anyDense = candidates.some((c) => c.dense !== undefined);
    const anyText = candidates.some((c) => c.text !== undefined);
    if (!anyDense && anyText) options = { ...requested, vectorWeight: 0, textWeight: total };
    if (!anyText && anyDense) options = { ...requested, vectorWeight: total, textWeight: 0 };
  }

  const { vectorNormalized, textNormalized } = normalizedSignals(candidates, options, context);
  const window = context.window;
  const scored: Scored[] = candidates.map((candidate, i) => {
    const vn = vectorNormalized[i] ?? 0;
    const tn = textNormalized[i] ?? 0;
    let fused = options.vectorWeight * vn + options.textWeight * tn;
    if (candidate.rerank !== undefined) {
      fused = options.rerankWeight * candidate.rerank + (1 - options.rerankWeight) * fused;
    }
    const time = candidate.occurredAt ?? candidate.createdAt;
    const windowFactor = window === undefined || inWindow(time, window) ? 1 : 1 - options.timeWindowWeight;
    const relevance = fused * windowFactor;
    const age = ageDays(candidate, now);
    const decay = options.decayEnabled ? decayFactor(age, options.halfLifeDays) : 1;
    let multiplier: number;
    if (!options.decayEnabled) multiplier = 1;
    else if (options.recency === 'MULTIPLICATIVE') multiplier = decay;
    // A query about a given time is not a query about now: no recency within it.
    else if (window !== undefined) multiplier = 1;
    else multiplier = 1 - options.recencyWeight + options.recencyWeight * decay;
    return {
      id: candidate.id,
      vector: candidate.vector,
      candidate,
      vectorNormalized: vn,
      textNormalized: tn,
      fused,
      timeWindowFactor: windowFactor,
      relevance,
      ageDays: age,
      decayFactor: decay,
      recencyMultiplier: multiplier,
      score: relevance * multiplier,
    };
  });

  const thresholded = (s: Scored) => (options.recency === 'MULTIPLICATIVE' ? s.score : s.relevance);
  // With a reranker, only the candidates it scored can be results (the others ranked below them).
  const reranked = candidates.some((c) => c.rerank !== undefined);
  const eligible = reranked ? scored.filter((s) => s.candidate.rerank !== undefined) : scored;
  const kept = eligible.filter((s) => thresholded(s) >= options.minScore);
  // Newer statements first: of two items about the same subject (stored vectors at least
  // `newerFirstSimilarity` alike) that are both relevant (the newer at least `newerFirstRelevance`
  // of the older's relevance), the later one is taken first — when the query asks how things
  // stand now, and not within a time it names. Of several, the one most similar to the older.
  const timeOf = (s: Scored) => s.candidate.occurredAt ?? s.candidate.createdAt;
  const newer: NewerRule<Scored> | undefined =
    options.newerFirst && window === undefined && (context.currentState ?? true)
      ? (b, a, similarity) =>
          similarity !== undefined &&
          similarity >= options.newerFirstSimilarity &&
          timeOf(b) > timeOf(a) + NEWER_FIRST_MIN_GAP_MS &&
          // Comparably relevant: by the fused relevance, or by the dense signal alone (a newer
          // statement often shares fewer words with the question than the one it replaces).
          (b.relevance >= options.newerFirstRelevance * a.relevance ||
            (b.candidate.dense !== undefined &&
              b.vectorNormalized >= options.newerFirstRelevance * a.vectorNormalized))
      : undefined;
  const byId = context.similarity;
  const similarity: PairSimilarity<Scored> =
    byId === undefined ? vectorSimilarity : (a, b) => byId(a.id, b.id);
  const selection = options.mmrEnabled
    ? mmr(kept, options.mmrLambda, options.topK, newer, similarity)
    : topByScore(kept, options.topK, newer, similarity);

  return {
    results: selection.map(({ item, maxSimilarity, mmrPenalty, mmrScore, supersedes }, i) => ({
      id: item.id,
      rank: i + 1,
      score: item.score,
      breakdown: {
        vectorRaw: item.candidate.dense,
        vectorNormalized: item.vectorNormalized,
        denseRank: item.candidate.denseRank ?? 0,
        textRaw: item.candidate.text,
        textNormalized: item.textNormalized,
        lexicalRank: item.candidate.lexicalRank ?? 0,
        fused: item.fused,
        rerankScore: item.candidate.rerank,
        timeWindowFactor: item.timeWindowFactor,
        relevance: item.relevance,
        ageDays: item.ageDays,
        decayFactor: item.decayFactor,
        recencyMultiplier: item.recencyMultiplier,
        maxSimilarity,
        supersedes,
        mmrPenalty,
        mmrScore,
        finalScore: item.score,
      },
    })),
    minScoreDropped: eligible.length - kept.length,
    options,
  };
}
