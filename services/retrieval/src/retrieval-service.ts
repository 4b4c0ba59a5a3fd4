import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import type { ContextValues, ServiceImpl } from '@connectrpc/connect';
import { ItemKind } from '@engram/contracts/common';
import { IndexBackend, type RetrievalService } from '@engram/contracts/retrieval';
import type { Embedder, Reranker } from '@engram/embeddings';
import { errors, requirePrincipal, requireRole, type Logger, type Principal } from '@engram/runtime';
import { ReindexJobRepository, idempotent, isTerminal, type Store } from '@engram/store';
import { indexStatus } from './domain/index-status.js';
import {
  parseReindexJobName,
  reindexJobMessage,
  reindexKinds,
  reindexMode,
  storedState,
} from './domain/reindex-jobs.js';
import type { ReindexWorker } from './indexer/reindex-worker.js';
import type { LiveIndex } from './indexer/collections.js';
import { createSearchHandler } from './search.js';

/** What the retrieval service is built from. */
export interface RetrievalDeps {
  readonly logger: Logger;
  readonly store: Store;
  readonly embedder: Embedder;
  /** The rerank stage of Search, when configured. */
  readonly reranker?: Reranker | undefined;
  readonly live: LiveIndex;
  readonly reindex: ReindexWorker;
}

/** List page sizes: default and maximum (documented in the proto). */
const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 500;

function pageSize(requested: number): number {
  if (requested < 0) throw errors.fieldInvalid('page_size', 'must not be negative');
  return requested === 0 ? DEFAULT_PAGE_SIZE : Math.min(requested, MAX_PAGE_SIZE);
}

/**
 * `engram.retrieval.v1.RetrievalService`. Methods are added here as their issues land; a method
 * that is absent answers UNIMPLEMENTED with reason NOT_IMPLEMENTED, never with made-up data.
 */
export function createRetrievalService(deps: RetrievalDeps): Partial<ServiceImpl<typeof RetrievalService>> {
  const jobs = new ReindexJobRepository(deps.store);
  const admin = (values: ContextValues): Principal => {
    const principal = requirePrincipal(values);
    requireRole(principal, 'admin');
    return principal;
  };
  const jobOf = async (principal: Principal, name: string) => {
    const job = await jobs.get(principal.tenantId, parseReindexJobName(name));
    if (job === undefined) throw errors.notFound(name);
    return job;
  };
  return {
    ...createSearchHandler(deps),

    async reindex(request, context) {
      const principal = admin(context.values);
      const mode = reindexMode(request.mode);
      const kinds = reindexKinds(request.kinds);
      if (request.requestId === '') throw errors.fieldRequired('request_id');
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(request.requestId)) {
        throw errors.fieldInvalid('request_id', '1-64 characters of [A-Za-z0-9_-]');
      }
      const { result, replayed } = await idempotent(
        deps.store,
        {
          tenantId: principal.tenantId,
          subject: principal.subject,
          method: 'engram.retrieval.v1.RetrievalService/Reindex',
          requestId: request.requestId,
        },
        { mode, kinds },
        async (trx) =>
          (
            await jobs.create(trx, {
              tenantId: principal.tenantId,
              creator: principal.subject,
              kinds,
              mode,
              embeddingModel: deps.embedder.model,
              embeddingDimensions: deps.embedder.dimensions,
            })
          ).id,
      );
      const job = await jobOf(principal, `reindexJobs/${result}`);
      if (!replayed) deps.reindex.start(job);
      return { reindexJob: reindexJobMessage(job) };
    },

    async getReindexJob(request, context) {
      const job = await jobOf(admin(context.values), request.name);
      return { reindexJob: reindexJobMessage(job) };
    },

    async listReindexJobs(request, context) {
      const principal = admin(context.values);
      const page = await jobs.list(
        principal.tenantId,
        { states: request.states.map(storedState) },
        { pageSize: pageSize(request.pageSize), pageToken: request.pageToken },
      );
      return { reindexJobs: page.items.map(reindexJobMessage), nextPageToken: page.nextPageToken };
    },

    async cancelReindexJob(request, context) {
      const principal = admin(context.values);
      const job = await jobOf(principal, request.name);
      if (isTerminal(job.state)) {
        throw errors.failedPrecondition('STATE_CONFLICT', `the job is already ${job.state}`, {
          name: request.name,
          state: job.state,
        });
      }
      const cancelled = await jobs.update(principal.tenantId, job.id, {
        state: 'CANCELLED',
        completedAt: Date.now(),
      });
      return { reindexJob: reindexJobMessage(cancelled) };
    },

    async getIndexStatus(_request, context) {
      const principal = admin(context.values);
      const report = await indexStatus(
        {
          store: deps.store,
          index: deps.live.index,
          collection: deps.live.collection,
          embedder: deps.embedder,
          stale: deps.live.stale,
        },
        principal.tenantId,
      );
      const durationOf = (ms: number) => ({
        seconds: BigInt(Math.floor(ms / 1000)),
        nanos: (ms % 1000) * 1_000_000,
      });
      return {
        indexStatus: {
          name: 'indexStatus',
          backend: report.backend === 'QDRANT' ? IndexBackend.QDRANT : IndexBackend.EMBEDDED,
          collection: report.collection,
          embeddingModel: report.embeddingModel,
          embeddingDimensions: report.embeddingDimensions,
          indexReachable: report.indexReachable,
          embeddingAvailable: report.embeddingAvailable,
          kinds: report.kinds.map((k) => ({
            kind: ItemKind[k.kind],
            sourceRows: BigInt(k.sourceRows),
            ...(k.indexedPoints === undefined ? {} : { indexedPoints: BigInt(k.indexedPoints) }),
            ...(k.drift === undefined ? {} : { drift: BigInt(k.drift) }),
          })),
          outboxPending: BigInt(report.outboxPending),
          outboxRetrying: BigInt(report.outboxRetrying),
          ...(report.oldestPendingAgeMs === undefined
            ? {}
            : { oldestPendingAge: durationOf(report.oldestPendingAgeMs) }),
          ...(report.lastIndexedAt === undefined
            ? {}
            : { lastIndexedTime: timestampFromMs(report.lastIndexedAt) }),
          healthy: report.healthy,
          problems: [...report.problems],
          computeTime: timestampFromMs(report.computedAt),
        },
      };
    },
  };
}
