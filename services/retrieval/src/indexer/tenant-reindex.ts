import { Code } from '@connectrpc/connect';
import { EngramError, describeError, isEngramError, type Logger } from '@engram/runtime';
import {
  DocumentRepository,
  type ReindexJobRepository,
  countSearchable,
  scanSearchable,
  searchableIds,
  type ReindexErrorSample,
  type ReindexJobRecord,
  type ReindexKind,
  type Store,
} from '@engram/store';
import { pointId, type VectorIndex } from '@engram/vector-index';
import { replayChange, type Change, type Indexer } from './indexer.js';

/** What a reindex job runs on. */
export interface ReindexJobDeps {
  readonly store: Store;
  /** The live collection (alias). */
  readonly index: VectorIndex;
  /** Turns changes into points (the indexer's own `apply`). */
  readonly writer: Indexer;
  readonly jobs: ReindexJobRepository;
  readonly logger: Logger;
  /** Rows per batch. Default 64. */
  readonly batchSize?: number;
  /** Aborted when the process shuts down: the job stops at its next batch and FAILS. */
  readonly signal?: AbortSignal;
}

/** The source rows that feed a kind's points. */
const SOURCE = { MEMORY: 'MEMORY', CHUNK: 'DOCUMENT', ROUND: 'ROUND' } as const;

class Cancelled extends Error {}

/**
 * Runs one tenant-scoped job to a terminal state.
 * - FULL: every searchable row of the kinds is re-read, re-embedded and upserted.
 * - MISSING_ONLY: only rows without a point, or whose memory changed after its point was
 *   written (`sourceUpdatedAt`), are (re)indexed; the rest count as unchanged (no embedding cost).
 * In both modes, points of the kinds whose row is gone, not searchable or expired are deleted
 * (found by scrolling the tenant's points). Progress is persisted after every batch; a CANCELLED
 * job stops at the next batch. Items that fail are counted and sampled; the job still SUCCEEDS
 * (run MISSING_ONLY to retry them). A failure of the index or database itself FAILS the job.
 */
export async function runReindexJob(job: ReindexJobRecord, deps: ReindexJobDeps): Promise<ReindexJobRecord> {
  const { store, index, writer, jobs, logger } = deps;
  const batchSize = deps.batchSize ?? 64;
  const tenantId = job.tenantId;
  const documents = new DocumentRepository(store);
  const counts = await countSearchable(store, tenantId);
  const totals: Record<ReindexKind, number> = {
    MEMORY: counts.memories,
    CHUNK: counts.chunks,
    ROUND: counts.rounds,
  };
  const progress = {
    rowsTotal: job.kinds.reduce((sum, kind) => sum + totals[kind], 0),
    rowsScanned: 0,
    pointsUpserted: 0,
    pointsDeleted: 0,
    rowsUnchanged: 0,
    errorCount: 0,
    errorSamples: [] as ReindexErrorSample[],
  };
  let current = await jobs.update(tenantId, job.id, {
    state: 'RUNNING',
    startedAt: Date.now(),
    rowsTotal: progress.rowsTotal,
  });
  const checkpoint = async () => {
    current = await jobs.update(tenantId, job.id, { ...progress, errorSamples: [...progress.errorSamples] });
    if (current.state === 'CANCELLED') throw new Cancelled();
    if (deps.signal?.aborted === true) {
      throw new EngramError(
        Code.Unavailable,
        'SHUTTING_DOWN',
        'the server shut down while the job was running',
      );
    }
  };
  const sample = (kind: ReindexKind, item: string, error: unknown) => {
    progress.errorCount += 1;
    if (progress.errorSamples.length < 20) {
      progress.errorSamples.push({
        kind,
        item,
        message: error instanceof Error ? error.message : String(error),
        time: Date.now(),
      });
    }
  };

  let synthetic = 0;
  try {
    for (const kind of job.kinds) {
      // 1. Source rows → points.
      let after = '';
      for (;;) {
        const rows = await scanSearchable(store, SOURCE[kind], after, batchSize, tenantId);
        if (rows.length === 0) break;
        after = rows[rows.length - 1]?.id ?? after;
        let todo = rows;
        let scanned = rows.length;
        if (kind === 'CHUNK') {
          scanned = 0;
          for (const row of rows) scanned += (await documents.get(tenantId, row.id))?.chunkCount ?? 0;
        }
        if (job.mode === 'MISSING_ONLY' && kind !== 'CHUNK') {
          const existing = new Map(
            (await index.fetch(rows.map((r) => pointId(kind, r.id)))).map((p) => [
              p.payload.sourceId,
              p.payload,
            ]),
          );
          todo = rows.filter((r) => {
            const point = existing.get(r.id);
            return point === undefined || (kind === 'MEMORY' && (point.sourceUpdatedAt ?? 0) < r.updatedAt);
          });
          progress.rowsUnchanged += rows.length - todo.length;
        }
        const changes: Change[] = todo.map((row) => replayChange((synthetic += 1), SOURCE[kind], row));
        if (kind === 'CHUNK' && job.mode === 'MISSING_ONLY') {
          // Chunks never change: only documents with a missing chunk point are re-indexed.
          const missing: Change[] = [];
          for (const change of changes) {
            const page = await documents.listChunks(tenantId, change.aggregateId, { pageSize: 1000 });
            const ids = page.items.map((c) => pointId('CHUNK', c.id));
            const present = await index.fetch(ids);
            if (present.length < ids.length) missing.push(change);
            else progress.rowsUnchanged += ids.length;
          }
          changes.splice(0, changes.length, ...missing);
        }
        const { done, failed } = await writer.apply(changes, index);
        for (const { change, error } of failed) sample(kind, itemName(change), error);
        progress.pointsUpserted += done.length;
        progress.rowsScanned += scanned;
        await checkpoint();
      }

      // 2. Points whose row is gone → deleted.
      let cursor: string | undefined;
      do {
        const page = await index.scroll(
          { tenantId, kinds: [kind] },
          { limit: 500, ...(cursor === undefined ? {} : { after: cursor }) },
        );
        const alive = await searchableIds(
          store,
          tenantId,
          kind,
          page.points.map((p) => p.payload.sourceId),
        );
        const orphans = page.points.filter((p) => !alive.has(p.payload.sourceId)).map((p) => p.id);
        if (orphans.length > 0) {
          await index.delete(orphans, { wait: true });
          progress.pointsDeleted += orphans.length;
        }
        cursor = page.next;
        await checkpoint();
      } while (cursor !== undefined);
    }
    return await jobs.update(tenantId, job.id, { ...progress, state: 'SUCCEEDED', completedAt: Date.now() });
  } catch (error) {
    if (error instanceof Cancelled) {
      logger.info({ job: job.id }, 'reindex job cancelled');
      return current;
    }
    logger.warn({ job: job.id, err: describeError(error) }, 'reindex job failed');
    return jobs.update(tenantId, job.id, {
      ...progress,
      state: 'FAILED',
      completedAt: Date.now(),
      error: {
        reason: isEngramError(error) ? error.reason : 'INTERNAL',
        message: error instanceof Error ? error.message : String(error),
      },
    });
  }
}

/** The resource name of a failed item, for the job's error samples. */
function itemName(change: Change): string {
  if (change.aggregate === 'MEMORY') return `memories/${change.aggregateId}`;
  if (change.aggregate === 'DOCUMENT') return `documents/${change.aggregateId}`;
  return `sessions/${String(change.payload['sessionId'] ?? '')}/messages/${change.aggregateId}`;
}
