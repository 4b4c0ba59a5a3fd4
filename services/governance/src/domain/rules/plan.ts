/**
 * The write a judged candidate becomes: a `NewMemory` for `MemoryRepository.create`, and the
 * content hash the repository will store for it.
 */
import { memoryContentHash } from '@engram/store';
import type { Candidate } from '../candidate.js';
import type { JudgeContext, MemoryPlace, MemoryPlan } from './types.js';

/** Where the candidate will live, from its resolved scope (rule `scope_authorization`). */
export function placeOf(candidate: Candidate, owner: string): MemoryPlace {
  const scope = candidate.scopeHint ?? 'SELF';
  return { ownerId: owner, scope, orgId: scope === 'ORG' ? (candidate.orgId ?? '') : '' };
}

/** `memoryContentHash` over what the plan will store (namespace and key '' for non-FACTs). */
export function contentHashOf(candidate: Candidate): string {
  return memoryContentHash({
    type: candidate.type,
    namespace: candidate.type === 'FACT' ? (candidate.namespace ?? '') : '',
    key: candidate.type === 'FACT' ? (candidate.key ?? '') : '',
    ...(candidate.type === 'FACT' && candidate.value !== undefined ? { value: candidate.value } : {}),
    text: candidate.text,
  });
}

/**
 * The memory to write for a candidate the rules let through. `languageCode` is the candidate's or
 * '' (the service detects it, per `Memory.language_code`).
 */
export function planMemory(
  candidate: Candidate,
  ctx: Pick<JudgeContext, 'principal' | 'owner'>,
  status: MemoryPlan['status'],
  statusReason: string,
  supersedesId: string | undefined,
): MemoryPlan {
  const place = placeOf(candidate, ctx.owner);
  const fact = candidate.type === 'FACT';
  const { messageIds, memCellId, chunkIds, excerpt } = candidate.evidence;
  return {
    tenantId: ctx.principal.tenantId,
    ownerId: place.ownerId,
    scope: place.scope,
    orgId: place.orgId,
    type: candidate.type,
    namespace: fact ? (candidate.namespace ?? '') : '',
    key: fact ? (candidate.key ?? '') : '',
    ...(fact && candidate.value !== undefined ? { value: candidate.value } : {}),
    text: candidate.text,
    evergreen: fact && candidate.evergreen === true,
    sourceKind: candidate.sourceKind,
    confidence: candidate.confidence,
    ...(supersedesId !== undefined ? { supersedesId } : {}),
    evidence: {
      messageIds: [...messageIds],
      ...(candidate.evidence.sessionId !== undefined ? { sessionId: candidate.evidence.sessionId } : {}),
      ...(memCellId !== undefined ? { memCellId } : {}),
      chunkIds: [...(chunkIds ?? [])],
      ...(excerpt !== undefined && excerpt !== '' ? { excerpt } : {}),
    },
    languageCode: candidate.languageCode ?? '',
    metadata: { ...candidate.metadata },
    ...(candidate.occurredAt !== undefined ? { occurredAt: candidate.occurredAt } : {}),
    ...(candidate.expiresAt !== undefined ? { expiresAt: candidate.expiresAt } : {}),
    ...(candidate.validFrom !== undefined ? { validFrom: candidate.validFrom } : {}),
    ...(candidate.validUntil !== undefined ? { validUntil: candidate.validUntil } : {}),
    status,
    statusReason,
  };
}
