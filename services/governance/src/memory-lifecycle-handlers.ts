import { ReviewVerdict, type Memory } from '@engram/contracts/governance';
import { checkUpdateMask, checkedTimestampMs, parseMemoryName } from '@engram/resources';
import { errors, requirePrincipal, type Logger, type Principal } from '@engram/runtime';
import {
  MemoryRepository,
  inTransaction,
  viewerOf,
  type Executor,
  type MemoryRecord,
  type MemoryRevisionRecord,
  type RevisionAction,
  type RevisionInput,
} from '@engram/store';
import { requireAdmin, type GovernanceDeps, type GovernanceImpl } from './deps.js';
import type { Candidate } from './domain/candidate.js';
import { judge } from './domain/rules/engine.js';
import type { GovernancePolicy } from './domain/rules/policy.js';
import type { Judgement, RulePrincipal } from './domain/rules/types.js';
import { markSuperseded } from './extraction.js';
import { decisionMessage } from './jobs-api.js';
import {
  APPROVE_RULES,
  RESTORE_RULES,
  UPDATABLE_PATHS,
  UPDATES,
  actorOf,
  candidateFromRecord,
  checkEtag,
  checkScopeKept,
  contentChanges,
  evergreenRefusal,
  lookupsExcept,
  ownerPrincipal,
  refusal,
  rulesOnly,
  stateConflict,
  type ContentPatch,
  type RuleSubset,
  type UpdatablePath,
} from './lifecycle.js';
import { checkReason, memoryMessage } from './memory-api.js';

/** An UpdateMemory call, checked. */
interface MemoryUpdate {
  readonly principal: Principal;
  readonly id: string;
  readonly etag: string;
  readonly memory: Memory;
  readonly paths: readonly UpdatablePath[];
}

/** A judged change and the memory it was judged against. */
interface Judged {
  readonly current: MemoryRecord;
  readonly j: Judgement;
  readonly now: number;
}

/** A review's revision of `action` (the reviewer is the actor, with the review's reason). */
type ReviewRevision = (action: RevisionAction, rule?: string) => RevisionInput;

/**
 * The lifecycle of a stored memory: UpdateMemory, DeleteMemory, RestoreMemory and ReviewMemory.
 * Every change is judged again by the hard rules and committed, with its revision and outbox row,
 * in one transaction that re-reads the memory and checks its etag.
 */
export class MemoryLifecycleHandlers implements Pick<
  GovernanceImpl,
  'updateMemory' | 'deleteMemory' | 'restoreMemory' | 'reviewMemory'
