import type { ServiceImpl } from '@connectrpc/connect';
import type { RetrievalService } from '@engram/contracts/retrieval';
import { requirePrincipal } from '@engram/runtime';
import { rank, type RankingContext } from './domain/ranking.js';
import { searchPlan } from './search-api.js';
import { Hydrator, visibilityOf } from './search-hydration.js';
import {
  denseSignal,
  indexCandidates,
  indexFilters,
  lexicalCoverage,
  lexicalQuery,
  needsVectors,
  rankingCandidates,
  rerankStage,
  resultMessages,
  searchStats,
  similarityByName,
  StageClock,
  storedSimilarities,
  type SearchDeps,
} from './search.js';

type Impl = ServiceImpl<typeof RetrievalService>;

/** Search: hybrid retrieval over memories, document chunks and conversation rounds. */
export class SearchHandlers implements Pick<Impl, 'search'> {
  readonly #deps: SearchDeps;

  constructor(deps: SearchDeps) {
    this.#deps = deps;
  }

  /**
   * Search: the query's dense signal, the index's candidates under the principal's visibility,
   * their rows re-read from the source of truth, an optional rerank, the ranking, and the stats.
   * Each stage is timed (`SearchStats.stages`, `engram_search_stage_seconds`).
   */
  readonly search: Impl['search'] = async (request, context) => {
    const deps = this.#deps;
    const clock = new StageClock();
    const principal = requirePrincipal(context.values);
    const now = Date.now();
    const plan = searchPlan(request, principal, now);
    const index = deps.live.index;
    const limit = plan.options.topK * plan.candidateMultiple;
    const lexical = lexicalQuery(plan.query);
    const queryTerms = lexical.terms;
    const filters = indexFilters(principal, plan.filter, now);
    clock.lap('plan');

    const dense = await denseSignal(deps, plan, context.signal);
    const { options } = dense;
    clock.lap('embed');
    const candidates = await indexCandidates(
      index,
      { sparse: lexical.sparse, vector: dense.embedding?.vector },
      filters,
      limit,
      options,
    );
    clock.lap('candidates');
    // The similarities are asked now and awaited after the hydration: the index compares the
    // candidates while the source of truth is read. A failure is kept for then (never unhandled).
    const similaritiesAsked = storedSimilarities(index, candidates, needsVectors(plan, options)).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );

    // Re-read every candidate from the source of truth; drifted rows are dropped and counted.
    const hydrator = new Hydrator(
      deps.store,
      principal.tenantId,
      visibilityOf(principal, plan.filter),
      plan.filter,
      now,
    );
    const input = rankingCandidates(await hydrator.hydrate([...candidates.merged.values()]));
    if (input.driftDropped > 0) {
      deps.logger.info(
        { driftDropped: input.driftDropped },
        'search dropped index points that no longer match the source of truth',
      );
    }

    const coverage = lexicalCoverage(input.byName, queryTerms);
    clock.lap('hydration');
    const asked = await similaritiesAsked;
    if ('error' in asked) throw asked.error;
    clock.lap('vectors');
    const rankingContext: RankingContext = {
      denseExhausted: candidates.dense.length < limit,
      textExhausted: candidates.lexical.length < limit,
      lexicalCoverage: coverage,
      ...(plan.window === undefined ? {} : { window: plan.window }),
      currentState: plan.currentState,
      similarity: similarityByName(input.byName, asked.value),
    };
    const { ranked, rerank } = await rerankStage(
      deps,
      plan,
      input,
      { options, context: rankingContext },
      context.signal,
    );
    clock.lap('rerank');
    const outcome = rank(ranked, options, plan.referenceTime, rankingContext, plan.form);
    clock.lap('ranking');
    const response = {
      results: resultMessages(outcome, input.byName, plan, queryTerms),
      stats: searchStats({
        plan,
        index,
        dense,
        candidates,
        driftDropped: input.driftDropped,
        outcome,
        queryTerms,
        lexicalCoverage: coverage,
        rerankAvailable: deps.reranker !== undefined,
        rerank,
        clock,
      }),
    };
    clock.record(deps.stageMetrics);
    return response;
  };
}
