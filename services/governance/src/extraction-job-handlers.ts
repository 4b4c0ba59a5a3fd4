import {
  ExtractionJobView,
  GovernanceService,
  type ExtractMemoriesRequest,
} from '@engram/contracts/governance';
import {
  DEFAULT_PAGE_LIMITS,
  methodKey,
  pageSize,
  parseExtractionJobName,
  parseMemCellName,
} from '@engram/resources';
import { errors, requirePrincipal, type Principal } from '@engram/runtime';
import {
  ExtractionJobRepository,
  MemoryRepository,
  checkRequestId,
  idempotent,
  requestKeyOf,
  viewerOf,
  type ExtractionJobRecord,
  type MemoryRecord,
} from '@engram/store';
import { privileged, untilCancelled, type GovernanceDeps, type GovernanceImpl } from './deps.js';
import type { ExtractorName } from './domain/candidate.js';
import { ingestionFailure, jobResult, type JobCaller } from './extraction.js';
import { extractionJobFilterOf, jobMessage } from './jobs-api.js';
import { auditReviewReads } from './lifecycle.js';
import { requestedExtractors } from './memory-api.js';

/** The MemCell an ExtractMemories call names, as ingestion shows it to the caller. */
interface MemCellOfCall {
  readonly sessionId: string;
  readonly memCellId: string;
  readonly ownerId: string;
  readonly languageCode: string;
}

/**
 * Extraction jobs: ExtractMemories (records a job and runs it, blueprint §3 flow 1),
 * GetExtractionJob and ListExtractionJobs. A job's owner is its MemCell's session owner; services
 * and administrators see every job of the tenant.
 */
export class ExtractionJobHandlers implements Pick<
  GovernanceImpl,
  'extractMemories' | 'getExtractionJob' | 'listExtractionJobs'
