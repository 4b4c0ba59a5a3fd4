import { MEMORY_STATUS_NAMES, MEMORY_TYPE_NAMES, SCOPE_NAMES, SOURCE_KIND_NAMES } from '@engram/resources';
import { toJson } from '@bufbuild/protobuf';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import type { Client, HandlerContext, ServiceImpl } from '@connectrpc/connect';
import {
  ExtractionJobState,
  ExtractionJobView,
  MemoryOrder,
  CandidateMemorySchema,
  type GovernanceService,
} from '@engram/contracts/governance';
import type { IngestionService } from '@engram/contracts/ingestion';
import { errors, requirePrincipal, type Logger, type Principal } from '@engram/runtime';
import {
  ExtractionJobRepository,
  MemoryRepository,
  checkRequestId,
  idempotent,
  requestKeyOf,
  viewerOf,
  type ExtractionJobRecord,
  type ExtractionJobState as StoredJobState,
  type MemoryRecord,
  type Store,
} from '@engram/store';
import { judge } from './domain/rules/engine.js';
import type { GovernancePolicy } from './domain/rules/policy.js';
import {
  ExtractionRunner,
  commitJudgements,
  ingestionFailure,
  jobResult,
  storeLookups,
  type JobCaller,
  type RunExtractor,
} from './extraction.js';
import { decisionMessage, jobMessage } from './jobs-api.js';
import { createLifecycleHandlers } from './lifecycle.js';
import {
  candidateFromMessage,
  memoryMessage,
  parseJobName,
  parseMemCellName,
  parseMemoryName,
  requestedExtractors,
} from './memory-api.js';

/** What the governance service is built from. */
export interface GovernanceDeps {
  readonly logger: Logger;
  readonly store: Store;
  /** The hard rules' policy of a tenant. */
  readonly policies: (tenantId: string) => GovernancePolicy;
  /** Ingestion, for reading MemCells (the caller's credential is forwarded). */
  readonly ingestion: Client<typeof IngestionService>;
  /** The extractors: the model's prompts where a model is configured, else the offline rules. */
  readonly runExtractor: RunExtractor;
  /** The extraction model's id ('' for the offline extractors). */
  readonly model: string;
  /** Receives the runner so the process can stop it at shutdown. */
  readonly onRunner?: (runner: ExtractionRunner) => void;
  /** Completes forget receipts (woken by ForgetUser). */
  readonly forgetWorker?: { wake(): void };
}

const MAX_CANDIDATES = 50;
const SERVICE = 'engram.governance.v1.GovernanceService';

function pageSize(requested: number): number {
  if (requested < 0) throw errors.fieldInvalid('page_size', 'must not be negative');
  return requested === 0 ? 50 : Math.min(requested, 500);
}

const privileged = (p: Principal) => p.roles.includes('service') || p.roles.includes('admin');

/** Resolves when `work` does, or rejects with the call's cancellation (the work goes on). */
function untilCancelled<T>(work: Promise<T>, ctx: HandlerContext): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      reject(ctx.signal.reason as Error);
    };
    if (ctx.signal.aborted) {
      onAbort();
      return;
    }
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => {
      ctx.signal.removeEventListener('abort', onAbort);
    });
  });
}

const JOB_STATE_NAMES: Partial<Record<ExtractionJobState, StoredJobState>> = {
  [ExtractionJobState.PENDING]: 'PENDING',
  [ExtractionJobState.RUNNING]: 'RUNNING',
  [ExtractionJobState.SUCCEEDED]: 'SUCCEEDED',
  [ExtractionJobState.FAILED]: 'FAILED',
};

function names<E extends number, N>(values: readonly E[], table: Partial<Record<E, N>>, field: string): N[] {
  return values.map((v) => {
    const name = table[v];
    if (name === undefined) throw errors.fieldInvalid(field, 'UNSPECIFIED or unknown value');
    return name;
  });
}

