import { create, toJson, toJsonString } from '@bufbuild/protobuf';
import {
  CandidateMemorySchema,
  DecisionSchema,
  GovernanceService,
  MemorySchema,
} from '@engram/contracts/governance';
import { DEFAULT_PAGE_LIMITS, methodKey, pageSize, parseMemoryName } from '@engram/resources';
import { errors, requirePrincipal, type Principal } from '@engram/runtime';
import {
  MemoryRepository,
  checkRequestId,
  idempotent,
  inTransaction,
  requestKeyOf,
  viewerOf,
  type Executor,
  type MemoryRecord,
} from '@engram/store';
import { privileged, type GovernanceDeps, type GovernanceImpl } from './deps.js';
import type { Candidate } from './domain/candidate.js';
import { judge } from './domain/rules/engine.js';
import type { Judgement } from './domain/rules/types.js';
import { commitJudgements, storeLookups } from './extraction.js';
import { decisionMessage } from './jobs-api.js';
import { actorOf, auditReviewReads, evergreenRefusal, refusal, unsavedRecord } from './lifecycle.js';
import {
  candidateFromMemory,
  candidateFromMessage,
  memoryFilterOf,
  memoryMessage,
  unsavedMessage,
} from './memory-api.js';

const MAX_CANDIDATES = 50;

/** CreateMemory's answer: the decision, and the memory it wrote or merged into (if any). */
function written(j: Judgement, memory: MemoryRecord | undefined) {
  return {
    ...(memory !== undefined ? { memory: memoryMessage(memory) } : {}),
    decision: decisionMessage(j, memory),
  };
}

/**
 * Memories written by clients and read back: CreateMemory, ProposeMemories, GetMemory and
 * ListMemories. Writes are the caller's own memories, judged by the hard rules and committed with
 * their revision and outbox row in the idempotent request's transaction.
 */
export class MemoryHandlers implements Pick<
  GovernanceImpl,
  'createMemory' | 'proposeMemories' | 'getMemory' | 'listMemories'
> {
  readonly #deps: GovernanceDeps;
  readonly #memories: MemoryRepository;

  constructor(deps: GovernanceDeps) {
    this.#deps = deps;
    this.#memories = new MemoryRepository(deps.store);
  }

  /** CreateMemory: one memory written directly; `validate_only` answers the decision and writes nothing. */
  readonly createMemory: GovernanceImpl['createMemory'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    checkRequestId(request.requestId);
    if (request.memory === undefined) throw errors.fieldRequired('memory');
    const candidate = candidateFromMemory(request.memory);
    if (request.validateOnly) {
      const now = Date.now();
      const j = await inTransaction(this.#deps.store, (trx) =>
        this.#judgeOne(candidate, principal, trx, now),
      );
      if (j.outcome === 'MERGED_DUPLICATE') {
        const existing =
          j.duplicateOfId === undefined
            ? undefined
            : await this.#memories.get(principal.tenantId, j.duplicateOfId);
        return written(j, existing);
      }
      const unsaved =
        j.memory === undefined || j.contentHash === undefined
          ? undefined
          : unsavedRecord(j.memory, j.contentHash, now);
      const decision = create(DecisionSchema, decisionMessage(j, undefined));
      if (unsaved !== undefined) decision.memory = create(MemorySchema, unsavedMessage(unsaved));
      return { ...(decision.memory !== undefined ? { memory: decision.memory } : {}), decision };
    }
    const { result } = await idempotent(
      this.#deps.store,
      requestKeyOf(principal, methodKey(GovernanceService.method.createMemory), request.requestId),
      { memory: toJsonString(MemorySchema, request.memory) },
      async (trx) => {
        const now = Date.now();
        const j = await this.#judgeOne(candidate, principal, trx, now);
        if (j.outcome === 'REJECTED') throw refusal(j, 'memory.');
        if (candidate.evergreen === true) {
          const refused = evergreenRefusal(j);
          if (refused !== undefined) throw refused;
        }
        const [stored] = await commitJudgements(
          trx,
          this.#memories,
          [j],
          {
            kind: actorOf(principal),
            id: principal.subject,
            ...(request.requestId !== '' ? { requestId: request.requestId } : {}),
          },
          now,
        );
        return { judgement: j, memoryId: stored?.memoryId };
      },
    );
    const memory =
      result.memoryId === undefined
        ? undefined
        : await this.#memories.get(principal.tenantId, result.memoryId);
    return written(result.judgement, memory);
  };

  /** ProposeMemories: a batch of candidates, each decided (and written unless `dry_run`) on its own. */
  readonly proposeMemories: GovernanceImpl['proposeMemories'] = async (request, ctx) => {
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
      this.#deps.store,
      requestKeyOf(principal, methodKey(GovernanceService.method.proposeMemories), request.requestId),
      {
        candidates: request.candidates.map((c) => toJson(CandidateMemorySchema, c)),
        dryRun: request.dryRun,
      },
      async (trx) => {
        const now = Date.now();
        const judgements = await this.#judge(candidates, principal, trx, now);
        if (request.dryRun) {
          return {
            decisions: judgements.map((j) => ({ judgement: j, memoryId: undefined as string | undefined })),
          };
        }
        const stored = await commitJudgements(
          trx,
          this.#memories,
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
          memoryId === undefined ? undefined : await this.#memories.get(principal.tenantId, memoryId),
        ),
      ),
    );
    return { decisions };
  };

  /** GetMemory: a memory the caller may see (decision 0027; a reviewer's read is audited). */
  readonly getMemory: GovernanceImpl['getMemory'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const memory = await this.#memories.getVisible(viewerOf(principal), parseMemoryName(request.name));
    auditReviewReads(this.#deps.logger, principal, 'GetMemory', [memory]);
    return { memory: memoryMessage(memory) };
  };

  /** ListMemories: the memories the caller may see, newest first, through the request's filters. */
  readonly listMemories: GovernanceImpl['listMemories'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const filter = memoryFilterOf(request, Date.now());
    const page = await this.#memories.list(viewerOf(principal), filter, {
      pageSize: pageSize(request.pageSize, DEFAULT_PAGE_LIMITS),
      pageToken: request.pageToken,
    });
    auditReviewReads(this.#deps.logger, principal, 'ListMemories', page.items);
    return { memories: page.items.map(memoryMessage), nextPageToken: page.nextPageToken };
  };

  /** The caller's candidates judged as the caller's own memories, in the write transaction. */
  #judge(candidates: readonly Candidate[], principal: Principal, trx: Executor, now: number) {
    return judge(candidates, {
      principal,
      owner: principal.subject,
      now,
      policy: this.#deps.policies(principal.tenantId),
      lookups: storeLookups(this.#memories, trx, principal.tenantId),
      mode: 'propose',
    });
  }

  async #judgeOne(
    candidate: Candidate,
    principal: Principal,
    trx: Executor,
    now: number,
  ): Promise<Judgement> {
    const [j] = await this.#judge([candidate], principal, trx, now);
    if (j === undefined) throw new Error('judge returned no judgement');
    return j;
  }
}
