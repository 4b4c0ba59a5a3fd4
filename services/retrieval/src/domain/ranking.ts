/**
 * The pure ranking step of Search: steps 2–6 of the formula on `SearchOptions` in
 * proto/engram/retrieval/v1/search.proto (Blueprint §5). No I/O: the caller fetches and merges the
 * dense and lexical candidates, drops drifted rows, and hands the survivors here.
 *
 * 2. per-signal min–max normalization over the candidates having the signal (all equal → 1;
 *    missing → 0);
 * 3. `fused = vectorWeight · vectorNormalized + textWeight · textNormalized`;
 * 4. `decayFactor = exp(−ln 2 / halfLifeDays · ageDays)` (1 when decay is off),
 *    `ageDays = max(0, (now − (occurredAt ?? createdAt)) / 86 400 000 ms)`, `score = fused · decay`;
 * 5. candidates with `score < minScore` are dropped (before selection);
 * 6. greedy MMR selection (or plain top-k by score), ties by higher score then by id in ascending
 *    byte (code point) order.
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
}

/** The ranking knobs with every default applied (what `SearchStats.applied_options` echoes). */
export interface RankingOptions {
  readonly vectorWeight: number;
  readonly textWeight: number;
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

export const DEFAULT_VECTOR_WEIGHT = 0.7;
export const DEFAULT_TEXT_WEIGHT = 0.3;
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
  /** `vectorWeight · vectorNormalized + textWeight · textNormalized`. */
  readonly fused: number;
  /** Age in fractional days (≥ 0) at `now`. */
  readonly ageDays: number;
  /** `exp(−ln 2 / halfLifeDays · ageDays)`; 1 when decay is disabled. */
  readonly decayFactor: number;
  /** Largest cosine similarity to the results selected before it; 0 for the first or without MMR. */
  readonly maxSimilarity: number;
  /** `(1 − mmrLambda) · maxSimilarity`; 0 without MMR. */
  readonly mmrPenalty: number;
  /** `mmrLambda · finalScore − mmrPenalty`, the objective it was selected with; `finalScore` without MMR. */
  readonly mmrScore: number;
  /** `fused · decayFactor`, the result's score (what `minScore` applies to). */
  readonly finalScore: number;
}

export interface RankedResult {
  readonly id: string;
  /** 1-based position (selection order). */
  readonly rank: number;
  /** `fused · decayFactor` (equal to `breakdown.finalScore`). */
  readonly score: number;
  readonly breakdown: ScoreBreakdown;
}

export interface RankingOutcome {
  /** At most `topK` results in selection order (with MMR, `score` need not decrease). */
  readonly results: readonly RankedResult[];
  /** Candidates dropped because their score was below `minScore` (`SearchStats.min_score_dropped`). */
  readonly minScoreDropped: number;
  /** The options actually used. */
  readonly options: RankingOptions;
}

/**
 * Applies the defaults of `SearchOptions`: when only one weight is set the other defaults to
 * `1 − it`; `topK` 0 or unset means 10. Throws a RangeError for a value outside its documented range
 * (the request validation should have answered FIELD_INVALID before).
 */
