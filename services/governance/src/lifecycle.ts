/**
 * What the memory lifecycle of `engram.governance.v1.GovernanceService` (issue 6, "Lifecycle API")
 * shares: direct writes, updates with a field mask, soft and hard deletion, restore and the review
 * of quarantined memories run the hard rules of `domain/rules/` again on a stored memory, and are
 * refused, or committed with their revision and outbox row by `MemoryRepository`, the same way.
 */
import type { Memory } from '@engram/contracts/governance';
import { errors, type EngramError, type Logger, type Principal } from '@engram/runtime';
import {
  etagMismatch,
  type Executor,
  type MemoryPatch,
  type MemoryRecord,
  type MemoryRepository,
} from '@engram/store';
import type { Candidate } from './domain/candidate.js';
import { RULE_NAMES, isRuleEnabled, type GovernancePolicy, type RuleName } from './domain/rules/policy.js';
import type { Judgement, RuleLookups, RulePrincipal } from './domain/rules/types.js';
import { storeLookups } from './extraction.js';
import { withTime } from './memory-api.js';

/** The paths UpdateMemory may change (`UpdateMemoryRequest.update_mask`). */
export const UPDATABLE_PATHS = [
  'text',
  'value',
  'evergreen',
  'confidence',
  'occur_time',
  'expire_time',
  'valid_from_time',
  'valid_until_time',
  'metadata',
] as const;
export type UpdatablePath = (typeof UPDATABLE_PATHS)[number];

/** How each updatable path changes the stored memory's candidate: the request's field replaces it. */
export const UPDATES: Readonly<Record<UpdatablePath, (c: Candidate, m: Memory) => Candidate>> = {
  text: (c, m) => ({ ...c, text: m.text }),
  value: (c, m) => ({ ...c, value: m.value }),
  evergreen: (c, m) => ({ ...c, evergreen: m.evergreen }),
  confidence: (c, m) => {
    if (m.confidence === undefined) throw errors.fieldRequired('memory.confidence');
    return { ...c, confidence: m.confidence };
  },
  occur_time: (c, m) => withTime(c, 'occur_time', m),
  expire_time: (c, m) => withTime(c, 'expire_time', m),
  valid_from_time: (c, m) => withTime(c, 'valid_from_time', m),
  valid_until_time: (c, m) => withTime(c, 'valid_until_time', m),
  metadata: (c, m) => ({ ...c, metadata: { ...m.metadata } }),
};

/** The rules RestoreMemory and an approving ReviewMemory run again (besides the mandatory ones). */
export const RESTORE_RULES: readonly RuleName[] = [
  'schema',
  'scope_authorization',
  'ttl_cap',
  'dedupe_supersede',
  'quota',
];
export const APPROVE_RULES: readonly RuleName[] = ['dedupe_supersede', 'quota'];

/** ABORTED `ETAG_MISMATCH` unless `etag` is empty or the memory's. */
export function checkEtag(etag: string, memory: MemoryRecord): void {
  if (etag !== '' && etag !== `"${memory.version}"`) throw etagMismatch(`memories/${memory.id}`);
}

/** FAILED_PRECONDITION `STATE_CONFLICT`: the memory's state forbids the change. */
export function stateConflict(
  memory: MemoryRecord,
  why: string,
  metadata: Record<string, string> = {},
): EngramError {
  return errors.failedPrecondition('STATE_CONFLICT', `memories/${memory.id} ${why}`, {
    state: memory.status,
    ...metadata,
  });
}

/** The error a refused write fails with (see `Judgement.rejection`). */
export function refusal(j: Judgement, fieldPrefix: string): EngramError {
  const rejection = j.rejection ?? { reason: 'MEMORY_REJECTED' as const };
  const metadata = {
    ...rejection.details,
    ...(rejection.field !== undefined ? { field: `${fieldPrefix}${rejection.field}` } : {}),
    rule: j.decidingRule,
  };
  switch (rejection.reason) {
    case 'SCOPE_NOT_ALLOWED':
      return errors.permissionDenied('SCOPE_NOT_ALLOWED', j.reason, metadata);
    case 'QUOTA_EXCEEDED':
      return errors.resourceExhausted('QUOTA_EXCEEDED', j.reason, metadata);
    default:
      return errors.invalidArgument(rejection.reason, j.reason, metadata);
  }
}

