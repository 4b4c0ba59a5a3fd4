import { detectAwsSecretKeys, detectBearerTokens, detectPrivateKeys, detectVendorKeys } from './api-keys.js';
import { detectPassportNumbers, detectProsePasswords, detectUkNationalInsuranceNumbers } from './context.js';
import { type Detector, gluedToPlaceholder } from './detector.js';
import {
  detectBasicAuth,
  detectChineseLabelledValues,
  detectCliPasswords,
  detectLabelledValues,
  detectUrlPasswords,
} from './labelled.js';
import {
  detectChineseResidentIds,
  detectChineseResidentIds15,
  detectIbans,
  detectPaymentCards,
  detectUsSocialSecurityNumbers,
} from './numbers.js';
import { SECRET_TYPES, type SecretFinding, type SecretType } from './types.js';

const DETECTORS: readonly Detector[] = [
  detectVendorKeys,
  detectAwsSecretKeys,
  detectPrivateKeys,
  detectBearerTokens,
  detectLabelledValues,
  detectChineseLabelledValues,
  detectProsePasswords,
  detectCliPasswords,
  detectUrlPasswords,
  detectBasicAuth,
  detectPaymentCards,
  detectChineseResidentIds,
  detectChineseResidentIds15,
  detectUsSocialSecurityNumbers,
  detectPassportNumbers,
  detectUkNationalInsuranceNumbers,
  detectIbans,
];

// A placeholder and the one character that may glue it to a neighbour (see `gluedToPlaceholder`).
const PLACEHOLDER = /[-_.,]?\[redacted:[a-z_]{1,20}\][-_.,$]?/g;

/**
 * The text with every literal placeholder `[redacted:<type>]` (and a glue character next to it)
 * replaced by as many spaces (so
 * offsets stay the same), and the placeholders' spans; undefined when there is none. A secret
 * typed right after a placeholder is found in this view (see `detectSecrets`).
 */
function withoutPlaceholders(text: string): { text: string; spans: [number, number][] } | undefined {
  if (!text.includes('[redacted:')) return undefined;
  const spans: [number, number][] = [];
  const blanked = text.replace(PLACEHOLDER, (placeholder, at: number) => {
    spans.push([at, at + placeholder.length]);
    return ' '.repeat(placeholder.length);
  });
  return spans.length > 0 ? { text: blanked, spans } : undefined;
}

/** Precedence of a type: its index in SECRET_TYPES. */
export const typeRank = (type: SecretType): number => SECRET_TYPES.indexOf(type);

/** Total order on findings: by start, longer first, then type, confidence and rule. */
export function compareFindings(a: SecretFinding, b: SecretFinding): number {
  return (
    a.start - b.start ||
    b.end - a.end ||
    typeRank(a.type) - typeRank(b.type) ||
    Number(a.confidence === 'medium') - Number(b.confidence === 'medium') ||
    (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0)
  );
}

/** Options shared by the detection and redaction entry points. */
export interface DetectionOptions {
  /** Only these types are reported (and redacted). Default: every type in SECRET_TYPES. */
  readonly types?: readonly SecretType[];
}

/**
 * Finds the secrets in a text: API keys and tokens, passwords, payment cards, national ID
 * numbers and IBANs (see the README for every rule and its false-positive guards).
 *
 * Findings are ordered by start offset (then longer first) and may overlap when two rules match
 * the same characters (a JWT labelled `token=` is found by both); a span is reported once per
 * type, by its most confident rule. A match glued to a placeholder `[redacted:<type>]` is not
 * reported (see `gluedToPlaceholder`), which makes redaction idempotent. Deterministic, linear in
 * practice, and never throws for a string.
 */
export function detectSecrets(text: string, options: DetectionOptions = {}): SecretFinding[] {
  const wanted = new Set<SecretType>(options.types ?? SECRET_TYPES);
  const found: SecretFinding[] = [];
  for (const detect of DETECTORS) {
    detect(text, (finding) => {
      if (!wanted.has(finding.type) || finding.end <= finding.start) return;
      if (!gluedToPlaceholder(text, finding.start, finding.end)) found.push(finding);
    });
  }
  // A placeholder typed by the writer must not shield what follows it ("[redacted:x]sk-…"): the
  // text is scanned once more with the placeholders blanked, and what is found outside them counts.
  const blanked = withoutPlaceholders(text);
  if (blanked !== undefined) {
    for (const detect of DETECTORS) {
      detect(blanked.text, (finding) => {
        if (!wanted.has(finding.type) || finding.end <= finding.start) return;
        if (blanked.spans.some(([start, end]) => finding.start < end && start < finding.end)) return;
        found.push(finding);
      });
    }
  }
  found.sort(compareFindings);
  return found.filter((finding, i) => {
    const previous = found[i - 1];
    return (
      previous === undefined ||
      previous.start !== finding.start ||
      previous.end !== finding.end ||
      previous.type !== finding.type
    );
  });
}

/** Whether the text holds any secret (of the given types). */
export function containsSecret(text: string, options: DetectionOptions = {}): boolean {
  return detectSecrets(text, options).length > 0;
}
