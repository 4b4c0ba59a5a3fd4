/**
 * Rule `scope_authorization`: resolves the scope hint (default SELF) against the caller's rights,
 * never against request fields. SELF is always allowed; ORG needs the principal's membership of
 * `org_id`; PLATFORM needs the `platform` role. Extracted memories are always SELF-scoped to the
 * session owner (`ExtractMemories`): any other hint is narrowed and reported ADJUSTED. For
 * proposals a scope the caller may not use is REJECTED (SCOPE_NOT_ALLOWED), or narrowed to SELF
 * when the policy says `scopeDenied: NARROW_TO_SELF`. Mandatory.
 *
 * The transformed candidate always carries the resolved `scopeHint` (and `orgId` only for ORG), so
 * later rules and the write plan read the final scope from it.
 */
import type { Candidate } from '../candidate.js';
import type { HardRule, RuleResult } from './types.js';

/** The role that grants the PLATFORM scope. */
export const PLATFORM_ROLE = 'platform';

function narrowed(candidate: Candidate, note: string): RuleResult {
  const { orgId: _dropped, ...rest } = candidate;
  return { verdict: 'ADJUSTED', field: 'scope_hint', note, candidate: { ...rest, scopeHint: 'SELF' } };
}

export const scopeRule: HardRule = {
  name: 'scope_authorization',
  evaluate(candidate, ctx) {
    const scope = candidate.scopeHint ?? 'SELF';
    if (scope === 'SELF') {
      return { verdict: 'PASSED', note: 'SELF', candidate: { ...candidate, scopeHint: 'SELF' } };
    }
    if (ctx.mode === 'extract') {
      return narrowed(candidate, `${scope} hint narrowed to SELF: extracted memories are always SELF-scoped`);
    }
    const orgId = candidate.orgId ?? '';
    const allowed =
      scope === 'ORG' ? ctx.principal.orgIds.includes(orgId) : ctx.principal.roles.includes(PLATFORM_ROLE);
    if (allowed) return { verdict: 'PASSED', note: scope === 'ORG' ? `ORG ${orgId}` : 'PLATFORM' };
    const why =
      scope === 'ORG'
        ? `the caller is not a member of org ${orgId}`
        : `the caller does not have the ${PLATFORM_ROLE} role`;
    if (ctx.policy.scopeDenied === 'NARROW_TO_SELF')
      return narrowed(candidate, `${scope} narrowed to SELF: ${why}`);
    return {
      verdict: 'REJECTED',
      reason: 'SCOPE_NOT_ALLOWED',
      field: 'scope_hint',
      note: `${scope} scope not allowed: ${why}`,
      details: scope === 'ORG' ? { scope, org_id: orgId } : { scope, role: PLATFORM_ROLE },
    };
  },
};
