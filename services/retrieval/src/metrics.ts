import { searchStageMetrics, type SearchStageMetrics, type ServiceMetrics } from '@engram/runtime';
import { OutboxRepository, type Store } from '@engram/store';
import type { VectorIndex } from '@engram/vector-index';

/**
 * Retrieval's gauges, read from the outbox at each scrape (all tenants):
 * `engram_outbox_depth{state}` (pending = never failed, retrying, parked; they add up to the rows
 * not indexed), `engram_outbox_oldest_age_seconds` (the oldest change not yet searchable) and
 * `engram_index_lag_seconds` (how long the indexer has made no progress while changes wait: the
 * time since it last completed a row, at most the oldest row's age; 0 when the outbox is drained).
 * From the live index (lexical-first, decision 0032): `engram_index_dense_pending` (points still
 * without their dense vector) and `engram_index_dense_oldest_age_seconds` (how long the oldest has
 * waited).
 */
export function registerRetrievalMetrics(
  metrics: ServiceMetrics,
  store: Store,
  live: () => VectorIndex,
): void {
  const outbox = new OutboxRepository(store);
  // One query per scrape, shared by the three gauges.
  let cached: { at: number; backlog: Promise<Awaited<ReturnType<OutboxRepository['backlog']>>> } | undefined;
  const backlog = () => {
    const now = Date.now();
    if (cached === undefined || now - cached.at > 1_000) cached = { at: now, backlog: outbox.backlog(now) };
    return cached.backlog;
  };
  metrics.gauge({
    name: 'engram_outbox_depth',
    help: 'Outbox rows not yet indexed, by state (pending, retrying after a failure, parked).',
    labelNames: ['state'],
    sample: async () => {
      const b = await backlog();
      return [
        { labels: { state: 'pending' }, value: b.pending - b.retrying },
        { labels: { state: 'retrying' }, value: b.retrying },
        { labels: { state: 'parked' }, value: b.parked },
      ];
    },
  });
  metrics.gauge({
    name: 'engram_outbox_oldest_age_seconds',
    help: 'Age of the oldest outbox row not yet indexed (parked rows excluded); 0 when drained.',
    sample: async () => [{ value: (await backlog()).oldestAgeMs / 1000 }],
  });
  metrics.gauge({
    name: 'engram_index_lag_seconds',
    help: 'How long the indexer has made no progress while outbox rows wait; 0 when drained.',
    sample: async () => {
      const now = Date.now();
      const b = await backlog();
      if (b.pending === 0) return [{ value: 0 }];
      const sinceProgress = b.lastProcessedAt === undefined ? Infinity : now - b.lastProcessedAt;
      return [{ value: Math.max(0, Math.min(b.oldestAgeMs, sinceProgress)) / 1000 }];
    },
  });
  metrics.gauge({
    name: 'engram_index_dense_pending',
    help: 'Points of the live index still waiting for their dense vector (lexical-first indexing).',
    sample: async () => [{ value: await live().countPendingDense() }],
  });
  metrics.gauge({
    name: 'engram_index_dense_oldest_age_seconds',
    help: 'How long the oldest point without its dense vector has waited; 0 when none waits.',
    sample: async () => {
      const [oldest] = await live().pendingDense(1);
      const since = oldest?.payload.densePendingSince;
      return [{ value: since === undefined ? 0 : Math.max(0, Date.now() - since) / 1000 }];
    },
  });
}

/**
 * Search's `engram_search_stage_seconds{stage}` histogram on the process's registry: the time of
 * each stage of one search (the stages of search.proto `SearchStageTiming`).
 */
export function registerSearchMetrics(metrics: ServiceMetrics): SearchStageMetrics {
  return searchStageMetrics(metrics.registry);
}
