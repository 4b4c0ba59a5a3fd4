import type { Embedder } from '@engram/embeddings';
import { OutboxRepository, countSearchable, type Store } from '@engram/store';
import type { ItemKind, VectorIndex } from '@engram/vector-index';

/** Lag above which the index is reported unhealthy. */
export const DEFAULT_LAG_THRESHOLD_MS = 5 * 60_000;

export interface KindStatus {
  readonly kind: ItemKind;
  readonly sourceRows: number;
  /** Undefined when the index could not be reached. */
  readonly indexedPoints?: number;
  readonly drift?: number;
  /** Of the points, those still waiting for their dense vector (lexical-first, decision 0032). */
  readonly densePendingPoints?: number;
}

/** The index as one tenant sees it (GetIndexStatus). */
export interface IndexStatusReport {
  readonly backend: 'EMBEDDED' | 'QDRANT';
  readonly collection: string;
  readonly embeddingModel: string;
  readonly embeddingDimensions: number;
  readonly indexReachable: boolean;
  readonly embeddingAvailable: boolean;
  readonly kinds: readonly KindStatus[];
  readonly outboxPending: number;
  readonly outboxRetrying: number;
  readonly oldestPendingAgeMs?: number;
  readonly lastIndexedAt?: number;
  readonly healthy: boolean;
  readonly problems: readonly string[];
  readonly computedAt: number;
}

function duration(ms: number): string {
  const s = Math.floor(ms / 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(Math.floor(s / 3600))}:${pad(Math.floor((s % 3600) / 60))}:${pad(s % 60)}`;
}

/**
 * Source rows vs points per kind (drift), outbox lag and parked rows, and a health verdict for
 * `tenantId`. Answers even when the index is unreachable (counts unset, unhealthy); only an
 * unreachable source of truth makes it fail.
 */
export async function indexStatus(
  deps: { store: Store; index: VectorIndex; collection: string; embedder: Embedder; stale: boolean },
  tenantId: string,
  options: { now?: number; lagThresholdMs?: number } = {},
): Promise<IndexStatusReport> {
  const now = options.now ?? Date.now();
  const threshold = options.lagThresholdMs ?? DEFAULT_LAG_THRESHOLD_MS;
  const source = await countSearchable(deps.store, tenantId, now);
  const backlog = await new OutboxRepository(deps.store).backlog(now, tenantId);
  const problems: string[] = [];

  const rows: Record<ItemKind, number> = {
    MEMORY: source.memories,
    CHUNK: source.chunks,
    ROUND: source.rounds,
  };
  let reachable = true;
  const kinds: KindStatus[] = [];
  for (const kind of ['MEMORY', 'CHUNK', 'ROUND'] as const) {
    let points: number | undefined;
    let densePending: number | undefined;
    if (reachable) {
      try {
        [points, densePending] = await Promise.all([
          deps.index.count({
            tenantId,
            kinds: [kind],
            ...(kind === 'MEMORY' ? { notExpiredAt: now } : {}),
          }),
          deps.index.countPendingDense({ tenantId, kinds: [kind] }),
        ]);
      } catch {
        reachable = false;
        points = undefined;
        densePending = undefined;
        problems.push('index unreachable');
      }
    }
    kinds.push({
      kind,
      sourceRows: rows[kind],
      ...(points === undefined
        ? {}
        : { indexedPoints: points, drift: points - rows[kind], densePendingPoints: densePending ?? 0 }),
    });
  }
  if (deps.stale) problems.push('the live collection was built with another embedding model: run Reindex');
  if (backlog.pending > 0 && backlog.oldestAgeMs > threshold) {
    problems.push(`outbox lag ${duration(backlog.oldestAgeMs)} exceeds ${duration(threshold)}`);
  }
  if (backlog.parked > 0) problems.push(`${backlog.parked} outbox rows parked after repeated failures`);
  return {
    backend: deps.index.backend,
    collection: deps.collection,
    embeddingModel: deps.embedder.model,
    embeddingDimensions: deps.embedder.dimensions,
    indexReachable: reachable,
    embeddingAvailable: !deps.stale,
    kinds,
    outboxPending: backlog.pending,
    outboxRetrying: backlog.retrying,
    ...(backlog.pending > 0 ? { oldestPendingAgeMs: backlog.oldestAgeMs } : {}),
    ...(backlog.lastProcessedAt === undefined ? {} : { lastIndexedAt: backlog.lastProcessedAt }),
    healthy: problems.length === 0,
    problems: problems.slice(0, 10),
    computedAt: now,
  };
}
