/**
 * Candidates are also recorded outside memories (an extraction job keeps every candidate it
 * judged, `ExtractionJob.candidates`), and a rejected candidate must leave no trace of its secret
 * there either.
 */
import type { Candidate } from '../candidate.js';
import { rewriteContent } from './content.js';
import { PII_CATEGORIES, type GovernancePolicy, type PiiCategory } from './policy.js';
import { redactPii, redactSecrets } from './sensitive.js';

/**
 * The candidate as it may be recorded: every secret redacted, and the personal data of every
 * category the policy does not ALLOW. Redaction only; nothing else changes.
 */
export function redactCandidateForRecord(candidate: Candidate, policy: GovernancePolicy): Candidate {
  const pii = new Set<PiiCategory>(PII_CATEGORIES.filter((c) => policy.piiActions[c] !== 'ALLOW'));
  return rewriteContent(candidate, (text) => redactPii(redactSecrets(text), pii));
}