/**
 * PERMISSION_DENIED `SCOPE_NOT_ALLOWED` when rule `scope_authorization` narrowed the stored
 * memory's scope: its scope is fixed, so the caller may no longer write it.
 */
export function checkScopeKept(j: Judgement, current: MemoryRecord): void {
  if (j.evaluations.some((e) => e.rule === 'scope_authorization' && e.verdict === 'ADJUSTED')) {
    throw errors.permissionDenied(
      'SCOPE_NOT_ALLOWED',
      `the caller may no longer use the ${current.scope} scope`,
      { scope: current.scope, rule: 'scope_authorization' },
    );
  }
}

/** RESOURCE_EXHAUSTED `QUOTA_EXCEEDED` when rule `quota` dropped a requested evergreen pin. */
export function evergreenRefusal(j: Judgement): EngramError | undefined {
  const e = j.evaluations.find(
    (x) => x.rule === 'quota' && x.verdict === 'ADJUSTED' && x.field === 'evergreen',
  );
  return e === undefined
    ? undefined
    : errors.resourceExhausted('QUOTA_EXCEEDED', e.note ?? 'the evergreen quota is exhausted', {
        quota: 'evergreen_per_owner',
        ...e.details,
        rule: 'quota',
      });
}

/** A stored memory as a candidate, to judge it again (update, restore, review). */
export function candidateFromRecord(r: MemoryRecord): Candidate {
  return {
    type: r.type,
    ...(r.type === 'FACT' ? { namespace: r.namespace, key: r.key } : {}),
    ...(r.value !== undefined ? { value: r.value } : {}),
    text: r.text,
    ...(r.languageCode !== '' ? { languageCode: r.languageCode } : {}),
    sourceKind: r.sourceKind,
    scopeHint: r.scope,
    ...(r.scope === 'ORG' ? { orgId: r.orgId } : {}),
    confidence: r.confidence,
    ...(r.expiresAt !== undefined ? { expiresAt: r.expiresAt } : {}),
    ...(r.occurredAt !== undefined ? { occurredAt: r.occurredAt } : {}),
    ...(r.validFrom !== undefined ? { validFrom: r.validFrom } : {}),
    ...(r.validUntil !== undefined ? { validUntil: r.validUntil } : {}),
    evidence: {
      messageIds: [...r.evidence.messageIds],
      ...(r.evidence.sessionId !== undefined ? { sessionId: r.evidence.sessionId } : {}),
      ...(r.evidence.memCellId !== undefined ? { memCellId: r.evidence.memCellId } : {}),
      chunkIds: [...r.evidence.chunkIds],
      ...(r.evidence.excerpt !== undefined ? { excerpt: r.evidence.excerpt } : {}),
    },
    evergreen: r.evergreen,
    metadata: { ...r.metadata },
  };
}

/** The memory's rights for rule `scope_authorization` when someone else (a reviewer) acts on it. */
export function ownerPrincipal(m: MemoryRecord): RulePrincipal {
  return {
    subject: m.ownerId,
    tenantId: m.tenantId,
    orgIds: m.scope === 'ORG' ? [m.orgId] : [],
    roles: m.scope === 'PLATFORM' ? ['platform'] : [],
  };
}

/**
 * The memories of `read` that `principal` saw only as a reviewer (QUARANTINED, of another
 * owner): the reads the audit records (decision 0027).
 */
export function reviewReads(principal: Principal, read: Iterable<MemoryRecord>): string[] {
  if (!principal.roles.includes('admin')) return [];
  return [...read]
    .filter((m) => m.status === 'QUARANTINED' && m.ownerId !== principal.subject)
    .map((m) => `memories/${m.id}`);
}

