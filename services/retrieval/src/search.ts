/**
 * The stages of `RetrievalService.Search`: hybrid dense + BM25 retrieval under a server-side
 * visibility filter (candidates), re-read from the source of truth (hydration,
 * `search-hydration.ts`), ranked by `rank` (domain/ranking.ts) after an optional rerank, and
 * explained. The formula and every rule are on `SearchOptions` in proto/engram/retrieval/v1/search.proto;
 * `SearchHandlers` (search-handlers.ts) runs the stages in order.
 */
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { DurationSchema, durationFromMs, timestampFromMs, type Duration } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import {
  DegradedReason,
  IndexBackend,
  QueryForm,
  type SearchResultSchema,
  type SearchStatsSchema,
} from '@engram/contracts/retrieval';
import type { Embedder, Reranker } from '@engram/embeddings';
import { encodeQueryTerms, tokenize } from '@engram/lexical';
import { errors, isEngramError, type Logger, type Principal, type SearchStageMetrics } from '@engram/runtime';
import type { Store } from '@engram/store';
import {
  NO_SIMILARITIES,
  type IndexFilter,
  type ItemKind,
  type QueryFilter,
  type ScoredPoint,
  type SearchQuery,
  type Similarities,
  type SparseVector,
  type VectorIndex,
} from '@engram/vector-index';
import {
  degradedOptions,
  rank,
  type RankingCandidate,
  type RankingContext,
  type RankingOptions,
  type RankingOutcome,
} from './domain/ranking.js';
import type { LiveIndex } from './indexer/collections.js';
import {
  KIND_ENUMS,
  appliedOptions,
  breakdownMessage,
  type SearchFilterPlan,
  type SearchPlan,
} from './search-api.js';
import { visibilityOf, type Hydrated, type Hydration, type Merged } from './search-hydration.js';

/** What Search runs on. */
export interface SearchDeps {
  readonly logger: Logger;
  readonly store: Store;
  readonly embedder: Embedder;
  readonly live: LiveIndex;
  /** The rerank stage, when one is configured (`ENGRAM_RERANKER`). */
  readonly reranker?: Reranker | undefined;
  /** `engram_search_stage_seconds{stage}`, when the process has metrics. */
  readonly stageMetrics?: SearchStageMetrics | undefined;
}

/** The stages of one search, in the order they run (search.proto `SearchStageTiming.stage`). */
export type SearchStage =
  'plan' | 'embed' | 'candidates' | 'vectors' | 'hydration' | 'rerank' | 'ranking' | 'response';

/** One stage's time. */
export interface StageTiming {
  readonly stage: SearchStage;
  readonly ms: number;
}

/**
 * Times the stages of one search: `lap(stage)` closes the stage that ran since the previous lap
 * (or since the search started), so the stages add up to the handler's time.
 */
export class StageClock {
  readonly started: number;
  readonly #laps: StageTiming[] = [];
  #last: number;

  constructor(started: number = performance.now()) {
    this.started = started;
    this.#last = started;
  }

  lap(stage: SearchStage): void {
    const now = performance.now();
    this.#laps.push({ stage, ms: now - this.#last });
    this.#last = now;
  }

  get laps(): readonly StageTiming[] {
    return this.#laps;
  }

