import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import {
  ActorKind as ActorKindEnum,
  RevisionAction as RevisionActionEnum,
  type MemoryRevisionSchema,
} from '@engram/contracts/governance';
import type { MemoryRevisionRecord, RevisionAction } from '@engram/store';
import { memoryMessage } from './memory-api.js';

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

const ACTOR_KINDS: Record<MemoryRevisionRecord['actorKind'], ActorKindEnum> = {
  USER: ActorKindEnum.USER,
  ADMIN: ActorKindEnum.ADMIN,
  SERVICE: ActorKindEnum.SERVICE,
  EXTRACTOR: ActorKindEnum.EXTRACTOR,
  RULE: ActorKindEnum.SYSTEM,
  SYSTEM: ActorKindEnum.SYSTEM,
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

/** A stored revision as the API's `MemoryRevision`. */
export function revisionMessage(r: MemoryRevisionRecord): MessageInitShape<typeof MemoryRevisionSchema> {
  const system = r.actorKind === 'SYSTEM' || r.actorKind === 'RULE';
  const related =
    r.action === 'SUPERSEDE'
      ? r.after?.supersededById
      : r.action === 'CREATE'
        ? r.after?.supersedesId
        : undefined;
  return {
    name: `memories/${r.memoryId}/revisions/${r.id}`,
    action: REVISION_ACTIONS[r.action],
    version: BigInt(r.version),
    actor: {
      kind: ACTOR_KINDS[r.actorKind],
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
