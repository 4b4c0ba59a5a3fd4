/**
 * @engram/redaction: the one set of secret detectors in Engram. Ingestion redacts what they find
 * before anything is stored or indexed; governance's hard rules reject or redact memory
 * candidates with them. It also holds the prompt-injection detector that governance and context
 * share. Pure functions, no I/O, no runtime dependencies.
 */
export { containsSecret, detectSecrets, type DetectionOptions } from './detect.js';
export { placeholderFor } from './detector.js';
export { redactMetadata, stripUrlCredentials } from './fields.js';
export { RANDOMNESS_THRESHOLDS, shannonEntropy } from './entropy.js';
export {
  INJECTION_PATTERNS,
  injectionPatternsIn,
  normalizeForInjection,
  type InjectionPattern,
} from './injection.js';
export { redact, type Redaction } from './redact.js';
export {
  SECRET_TYPES,
  type Confidence,
  type SecretFinding,
  type SecretRule,
  type SecretType,
} from './types.js';