  /** Observes every lap in `engram_search_stage_seconds{stage}`. */
  record(metrics: SearchStageMetrics | undefined): void {
    if (metrics === undefined) return;
    for (const { stage, ms } of this.#laps) metrics.duration.observe({ stage }, ms / 1000);
  }
}

/** A measured time as a `Duration` at microsecond resolution. */
export function preciseDuration(ms: number): Duration {
  const micros = Math.max(0, Math.round(ms * 1000));
  const seconds = Math.floor(micros / 1_000_000);
  return create(DurationSchema, { seconds: BigInt(seconds), nanos: (micros - seconds * 1_000_000) * 1000 });
}

/** The query's lexical analysis, done once: its distinct tokens and their BM25 query vector. */
export interface LexicalQuery {
  /** Distinct tokens in query order (matched terms, lexical coverage, `query_terms`). */
  readonly terms: readonly string[];
  readonly sparse: SparseVector;
}

/** Tokenizes the query once for every use of its terms. */
export function lexicalQuery(query: string): LexicalQuery {
  const distinct = new Set(tokenize(query));
  return { terms: [...distinct], sparse: encodeQueryTerms(distinct) };
}

/** Maximum number of matched terms in a breakdown (search.proto). */
const MAX_MATCHED_TERMS = 50;

/**
 * The index filters of one search: one per kind, since kind-specific filters (memory types,
 * namespaces, sessions, documents) must leave the other kinds untouched. A kind whose filters
 * cannot match anything gets no query.
 */
export function indexFilters(
  principal: Principal,
  filter: SearchFilterPlan,
  now: number,
): { kind: ItemKind; filter: IndexFilter }[] {
  const base: IndexFilter = {
    tenantId: principal.tenantId,
    visibleTo: visibilityOf(principal, filter),
    statuses: ['ACTIVE'],
    ...(filter.scopes.length > 0 ? { scopes: filter.scopes } : {}),
  };
  const out: { kind: ItemKind; filter: IndexFilter }[] = [];
  for (const kind of filter.kinds) {
    switch (kind) {
      case 'MEMORY': {
        let types: readonly string[] = filter.memoryTypes;
        if (filter.namespaces.length > 0) {
          // Only FACT memories have a namespace.
          if (types.length > 0 && !types.includes('FACT')) continue;
          types = ['FACT'];
        }
        out.push({
          kind,
          filter: {
            ...base,
            kinds: ['MEMORY'],
            evergreen: false,
            notExpiredAt: now,
            ...(types.length > 0 ? { memoryTypes: types } : {}),
            ...(filter.namespaces.length > 0 ? { namespaces: filter.namespaces } : {}),
          },
        });
        break;
      }
      case 'CHUNK':
        out.push({
          kind,
          filter: {
            ...base,
            kinds: ['CHUNK'],
            ...(filter.documentIds.length > 0 ? { documentIds: filter.documentIds } : {}),
            // A chunk has no occur time: its effective time is its creation.
            ...(filter.occurTime === undefined ? {} : { createdAt: filter.occurTime }),
          },
        });
        break;
      case 'ROUND':
        out.push({
          kind,
          filter: {
            ...base,
            kinds: ['ROUND'],
            ...(filter.sessionIds.length > 0 ? { sessionIds: filter.sessionIds } : {}),
            // A round always has an occur time.
            ...(filter.occurTime === undefined ? {} : { occurredAt: filter.occurTime }),
          },
        });
        break;
    }
  }
  return out;
}

/** The best `limit` points of an answer (or of several: the same as one query with their union). */
function bestOf(lists: readonly ScoredPoint[][], limit: number): ScoredPoint[] {
  return lists
    .flat()
    .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, limit);
}

/** Wraps an index failure as UNAVAILABLE `DEPENDENCY_UNAVAILABLE`, dependency `qdrant`. */
function indexUnavailable(error: unknown, index: VectorIndex): Error {
  if (isEngramError(error) && error.code !== Code.Unavailable) return error;
  const dependency = index.backend === 'QDRANT' ? 'qdrant' : 'vector-index';
  return errors.unavailable(dependency, 'the vector index is unreachable', { cause: error });
}

/** The query's distinct tokens found in `text`, in query order, at most 50. */
function matchedTerms(terms: readonly string[], text: string): string[] {
  const present = new Set(tokenize(text));
  return terms.filter((t) => present.has(t)).slice(0, MAX_MATCHED_TERMS);
}

/** A duration as the API's `Duration`, from a measured (fractional, never negative) number of ms. */
function elapsedDuration(ms: number) {
  return durationFromMs(Math.max(0, Math.round(ms)));
}

/** Why a search answers from the lexical signal alone. */
export interface Degradation {
  readonly reason: DegradedReason;
  readonly message: string;
}

/** The embedded query. */
export interface QueryEmbedding {
  readonly vector: Float32Array;
  readonly truncated: boolean;
  readonly model: string;
  readonly dimensions: number;
}

/** The dense signal of a search: the query's vector, or why there is none. */
export interface DenseSignal {
  /** The ranking options, degraded to lexical-only when the dense signal is missing. */
  readonly options: RankingOptions;
  readonly embedding?: QueryEmbedding;
  readonly degraded?: Degradation;
}

/**
 * The dense signal: the query embedded, unless the vector weight is 0. When the live index is
 * stale or the model fails, the search is degraded to lexical-only if the request allows it,
 * and UNAVAILABLE (naming the index or the model) otherwise.
 */
