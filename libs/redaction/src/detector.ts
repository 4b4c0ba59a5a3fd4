import type { Confidence, SecretFinding, SecretRule, SecretType } from './types.js';

/** A detector scans a whole text and reports every finding of its rules through `emit`. */
export type Detector = (text: string, emit: (finding: SecretFinding) => void) => void;

/** Builds a finding; a small constructor so detectors read as rules, not object literals. */
export function finding(
  type: SecretType,
  rule: SecretRule,
  start: number,
  end: number,
  confidence: Confidence,
): SecretFinding {
  return { type, rule, start, end, confidence };
}

/** The text that replaces a finding of `type`: `[redacted:<type>]`. */
export function placeholderFor(type: SecretType): string {
  return `[redacted:${type}]`;
}

// A placeholder, optionally followed (or preceded) by one character that glues tokens together.
const PLACEHOLDER_BEFORE = /\[redacted:[a-z_]{1,20}\][-_.,$]?$/;
const PLACEHOLDER_AFTER = /^[-_.,]?\[redacted:[a-z_]{1,20}\]/;

/**
 * Whether a span is glued to a placeholder `[redacted:<type>]`. Detectors refuse a match glued
 * to a word or number ("x4111…", "12-4111…", "id_sk-…"); a placeholder stands where such a
 * neighbour was, so it counts as one. Otherwise redacting a text would turn neighbours that were
 * not secrets into secrets, and redacting it again would change it.
 */
export function gluedToPlaceholder(text: string, start: number, end: number): boolean {
  return (
    PLACEHOLDER_BEFORE.test(text.slice(Math.max(0, start - 32), start)) ||
    PLACEHOLDER_AFTER.test(text.slice(end, end + 32))
  );
}
