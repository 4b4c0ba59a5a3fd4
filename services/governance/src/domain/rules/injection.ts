/**
 * Rule `prompt_injection`: memory text is injected into future model contexts, so text that tries
 * to instruct the model is held for review (QUARANTINED by default; REJECT or ALLOW per policy).
 * The text and every string of the value are checked with the shared detector of
 * `@engram/redaction` (`injectionPatternsIn`; its documentation lists the patterns and their ids,
 * reported in the note, never the text).
 */
import { INJECTION_PATTERNS, injectionPatternsIn } from '@engram/redaction';
import { contentPieces } from './content.js';
import type { HardRule, RuleResult } from './types.js';

export const injectionRule: HardRule = {
  name: 'prompt_injection',
  evaluate(candidate, ctx): RuleResult {
    const matched = new Set<string>();
    let field: string | undefined;
    for (const piece of contentPieces(candidate, ['text', 'value'])) {
      const ids = injectionPatternsIn(piece.text);
      if (ids.length > 0) field ??= piece.field;
      for (const id of ids) matched.add(id);
    }
    if (matched.size === 0) return { verdict: 'PASSED' };
    const list = INJECTION_PATTERNS.map((p) => p.id).filter((id) => matched.has(id));
    const note = `text that instructs the model (${list.join(', ')})`;
    const at = field !== undefined ? { field } : {};
    switch (ctx.policy.promptInjection) {
      case 'ALLOW':
        return { verdict: 'PASSED', note: `allowed by policy: ${note}`, ...at };
      case 'REJECT':
        return { verdict: 'REJECTED', note, ...at, details: { patterns: list.join(',') } };
      case 'QUARANTINE':
        return { verdict: 'QUARANTINED', note, ...at, details: { patterns: list.join(',') } };
    }
  },
};