export async function denseSignal(
  deps: SearchDeps,
  plan: SearchPlan,
  signal: AbortSignal,
): Promise<DenseSignal> {
  if (plan.options.vectorWeight <= 0) return { options: plan.options };
  if (deps.live.stale) {
    // The live collection holds another model's vectors (a rebuild is due or under way): the
    // query's vector cannot be compared with them; its BM25 vectors can.
    const message = 'the live index was built with another embedding model; a rebuild is due';
    if (!plan.allowDegraded) throw errors.unavailable('vector-index', message);
    return {
      options: degradedOptions(plan.options),
      degraded: { reason: DegradedReason.INDEX_STALE, message },
    };
  }
  try {
    const result = await deps.embedder.embed([plan.query], 'query', { signal });
    const vector = result.vectors[0];
    if (vector === undefined) throw new Error('the embedder returned no vector');
    return {
      options: plan.options,
      embedding: {
        vector,
        truncated: result.truncated[0] ?? false,
        model: result.model,
        dimensions: result.dimensions,
      },
    };
  } catch (error) {
    if (signal.aborted) throw error;
    const message = error instanceof Error ? error.message : String(error);
    if (!plan.allowDegraded) {
      throw errors.unavailable('model', `the query could not be embedded: ${message}`, { cause: error });
    }
    deps.logger.warn({ err: error }, 'search degraded to lexical-only: the query could not be embedded');
    return {
      options: degradedOptions(plan.options),
      degraded: { reason: DegradedReason.EMBEDDING_UNAVAILABLE, message },
    };
  }
}

/** The index's answer to one search. */
export interface Candidates {
  readonly dense: readonly ScoredPoint[];
  readonly lexical: readonly ScoredPoint[];
  /** Dense and lexical points by point id, each with its scores and ranks in both lists. */
  readonly merged: ReadonlyMap<string, Merged>;
  /** Merged candidates whose point has no dense vector yet (lexical-first indexing). */
  readonly densePending: number;
}

/** What the index is asked for one search. */
export interface CandidateQuery {
  /** The query's BM25 vector (the lexical signal is skipped when it is empty or weighted 0). */
  readonly sparse: SparseVector;
  /** The query's embedding; undefined without a dense signal. */
  readonly vector: Float32Array | undefined;
}

/** Whether the ranking needs stored vectors: MMR, or newer-first on a current-state question that names no time. */
export function needsVectors(plan: SearchPlan, options: RankingOptions): boolean {
  return options.mmrEnabled || (options.newerFirst && plan.currentState && plan.window === undefined);
}

/**
 * The index queries of one search, for one `searchBatch` round trip: one dense and one sparse
 * query, each over the union of the kinds' filters (`anyOf`), so the index plans and answers each
 * signal once and returns its best `limit` across the kinds (decision 0044). None asks for
 * vectors: {@link storedSimilarities} asks for the kept candidates' similarities afterwards.
 */
export function candidateQueries(
  query: CandidateQuery,
  filters: readonly { filter: IndexFilter }[],
  limit: number,
  options: RankingOptions,
): { queries: SearchQuery[]; dense: number } {
  const { vector, sparse } = query;
  const [first] = filters;
  if (first === undefined) return { queries: [], dense: 0 };
  const filter: QueryFilter = filters.length === 1 ? first.filter : { anyOf: filters.map((f) => f.filter) };
  const dense: SearchQuery[] = vector === undefined ? [] : [{ dense: vector, filter, limit }];
  const lexical: SearchQuery[] =
    options.textWeight > 0 && sparse.indices.length > 0 ? [{ sparse, filter, limit }] : [];
  return { queries: [...dense, ...lexical], dense: dense.length };
}

/**
 * The candidates: the best `limit` dense and lexical points under the server-side filters,
 * merged, from one index round trip. A point still without its dense vector (lexical-first
 * indexing) is found by the sparse queries only; it is merged like any other and counted.
 */
export async function indexCandidates(
  index: VectorIndex,
  query: CandidateQuery,
  filters: readonly { filter: IndexFilter }[],
  limit: number,
  options: RankingOptions,
): Promise<Candidates> {
  const { queries, dense: denseQueries } = candidateQueries(query, filters, limit, options);
  const answers =
    queries.length === 0
      ? []
      : await index.searchBatch(queries).catch((error: unknown) => {
          throw indexUnavailable(error, index);
        });
  const dense = bestOf(answers.slice(0, denseQueries), limit);
  const lexical = bestOf(answers.slice(denseQueries), limit);
  const merged = new Map<string, Merged>();
  dense.forEach((p, i) => {
    merged.set(p.id, { pointId: p.id, payload: p.payload, dense: p.score, denseRank: i + 1 });
  });
  lexical.forEach((p, i) => {
    const existing = merged.get(p.id);
    if (existing === undefined) {
      merged.set(p.id, { pointId: p.id, payload: p.payload, text: p.score, lexicalRank: i + 1 });
    } else {
      existing.text = p.score;
      existing.lexicalRank = i + 1;
    }
  });
  let densePending = 0;
  for (const m of merged.values()) if (m.payload.densePendingSince !== undefined) densePending += 1;
  return { dense, lexical, merged, densePending };
}

