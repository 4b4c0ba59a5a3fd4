/**
 * Rule `dedupe_supersede` (mandatory), at the candidate's resolved place (owner, scope, org):
 *
 * 1. An ACTIVE or QUARANTINED memory with the same content hash, or an ACTIVE FACT with the same
 *    identity and an equal value (whatever its text): DUPLICATE, nothing is written.
 * 2. An ACTIVE FACT with the same identity and another value: SUPERSEDES it, unless the candidate's
 *    source is less trusted (see {@link SOURCE_TRUST}), or the old FACT is evergreen and the
 *    candidate only inferred: then QUARANTINED for review (or REJECTED, per
 *    `lowerTrustSupersede`). A new FACT replacing an evergreen one stays evergreen (the pin
 *    belongs to the identity).
 * 3. A candidate an earlier rule already quarantined supersedes nothing until it is approved.
 *
 * Earlier candidates of the same batch count: their planned writes are found like stored ones.
 */
import type { SourceKind } from '@engram/store';
import { canonicalJson } from './json.js';
import { contentHashOf, placeOf } from './plan.js';
import type { FactMatch, HardRule, MemoryRef, RuleResult } from './types.js';

/**
 * How much a source is trusted to state a FACT, highest first: what the user said outright, an
 * import from another system of record, and the platform itself (3); a document (2); what a model
 * inferred or the assistant said (1). A candidate never supersedes a FACT from a more trusted
 * source without review.
 */
export const SOURCE_TRUST: Readonly<Record<SourceKind, number>> = {
  EXPLICIT_USER_STATEMENT: 3,
  IMPORT: 3,
  SYSTEM: 3,
  DOCUMENT: 2,
  INFERRED: 1,
  ASSISTANT: 1,
};

/** The lowest trust level, whose FACTs never replace an evergreen FACT without review. */
const WEAKEST = 1;

/** `memories/{id}`, or `candidate #n` for a write planned earlier in the batch. */
export function describeRef(ref: MemoryRef): string {
  return ref.kind === 'stored' ? `memories/${ref.id}` : `candidate #${ref.candidateIndex}`;
}

/** Why `source` may not replace `existing` without review, or undefined when it may. */
export function trustConflict(source: SourceKind, existing: FactMatch): string | undefined {
  if (SOURCE_TRUST[source] < SOURCE_TRUST[existing.sourceKind]) {
    return `source ${source} does not override the ${existing.sourceKind} FACT ${describeRef(existing.ref)} without review`;
  }
  if (existing.evergreen && SOURCE_TRUST[source] <= WEAKEST) {
    return `source ${source} does not override the evergreen FACT ${describeRef(existing.ref)} without review`;
  }
  return undefined;
}

export const dedupeRule: HardRule = {
  name: 'dedupe_supersede',
  async evaluate(candidate, ctx): Promise<RuleResult> {
    const place = placeOf(candidate, ctx.owner);
    const duplicate = await ctx.batch.findDuplicate(contentHashOf(candidate), place);
    if (duplicate !== undefined) {
      return { verdict: 'DUPLICATE', note: `identical to ${describeRef(duplicate)}`, duplicateOf: duplicate };
    }
    if (candidate.type !== 'FACT' || candidate.namespace === undefined || candidate.key === undefined) {
      return { verdict: 'PASSED', note: 'no identical memory' };
    }
    const existing = await ctx.batch.findActiveFact(candidate.namespace, candidate.key, place);
    if (existing === undefined)
      return { verdict: 'PASSED', note: 'no identical memory; no ACTIVE FACT with this identity' };
    if (canonicalJson(existing.value) === canonicalJson(candidate.value)) {
      return {
        verdict: 'DUPLICATE',
        note: `${describeRef(existing.ref)} holds the same value for ${candidate.namespace}/${candidate.key}`,
        duplicateOf: existing.ref,
      };
    }
    if (ctx.progress.held) {
      return {
        verdict: 'PASSED',
        note: `quarantined: supersedes ${describeRef(existing.ref)} only if approved`,
      };
    }
    const conflict = trustConflict(candidate.sourceKind, existing);
    if (conflict !== undefined) {
      return ctx.policy.lowerTrustSupersede === 'REJECT'
        ? { verdict: 'REJECTED', field: 'source_kind', note: conflict }
        : { verdict: 'QUARANTINED', field: 'source_kind', note: conflict };
    }
    const keepPin = existing.evergreen && candidate.evergreen !== true;
    return {
      verdict: 'SUPERSEDES',
      note: `replaces ${describeRef(existing.ref)}${keepPin ? '; stays evergreen' : ''}`,
      supersedes: existing,
      ...(keepPin ? { candidate: { ...candidate, evergreen: true } } : {}),
    };
  },
};
