/**
 * Rule `confidence_threshold`: below `confidenceThreshold` the candidate is REJECTED; at or above
 * it but below `reviewConfidenceThreshold`, QUARANTINED.
 */
import { formatFraction } from './text.js';
import type { HardRule } from './types.js';

export const confidenceRule: HardRule = {
  name: 'confidence_threshold',
  evaluate(candidate, ctx) {
    const { confidenceThreshold, reviewConfidenceThreshold } = ctx.policy;
    const confidence = formatFraction(candidate.confidence);
    if (candidate.confidence < confidenceThreshold) {
      return {
        verdict: 'REJECTED',
        field: 'confidence',
        note: `confidence ${confidence} is below the threshold ${formatFraction(confidenceThreshold)}`,
      };
    }
    if (candidate.confidence < reviewConfidenceThreshold) {
      return {
        verdict: 'QUARANTINED',
        field: 'confidence',
        note: `confidence ${confidence} is below the review threshold ${formatFraction(reviewConfidenceThreshold)}`,
      };
    }
    return {
      verdict: 'PASSED',
      note: `confidence ${confidence} is at or above the threshold ${formatFraction(confidenceThreshold)}`,
    };
  },
};
