/**
 * Rule `quota`: the owner's ACTIVE memories stay within `maxMemoriesPerOwner` and the per-type
 * caps (REJECTED, QUOTA_EXCEEDED, with `quota` and `limit` in the details); an evergreen hint
 * beyond `maxEvergreenPerOwner` is dropped (ADJUSTED: `CandidateMemory.evergreen` is "only
 * honoured … within the evergreen quota"). Counts include the batch's earlier planned writes. A
 * candidate that will be QUARANTINED does not count (only ACTIVE memories do); one that
 * supersedes an ACTIVE FACT replaces it and adds nothing.
 */
import type { HardRule, RuleResult } from './types.js';

export const quotaRule: HardRule = {
  name: 'quota',
  async evaluate(candidate, ctx): Promise<RuleResult> {
    if (ctx.progress.held)
      return { verdict: 'PASSED', note: 'quarantined memories do not count against quotas' };
    const replaced = ctx.progress.supersedes;
    if (replaced === undefined) {
      const total = await ctx.batch.countActive();
      if (total >= ctx.policy.maxMemoriesPerOwner) {
        return {
          verdict: 'REJECTED',
          reason: 'QUOTA_EXCEEDED',
          note: `the owner already has ${total} ACTIVE memories, the limit is ${ctx.policy.maxMemoriesPerOwner}`,
          details: { quota: 'memories_per_owner', limit: String(ctx.policy.maxMemoriesPerOwner) },
        };
      }
      const typeCap = ctx.policy.maxMemoriesPerOwnerByType[candidate.type];
      if (typeCap !== undefined) {
        const ofType = await ctx.batch.countActive(candidate.type);
        if (ofType >= typeCap) {
          return {
            verdict: 'REJECTED',
            reason: 'QUOTA_EXCEEDED',
            note: `the owner already has ${ofType} ACTIVE ${candidate.type} memories, the limit is ${typeCap}`,
            details: { quota: 'memories_per_owner_and_type', type: candidate.type, limit: String(typeCap) },
          };
        }
      }
    }
    if (candidate.evergreen === true && replaced?.evergreen !== true) {
      const evergreen = await ctx.batch.countActiveEvergreen();
      if (evergreen >= ctx.policy.maxEvergreenPerOwner) {
        return {
          verdict: 'ADJUSTED',
          field: 'evergreen',
          note: `evergreen hint dropped: the owner already has ${evergreen} evergreen FACTs, the limit is ${ctx.policy.maxEvergreenPerOwner}`,
          details: { quota: 'evergreen_per_owner', limit: String(ctx.policy.maxEvergreenPerOwner) },
          candidate: { ...candidate, evergreen: false },
        };
      }
    }
    return { verdict: 'PASSED', ...(replaced !== undefined ? { note: 'replaces an ACTIVE FACT' } : {}) };
  },
};
