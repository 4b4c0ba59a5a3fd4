/**
 * @engram/redaction: the one set of secret detectors in Engram. Ingestion redacts what they find
 * before anything is stored or indexed; governance's hard rules reject or redact memory
 * candidates with them. Pure functions, no I/O, no runtime dependencies.
 */
export { containsSecret, detectSecrets, type DetectionOptions } from './detect.js';
export { placeholderFor } from './detector.js';
export { RANDOMNESS_THRESHOLDS, shannonEntropy } from './entropy.js';
export { redact, type Redaction } from './redact.js';
export {
  SECRET_TYPES,
  type Confidence,
  type SecretFinding,
  type SecretRule,
  type SecretType,
} from './types.js';
