/**
 * Shannon entropy of a string's UTF-16 code units, in bits per character: how many bits each
 * character carries given the string's own character frequencies. A random base62 string of 16
 * characters scores about 3.7, of 40 characters about 4.8; a random hex string of 32 about 3.8;
 * "QUFBQUFBQUFBQUFB" (base64 of "AAAAAAAAAAAA") 2.0; "aaaaaaaa" 0.
 */
export function shannonEntropy(value: string): number {
  if (value.length === 0) return 0;
  const counts = new Map<number, number>();
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    counts.set(unit, (counts.get(unit) ?? 0) + 1);
  }
  let bits = 0;
  for (const count of counts.values()) {
    const p = count / value.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/**
 * Thresholds for an unstructured value to count as a random secret (see {@link looksRandom}),
 * set so that almost every random value passes: of random 16-character strings, about 1 in 600
 * lower-case-and-digit ones score under 3.0 bits and 1 in 650 hex ones under 2.5 (hex has only
 * 16 symbols, so 16 hex characters average 3.3). Repetitive values stay under them:
 * "QUFBQUFBQUFBQUFB" 2.0, "abc123abc123abc123" 2.6, "deadbeefdeadbeef" 2.2. Entropy cannot
 * tell base64 of an English phrase (≈ 3.6) from a key; the label that must precede a value does.
 */
export const RANDOMNESS_THRESHOLDS = {
  /** Shorter values are not judged (too little evidence either way). */
  minLength: 16,
  /** Longer values are not treated as one secret (documents, blobs). */
  maxLength: 4096,
  /** Minimum entropy in bits per character for a hex-only value. */
  minHexEntropy: 2.5,
  /** Minimum entropy in bits per character for any other value. */
  minEntropy: 3,
} as const;

const HEX = /^[0-9a-fA-F-]+$/;
const SEGMENT_SEPARATORS = /[-_./+=~]+/;
const LETTERS = /^[A-Za-z]+$/;
const DIGITS = /^[0-9]+$/;

/**
 * Whether a value in a secret's alphabet looks machine-generated rather than like a name, a word
 * or a number: long enough, with letters and digits mixed inside at least one segment (so
 * `user_profile_2024`, `getTokenFromEnv`, `1234567890123456` and `abc-123-def` are not), and
 * with entropy over {@link RANDOMNESS_THRESHOLDS}, and not a short unit repeated
 * ("abc123abc123abc123", whose hex alphabet would otherwise let it pass).
 */
export function looksRandom(value: string): boolean {
  if (value.length < RANDOMNESS_THRESHOLDS.minLength || value.length > RANDOMNESS_THRESHOLDS.maxLength) {
    return false;
  }
  const segments = value.split(SEGMENT_SEPARATORS).filter((segment) => segment.length > 0);
  const mixed = segments.some((segment) => !LETTERS.test(segment) && !DIGITS.test(segment));
  if (!mixed) return false;
  if (isPeriodic(value)) return false;
  const threshold = HEX.test(value) ? RANDOMNESS_THRESHOLDS.minHexEntropy : RANDOMNESS_THRESHOLDS.minEntropy;
  return shannonEntropy(value) >= threshold;
}

/** Whether the value is (at least 90%) a unit of up to 16 characters repeated. */
function isPeriodic(value: string): boolean {
  const maxPeriod = Math.min(16, Math.floor(value.length / 2));
  for (let period = 1; period <= maxPeriod; period++) {
    let same = 0;
    for (let i = period; i < value.length; i++)
      if (value.charCodeAt(i) === value.charCodeAt(i - period)) same++;
    if (same >= 0.9 * (value.length - period)) return true;
  }
  return false;
}

/** Counts the character classes (lower, upper, digit, other) present in a value. */
export function characterClasses(value: string): number {
  return (
    Number(/[a-z]/.test(value)) +
    Number(/[A-Z]/.test(value)) +
    Number(/[0-9]/.test(value)) +
    Number(/[^A-Za-z0-9]/.test(value))
  );
}
