import { compareFindings, type DetectionOptions, detectSecrets, typeRank } from './detect.js';
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

/** `text` with the (merged, disjoint) findings replaced by their placeholders. */
function replace(text: string, findings: readonly SecretFinding[]): string {
  const parts: string[] = [];
  let cursor = 0;
  for (const finding of findings) {
    parts.push(text.slice(cursor, finding.start), placeholderFor(finding.type));
    cursor = finding.end;
  }
  parts.push(text.slice(cursor));
  return parts.join('');
}

/**
 * A finding in the redacted text, moved back to the input's offsets: outside placeholders the
 * offsets shift; an end inside a placeholder takes in the whole span it replaced.
 */
function toInput(found: SecretFinding, findings: readonly SecretFinding[]): SecretFinding {
  const map = (offset: number, side: 'start' | 'end'): number => {
    let shift = 0;
    for (const f of findings) {
      const outStart = f.start + shift;
      const outEnd = outStart + placeholderFor(f.type).length;
      if (offset < outStart || (side === 'end' && offset === outStart)) break;
      if (offset < outEnd || (side === 'end' && offset === outEnd)) return side === 'start' ? f.start : f.end;
      shift += outEnd - outStart - (f.end - f.start);
    }
    return offset - shift;
  };
  return { ...found, start: map(found.start, 'start'), end: map(found.end, 'end') };
}

/** Passes of redaction at most: a pass finds what the previous pass's placeholders unglued. */
const MAX_PASSES = 4;

/**
 * Replaces every secret in a text with a typed placeholder, `[redacted:api_key]`,
 * `[redacted:password]`, … (one per merged span; only the value of a labelled secret is replaced,
 * so `password: hunter2` becomes `password: [redacted:password]`). Deterministic; redacting the
 * result again changes nothing: when a placeholder uncovers a secret that was glued to the one it
 * replaced, that secret joins the findings (in input offsets) and the text is redacted again.
 */
export function redact(text: string, options: DetectionOptions = {}): Redaction {
  let findings = mergeFindings(detectSecrets(text, options));
  if (findings.length === 0) return { text, findings };
  let output = replace(text, findings);
  for (let pass = 1; pass < MAX_PASSES; pass++) {
    const more = detectSecrets(output, options);
    if (more.length === 0) break;
    const all = [...findings, ...more.map((f) => toInput(f, findings))];
    all.sort(compareFindings);
    findings = mergeFindings(all);
    output = replace(text, findings);
  }
  return { text: output, findings };
}
