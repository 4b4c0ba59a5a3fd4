// Synthetic secrets for the tests of the secret detectors. Nothing here is a real credential:
// every value is generated from a seed at run time, and vendor prefixes are assembled by
// concatenation so that the source holds no string a secret scanner would take for a key.
// Check digits are computed here independently of the detectors' own code (@engram/redaction).
import { seededRandom } from './random.js';

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
export const BASE62 = UPPER + LOWER + DIGITS;
const BASE64URL = BASE62 + '-_';
const BASE64 = BASE62 + '+/';

/**
 * A random string over `alphabet`; when the alphabet has them, it holds at least one upper-case
 * letter, one lower-case letter and one digit (real random keys of these lengths always do).
 */
export function randomString(alphabet: string, length: number, seed: number): string {
  const next = seededRandom(seed);
  for (;;) {
    let value = '';
    for (let i = 0; i < length; i++) value += alphabet.charAt(Math.floor(next() * alphabet.length));
    const classes = [/[A-Z]/, /[a-z]/, /[0-9]/].filter((set) => set.test(alphabet));
    if (classes.every((set) => set.test(value))) return value;
  }
}

const join = (...parts: string[]): string => parts.join('');

export const fakeOpenAiKey = (seed: number): string => join('s', 'k-', randomString(BASE62, 48, seed));
export const fakeOpenAiProjectKey = (seed: number): string =>
  join('s', 'k-', 'pr', 'oj-', randomString(BASE64URL, 120, seed));
export const fakeAnthropicKey = (seed: number): string =>
  join('s', 'k-', 'an', 't-', 'api03-', randomString(BASE64URL, 93, seed), 'AA');
export const fakeAwsAccessKeyId = (seed: number): string =>
  join('AK', 'IA', randomString(UPPER + '234567', 16, seed));
export const fakeAwsTemporaryKeyId = (seed: number): string =>
  join('AS', 'IA', randomString(UPPER + '234567', 16, seed));
export const fakeAwsSecretAccessKey = (seed: number): string => randomString(BASE64, 40, seed);
export const fakeGithubToken = (kind: 'p' | 'o' | 'u' | 's' | 'r', seed: number): string =>
  join('g', 'h', kind, '_', randomString(BASE62, 36, seed));
export const fakeGithubFineGrainedToken = (seed: number): string =>
  join('git', 'hub_', 'pat_', randomString(BASE62, 22, seed), '_', randomString(BASE62, 59, seed + 1));
export const fakeSlackBotToken = (seed: number): string =>
  join(
    'xo',
    'xb-',
    randomString(DIGITS, 12, seed),
    '-',
    randomString(DIGITS, 13, seed + 1),
    '-',
    randomString(BASE62, 24, seed + 2),
  );
export const fakeGoogleApiKey = (seed: number): string => join('AI', 'za', randomString(BASE64URL, 35, seed));
export const fakeStripeKey = (mode: 'live' | 'test', seed: number): string =>
  join('s', 'k_', mode, '_', randomString(BASE62, 24, seed));
export const fakeStripeRestrictedKey = (seed: number): string =>
  join('r', 'k_', 'live', '_', randomString(BASE62, 24, seed));

const base64url = (json: string): string => Buffer.from(json, 'utf8').toString('base64url');

export function fakeJwt(seed: number, header = '{"alg":"HS256","typ":"JWT"}'): string {
  const payload = `{"sub":"user-${seed}","iat":1700000000,"scope":"memories:write"}`;
  return [base64url(header), base64url(payload), randomString(BASE64URL, 43, seed)].join('.');
}

export function fakePemPrivateKey(seed: number, label = 'PRIVATE KEY', lines = 6): string {
  const body = Array.from({ length: lines }, (_, i) => randomString(BASE64, 64, seed + i)).join('\n');
  return join('-----BEG', 'IN ', label, '-----\n', body, '\n-----EN', 'D ', label, '-----');
}

/** A random value for a generic `token=`/`api_key=` label (lower case and digits). */
export const fakeGenericSecret = (seed: number, length = 32): string =>
  randomString(LOWER + DIGITS, length, seed);

/** The Luhn check digit that completes `payload`. */
export function luhnCheckDigit(payload: string): string {
  let sum = 0;
  // Doubling starts from the rightmost payload digit, since the check digit will follow it.
  for (let i = 0; i < payload.length; i++) {
    let digit = Number(payload.charAt(payload.length - 1 - i));
    if (i % 2 === 0) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
    sum += digit;
  }
  return String((10 - (sum % 10)) % 10);
}

/** A Luhn-valid card number of `length` digits starting with `prefix`. */
export function fakeCardNumber(prefix: string, length: number, seed: number): string {
  const payload = prefix + randomString(DIGITS, length - prefix.length - 1, seed);
  return payload + luhnCheckDigit(payload);
}

/** Groups digits by the given group sizes, joined by `separator`. */
export function groupDigits(digits: string, sizes: readonly number[], separator: string): string {
  const groups: string[] = [];
  let at = 0;
  for (const size of sizes) {
    groups.push(digits.slice(at, at + size));
    at += size;
  }
  return groups.join(separator);
}

/**
 * The GB 11643-1999 check character for 17 digits, computed from the definition: weights
 * 2^(17-i) mod 11, sum mod 11 mapped through (12 - r) mod 11, with 10 written as X.
 */
function cnIdCheck(first17: string): string {
  let sum = 0;
  for (let i = 0; i < 17; i++) sum += Number(first17.charAt(i)) * (2 ** (17 - i) % 11);
  const check = (12 - (sum % 11)) % 11;
  return check === 10 ? 'X' : String(check);
}

/** A valid Chinese resident ID for a region code, birth date YYYYMMDD and sequence number. */
export function fakeCnResidentId(region: string, birth: string, sequence: string): string {
  const first17 = region + birth + sequence;
  return first17 + cnIdCheck(first17);
}

/** A valid IBAN for a country and BBAN, check digits computed with BigInt from ISO 13616. */
export function fakeIban(country: string, bban: string): string {
  const numeric = (bban + country + '00').replace(/[A-Z]/g, (letter) => String(letter.charCodeAt(0) - 55));
  const check = 98n - (BigInt(numeric) % 97n);
  return country + String(check).padStart(2, '0') + bban;
}