/**
 * The similarities of the candidates' stored dense vectors, for MMR and newer-first (which applies
 * only to current-state questions that name no time); none when neither is on. One `similarities`
 * call for the merged candidates that have a vector (not lexical-first points still waiting for
 * one): Qdrant answers their pairwise scores, not the vectors (decision 0044).
 */
export async function storedSimilarities(
  index: VectorIndex,
  candidates: Candidates,
  needed: boolean,
): Promise<Similarities> {
  if (!needed) return NO_SIMILARITIES;
  const ids: string[] = [];
  for (const m of candidates.merged.values()) {
    if (m.payload.densePendingSince === undefined) ids.push(m.pointId);
  }
  if (ids.length < 2) return NO_SIMILARITIES;
  try {
    return await index.similarities(ids);
  } catch (error) {
    throw indexUnavailable(error, index);
  }
}

/** {@link RankingContext.similarity} over resource names, from the index's similarities by point id. */
export function similarityByName(
  byName: ReadonlyMap<string, Hydrated>,
  similarities: Similarities,
): (a: string, b: string) => number | undefined {
  return (a, b) => {
    const pa = byName.get(a)?.merged.pointId;
    const pb = byName.get(b)?.merged.pointId;
    return pa === undefined || pb === undefined ? undefined : similarities.of(pa, pb);
  };
}

/** The hydrated candidates as the ranking's input, by resource name (the first of duplicates). */
export interface RankingInput {
  readonly byName: ReadonlyMap<string, Hydrated>;
  readonly candidates: RankingCandidate[];
  /** Index points dropped because they no longer match the source of truth. */
  readonly driftDropped: number;
}

/** The ranking's input from the hydration: drifted and filtered candidates dropped, drift counted. */
export function rankingCandidates(hydrated: readonly Hydration[]): RankingInput {
  let driftDropped = 0;
  const byName = new Map<string, Hydrated>();
  const candidates: RankingCandidate[] = [];
  for (const h of hydrated) {
    if (h === 'drift') driftDropped += 1;
    if (typeof h === 'string' || byName.has(h.name)) continue;
    byName.set(h.name, h);
    candidates.push({
      id: h.name,
      dense: h.merged.dense,
      text: h.merged.text,
      occurredAt: h.occurredAt,
      createdAt: h.createdAt,
      denseRank: h.merged.denseRank,
      lexicalRank: h.merged.lexicalRank,
    });
  }
  return { byName, candidates, driftDropped };
}

/** The lexical signal's confidence: how much of the query its best candidate holds. */
export function lexicalCoverage(
  byName: ReadonlyMap<string, Hydrated>,
  queryTerms: readonly string[],
): number | undefined {
  let bestLexical: Hydrated | undefined;
  for (const h of byName.values()) {
    const r = h.merged.lexicalRank;
    if (r === undefined) continue;
    const incumbent = bestLexical?.merged.lexicalRank;
    if (incumbent === undefined || r < incumbent) bestLexical = h;
  }
  return bestLexical === undefined || queryTerms.length === 0
    ? undefined
    : matchedTerms(queryTerms, bestLexical.text).length / queryTerms.length;
}

/** What the rerank stage did. */
export interface RerankReport {
  readonly model: string;
  readonly scored: number;
  readonly ms: number;
}

/**
 * The rerank stage: the best candidates by relevance (a first ranking without MMR, newer-first,
 * decay or minimum score), scored by the cross-encoder; the candidates come back with their
 * rerank scores. Nothing is done without a reranker, when the request turns it off, or with no
 * candidate. A reranker failure is UNAVAILABLE `DEPENDENCY_UNAVAILABLE` (dependency `reranker`).
 */
export async function rerankStage(
  deps: SearchDeps,
  plan: SearchPlan,
  input: { readonly candidates: RankingCandidate[]; readonly byName: ReadonlyMap<string, Hydrated> },
  ranking: { readonly options: RankingOptions; readonly context: RankingContext },
  signal: AbortSignal,
): Promise<{ ranked: RankingCandidate[]; rerank?: RerankReport }> {
  const { candidates, byName } = input;
  const { reranker } = deps;
  if (reranker === undefined || !plan.rerank.enabled || candidates.length === 0)
    return { ranked: candidates };
  const started = performance.now();
  const first = rank(
    candidates,
    {
      ...ranking.options,
      topK: Math.min(plan.rerank.candidates, candidates.length),
      mmrEnabled: false,
      newerFirst: false,
      decayEnabled: false,
      minScore: 0,
    },
    plan.referenceTime,
    ranking.context,
    plan.form,
  );
  const texts = first.results.map((r) => byName.get(r.id)?.text ?? '');
  let scores: number[];
  try {
    scores = await reranker.rerank(plan.query, texts, { signal });
  } catch (error) {
    if (signal.aborted) throw error;
    throw isEngramError(error) ? error : errors.unavailable('reranker', String(error), { cause: error });
  }
  const scoreOf = new Map(first.results.map((r, i) => [r.id, scores[i]]));
  const ranked = candidates.map((c) => {
    const score = scoreOf.get(c.id);
    return score === undefined ? c : { ...c, rerank: score };
  });
  return { ranked, rerank: { model: reranker.model, scored: texts.length, ms: performance.now() - started } };
}