export function resolveRankingOptions(input: RankingOptionsInput = {}): RankingOptions {
  const { vectorWeight: vw, textWeight: tw } = input;
  const vectorWeight = vw ?? (tw === undefined ? DEFAULT_VECTOR_WEIGHT : 1 - tw);
  const textWeight = tw ?? (vw === undefined ? DEFAULT_TEXT_WEIGHT : 1 - vw);
  const options: RankingOptions = {
    vectorWeight,
    textWeight,
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
  return { ...options, vectorWeight: 0, textWeight: options.vectorWeight + options.textWeight };
}

/**
 * Min–max normalization of one signal: `(raw − min) / (max − min)` over the defined values; every
 * defined value gets 1 when they are all equal (including a single one); undefined gets 0.
 * Throws a RangeError for a non-finite value.
 */
export function normalize(values: readonly (number | undefined)[]): number[] {
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    if (v === undefined) continue;
    if (!Number.isFinite(v)) throw new RangeError(`signal values must be finite, got ${v}`);
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const range = max - min;
  return values.map((v) => {
    if (v === undefined) return 0;
    if (max === min) return 1;
    // Rounding is monotone, so (v − min) ≤ range and the quotient stays in [0, 1]; the clamp only
    // guards against an overflowing range with extreme inputs.
    return Math.min(1, Math.max(0, (v - min) / range));
  });
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
}

/** Higher score first, then id ascending: the order without MMR and the MMR tie-breaker. */
function byScoreThenId(a: Selectable, b: Selectable): number {
  if (a.score !== b.score) return b.score - a.score;
  return compareIds(a.id, b.id);
}

/** Without MMR: the `topK` highest scores; penalty 0 and `mmrScore = score`. */
export function topByScore<T extends Selectable>(items: readonly T[], topK: number): Selection<T>[] {
  return [...items]
    .sort(byScoreThenId)
    .slice(0, topK)
    .map((item) => ({ item, maxSimilarity: 0, mmrPenalty: 0, mmrScore: item.score }));
}

/**
 * Greedy maximal marginal relevance: repeatedly picks the item maximizing
 * `lambda · score − (1 − lambda) · maxSim`, where `maxSim` is its largest cosine similarity to the
 * items already picked (0 for the first pick), until `topK` are picked or none is left. Ties go to
 * the higher score, then to the smaller id.
 */
export function mmr<T extends Selectable>(items: readonly T[], lambda: number, topK: number): Selection<T>[] {
  const remaining = items.map((item) => ({ item, maxSim: 0 }));
  const selected: Selection<T>[] = [];
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
    const [chosen] = remaining.splice(best, 1);
    if (chosen === undefined) break;
    const penalty = (1 - lambda) * chosen.maxSim;
    selected.push({
      item: chosen.item,
      maxSimilarity: chosen.maxSim,
      mmrPenalty: penalty,
      mmrScore: lambda * chosen.item.score - penalty,
    });
    // The similarity to the selected set is a max over a non-empty set from now on (it may be < 0).
    for (const r of remaining) {
      const sim = cosine(r.item.vector, chosen.item.vector);
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
  readonly ageDays: number;
  readonly decayFactor: number;
}

/**
 * Ranks the merged candidates of one search at the reference time `now` (epoch ms).
 * Throws a RangeError for invalid options, duplicate ids or non-finite signal values.
 */
export function rank(
  candidates: readonly RankingCandidate[],
  input: RankingOptionsInput = {},
  now: number = Date.now(),
): RankingOutcome {
  const options = resolveRankingOptions(input);
  const ids = new Set<string>();
  for (const c of candidates) {
    if (ids.has(c.id)) throw new RangeError(`duplicate candidate id ${c.id}`);
    ids.add(c.id);
  }

  const vectorNormalized = normalize(candidates.map((c) => c.dense));
  const textNormalized = normalize(candidates.map((c) => c.text));
  const scored: Scored[] = candidates.map((candidate, i) => {
    const vn = vectorNormalized[i] ?? 0;
    const tn = textNormalized[i] ?? 0;
    const fused = options.vectorWeight * vn + options.textWeight * tn;
    const age = ageDays(candidate, now);
    const decay = options.decayEnabled ? decayFactor(age, options.halfLifeDays) : 1;
    return {
      id: candidate.id,
      vector: candidate.vector,
      candidate,
      vectorNormalized: vn,
      textNormalized: tn,
      fused,
      ageDays: age,
      decayFactor: decay,
      score: fused * decay,
    };
  });

  const kept = scored.filter((s) => s.score >= options.minScore);
  const selection = options.mmrEnabled
    ? mmr(kept, options.mmrLambda, options.topK)
    : topByScore(kept, options.topK);

  return {
    results: selection.map(({ item, maxSimilarity, mmrPenalty, mmrScore }, i) => ({
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
        ageDays: item.ageDays,
        decayFactor: item.decayFactor,
        maxSimilarity,
        mmrPenalty,
        mmrScore,
        finalScore: item.score,
      },
    })),
    minScoreDropped: scored.length - kept.length,
    options,
  };
}