> {
  readonly #deps: GovernanceDeps;
  readonly #memories: MemoryRepository;
  readonly #log: Logger;

  constructor(deps: GovernanceDeps) {
    this.#deps = deps;
    this.#memories = new MemoryRepository(deps.store);
    this.#log = deps.logger.child({ component: 'lifecycle' });
  }

  /** UpdateMemory: the paths of the mask, judged again; an update never supersedes another memory. */
  readonly updateMemory: GovernanceImpl['updateMemory'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const m = request.memory;
    if (m === undefined) throw errors.fieldRequired('memory');
    const id = parseMemoryName(m.name, 'memory.name');
    const paths = request.updateMask?.paths ?? [];
    checkUpdateMask(paths, UPDATABLE_PATHS);
    await this.#owned(principal, id);
    const update: MemoryUpdate = {
      principal,
      id,
      etag: request.etag,
      memory: m,
      paths: paths as UpdatablePath[],
    };
    if (request.validateOnly) {
      const { current, j, now } = await inTransaction(this.#deps.store, (trx) =>
        this.#judgeUpdate(trx, update),
      );
      const after =
        j.memory === undefined
          ? current
          : {
              ...current,
              ...contentChanges(current, j.memory),
              ...(j.outcome === 'QUARANTINED' ? { status: 'QUARANTINED' as const } : {}),
              updatedAt: now,
            };
      return { memory: memoryMessage(after), decision: decisionMessage(j, after) };
    }
    const { memory, j } = await inTransaction(this.#deps.store, (trx) => this.#commitUpdate(trx, update));
    return { memory: memoryMessage(memory), decision: decisionMessage(j, memory) };
  };

  /** DeleteMemory: soft deletion (DELETED), and with `purge` the hard deletion of the memory. */
  readonly deleteMemory: GovernanceImpl['deleteMemory'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const id = parseMemoryName(request.name);
    checkReason(request.reason);
    await this.#owned(principal, id);
    const memory = await inTransaction(this.#deps.store, async (trx) => {
      const current = await this.#reread(trx, principal.tenantId, id, request.etag);
      const now = Date.now();
      const deleted =
        current.status === 'DELETED'
          ? current
          : await this.#memories.update(
              trx,
              current.tenantId,
              id,
              current.version,
              {
                status: 'DELETED',
                statusReason: request.reason === '' ? 'deleted by its owner' : request.reason,
              },
              {
                action: 'DELETE',
                actorKind: actorOf(principal),
                actorId: principal.subject,
                reason: request.reason,
              },
              now,
            );
      if (request.purge) {
        await this.#memories.purge(trx, current.tenantId, [id], { erasedBy: `memories/${id}` }, now);
      }
      return deleted;
    });
    if (request.purge) this.#log.info({ memory: `memories/${id}` }, 'memory purged');
    return { memory: memoryMessage(memory) };
  };

  /**
   * RestoreMemory: a DELETED or EXPIRED memory back to ACTIVE (QUARANTINED if it was when deleted),
   * with the rules that may have changed their verdict run again.
   */
  readonly restoreMemory: GovernanceImpl['restoreMemory'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const id = parseMemoryName(request.name);
    checkReason(request.reason);
    const requestedExpiry =
      request.expireTime === undefined ? undefined : checkedTimestampMs(request.expireTime, 'expire_time');
    if (requestedExpiry !== undefined && requestedExpiry <= Date.now()) {
      throw errors.fieldInvalid('expire_time', 'must be in the future');
    }
    await this.#owned(principal, id);
    const rules = rulesOnly(
      RESTORE_RULES,
      'not run again on restore',
      this.#deps.policies(principal.tenantId),
    );
    const { memory, j } = await inTransaction(this.#deps.store, async (trx) => {
      const current = await this.#reread(trx, principal.tenantId, id, request.etag);
      const last = await this.#restorable(trx, current);
      return this.#restore(trx, current, { principal, rules, reason: request.reason, requestedExpiry, last });
    });
    return { memory: memoryMessage(memory), decision: decisionMessage(j, memory) };
  };

  /**
   * ReviewMemory (administrators): REJECT deletes a QUARANTINED memory; APPROVE makes it ACTIVE,
   * judged again as its owner's, and supersedes the FACT it was held back from replacing.
   */
  readonly reviewMemory: GovernanceImpl['reviewMemory'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const id = parseMemoryName(request.name);
    requireAdmin(principal, 'ReviewMemory');
    // UNSPECIFIED (or a value this server does not know) is no verdict.
    if (request.verdict !== ReviewVerdict.APPROVE && request.verdict !== ReviewVerdict.REJECT) {
      throw errors.fieldRequired('verdict');
    }
    if (request.reason === '') throw errors.fieldRequired('reason');
    checkReason(request.reason);
    const rules = rulesOnly(
      APPROVE_RULES,
      'not run again on approval',
      this.#deps.policies(principal.tenantId),
    );
    const revision: ReviewRevision = (action, rule) => ({
      action,
      actorKind: 'ADMIN' as const,
      actorId: principal.subject,
      reason: request.reason,
      ...(rule !== undefined ? { rule } : {}),
    });
    const { memory, j } = await inTransaction(this.#deps.store, async (trx) => {
      // An administrator reviews every memory of the tenant, whatever its scope.
      const current = await this.#reread(trx, principal.tenantId, id, request.etag);
      if (current.status !== 'QUARANTINED') {
        throw stateConflict(current, `is ${current.status}; only QUARANTINED memories are reviewed`);
      }
      const now = Date.now();
      if (request.verdict === ReviewVerdict.REJECT) {
        const rejected = await this.#memories.update(
          trx,
          current.tenantId,
          id,
          current.version,
          { status: 'DELETED', statusReason: request.reason },
          revision('REJECT'),
          now,
        );
        return { memory: rejected, j: undefined };
      }
      return this.#approve(trx, current, rules, revision, now);
    });
    return {
      memory: memoryMessage(memory),
      ...(j !== undefined ? { decision: decisionMessage(j, memory) } : {}),
    };
  };

  /** A memory the caller may see and owns (NOT_FOUND if not visible, NOT_OWNER if not theirs). */
  async #owned(principal: Principal, id: string): Promise<MemoryRecord> {
    const memory = await this.#memories.getVisible(viewerOf(principal), id);
    if (memory.ownerId !== principal.subject) {
      throw errors.permissionDenied('NOT_OWNER', `only the owner of memories/${id} may change it`, {
        name: `memories/${id}`,
      });
    }
    return memory;
  }

  /** The memory re-read in the write transaction, with the etag checked against it. */
  async #reread(trx: Executor, tenantId: string, id: string, etag: string): Promise<MemoryRecord> {
    const memory = await this.#memories.get(tenantId, id, trx);
    if (memory === undefined) throw errors.notFound(`memories/${id}`);
    checkEtag(etag, memory);
    return memory;
  }

  /** `candidate` (the stored memory `current`, changed) judged again, blind to `current` itself. */
  async #judgeAgain(
    trx: Executor,
    current: MemoryRecord,
    candidate: Candidate,
    as: { principal: RulePrincipal; policy: GovernancePolicy; now: number },
  ): Promise<Judgement> {
    const [j] = await judge([candidate], {
      principal: as.principal,
      owner: current.ownerId,
      now: as.now,
      policy: as.policy,
      lookups: lookupsExcept(this.#memories, trx, current),
      mode: 'propose',
    });
    if (j === undefined) throw new Error('judge returned no judgement');
    return j;
  }

  /** The memory with the update's paths applied, judged (what validate_only answers with). */
  async #judgeUpdate(trx: Executor, u: MemoryUpdate): Promise<Judged> {
    const current = await this.#reread(trx, u.principal.tenantId, u.id, u.etag);
    if (current.status !== 'ACTIVE' && current.status !== 'QUARANTINED') {
      throw stateConflict(current, `is ${current.status} and cannot be updated`);
    }
    const next = u.paths.reduce((c, path) => UPDATES[path](c, u.memory), candidateFromRecord(current));
    const now = Date.now();
    const judged = await this.#judgeAgain(trx, current, next, {
      principal: u.principal,
      policy: this.#deps.policies(u.principal.tenantId),
      now,
    });
    // An update changes a memory in place: it never supersedes another one.
    const j: Judgement =
      judged.outcome === 'SUPERSEDED'
        ? { ...judged, outcome: 'ACCEPTED', reason: 'Accepted; updated in place.' }
        : judged;
    return { current, j, now };
  }

  /** Judges the update and writes it (a QUARANTINED verdict quarantines an ACTIVE memory). */
  async #commitUpdate(trx: Executor, u: MemoryUpdate): Promise<{ memory: MemoryRecord; j: Judgement }> {
    const { current, j: judged, now } = await this.#judgeUpdate(trx, u);
    let j = judged;
    if (j.outcome === 'MERGED_DUPLICATE') {
      throw errors.invalidArgument(
        'MEMORY_REJECTED',
        `the updated memory would be identical to ${j.duplicateOfId === undefined ? 'another memory' : `memories/${j.duplicateOfId}`}`,
        {
          rule: 'dedupe_supersede',
          ...(j.duplicateOfId !== undefined ? { name: `memories/${j.duplicateOfId}` } : {}),
        },
      );
    }
    if (j.outcome === 'REJECTED') throw refusal(j, 'memory.');
    checkScopeKept(j, current);
    if (u.paths.includes('evergreen') && u.memory.evergreen) {
      const refused = evergreenRefusal(j);
      if (refused !== undefined) throw refused;
    }
    const plan = j.memory;
    if (plan === undefined) throw new Error('an accepted judgement without a plan');
    const quarantine = j.outcome === 'QUARANTINED' && current.status === 'ACTIVE';
    if (current.status === 'QUARANTINED' && j.outcome !== 'QUARANTINED') {
      j = { ...j, outcome: 'QUARANTINED', reason: 'Updated; stays quarantined until reviewed.' };
    }
    const patch: ContentPatch = {
      ...contentChanges(current, plan),
      ...(quarantine ? { status: 'QUARANTINED' as const, statusReason: plan.statusReason } : {}),
    };
    if (Object.keys(patch).length === 0) return { memory: current, j };
    const updated = await this.#memories.update(
      trx,
      current.tenantId,
      current.id,
      current.version,
      patch,
      {
        action: quarantine ? 'QUARANTINE' : 'UPDATE',
        actorKind: actorOf(u.principal),
        actorId: u.principal.subject,
        reason: quarantine ? j.reason : 'updated by its owner',
        ...(quarantine ? { rule: j.decidingRule } : {}),
      },
      now,
    );
    return { memory: updated, j };
  }

  /**
   * Checks that `current` may be restored (STATE_CONFLICT otherwise) and returns the latest
   * revision before its deletion, whose state a restore goes back to.
   */
  async #restorable(trx: Executor, current: MemoryRecord): Promise<MemoryRevisionRecord | undefined> {
    if (current.status !== 'DELETED' && current.status !== 'EXPIRED') {
      throw stateConflict(current, `is ${current.status}; only DELETED or EXPIRED memories can be restored`);
    }
    const last = await this.#memories.latestRevision(current.tenantId, current.id, trx);
    if (last?.action === 'REJECT') {
      throw stateConflict(
        current,
        'was rejected by a review and cannot be restored; write a new memory instead',
      );
    }
    const previous = last?.action === 'DELETE' ? last.before?.status : undefined;
    if (previous === 'SUPERSEDED' || current.supersededById !== undefined) {
      throw stateConflict(current, 'was superseded before it was deleted and cannot be restored');
    }
    if (current.type === 'FACT') {
      const holder = await this.#memories.findActiveByKey(trx, current);
      if (holder !== undefined && holder.id !== current.id) {
        throw stateConflict(
          current,
          `has the identity of the ACTIVE FACT memories/${holder.id}; delete it first`,
          {
            name: `memories/${holder.id}`,
          },
        );
      }
    }
    return last;
  }

  /** Judges the restored memory (a lapsed expiry renewed) and writes it back. */
  async #restore(
    trx: Executor,
    current: MemoryRecord,
    r: {
      principal: Principal;
      rules: RuleSubset;
      reason: string;
      requestedExpiry: number | undefined;
      /** The latest revision (a deletion's records the state the memory goes back to). */
      last: MemoryRevisionRecord | undefined;
    },
  ): Promise<{ memory: MemoryRecord; j: Judgement }> {
    const { principal, last } = r;
    const now = Date.now();
    const expired = current.expiresAt !== undefined && current.expiresAt <= now;
    const defaultTtl = this.#deps.policies(principal.tenantId).ttlLimits[current.type]?.defaultTtlMs;
    const expiresAt = expired
      ? (r.requestedExpiry ?? (defaultTtl !== undefined ? now + defaultTtl : undefined))
      : current.expiresAt;
    const quarantined = last?.action === 'DELETE' && last.before?.status === 'QUARANTINED';
    const status = quarantined ? ('QUARANTINED' as const) : ('ACTIVE' as const);
    const judged = await this.#judgeAgain(
      trx,
      current,
      { ...candidateFromRecord(current), expiresAt },
      { principal, policy: r.rules.policy, now },
    );
    const j = r.rules.explain(judged);
    if (j.outcome === 'MERGED_DUPLICATE') {
      const name = j.duplicateOfId === undefined ? '' : `memories/${j.duplicateOfId}`;
      throw stateConflict(current, `is identical to ${name || 'another memory'}; delete it first`, { name });
    }
    if (j.outcome === 'SUPERSEDED') {
      const name = j.supersedesId === undefined ? '' : `memories/${j.supersedesId}`;
      throw stateConflict(current, `has the identity of the ACTIVE FACT ${name}; delete it first`, { name });
    }
    if (j.outcome === 'REJECTED') throw refusal(j, '');
    checkScopeKept(j, current);
    const patch: ContentPatch = {
      status,
      statusReason: status === 'QUARANTINED' ? (last?.before?.statusReason ?? '') : '',
      expiresAt: j.memory?.expiresAt ?? expiresAt,
    };
    const restored = await this.#memories.update(
      trx,
      current.tenantId,
      current.id,
      current.version,
      patch,
      { action: 'RESTORE', actorKind: actorOf(principal), actorId: principal.subject, reason: r.reason },
      now,
    );
    return { memory: restored, j: status === 'QUARANTINED' ? { ...j, outcome: 'QUARANTINED' as const } : j };
  }

  /**
   * Approves a QUARANTINED memory: judged again as its owner's (only the rules whose verdict may
   * have changed), deleted if it now duplicates another, else ACTIVE, superseding the FACT it
   * replaces.
   */
  async #approve(
    trx: Executor,
    current: MemoryRecord,
    rules: RuleSubset,
    revision: ReviewRevision,
    now: number,
  ): Promise<{ memory: MemoryRecord; j: Judgement }> {
    const judged = await this.#judgeAgain(trx, current, candidateFromRecord(current), {
      principal: ownerPrincipal(current),
      policy: rules.policy,
      now,
    });
    let j = rules.explain(judged);
    if (j.outcome === 'REJECTED') throw refusal(j, '');
    if (j.outcome === 'MERGED_DUPLICATE') {
      const name = j.duplicateOfId === undefined ? 'another memory' : `memories/${j.duplicateOfId}`;
      const merged = await this.#memories.update(
        trx,
        current.tenantId,
        current.id,
        current.version,
        { status: 'DELETED', statusReason: `approved as a duplicate of ${name}` },
        revision('DELETE', 'dedupe_supersede'),
        now,
      );
      return { memory: merged, j };
    }
    // The reviewer's approval is the review a lower-trust replacement was held for.
    let replaced = j.supersedesId;
    if (j.outcome === 'QUARANTINED' && current.type === 'FACT') {
      const holder = await this.#memories.findActiveByKey(trx, current);
      replaced = holder?.id;
      j = {
        ...j,
        outcome: replaced === undefined ? 'ACCEPTED' : 'SUPERSEDED',
        decidingRule: 'dedupe_supersede',
        reason:
          replaced === undefined
            ? 'Approved by review.'
            : `Approved by review; supersedes memories/${replaced}.`,
        ...(replaced !== undefined ? { supersedesId: replaced } : {}),
      };
    } else if (j.outcome === 'QUARANTINED') {
      j = { ...j, outcome: 'ACCEPTED', reason: 'Approved by review.' };
    }
    const approved = await this.#memories.update(
      trx,
      current.tenantId,
      current.id,
      current.version,
      {
        status: 'ACTIVE',
        statusReason: '',
        evergreen: j.memory?.evergreen ?? current.evergreen,
        ...(replaced !== undefined ? { supersedesId: replaced } : {}),
      } satisfies ContentPatch,
      revision('APPROVE', replaced !== undefined ? 'dedupe_supersede' : undefined),
      now,
    );
    if (replaced !== undefined) {
      await markSuperseded(
        trx,
        this.#memories,
        { tenantId: current.tenantId, id: replaced },
        current.id,
        revision('SUPERSEDE', 'dedupe_supersede'),
        now,
      );
    }
    return { memory: approved, j };
  }
}
