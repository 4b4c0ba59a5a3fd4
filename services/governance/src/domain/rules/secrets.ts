/**
 * Rules `secret_denial` and `pii_denial`: credentials and personal data in any of the candidate's
 * content (text, value, evidence excerpt, metadata, TTL reason) are handled per category as the
 * policy says. Notes name the categories and fields, never the matched value.
 *
 * - `secret_denial` (mandatory): REJECT (default) or REDACT; a secret is never quarantined,
 *   because a quarantined memory is stored.
 * - `pii_denial`: REJECT, QUARANTINE, REDACT or ALLOW per category. With several categories the
 *   strictest wins: any REJECT rejects; otherwise the REDACT ones are redacted, and any QUARANTINE
 *   holds the (redacted) memory for review.
 */
import type { Candidate } from '../candidate.js';
import { contentPieces, listFields, rewriteContent, type ContentField } from './content.js';
import type { PiiAction, PiiCategory, SecretCategory } from './policy.js';
import { piiCategoriesIn, redactPii, redactSecrets, secretCategoriesIn } from './sensitive.js';
import type { HardRule, RuleResult } from './types.js';

type Found<C extends string> = Map<C, Set<ContentField>>;

function collect<C extends string>(candidate: Candidate, categoriesIn: (text: string) => Set<C>): Found<C> {
  const found: Found<C> = new Map();
  for (const piece of contentPieces(candidate)) {
    for (const category of categoriesIn(piece.text)) {
      const fields = found.get(category) ?? new Set<ContentField>();
      fields.add(piece.field);
      found.set(category, fields);
    }
  }
  return found;
}

/** "secret.api_key in text; secret.password in value and metadata". */
function describe<C extends string>(found: Found<C>, categories: Iterable<C>): string {
  return [...categories].map((c) => `${c} in ${listFields(found.get(c) ?? [])}`).join('; ');
}

function firstField<C extends string>(found: Found<C>, categories: Iterable<C>): ContentField | undefined {
  for (const c of categories) {
    const fields = found.get(c);
    if (fields !== undefined) return [...fields][0];
  }
  return undefined;
}

export const secretRule: HardRule = {
  name: 'secret_denial',
  evaluate(candidate, ctx): RuleResult {
    const found = collect(candidate, secretCategoriesIn);
    if (found.size === 0) return { verdict: 'PASSED' };
    const categories = [...found.keys()].sort();
    const rejecting = categories.filter((c: SecretCategory) => ctx.policy.secretActions[c] !== 'REDACT');
    const field = firstField(found, rejecting.length > 0 ? rejecting : categories);
    if (rejecting.length > 0) {
      return {
        verdict: 'REJECTED',
        ...(field !== undefined ? { field } : {}),
        note: `matched ${describe(found, rejecting)}`,
        details: { categories: rejecting.join(',') },
      };
    }
    return {
      verdict: 'ADJUSTED',
      ...(field !== undefined ? { field } : {}),
      note: `redacted ${describe(found, categories)}`,
      candidate: rewriteContent(candidate, redactSecrets),
    };
  },
};

const SEVERITY: Record<PiiAction, number> = { REJECT: 3, QUARANTINE: 2, REDACT: 1, ALLOW: 0 };

export const piiRule: HardRule = {
  name: 'pii_denial',
  evaluate(candidate, ctx): RuleResult {
    const found = collect(candidate, piiCategoriesIn);
    if (found.size === 0) return { verdict: 'PASSED' };
    const byAction = (action: PiiAction) =>
      [...found.keys()].filter((c: PiiCategory) => ctx.policy.piiActions[c] === action).sort();
    const strictest = Math.max(...[...found.keys()].map((c) => SEVERITY[ctx.policy.piiActions[c]]));
    const rejecting = byAction('REJECT');
    if (strictest === SEVERITY.REJECT) {
      const field = firstField(found, rejecting);
      return {
        verdict: 'REJECTED',
        ...(field !== undefined ? { field } : {}),
        note: `matched ${describe(found, rejecting)}`,
        details: { categories: rejecting.join(',') },
      };
    }
    const redacting = byAction('REDACT');
    const quarantining = byAction('QUARANTINE');
    const allowed = byAction('ALLOW');
    const notes: string[] = [];
    if (quarantining.length > 0) notes.push(`matched ${describe(found, quarantining)}`);
    if (redacting.length > 0) notes.push(`redacted ${describe(found, redacting)}`);
    if (allowed.length > 0) notes.push(`allowed by policy: ${describe(found, allowed)}`);
    const transformed =
      redacting.length > 0
        ? rewriteContent(candidate, (text) => redactPii(text, new Set(redacting)))
        : undefined;
    const field = firstField(found, [...quarantining, ...redacting]);
    return {
      verdict:
        strictest === SEVERITY.QUARANTINE
          ? 'QUARANTINED'
          : strictest === SEVERITY.REDACT
            ? 'ADJUSTED'
            : 'PASSED',
      ...(field !== undefined ? { field } : {}),
      note: notes.join('; '),
      ...(transformed !== undefined ? { candidate: transformed } : {}),
      ...(quarantining.length > 0 ? { details: { categories: quarantining.join(',') } } : {}),
    };
  },
};
