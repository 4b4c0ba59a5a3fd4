import { durationFromMs, timestampFromMs } from '@bufbuild/protobuf/wkt';
import type { ContextValues, ServiceImpl } from '@connectrpc/connect';
import { ItemKind } from '@engram/contracts/common';
import { IndexBackend, RetrievalService } from '@engram/contracts/retrieval';
import type { Embedder } from '@engram/embeddings';
import { DEFAULT_PAGE_LIMITS, methodKey, pageSize, parseReindexJobName } from '@engram/resources';
import { errors, requirePrincipal, requireRole, type Principal } from '@engram/runtime';
import { ReindexJobRepository, idempotent, isTerminal, type Store } from '@engram/store';
import { indexStatus } from './domain/index-status.js';
import { reindexJobMessage, reindexKinds, reindexMode, storedState } from './domain/reindex-jobs.js';
import type { LiveIndex } from './indexer/collections.js';
import type { ReindexWorker } from './indexer/reindex-worker.js';

type Impl = ServiceImpl<typeof RetrievalService>;

/** What the index RPCs run on. */
export interface IndexDeps {
  readonly store: Store;
  readonly embedder: Embedder;
  readonly live: LiveIndex;
  readonly reindex: ReindexWorker;
}

/** The principal of an admin-only call (PERMISSION_DENIED for anyone else). */
function admin(values: ContextValues): Principal {
  const principal = requirePrincipal(values);
  requireRole(principal, 'admin');
  return principal;
}

/**
 * The tenant's vector index, for admins: Reindex, GetReindexJob, ListReindexJobs,
 * CancelReindexJob and GetIndexStatus.
 */
export class IndexHandlers implements Pick<
  Impl,
  'reindex' | 'getReindexJob' | 'listReindexJobs' | 'cancelReindexJob' | 'getIndexStatus'
> {
  readonly #deps: IndexDeps;
  readonly #jobs: ReindexJobRepository;

  constructor(deps: IndexDeps) {
    this.#deps = deps;
    this.#jobs = new ReindexJobRepository(deps.store);
  }

  /** The job `name` of the principal's tenant, or NOT_FOUND. */
  async #job(principal: Principal, name: string) {
    const job = await this.#jobs.get(principal.tenantId, parseReindexJobName(name));
    if (job === undefined) throw errors.notFound(name);
    return job;
  }

  /** Reindex: accepts a job once per request id and runs it in the background of this process. */
  readonly reindex: Impl['reindex'] = async (request, context) => {
    const principal = admin(context.values);
    const mode = reindexMode(request.mode);
    const kinds = reindexKinds(request.kinds);
    if (request.requestId === '') throw errors.fieldRequired('request_id');
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(request.requestId)) {
      throw errors.fieldInvalid('request_id', '1-64 characters of [A-Za-z0-9_-]');
    }
    const { embedder } = this.#deps;
    const { result, replayed } = await idempotent(
      this.#deps.store,
      {
        tenantId: principal.tenantId,
        subject: principal.subject,
        method: methodKey(RetrievalService.method.reindex),
        requestId: request.requestId,
      },
      { mode, kinds },
      async (trx) =>
        (
          await this.#jobs.create(trx, {
            tenantId: principal.tenantId,
            creator: principal.subject,
            kinds,
            mode,
            embeddingModel: embedder.model,
            embeddingDimensions: embedder.dimensions,
          })
        ).id,
    );
    const job = await this.#job(principal, `reindexJobs/${result}`);
    if (!replayed) this.#deps.reindex.start(job);
    return { reindexJob: reindexJobMessage(job) };
  };

  readonly getReindexJob: Impl['getReindexJob'] = async (request, context) => {
    const job = await this.#job(admin(context.values), request.name);
    return { reindexJob: reindexJobMessage(job) };
  };

  readonly listReindexJobs: Impl['listReindexJobs'] = async (request, context) => {
    const principal = admin(context.values);
    const page = await this.#jobs.list(
      principal.tenantId,
      { states: request.states.map(storedState) },
      { pageSize: pageSize(request.pageSize, DEFAULT_PAGE_LIMITS), pageToken: request.pageToken },
    );
    return { reindexJobs: page.items.map(reindexJobMessage), nextPageToken: page.nextPageToken };
  };

  /** CancelReindexJob: FAILED_PRECONDITION `STATE_CONFLICT` once the job is terminal. */
  readonly cancelReindexJob: Impl['cancelReindexJob'] = async (request, context) => {
    const principal = admin(context.values);
    const job = await this.#job(principal, request.name);
    if (isTerminal(job.state)) {
      throw errors.failedPrecondition('STATE_CONFLICT', `the job is already ${job.state}`, {
        name: request.name,
        state: job.state,
      });
    }
    const cancelled = await this.#jobs.update(principal.tenantId, job.id, {
      state: 'CANCELLED',
      completedAt: Date.now(),
    });
    return { reindexJob: reindexJobMessage(cancelled) };
  };

  /** GetIndexStatus: the source of truth against the index, per kind, with the outbox backlog. */
  readonly getIndexStatus: Impl['getIndexStatus'] = async (_request, context) => {
    const principal = admin(context.values);
    const { store, live, embedder } = this.#deps;
    const report = await indexStatus(
      { store, index: live.index, collection: live.collection, embedder, stale: live.stale },
      principal.tenantId,
    );
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
          ...(k.densePendingPoints === undefined ? {} : { densePendingPoints: BigInt(k.densePendingPoints) }),
        })),
        outboxPending: BigInt(report.outboxPending),
        outboxRetrying: BigInt(report.outboxRetrying),
        ...(report.oldestPendingAgeMs === undefined
          ? {}
          : { oldestPendingAge: durationFromMs(report.oldestPendingAgeMs) }),
        ...(report.lastIndexedAt === undefined
          ? {}
          : { lastIndexedTime: timestampFromMs(report.lastIndexedAt) }),
        healthy: report.healthy,
        problems: [...report.problems],
        computeTime: timestampFromMs(report.computedAt),
      },
    };
  };
}