/**
 * Audits a read of other owners' quarantined memories under the reviewer rule: one `review_read`
 * line per call naming the reviewer, the method and the memories (names only, never content).
 * A line, not a revision: revisions are versions of the memory (unique per version), and a read
 * that bumped the version would break its owner's etag (decision 0027).
 */
export function auditReviewReads(
  logger: Logger,
  principal: Principal,
  method: string,
  read: Iterable<MemoryRecord>,
): void {
  const names = reviewReads(principal, read);
  if (names.length === 0) return;
  logger.info(
    { audit: 'review_read', tenant: principal.tenantId, actor: principal.subject, method, memories: names },
    'reviewer read quarantined memories',
  );
}

/** Who a caller is in a revision: a service, or a user. */
export const actorOf = (principal: Principal) =>
  principal.roles.includes('service') ? ('SERVICE' as const) : ('USER' as const);

/** The patch fields a judged plan carries, as `MemoryRepository.update` takes them. */
export type ContentPatch = MemoryPatch & { occurredAt?: number; supersedesId?: string };

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** The fields of `plan` that differ from `current`. */
export function contentChanges(current: MemoryRecord, plan: NonNullable<Judgement['memory']>): ContentPatch {
  const next: ContentPatch = {
    text: plan.text,
    value: plan.value,
    evergreen: plan.evergreen,
    confidence: plan.confidence,
    occurredAt: plan.occurredAt,
    expiresAt: plan.expiresAt,
    validFrom: plan.validFrom,
    validUntil: plan.validUntil,
    metadata: plan.metadata,
  };
  const changed: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(next)) {
    if (!same(current[k as keyof MemoryRecord], v)) changed[k] = v;
  }
  return changed;
}

/** A plan (validate_only) as a memory record that was never stored: no id, version 0. */
export function unsavedRecord(
  plan: NonNullable<Judgement['memory']>,
  contentHash: string,
  now: number,
): MemoryRecord {
  return { ...plan, id: '', contentHash, createdAt: now, updatedAt: now, version: 0 };
}

/** A policy that evaluates only some rules again, and the fixer of a judgement's trace for it. */
export interface RuleSubset {
  readonly policy: GovernancePolicy;
  /** Notes `why` on the rules left out (they were evaluated when the memory was written). */
  readonly explain: (j: Judgement) => Judgement;
}

/** The policy with only `keep` (and the mandatory rules) evaluated. */
export function rulesOnly(keep: readonly RuleName[], why: string, base: GovernancePolicy): RuleSubset {
  const policy: GovernancePolicy = {
    ...base,
    disabledRules: RULE_NAMES.filter((r) => !keep.includes(r) || !isRuleEnabled(base, r)),
  };
  const explain = (j: Judgement): Judgement => ({
    ...j,
    evaluations: j.evaluations.map((e) =>
      e.verdict === 'NOT_EVALUATED' && !keep.includes(e.rule) && isRuleEnabled(base, e.rule)
        ? { ...e, note: why }
        : e,
    ),
  });
  return { policy, explain };
}

/** Rule lookups over the store that do not see `self` (the memory being judged again). */
export function lookupsExcept(memories: MemoryRepository, trx: Executor, self: MemoryRecord): RuleLookups {
  const base = storeLookups(memories, trx, self.tenantId);
  const counted = self.status === 'ACTIVE';
  return {
    async findByContentHash(hash, place) {
      const found = await memories.findByContentHash(trx, self.tenantId, place.ownerId, hash);
      return found.find((m) => m.id !== self.id && m.scope === place.scope && m.orgId === place.orgId)?.id;
    },
    async findActiveFact(namespace, key, place) {
      const found = await base.findActiveFact(namespace, key, place);
      return found?.id === self.id ? undefined : found;
    },
    async countActive(ownerId, type) {
      const n = await base.countActive(ownerId, type);
      const mine = counted && ownerId === self.ownerId && (type === undefined || type === self.type);
      return mine ? n - 1 : n;
    },
    async countActiveEvergreen(ownerId) {
      const n = await base.countActiveEvergreen(ownerId);
      return counted && self.evergreen && ownerId === self.ownerId ? n - 1 : n;
    },
  };
}
