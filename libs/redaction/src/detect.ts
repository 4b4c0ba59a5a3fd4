import { detectBearerTokens, detectPrivateKeys, detectVendorKeys } from './api-keys.js';
import { type Detector, gluedToPlaceholder } from './detector.js';
import {
  detectBasicAuth,
  detectChineseLabelledValues,
  detectLabelledValues,
  detectUrlPasswords,
} from './labelled.js';
import {
  detectChineseResidentIds,
  detectIbans,
  detectPaymentCards,
  detectUsSocialSecurityNumbers,
} from './numbers.js';
import { SECRET_TYPES, type SecretFinding, type SecretType } from './types.js';

const DETECTORS: readonly Detector[] = [
  detectVendorKeys,
  detectPrivateKeys,
  detectBearerTokens,
  detectLabelledValues,
  detectChineseLabelledValues,
  detectUrlPasswords,
  detectBasicAuth,
  detectPaymentCards,
  detectChineseResidentIds,
  detectUsSocialSecurityNumbers,
  detectIbans,
];

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