/**
 * `engram.governance.v1.GovernanceService`. Methods are added as their issues land; a method that
 * is absent answers UNIMPLEMENTED with reason NOT_IMPLEMENTED through the runtime's error
 * boundary, never with made-up data.
 */
export function createGovernanceService(
  deps: GovernanceDeps,
): Partial<ServiceImpl<typeof GovernanceService>> {
  const jobs = new ExtractionJobRepository(deps.store);
  const memories = new MemoryRepository(deps.store);
  const runner = new ExtractionRunner({
    store: deps.store,
    logger: deps.logger.child({ component: 'extraction' }),
    ingestion: deps.ingestion,
    policies: deps.policies,
    runExtractor: deps.runExtractor,
    model: deps.model,
  });
  deps.onRunner?.(runner);

  /** The memories the decisions of `list` name, as they are now. */
  const decisionMemories = async (tenantId: string, list: readonly ExtractionJobRecord[]) => {
    const ids = new Set(
      list.flatMap((j) =>
        (jobResult(j).decisions ?? []).flatMap((d) => (d.memoryId === undefined ? [] : [d.memoryId])),
      ),
    );
    const found = new Map<string, MemoryRecord>();
    for (const id of ids) {
      const memory = await memories.get(tenantId, id);
      if (memory !== undefined) found.set(id, memory);
    }
    return found;
  };

  const visibleJob = async (principal: Principal, id: string) => {
    const job = await jobs.get(principal.tenantId, id);
    if (job === undefined || (!privileged(principal) && job.ownerId !== principal.subject)) {
      throw errors.notFound(`extractionJobs/${id}`);
    }
    return job;
  };

  return {
    ...createLifecycleHandlers(deps),
    async extractMemories(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const { sessionId, memCellId } = parseMemCellName(request.memCell);
      const extractors = requestedExtractors(request.extractors);
      checkRequestId(request.requestId);
      const headers = new Headers({ authorization: `Bearer ${principal.token}` });
      // The MemCell and its owner, with the caller's credential: ingestion decides who may read it
      // (its session's owner, or a service principal), so NOT_FOUND covers both "absent" and
      // "not yours", and nothing is recorded when ingestion cannot be reached.
      let ownerId: string;
      let languageCode: string;
      try {
        const { memCell } = await deps.ingestion.getMemCell(
          { name: request.memCell },
          { headers, signal: ctx.signal },
        );
        if (memCell === undefined) throw errors.notFound(request.memCell);
        const { session } = await deps.ingestion.getSession(
          { name: `sessions/${sessionId}` },
          { headers, signal: ctx.signal },
        );
        if (session === undefined) throw errors.notFound(request.memCell);
        ownerId = session.owner;
        languageCode = session.languageCode;
      } catch (error) {
        throw error instanceof Error && 'reason' in error ? error : ingestionFailure(error, request.memCell);
      }
      const { result } = await idempotent(
        deps.store,
        requestKeyOf(principal, `${SERVICE}/ExtractMemories`, request.requestId),
        { memCell: request.memCell, extractors, dryRun: request.dryRun, reextract: request.reextract },
        async (trx) => {
          if (!request.dryRun) {
            const running = await jobs.findRunning(principal.tenantId, memCellId, trx);
            if (running !== undefined && !jobResult(running).dryRun) {
              // A job left RUNNING by a governance process that stopped (e.g. killed mid-extraction)
              // is taken over when the hand-off (a `service` caller) asks again: it runs here, and
              // its rules dedupe whatever the stopped process had already written.
              if (principal.roles.includes('service') && !runner.isRunning(running.id)) {
                deps.logger.info({ extractionJob: running.id }, 'taking over an extraction job left running');
                return { jobId: running.id };
              }
              throw errors.failedPrecondition(
                'STATE_CONFLICT',
                `extraction job extractionJobs/${running.id} of this MemCell has not ended`,
                { name: `extractionJobs/${running.id}` },
              );
            }
          }
          const job = await jobs.create(trx, {
            tenantId: principal.tenantId,
            ownerId,
            memCellId,
            sessionId,
            extractors,
            languageCode,
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
      const job = await jobs.get(principal.tenantId, result.jobId);
      if (job === undefined) throw errors.notFound(`extractionJobs/${result.jobId}`);
      const caller: JobCaller = { principal, headers };
      const done = runner.run(job, caller);
      if (request.returnImmediately) {
        done.catch(() => undefined);
        return { extractionJob: jobMessage(job, new Map()) };
      }
      const ended = await untilCancelled(done, ctx);
      return { extractionJob: jobMessage(ended, await decisionMemories(principal.tenantId, [ended])) };
    },

    async getExtractionJob(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const job = await visibleJob(principal, parseJobName(request.name));
      return { extractionJob: jobMessage(job, await decisionMemories(principal.tenantId, [job])) };
    },

    async listExtractionJobs(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const memCellId =
        request.memCell === '' ? undefined : parseMemCellName(request.memCell, 'mem_cell').memCellId;
      let sessionId: string | undefined;
      if (request.session !== '') {
        sessionId = /^sessions\/([0-9A-HJKMNP-TV-Z]{26})$/.exec(request.session)?.[1];
        if (sessionId === undefined) {
          throw errors.invalidArgument('NAME_INVALID', 'session must look like sessions/{session}', {
            field: 'session',
            pattern: 'sessions/{session}',
          });
        }
      }
      const states = names(request.states, JOB_STATE_NAMES, 'states');
      const page = await jobs.list(
        principal.tenantId,
        {
          ...(memCellId !== undefined ? { memCellId } : {}),
          ...(sessionId !== undefined ? { sessionId } : {}),
          ...(states.length > 0 ? { states } : {}),
          ...(privileged(principal) ? {} : { ownerId: principal.subject }),
        },
        { pageSize: pageSize(request.pageSize), pageToken: request.pageToken },
      );
      const full = request.view === ExtractionJobView.FULL;
      const found = full
        ? await decisionMemories(principal.tenantId, page.items)
        : new Map<string, MemoryRecord>();
      return {
        extractionJobs: page.items.map((j) => jobMessage(j, found, full)),
        nextPageToken: page.nextPageToken,
      };
    },

    async proposeMemories(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      checkRequestId(request.requestId);
      if (request.candidates.length === 0) throw errors.fieldRequired('candidates');
      if (request.candidates.length > MAX_CANDIDATES) {
        throw errors.resourceExhausted('BATCH_TOO_LARGE', `at most ${MAX_CANDIDATES} candidates per call`, {
          field: 'candidates',
          limit: String(MAX_CANDIDATES),
        });
      }
      const candidates = request.candidates.map((c, i) => {
        const candidate = candidateFromMessage(c, i, { sourceKind: 'EXPLICIT_USER_STATEMENT' });
        return candidate.languageCode === undefined && request.languageCode !== ''
          ? { ...candidate, languageCode: request.languageCode }
          : candidate;
      });
      const { result } = await idempotent(
        deps.store,
        requestKeyOf(principal, `${SERVICE}/ProposeMemories`, request.requestId),
        {
          candidates: request.candidates.map((c) => toJson(CandidateMemorySchema, c)),
          dryRun: request.dryRun,
        },
        async (trx) => {
          const now = Date.now();
          const judgements = await judge(candidates, {
            principal,
            owner: principal.subject,
            now,
            policy: deps.policies(principal.tenantId),
            lookups: storeLookups(memories, trx, principal.tenantId),
            mode: 'propose',
          });
          if (request.dryRun) {
            return {
              decisions: judgements.map((j) => ({ judgement: j, memoryId: undefined as string | undefined })),
            };
          }
          const stored = await commitJudgements(
            trx,
            memories,
            judgements,
            {
              kind: privileged(principal) ? 'SERVICE' : 'USER',
              id: principal.subject,
              ...(request.requestId !== '' ? { requestId: request.requestId } : {}),
            },
            now,
          );
          return {
            decisions: judgements.map((j, i) => ({ judgement: j, memoryId: stored[i]?.memoryId })),
          };
        },
      );
      const decisions = await Promise.all(
        result.decisions.map(async ({ judgement, memoryId }) =>
          decisionMessage(
            judgement,
            memoryId === undefined ? undefined : await memories.get(principal.tenantId, memoryId),
          ),
        ),
      );
      return { decisions };
    },

    async getMemory(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const memory = await memories.getVisible(viewerOf(principal), parseMemoryName(request.name));
      return { memory: memoryMessage(memory) };
    },

    async listMemories(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      if (request.session !== '') {
        throw errors.fieldInvalid('session', 'this filter is not supported by this server version yet');
      }
      if (request.order !== MemoryOrder.UNSPECIFIED && request.order !== MemoryOrder.CREATE_TIME_DESC) {
        throw errors.fieldInvalid(
          'order',
          'only MEMORY_ORDER_CREATE_TIME_DESC is supported by this server version',
        );
      }
      if (request.namespaces.length > 50) throw errors.fieldInvalid('namespaces', 'at most 50 values');
      if (request.keys.length > 50) throw errors.fieldInvalid('keys', 'at most 50 values');
      if (
        request.minConfidence !== undefined &&
        !(request.minConfidence >= 0 && request.minConfidence <= 1)
      ) {
        throw errors.fieldInvalid('min_confidence', 'range 0.0–1.0');
      }
      const types = names(request.types, MEMORY_TYPE_NAMES, 'types');
      const statuses = names(request.statuses, MEMORY_STATUS_NAMES, 'statuses');
      const scopes = names(request.scopes, SCOPE_NAMES, 'scopes');
      const sourceKinds = names(request.sourceKinds, SOURCE_KIND_NAMES, 'source_kinds');
      const range = (r: typeof request.occurTime, field: string) => {
        const from = r?.startTime === undefined ? undefined : timestampMs(r.startTime);
        const before = r?.endTime === undefined ? undefined : timestampMs(r.endTime);
        if (from !== undefined && before !== undefined && before <= from) {
          throw errors.invalidArgument('TIME_RANGE_INVALID', `${field} ends at or before its start`, {
            field,
          });
        }
        return { from, before };
      };
      const occurred = range(request.occurTime, 'occur_time');
      const created = range(request.createTime, 'create_time');
      const page = await memories.list(
        viewerOf(principal),
        {
          ...(types.length > 0 ? { types } : {}),
          ...(statuses.length > 0 ? { statuses } : {}),
          ...(request.namespaces.length > 0 ? { namespaces: request.namespaces } : {}),
          ...(request.keys.length > 0 ? { keys: request.keys } : {}),
          ...(scopes.length > 0 ? { scopes } : {}),
          ...(request.orgId !== '' ? { orgId: request.orgId } : {}),
          ...(request.owner !== '' ? { ownerId: request.owner } : {}),
          ...(request.evergreenOnly ? { evergreenOnly: true } : {}),
          ...(sourceKinds.length > 0 ? { sourceKinds } : {}),
          ...(request.minConfidence !== undefined ? { minConfidence: request.minConfidence } : {}),
          ...(occurred.from !== undefined ? { occurredFrom: occurred.from } : {}),
          ...(occurred.before !== undefined ? { occurredBefore: occurred.before } : {}),
          ...(created.from !== undefined ? { createdFrom: created.from } : {}),
          ...(created.before !== undefined ? { createdBefore: created.before } : {}),
          ...(request.validAt !== undefined ? { validAt: timestampMs(request.validAt) } : {}),
          now: Date.now(),
        },
        { pageSize: pageSize(request.pageSize), pageToken: request.pageToken },
      );
      return { memories: page.items.map(memoryMessage), nextPageToken: page.nextPageToken };
    },
  };
}
