import type { Candidate } from './candidate.js';

/**
 * FACT namespaces that are the user's standing profile: what the context service injects into
 * every turn (blueprint §6: "evergreen facts and profile (preferences, stage goals)") rather than
 * leaving it to relevance search. `relationship` is left out: who someone's friends are matters
 * when they come up, not on every turn.
 */
export const EVERGREEN_NAMESPACES: ReadonlySet<string> = new Set(['user_preference', 'profile', 'goal']);

/**
 * An extracted candidate with its default evergreen flag: a FACT of a profile namespace that the
 * user stated explicitly is evergreen unless the extractor decided otherwise. The hard rules still
 * decide: the `quota` rule drops the flag when the owner's evergreen quota is used up, and
 * evergreen facts below the context's confidence threshold are not injected.
 */
export function withDefaultEvergreen(candidate: Candidate): Candidate {
  if (candidate.evergreen !== undefined) return candidate;
  if (candidate.type !== 'FACT' || candidate.sourceKind !== 'EXPLICIT_USER_STATEMENT') return candidate;
  if (candidate.namespace === undefined || !EVERGREEN_NAMESPACES.has(candidate.namespace)) return candidate;
  return { ...candidate, evergreen: true };
}