/** The ranked results as the API's, with their breakdowns (and matched terms) when asked to explain. */
export function resultMessages(
  outcome: RankingOutcome,
  byName: ReadonlyMap<string, Hydrated>,
  plan: SearchPlan,
  queryTerms: readonly string[],
): MessageInitShape<typeof SearchResultSchema>[] {
  return outcome.results.flatMap((r) => {
    const h = byName.get(r.id);
    if (h === undefined) return [];
    return [
      {
        kind: KIND_ENUMS[h.kind],
        name: h.name,
        ...h.result,
        score: r.score,
        rank: r.rank,
        ...(plan.explain
          ? { breakdown: breakdownMessage(r.breakdown, matchedTerms(queryTerms, h.text)) }
          : {}),
      },
    ];
  });
}

/** Everything a search's statistics are made of. */
export interface SearchFacts {
  readonly plan: SearchPlan;
  readonly index: VectorIndex;
  readonly dense: DenseSignal;
  readonly candidates: Candidates;
  readonly driftDropped: number;
  readonly outcome: RankingOutcome;
  readonly queryTerms: readonly string[];
  readonly lexicalCoverage: number | undefined;
  /** Whether a reranker is configured. */
  readonly rerankAvailable: boolean;
  readonly rerank: RerankReport | undefined;
  /** The search's stages so far (the `response` stage is closed here). */
  readonly clock: StageClock;
}

/**
 * The search's `SearchStats`: counts, degradation, the query's analysis, the options applied,
 * timings. Building them ends the `response` stage.
 */
export function searchStats(facts: SearchFacts): MessageInitShape<typeof SearchStatsSchema> {
  const { plan, dense, candidates, outcome, rerank, lexicalCoverage, clock } = facts;
  const { degraded, embedding } = dense;
  const stats: MessageInitShape<typeof SearchStatsSchema> = {
    denseCandidates: candidates.dense.length,
    lexicalCandidates: candidates.lexical.length,
    mergedCandidates: candidates.merged.size,
    driftDropped: facts.driftDropped,
    minScoreDropped: outcome.minScoreDropped,
    densePendingCandidates: candidates.densePending,
    degraded: degraded !== undefined,
    ...(degraded === undefined ? {} : { degradedReason: degraded.reason, degradedMessage: degraded.message }),
    embeddingModel: embedding?.model ?? '',
    embeddingDimensions: embedding?.dimensions ?? 0,
    queryTruncated: embedding?.truncated ?? false,
    queryTerms: facts.queryTerms.length,
    indexBackend: facts.index.backend === 'QDRANT' ? IndexBackend.QDRANT : IndexBackend.EMBEDDED,
    appliedOptions: appliedOptions(outcome.options, plan.candidateMultiple, plan.referenceTime, {
      enabled: plan.rerank.enabled && facts.rerankAvailable,
      candidates: plan.rerank.candidates,
    }),
    queryLanguage: plan.language,
    queryAsksCurrentState: plan.currentState,
    queryForm: QueryForm[plan.form],
    ...(lexicalCoverage === undefined ? {} : { lexicalCoverage }),
    ...(plan.window === undefined
      ? {}
      : {
          queryTimeWindow: {
            startTime: timestampFromMs(plan.window.gte),
            endTime: timestampFromMs(plan.window.lt),
          },
          queryTimeExpressions: [...plan.window.expressions],
        }),
    ...(rerank === undefined
      ? {}
      : {
          rerankModel: rerank.model,
          rerankedCandidates: rerank.scored,
          rerankElapsed: elapsedDuration(rerank.ms),
        }),
  };
  clock.lap('response');
  return {
    ...stats,
    stages: clock.laps.map(({ stage, ms }) => ({ stage, elapsed: preciseDuration(ms) })),
    elapsed: elapsedDuration(performance.now() - clock.started),
  };
}