> {
  readonly #deps: GovernanceDeps;
  readonly #jobs: ExtractionJobRepository;
  readonly #memories: MemoryRepository;

  constructor(deps: GovernanceDeps) {
    this.#deps = deps;
    this.#jobs = new ExtractionJobRepository(deps.store);
    this.#memories = new MemoryRepository(deps.store);
  }

  /**
   * ExtractMemories: records the job (idempotent on the request id) and runs it; answers when it
   * ends, or at once with `return_immediately`.
   */
  readonly extractMemories: GovernanceImpl['extractMemories'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const { sessionId, memCellId } = parseMemCellName(request.memCell, 'mem_cell');
    const extractors = requestedExtractors(request.extractors);
    checkRequestId(request.requestId);
    const headers = new Headers({ authorization: `Bearer ${principal.token}` });
    const memCell = await this.#readMemCell(request.memCell, { sessionId, memCellId }, headers, ctx.signal);
    const jobId = await this.#recordJob(principal, request, memCell, extractors);
    const job = await this.#jobs.get(principal.tenantId, jobId);
    if (job === undefined) throw errors.notFound(`extractionJobs/${jobId}`);
    const caller: JobCaller = { principal, headers };
    const done = this.#deps.runner.run(job, caller);
    if (request.returnImmediately) {
      done.catch(() => undefined);
      return { extractionJob: jobMessage(job, new Map(), true, job.ownerId === principal.subject) };
    }
    const ended = await untilCancelled(done, ctx);
    return {
      extractionJob: this.#fullView(principal, ended, await this.#decisionMemories(principal, [ended])),
    };
  };

  /**
   * GetExtractionJob: a job the caller may see, with its decisions' memories as they are now, as
   * far as the caller may see them (decision 0027).
   */
  readonly getExtractionJob: GovernanceImpl['getExtractionJob'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const job = await this.#visibleJob(principal, parseExtractionJobName(request.name));
    const found = await this.#decisionMemories(principal, [job]);
    auditReviewReads(this.#deps.logger, principal, 'GetExtractionJob', found.values());
    return { extractionJob: this.#fullView(principal, job, found) };
  };

  /** ListExtractionJobs: the jobs the caller may see, through the request's filters. */
  readonly listExtractionJobs: GovernanceImpl['listExtractionJobs'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const filter = extractionJobFilterOf(request);
    const page = await this.#jobs.list(
      principal.tenantId,
      { ...filter, ...(privileged(principal) ? {} : { ownerId: principal.subject }) },
      { pageSize: pageSize(request.pageSize, DEFAULT_PAGE_LIMITS), pageToken: request.pageToken },
    );
    const full = request.view === ExtractionJobView.FULL;
    const found = full
      ? await this.#decisionMemories(principal, page.items)
      : new Map<string, MemoryRecord>();
    auditReviewReads(this.#deps.logger, principal, 'ListExtractionJobs', found.values());
    return {
      extractionJobs: page.items.map((j) =>
        full ? this.#fullView(principal, j, found) : jobMessage(j, found, false),
      ),
      nextPageToken: page.nextPageToken,
    };
  };

  /**
   * The MemCell and its owner, with the caller's credential: ingestion decides who may read it (its
   * session's owner, or a service principal), so NOT_FOUND covers both "absent" and "not yours",
   * and nothing is recorded when ingestion cannot be reached.
   */
  async #readMemCell(
    name: string,
    ids: { sessionId: string; memCellId: string },
    headers: Headers,
    signal: AbortSignal,
  ): Promise<MemCellOfCall> {
    try {
      const { memCell } = await this.#deps.ingestion.getMemCell({ name }, { headers, signal });
      if (memCell === undefined) throw errors.notFound(name);
      const { session } = await this.#deps.ingestion.getSession(
        { name: `sessions/${ids.sessionId}` },
        { headers, signal },
      );
      if (session === undefined) throw errors.notFound(name);
      return { ...ids, ownerId: session.owner, languageCode: session.languageCode };
    } catch (error) {
      throw error instanceof Error && 'reason' in error ? error : ingestionFailure(error, name);
    }
  }

  /** Records the job of the request (or finds the one a retry of it recorded); returns its id. */
  async #recordJob(
    principal: Principal,
    request: ExtractMemoriesRequest,
    memCell: MemCellOfCall,
    extractors: ExtractorName[],
  ): Promise<string> {
    const { sessionId, memCellId } = memCell;
    const { result } = await idempotent(
      this.#deps.store,
      requestKeyOf(principal, methodKey(GovernanceService.method.extractMemories), request.requestId),
      { memCell: request.memCell, extractors, dryRun: request.dryRun, reextract: request.reextract },
      async (trx) => {
        if (!request.dryRun) {
          const running = await this.#jobs.findRunning(principal.tenantId, memCellId, trx);
          if (running !== undefined && !jobResult(running).dryRun) {
            // A job left RUNNING by a governance process that stopped (e.g. killed mid-extraction:
            // its lease lapsed) is taken over when the hand-off (a `service` caller) asks again:
            // it runs here as a new attempt, and only the attempt that holds the job may end it
            // (decision 0027). A job still running elsewhere is a STATE_CONFLICT; the hand-off
            // retries later.
            if (principal.roles.includes('service') && this.#deps.runner.mayTakeOver(running)) {
              this.#deps.logger.info(
                { extractionJob: running.id },
                'taking over an extraction job left running',
              );
              return { jobId: running.id };
            }
            throw errors.failedPrecondition(
              'STATE_CONFLICT',
              `extraction job extractionJobs/${running.id} of this MemCell has not ended`,
              { name: `extractionJobs/${running.id}` },
            );
          }
        }
        const job = await this.#jobs.create(trx, {
          tenantId: principal.tenantId,
          ownerId: memCell.ownerId,
          memCellId,
          sessionId,
          extractors,
          languageCode: memCell.languageCode,
          requestId: request.requestId,
          result: {
            sessionId,
            requestedBy: principal.subject,
            dryRun: request.dryRun,
            reextract: request.reextract,
          },
        });
        return { jobId: job.id };
      },
    );
    return result.jobId;
  }

  /** A job the caller may see (NOT_FOUND for one of another owner, unless privileged). */
  async #visibleJob(principal: Principal, id: string): Promise<ExtractionJobRecord> {
    const job = await this.#jobs.get(principal.tenantId, id);
    if (job === undefined || (!privileged(principal) && job.ownerId !== principal.subject)) {
      throw errors.notFound(`extractionJobs/${id}`);
    }
    return job;
  }

  /**
   * The FULL view of a job for `principal`: candidates (the MemCell's text as extracted) only for
   * the job's owner; decisions with the memories `found` holds (those the caller may see).
   */
  #fullView(principal: Principal, job: ExtractionJobRecord, found: ReadonlyMap<string, MemoryRecord>) {
    return jobMessage(job, found, true, job.ownerId === principal.subject);
  }

  /**
   * The memories the decisions of `list` name, as they are now, that `principal` may see: the
   * one visibility rule of every read path (`memoryVisibleTo`), so an administrator or a service
   * sees neither another user's SELF memories nor non-ACTIVE ORG ones, only the review queue.
   */
  async #decisionMemories(
    principal: Principal,
    list: readonly ExtractionJobRecord[],
  ): Promise<Map<string, MemoryRecord>> {
    const ids = list.flatMap((j) =>
      (jobResult(j).decisions ?? []).flatMap((d) => (d.memoryId === undefined ? [] : [d.memoryId])),
    );
    return ids.length === 0 ? new Map() : this.#memories.getManyVisible(viewerOf(principal), ids);
  }
}
