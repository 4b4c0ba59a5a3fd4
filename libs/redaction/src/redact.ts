import { type DetectionOptions, detectSecrets, typeRank } from './detect.js';
import { placeholderFor } from './detector.js';
import type { SecretFinding } from './types.js';

/** The redacted text and what was replaced. */
export interface Redaction {
  /** The input with every finding replaced by its placeholder `[redacted:<type>]`. */
  readonly text: string;
  /**
   * One entry per placeholder, in text order, non-overlapping, with offsets into the *input*.
   * Overlapping findings are merged into one span covering all of them; its type, rule and
   * confidence are those of the longest finding in it (ties: the type listed first in
   * SECRET_TYPES, then the most confident, then the rule name).
   */
  readonly findings: readonly SecretFinding[];
}

/** Whether `a` should name a merged span rather than `b`. */
function outranks(a: SecretFinding, b: SecretFinding): boolean {
  return (
    (a.end - a.start - (b.end - b.start) ||
      typeRank(b.type) - typeRank(a.type) ||
      Number(b.confidence === 'medium') - Number(a.confidence === 'medium') ||
      (a.rule < b.rule ? 1 : a.rule > b.rule ? -1 : 0)) > 0
  );
}

/** Merges overlapping findings (sorted by start) into disjoint spans, each named by its longest member. */
export function mergeFindings(sorted: readonly SecretFinding[]): SecretFinding[] {
  const merged: SecretFinding[] = [];
  let representative: SecretFinding | undefined;
  let start = 0;
  let end = 0;
  for (const finding of sorted) {
    if (representative !== undefined && finding.start < end) {
      if (outranks(finding, representative)) representative = finding;
      end = Math.max(end, finding.end);
      continue;
    }
    if (representative !== undefined) merged.push({ ...representative, start, end });
    representative = finding;
    start = finding.start;
    end = finding.end;
  }
  if (representative !== undefined) merged.push({ ...representative, start, end });
  return merged;
}

/**
 * Replaces every secret in a text with a typed placeholder, `[redacted:api_key]`,
 * `[redacted:password]`, … (one per merged span; only the value of a labelled secret is replaced,
 * so `password: hunter2` becomes `password: [redacted:password]`). Deterministic; redacting the
 * result again changes nothing.
 */
export function redact(text: string, options: DetectionOptions = {}): Redaction {
  const findings = mergeFindings(detectSecrets(text, options));
  if (findings.length === 0) return { text, findings };
  const parts: string[] = [];
  let cursor = 0;
  for (const finding of findings) {
    parts.push(text.slice(cursor, finding.start), placeholderFor(finding.type));
    cursor = finding.end;
  }
  parts.push(text.slice(cursor));
  return { text: parts.join(''), findings };
}
