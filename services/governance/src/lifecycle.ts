import {
  checkedTimestampMs,
  MEMORY_TYPE_NAMES,
  SCOPE_NAMES,
  SOURCE_KIND_NAMES,
  checkUpdateMask,
  evidenceFromNames,
} from '@engram/resources';
/**
 * The memory lifecycle of `engram.governance.v1.GovernanceService` (issue 6, "Lifecycle API"):
 * direct writes (CreateMemory), updates with a field mask, soft and hard deletion, restore, the
 * review of quarantined memories, the revision history and the effective policy. Every write runs
 * the hard rules of `domain/rules/` again and is committed with its revision and outbox row by
 * `MemoryRepository` in one transaction.
 */
import { create, toJsonString, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import { Scope as ScopeEnum } from '@engram/contracts/common';
import {
  ActorKind as ActorKindEnum,
  DecisionSchema,
  MemorySchema,
  RevisionAction as RevisionActionEnum,
  ReviewVerdict,
  SourceKind as SourceKindEnum,
  type GovernanceService,
  type Memory,
  type MemoryRevisionSchema,
} from '@engram/contracts/governance';
import { errors, requirePrincipal, type EngramError, type Logger, type Principal } from '@engram/runtime';
import {
  MemoryRepository,
  checkRequestId,
  etagMismatch,
  idempotent,
  inTransaction,
  requestKeyOf,
  viewerOf,
  type Executor,
  type MemoryPatch,
  type MemoryRecord,
  type MemoryRevisionRecord,
  type RevisionAction,
  type Store,
} from '@engram/store';
import type { Candidate } from './domain/candidate.js';
import { judge } from './domain/rules/engine.js';
import { RULE_NAMES, isRuleEnabled, type GovernancePolicy, type RuleName } from './domain/rules/policy.js';
import type { Judgement, RuleLookups, RulePrincipal } from './domain/rules/types.js';
import { commitJudgements, storeLookups } from './extraction.js';
import { decisionMessage } from './jobs-api.js';
import { memoryMessage, parseMemoryName } from './memory-api.js';
import { policyMessage } from './policy-api.js';

/** What the lifecycle handlers are built from (a subset of `GovernanceDeps`). */
export interface LifecycleDeps {
  readonly logger: Logger;
  readonly store: Store;
  readonly policies: (tenantId: string) => GovernancePolicy;
}

const SERVICE = 'engram.governance.v1.GovernanceService';
const ULID = '[0-9A-HJKMNP-TV-Z]{26}';
const REVISION_NAME = new RegExp(`^memories/(${ULID})/revisions/(${ULID})$`);
const MAX_REASON_CHARS = 1_000;
const ADMIN_ROLE = 'admin';

/** The paths UpdateMemory may change (`UpdateMemoryRequest.update_mask`). */
const UPDATABLE_PATHS = [
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
type UpdatablePath = (typeof UPDATABLE_PATHS)[number];

/** The rules RestoreMemory and an approving ReviewMemory run again (besides the mandatory ones). */
const RESTORE_RULES: readonly RuleName[] = [
  'schema',
  'scope_authorization',
  'ttl_cap',
  'dedupe_supersede',
  'quota',
];
const APPROVE_RULES: readonly RuleName[] = ['dedupe_supersede', 'quota'];

const REVISION_ACTIONS: Record<RevisionAction, RevisionActionEnum> = {
  CREATE: RevisionActionEnum.CREATE,
  UPDATE: RevisionActionEnum.UPDATE,
  SUPERSEDE: RevisionActionEnum.SUPERSEDE,
  EXPIRE: RevisionActionEnum.EXPIRE,
  DELETE: RevisionActionEnum.DELETE,
  RESTORE: RevisionActionEnum.RESTORE,
  QUARANTINE: RevisionActionEnum.QUARANTINE,
  APPROVE: RevisionActionEnum.APPROVE,
  REJECT: RevisionActionEnum.REJECT,
  // Redaction changes fields; the API has no action of its own for it.
  REDACT: RevisionActionEnum.UPDATE,
};
/** Record fields as the API's field paths (`MemoryRevision.changed_paths`); others are left out. */
const FIELD_PATHS: Readonly<Record<string, string>> = {
  text: 'text',
  value: 'value',
  evergreen: 'evergreen',
  confidence: 'confidence',
  occurredAt: 'occur_time',
  expiresAt: 'expire_time',
  validFrom: 'valid_from_time',
  validUntil: 'valid_until_time',
  metadata: 'metadata',
  statusReason: 'status_reason',
  supersedesId: 'supersedes',
  supersededById: 'superseded_by',
};

const ms = (t: Timestamp | undefined, field: string) =>
  t === undefined ? undefined : checkedTimestampMs(t, field);

function checkReason(reason: string): void {
  if (Array.from(reason).length > MAX_REASON_CHARS) {
    throw errors.fieldInvalid('reason', `at most ${MAX_REASON_CHARS} characters`);
  }
}

function requireAdmin(principal: Principal, method: string): void {
  if (!principal.roles.includes(ADMIN_ROLE)) {
    throw errors.permissionDenied('ROLE_REQUIRED', `${method} requires the ${ADMIN_ROLE} role`, {
      role: ADMIN_ROLE,
    });
  }
}

function checkEtag(etag: string, memory: MemoryRecord): void {
  if (etag !== '' && etag !== `"${memory.version}"`) throw etagMismatch(`memories/${memory.id}`);
}

function stateConflict(
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
function refusal(j: Judgement, fieldPrefix: string): EngramError {
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

/** The evaluation of a rule that narrowed a fixed scope, or dropped a requested evergreen pin. */
function fixedScopeNarrowed(j: Judgement): boolean {
  return j.evaluations.some((e) => e.rule === 'scope_authorization' && e.verdict === 'ADJUSTED');
}

function evergreenRefusal(j: Judgement): EngramError | undefined {
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

/** A client's `Memory` (CreateMemory) as a candidate of the hard rules. */
function candidateFromMemory(m: Memory): Candidate {
  const type = MEMORY_TYPE_NAMES[m.type];
  if (type === undefined) throw errors.fieldRequired('memory.type');
  const sourceKind =
    m.sourceKind === SourceKindEnum.UNSPECIFIED ? 'EXPLICIT_USER_STATEMENT' : SOURCE_KIND_NAMES[m.sourceKind];
  if (sourceKind === undefined) throw errors.fieldInvalid('memory.source_kind', 'unknown source kind');
  const scope = m.scope === ScopeEnum.UNSPECIFIED ? undefined : SCOPE_NAMES[m.scope];
  if (m.scope !== ScopeEnum.UNSPECIFIED && scope === undefined) {
    throw errors.fieldInvalid('memory.scope', 'unknown scope');
  }
  return {
    type,
    ...(m.namespace !== '' ? { namespace: m.namespace } : {}),
    ...(m.key !== '' ? { key: m.key } : {}),
    ...(m.value !== undefined ? { value: m.value } : {}),
    text: m.text,
    ...(m.languageCode !== '' ? { languageCode: m.languageCode } : {}),
    sourceKind,
    ...(scope !== undefined ? { scopeHint: scope } : {}),
    ...(m.orgId !== '' ? { orgId: m.orgId } : {}),
    confidence: m.confidence ?? 1,
    ...(m.expireTime !== undefined ? { expiresAt: ms(m.expireTime, 'expire_time') } : {}),
    ...(m.occurTime !== undefined ? { occurredAt: ms(m.occurTime, 'occur_time') } : {}),
    ...(m.validFromTime !== undefined ? { validFrom: ms(m.validFromTime, 'valid_from_time') } : {}),
    ...(m.validUntilTime !== undefined ? { validUntil: ms(m.validUntilTime, 'valid_until_time') } : {}),
    evidence: evidenceFromNames(m.evidence),
    evergreen: m.evergreen,
    metadata: { ...m.metadata },
  };
}

/** A stored memory as a candidate, to judge it again (update, restore, review). */
function candidateFromRecord(r: MemoryRecord): Candidate {
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
function ownerPrincipal(m: MemoryRecord): RulePrincipal {
  return {
    subject: m.ownerId,
    tenantId: m.tenantId,
    orgIds: m.scope === 'ORG' ? [m.orgId] : [],
    roles: m.scope === 'PLATFORM' ? ['platform'] : [],
  };
}

/** The patch fields a judged plan carries, as `MemoryRepository.update` takes them. */
type ContentPatch = MemoryPatch & { occurredAt?: number; supersedesId?: string };

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** The fields of `plan` that differ from `current`. */
function contentChanges(current: MemoryRecord, plan: NonNullable<Judgement['memory']>): ContentPatch {
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
function unsavedRecord(
  plan: NonNullable<Judgement['memory']>,
  contentHash: string,
  now: number,
): MemoryRecord {
  return { ...plan, id: '', contentHash, createdAt: now, updatedAt: now, version: 0 };
}

function unsavedMessage(record: MemoryRecord): MessageInitShape<typeof MemorySchema> {
  return { ...memoryMessage(record), name: '', etag: '', version: 0n };
}

function revisionMessage(r: MemoryRevisionRecord): MessageInitShape<typeof MemoryRevisionSchema> {
  const system = r.actorKind === 'SYSTEM' || r.actorKind === 'RULE';
  const related =
    r.action === 'SUPERSEDE'
      ? r.after?.supersededById
      : r.action === 'CREATE'
        ? r.after?.supersedesId
        : undefined;
  const kinds: Record<MemoryRevisionRecord['actorKind'], ActorKindEnum> = {
    USER: ActorKindEnum.USER,
    ADMIN: ActorKindEnum.ADMIN,
    SERVICE: ActorKindEnum.SERVICE,
    EXTRACTOR: ActorKindEnum.EXTRACTOR,
    RULE: ActorKindEnum.SYSTEM,
    SYSTEM: ActorKindEnum.SYSTEM,
  };
  return {
    name: `memories/${r.memoryId}/revisions/${r.id}`,
    action: REVISION_ACTIONS[r.action],
    version: BigInt(r.version),
    actor: {
      kind: kinds[r.actorKind],
      subject: system ? '' : r.actorId,
      component: system ? (r.actorKind === 'RULE' && r.rule !== '' ? `rule.${r.rule}` : r.actorId) : '',
    },
    reason: r.reason,
    rule: r.rule,
    ...(r.before !== undefined ? { before: memoryMessage(r.before) } : {}),
    ...(r.after !== undefined ? { after: memoryMessage(r.after) } : {}),
    changedPaths: {
      paths: [
        ...new Set(r.changedPaths.flatMap((p) => (FIELD_PATHS[p] === undefined ? [] : [FIELD_PATHS[p]]))),
      ],
    },
    relatedMemory: related === undefined ? '' : `memories/${related}`,
    extractionJob: r.extractionJobId === undefined ? '' : `extractionJobs/${r.extractionJobId}`,
    requestId: r.requestId,
    createTime: timestampFromMs(r.createdAt),
  };
}

/**
 * The lifecycle methods of the governance service: CreateMemory, UpdateMemory, DeleteMemory,
 * RestoreMemory, ReviewMemory, ListMemoryRevisions, GetMemoryRevision and GetPolicy.
 */
export function createLifecycleHandlers(deps: LifecycleDeps): Partial<ServiceImpl<typeof GovernanceService>> {
  const memories = new MemoryRepository(deps.store);
  const loadedAt = Date.now();
  const log = deps.logger.child({ component: 'lifecycle' });

  /** Rule lookups over the store that do not see `self` (the memory being judged again). */
  const lookupsExcept = (trx: Executor, self: MemoryRecord): RuleLookups => {
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
  };

  /** The policy with only `keep` (and the mandatory rules) evaluated, and a fixer for the trace. */
  const only = (keep: readonly RuleName[], why: string, base: GovernancePolicy) => {
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
  };

  /** A memory the caller may see and owns (NOT_FOUND if not visible, NOT_OWNER if not theirs). */
  const owned = async (principal: Principal, id: string): Promise<MemoryRecord> => {
    const memory = await memories.getVisible(viewerOf(principal), id);
    if (memory.ownerId !== principal.subject) {
      throw errors.permissionDenied('NOT_OWNER', `only the owner of memories/${id} may change it`, {
        name: `memories/${id}`,
      });
    }
    return memory;
  };

  /** The memory re-read in the write transaction, with the etag checked against it. */
  const reread = async (trx: Executor, tenantId: string, id: string, etag: string) => {
    const memory = await memories.get(tenantId, id, trx);
    if (memory === undefined) throw errors.notFound(`memories/${id}`);
    checkEtag(etag, memory);
    return memory;
  };

  const actorOf = (principal: Principal) =>
    principal.roles.includes('service') ? ('SERVICE' as const) : ('USER' as const);

  return {
    async createMemory(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      checkRequestId(request.requestId);
      if (request.memory === undefined) throw errors.fieldRequired('memory');
      const candidate = candidateFromMemory(request.memory);
      const judgeNow = (trx: Executor, now: number) =>
        judge([candidate], {
          principal,
          owner: principal.subject,
          now,
          policy: deps.policies(principal.tenantId),
          lookups: storeLookups(memories, trx, principal.tenantId),
          mode: 'propose',
        });

      if (request.validateOnly) {
        const now = Date.now();
        const [j] = await inTransaction(deps.store, (trx) => judgeNow(trx, now));
        if (j === undefined) throw new Error('judge returned no judgement');
        if (j.outcome === 'MERGED_DUPLICATE') {
          const existing =
            j.duplicateOfId === undefined
              ? undefined
              : await memories.get(principal.tenantId, j.duplicateOfId);
          return {
            ...(existing !== undefined ? { memory: memoryMessage(existing) } : {}),
            decision: decisionMessage(j, existing),
          };
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
        deps.store,
        requestKeyOf(principal, `${SERVICE}/CreateMemory`, request.requestId),
        { memory: toJsonString(MemorySchema, request.memory) },
        async (trx) => {
          const now = Date.now();
          const [j] = await judgeNow(trx, now);
          if (j === undefined) throw new Error('judge returned no judgement');
          if (j.outcome === 'REJECTED') throw refusal(j, 'memory.');
          if (candidate.evergreen === true) {
            const refused = evergreenRefusal(j);
            if (refused !== undefined) throw refused;
          }
          const [stored] = await commitJudgements(
            trx,
            memories,
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
        result.memoryId === undefined ? undefined : await memories.get(principal.tenantId, result.memoryId);
      return {
        ...(memory !== undefined ? { memory: memoryMessage(memory) } : {}),
        decision: decisionMessage(result.judgement, memory),
      };
    },

    async updateMemory(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const m = request.memory;
      if (m === undefined) throw errors.fieldRequired('memory');
      const id = parseMemoryName(m.name, 'memory.name');
      const paths = request.updateMask?.paths ?? [];
      checkUpdateMask(paths, UPDATABLE_PATHS);
      await owned(principal, id);

      const run = async (trx: Executor) => {
        const current = await reread(trx, principal.tenantId, id, request.etag);
        if (current.status !== 'ACTIVE' && current.status !== 'QUARANTINED') {
          throw stateConflict(current, `is ${current.status} and cannot be updated`);
        }
        let next = candidateFromRecord(current);
        for (const path of paths as UpdatablePath[]) {
          switch (path) {
            case 'text':
              next = { ...next, text: m.text };
              break;
            case 'value':
              next = { ...next, value: m.value };
              break;
            case 'evergreen':
              next = { ...next, evergreen: m.evergreen };
              break;
            case 'confidence':
              if (m.confidence === undefined) throw errors.fieldRequired('memory.confidence');
              next = { ...next, confidence: m.confidence };
              break;
            case 'occur_time':
              next = { ...next, occurredAt: ms(m.occurTime, 'occur_time') };
              break;
            case 'expire_time':
              next = { ...next, expiresAt: ms(m.expireTime, 'expire_time') };
              break;
            case 'valid_from_time':
              next = { ...next, validFrom: ms(m.validFromTime, 'valid_from_time') };
              break;
            case 'valid_until_time':
              next = { ...next, validUntil: ms(m.validUntilTime, 'valid_until_time') };
              break;
            case 'metadata':
              next = { ...next, metadata: { ...m.metadata } };
              break;
          }
        }
        const now = Date.now();
        const [judged] = await judge([next], {
          principal,
          owner: current.ownerId,
          now,
          policy: deps.policies(principal.tenantId),
          lookups: lookupsExcept(trx, current),
          mode: 'propose',
        });
        if (judged === undefined) throw new Error('judge returned no judgement');
        // An update changes a memory in place: it never supersedes another one.
        const j: Judgement =
          judged.outcome === 'SUPERSEDED'
            ? { ...judged, outcome: 'ACCEPTED', reason: 'Accepted; updated in place.' }
            : judged;
        return { current, j, now };
      };

      if (request.validateOnly) {
        const { current, j, now } = await inTransaction(deps.store, run);
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

      const { memory, j } = await inTransaction(deps.store, async (trx) => {
        const { current, j: judged, now } = await run(trx);
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
        if (fixedScopeNarrowed(j)) {
          throw errors.permissionDenied(
            'SCOPE_NOT_ALLOWED',
            `the caller may no longer use the ${current.scope} scope`,
            {
              scope: current.scope,
              rule: 'scope_authorization',
            },
          );
        }
        if (paths.includes('evergreen') && m.evergreen) {
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
        const updated = await memories.update(
          trx,
          current.tenantId,
          current.id,
          current.version,
          patch,
          {
            action: quarantine ? 'QUARANTINE' : 'UPDATE',
            actorKind: actorOf(principal),
            actorId: principal.subject,
            reason: quarantine ? j.reason : 'updated by its owner',
            ...(quarantine ? { rule: j.decidingRule } : {}),
          },
          now,
        );
        return { memory: updated, j };
      });
      return { memory: memoryMessage(memory), decision: decisionMessage(j, memory) };
    },

    async deleteMemory(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const id = parseMemoryName(request.name);
      checkReason(request.reason);
      await owned(principal, id);
      const memory = await inTransaction(deps.store, async (trx) => {
        const current = await reread(trx, principal.tenantId, id, request.etag);
        const now = Date.now();
        const deleted =
          current.status === 'DELETED'
            ? current
            : await memories.update(
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
          await memories.purge(trx, current.tenantId, [id], { erasedBy: `memories/${id}` }, now);
        }
        return deleted;
      });
      if (request.purge) log.info({ memory: `memories/${id}` }, 'memory purged');
      return { memory: memoryMessage(memory) };
    },

    async restoreMemory(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const id = parseMemoryName(request.name);
      checkReason(request.reason);
      const requestedExpiry = ms(request.expireTime, 'expire_time');
      if (requestedExpiry !== undefined && requestedExpiry <= Date.now()) {
        throw errors.fieldInvalid('expire_time', 'must be in the future');
      }
      await owned(principal, id);
      const { policy, explain } = only(
        RESTORE_RULES,
        'not run again on restore',
        deps.policies(principal.tenantId),
      );
      const { memory, j } = await inTransaction(deps.store, async (trx) => {
        const current = await reread(trx, principal.tenantId, id, request.etag);
        if (current.status !== 'DELETED' && current.status !== 'EXPIRED') {
          throw stateConflict(
            current,
            `is ${current.status}; only DELETED or EXPIRED memories can be restored`,
          );
        }
        const last = await memories.latestRevision(current.tenantId, id, trx);
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
          const holder = await memories.findActiveByKey(trx, current);
          if (holder !== undefined && holder.id !== id) {
            throw stateConflict(
              current,
              `has the identity of the ACTIVE FACT memories/${holder.id}; delete it first`,
              {
                name: `memories/${holder.id}`,
              },
            );
          }
        }
        const now = Date.now();
        const expired = current.expiresAt !== undefined && current.expiresAt <= now;
        const defaultTtl = deps.policies(principal.tenantId).ttlLimits[current.type]?.defaultTtlMs;
        const expiresAt = expired
          ? (requestedExpiry ?? (defaultTtl !== undefined ? now + defaultTtl : undefined))
          : current.expiresAt;
        const status = previous === 'QUARANTINED' ? ('QUARANTINED' as const) : ('ACTIVE' as const);
        const [judged] = await judge([{ ...candidateFromRecord(current), expiresAt }], {
          principal,
          owner: current.ownerId,
          now,
          policy,
          lookups: lookupsExcept(trx, current),
          mode: 'propose',
        });
        if (judged === undefined) throw new Error('judge returned no judgement');
        const j = explain(judged);
        if (j.outcome === 'MERGED_DUPLICATE') {
          const name = j.duplicateOfId === undefined ? '' : `memories/${j.duplicateOfId}`;
          throw stateConflict(current, `is identical to ${name || 'another memory'}; delete it first`, {
            name,
          });
        }
        if (j.outcome === 'SUPERSEDED') {
          const name = j.supersedesId === undefined ? '' : `memories/${j.supersedesId}`;
          throw stateConflict(current, `has the identity of the ACTIVE FACT ${name}; delete it first`, {
            name,
          });
        }
        if (j.outcome === 'REJECTED') throw refusal(j, '');
        if (fixedScopeNarrowed(j)) {
          throw errors.permissionDenied(
            'SCOPE_NOT_ALLOWED',
            `the caller may no longer use the ${current.scope} scope`,
            {
              scope: current.scope,
              rule: 'scope_authorization',
            },
          );
        }
        const plan = j.memory;
        const patch: ContentPatch = {
          status,
          statusReason: status === 'QUARANTINED' ? (last?.before?.statusReason ?? '') : '',
          expiresAt: plan?.expiresAt ?? expiresAt,
        };
        const restored = await memories.update(
          trx,
          current.tenantId,
          id,
          current.version,
          patch,
          {
            action: 'RESTORE',
            actorKind: actorOf(principal),
            actorId: principal.subject,
            reason: request.reason,
          },
          now,
        );
        return {
          memory: restored,
          j: status === 'QUARANTINED' ? { ...j, outcome: 'QUARANTINED' as const } : j,
        };
      });
      return { memory: memoryMessage(memory), decision: decisionMessage(j, memory) };
    },

    async reviewMemory(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const id = parseMemoryName(request.name);
      requireAdmin(principal, 'ReviewMemory');
      // UNSPECIFIED (or a value this server does not know) is no verdict.
      if (request.verdict !== ReviewVerdict.APPROVE && request.verdict !== ReviewVerdict.REJECT) {
        throw errors.fieldRequired('verdict');
      }
      if (request.reason === '') throw errors.fieldRequired('reason');
      checkReason(request.reason);
      const { policy, explain } = only(
        APPROVE_RULES,
        'not run again on approval',
        deps.policies(principal.tenantId),
      );
      const revision = (action: RevisionAction, rule?: string) => ({
        action,
        actorKind: 'ADMIN' as const,
        actorId: principal.subject,
        reason: request.reason,
        ...(rule !== undefined ? { rule } : {}),
      });
      const { memory, j } = await inTransaction(deps.store, async (trx) => {
        // An administrator reviews every memory of the tenant, whatever its scope.
        const current = await reread(trx, principal.tenantId, id, request.etag);
        if (current.status !== 'QUARANTINED') {
          throw stateConflict(current, `is ${current.status}; only QUARANTINED memories are reviewed`);
        }
        const now = Date.now();
        if (request.verdict === ReviewVerdict.REJECT) {
          const rejected = await memories.update(
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
        const [judged] = await judge([candidateFromRecord(current)], {
          principal: ownerPrincipal(current),
          owner: current.ownerId,
          now,
          policy,
          lookups: lookupsExcept(trx, current),
          mode: 'propose',
        });
        if (judged === undefined) throw new Error('judge returned no judgement');
        let j = explain(judged);
        if (j.outcome === 'REJECTED') throw refusal(j, '');
        if (j.outcome === 'MERGED_DUPLICATE') {
          const name = j.duplicateOfId === undefined ? 'another memory' : `memories/${j.duplicateOfId}`;
          const merged = await memories.update(
            trx,
            current.tenantId,
            id,
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
          const holder = await memories.findActiveByKey(trx, current);
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
        const approved = await memories.update(
          trx,
          current.tenantId,
          id,
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
          const old = await memories.get(current.tenantId, replaced, trx);
          if (old?.status === 'ACTIVE') {
            await memories.update(
              trx,
              old.tenantId,
              old.id,
              old.version,
              { status: 'SUPERSEDED', statusReason: `superseded by memories/${id}`, supersededById: id },
              revision('SUPERSEDE', 'dedupe_supersede'),
              now,
            );
          }
        }
        return { memory: approved, j };
      });
      return {
        memory: memoryMessage(memory),
        ...(j !== undefined ? { decision: decisionMessage(j, memory) } : {}),
      };
    },

    async listMemoryRevisions(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const id = parseMemoryName(request.parent, 'parent');
      if (request.pageSize < 0) throw errors.fieldInvalid('page_size', 'must not be negative');
      const pageSize = request.pageSize === 0 ? 50 : Math.min(request.pageSize, 500);
      await memories.getVisible(viewerOf(principal), id);
      const page = await memories.listRevisions(principal.tenantId, id, {
        pageSize,
        pageToken: request.pageToken,
      });
      return { revisions: page.items.map(revisionMessage), nextPageToken: page.nextPageToken };
    },

    async getMemoryRevision(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      if (request.name === '') throw errors.fieldRequired('name');
      const match = REVISION_NAME.exec(request.name);
      const memoryId = match?.[1];
      const revisionId = match?.[2];
      if (memoryId === undefined || revisionId === undefined) {
        throw errors.invalidArgument(
          'NAME_INVALID',
          'name must look like memories/{memory}/revisions/{revision}',
          {
            field: 'name',
            pattern: 'memories/{memory}/revisions/{revision}',
          },
        );
      }
      await memories.getVisible(viewerOf(principal), memoryId);
      const revision = await memories.getRevision(principal.tenantId, memoryId, revisionId);
      if (revision === undefined) throw errors.notFound(request.name);
      return { revision: revisionMessage(revision) };
    },

    getPolicy(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      if (request.name !== '' && request.name !== 'policy') {
        throw errors.invalidArgument('NAME_INVALID', 'name must be policy', {
          field: 'name',
          pattern: 'policy',
        });
      }
      requireAdmin(principal, 'GetPolicy');
      return { policy: policyMessage(deps.policies(principal.tenantId), loadedAt) };
    },
  };
}
