import type { ServiceImpl } from '@connectrpc/connect';
import type { RetrievalService } from '@engram/contracts/retrieval';
import { tokenize } from '@engram/lexical';
import { requirePrincipal } from '@engram/runtime';
import { rank } from './domain/ranking.js';
import { searchPlan } from './search-api.js';
import { Hydrator, visibilityOf } from './search-hydration.js';
import {
  denseSignal,
  indexCandidates,
  indexFilters,
  lexicalCoverage,
  rankingCandidates,
  rerankStage,
  resultMessages,
  searchStats,
  storedVectors,
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
   */
  readonly search: Impl['search'] = async (request, context) => {
    const deps = this.#deps;
    const started = performance.now();
    const principal = requirePrincipal(context.values);
    const now = Date.now();
    const plan = searchPlan(request, principal, now);
    const index = deps.live.index;
    const limit = plan.options.topK * plan.candidateMultiple;
    const queryTerms = [...new Set(tokenize(plan.query))];

    const dense = await denseSignal(deps, plan, context.signal);
    const { options } = dense;
    const candidates = await indexCandidates(
      index,
      { text: plan.query, vector: dense.embedding?.vector },
      indexFilters(principal, plan.filter, now),
      limit,
      options,
    );
    const vectors = await storedVectors(index, candidates, plan, options);

    // Re-read every candidate from the source of truth; drifted rows are dropped and counted.
    const hydrator = new Hydrator(
      deps.store,
      principal.tenantId,
      visibilityOf(principal, plan.filter),
      plan.filter,
      now,
    );
    const input = rankingCandidates(await hydrator.hydrate([...candidates.merged.values()]), vectors);
    if (input.driftDropped > 0) {
      deps.logger.info(
        { driftDropped: input.driftDropped },
        'search dropped index points that no longer match the source of truth',
      );
    }

    const coverage = lexicalCoverage(input.byName, queryTerms);
    const rankingContext = {
      denseExhausted: candidates.dense.length < limit,
      textExhausted: candidates.lexical.length < limit,
      lexicalCoverage: coverage,
      ...(plan.window === undefined ? {} : { window: plan.window }),
      currentState: plan.currentState,
    };
    const { ranked, rerank } = await rerankStage(
      deps,
      plan,
      input,
      { options, context: rankingContext },
      context.signal,
    );
    const outcome = rank(ranked, options, plan.referenceTime, rankingContext, plan.form);
    return {
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
        started,
      }),
    };
  };
}
