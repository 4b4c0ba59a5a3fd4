import { type Detector, finding } from './detector.js';
import { characterClasses, looksRandom } from './entropy.js';
import type { Confidence, SecretRule } from './types.js';

interface VendorPattern {
  readonly rule: SecretRule;
  /** Global regex; the whole match is the secret. */
  readonly pattern: RegExp;
  /** An extra check on the match beyond its shape. */
  readonly accept?: (match: string) => boolean;
  readonly confidence?: (match: string) => Confidence;
}

// Vendor key alphabets include `_` and `-`, so a key must not continue a longer token on either
// side ("risk-…", "task_…" never start one).
const TOKEN_START = String.raw`(?<![A-Za-z0-9_-])`;
const TOKEN_END = String.raw`(?![A-Za-z0-9_-])`;

// Random keys mix upper case, lower case and digits; kebab-case words after `sk-` do not.
const mixesCase = (match: string): boolean => /[a-z]/.test(match) && /[A-Z]/.test(match) && /\d/.test(match);

const VENDOR_PATTERNS: readonly VendorPattern[] = [
  {
    // sk-ant-api03-…, sk-ant-admin01-…
    rule: 'anthropic_api_key',
    pattern: new RegExp(`${TOKEN_START}sk-ant-[A-Za-z0-9_-]{20,}${TOKEN_END}`, 'g'),
    accept: (match) => mixesCase(match.slice(7)),
  },
  {
    // Legacy sk-<48>, and sk-proj-, sk-svcacct-, sk-admin- keys; not sk-ant- (above).
    rule: 'openai_api_key',
    pattern: new RegExp(`${TOKEN_START}sk-(?!ant-)[A-Za-z0-9_-]{20,}${TOKEN_END}`, 'g'),
    accept: (match) => mixesCase(match.slice(3)),
  },
  {
    // Long-term (AKIA) and temporary (ASIA) access key ids: 20 upper-case letters and digits.
    rule: 'aws_access_key_id',
    pattern: /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/g,
  },
  {
    // Personal, OAuth, user-to-server, server-to-server and refresh tokens; fine-grained PATs.
    rule: 'github_token',
    pattern:
      /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{60,251})(?![A-Za-z0-9_])/g,
  },
  {
    // Bot, user, app-legacy, refresh and session tokens: xoxb-<digits>-<digits>-<random>.
    rule: 'slack_token',
    pattern: /(?<![A-Za-z0-9_-])xox[abprs]-\d+-[0-9A-Za-z][0-9A-Za-z-]{8,}(?![A-Za-z0-9_-])/g,
    accept: (match) => match.length >= 24 && /[A-Za-z]/.test(match.slice(5)),
  },
  {
    rule: 'google_api_key',
    pattern: new RegExp(`${TOKEN_START}AIza[0-9A-Za-z_-]{35}${TOKEN_END}`, 'g'),
  },
  {
    // Secret and restricted keys. Test-mode keys move no money, hence medium.
    rule: 'stripe_secret_key',
    pattern: /(?<![A-Za-z0-9_])[sr]k_(?:live|test)_[0-9A-Za-z]{24,247}(?![A-Za-z0-9_])/g,
    confidence: (match) => (match.includes('_live_') ? 'high' : 'medium'),
  },
  {
    // header.payload.signature, both JSON objects in base64url (so both start with "eyJ"); the
    // header must decode to a JSON object naming its algorithm.
    rule: 'jwt',
    pattern: new RegExp(
      `${TOKEN_START}eyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{16,}${TOKEN_END}`,
      'g',
    ),
    accept: (match) => hasJwtHeader(match.slice(0, match.indexOf('.'))),
  },
];

function decodeBase64Url(value: string): string | undefined {
  const base64 = value.replace(/-/g, '+').replace(/_/g, '/');
  try {
    return atob(base64 + '='.repeat((4 - (base64.length % 4)) % 4));
  } catch {
    return undefined;
  }
}

function hasJwtHeader(encoded: string): boolean {
  const decoded = decodeBase64Url(encoded);
  if (decoded === undefined) return false;
  try {
    const header: unknown = JSON.parse(decoded);
    return (
      typeof header === 'object' && header !== null && typeof (header as { alg?: unknown }).alg === 'string'
    );
  } catch {
    return false;
  }
}

/** Vendor API keys and tokens recognised by their prefix, alphabet and length; and JWTs. */
export const detectVendorKeys: Detector = (text, emit) => {
  for (const vendor of VENDOR_PATTERNS) {
    for (const match of text.matchAll(vendor.pattern)) {
      const value = match[0];
      if (vendor.accept && !vendor.accept(value)) continue;
      const confidence = vendor.confidence?.(value) ?? 'high';
      emit(finding('api_key', vendor.rule, match.index, match.index + value.length, confidence));
    }
  }
};

const PEM_BEGIN = /-----BEGIN ((?:[A-Z0-9]+ ){0,2}PRIVATE KEY(?: BLOCK)?)-----/g;
const BASE64_CHAR = /[A-Za-z0-9+/=]/;
/** A PEM body shorter than this is an elided example ("…"), not a key. */
const MIN_PEM_BODY = 64;

/**
 * PEM private keys (PKCS#1/#8, EC, DSA, OpenSSH, encrypted, PGP blocks): the whole block from
 * BEGIN to the matching END line, high; a block cut off before its END line (a chunk boundary, a
 * truncated paste) from BEGIN to the end of its body, medium. Either way the body must hold at
 * least 64 base64 characters, so an example with an elided body is not a finding. Public keys and
 * certificates are not secrets and never match.
 */
export const detectPrivateKeys: Detector = (text, emit) => {
  const nextEnd = forwardSearch(text, '-----END ');
  const nextBegin = forwardSearch(text, '-----BEGIN ');
  for (const begin of text.matchAll(PEM_BEGIN)) {
    const bodyStart = begin.index + begin[0].length;
    const endMarker = `-----END ${begin[1] ?? ''}-----`;
    const endIndex = nextEnd(bodyStart);
    const beginIndex = nextBegin(bodyStart);
    if (endIndex >= 0 && (beginIndex < 0 || endIndex < beginIndex) && text.startsWith(endMarker, endIndex)) {
      // A body with a placeholder in it was redacted already (and is not a key any more).
      const redacted = text.slice(bodyStart, endIndex).includes('[redacted:');
      if (!redacted && hasKeyBody(text, bodyStart, endIndex)) {
        emit(finding('api_key', 'private_key_pem', begin.index, endIndex + endMarker.length, 'high'));
      }
      continue;
    }
    // Truncated: the body is the run of base64 lines (and RFC 1421 header lines such as
    // "Proc-Type: 4,ENCRYPTED") that follows, up to the first other line.
    const end = truncatedBodyEnd(text, bodyStart);
    if (hasKeyBody(text, bodyStart, end)) {
      emit(finding('api_key', 'private_key_pem', begin.index, end, 'medium'));
    }
  }
};

/**
 * `indexOf(marker, from)` for non-decreasing `from`, remembering the last answer so that many
 * BEGIN lines cost one pass over the text, not one each.
 */
function forwardSearch(text: string, marker: string): (from: number) => number {
  let found = -1;
  let searchedFrom = -1;
  return (from) => {
    if (searchedFrom < 0 || (found >= 0 && found < from)) {
      found = text.indexOf(marker, from);
      searchedFrom = from;
    }
    return found;
  };
}

// One base64 token per line, or (a key pasted on one line) several tokens of 16 or more
// characters, which prose words are not; the header lines of RFC 1421 and OpenPGP armour; blank
// lines.
const PEM_BODY_LINE =
  /^[ \t]*(?:[A-Za-z0-9+/]+=*|[A-Za-z0-9+/]{16,}=*(?:[ \t]+[A-Za-z0-9+/]{16,}=*)+|(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset): [^\n]*)?[ \t]*\r?$/;

function truncatedBodyEnd(text: string, bodyStart: number): number {
  let end = bodyStart;
  let lineStart = bodyStart;
  while (lineStart <= text.length) {
    const newline = text.indexOf('\n', lineStart);
    const lineEnd = newline < 0 ? text.length : newline;
    const line = text.slice(lineStart, lineEnd);
    if (!PEM_BODY_LINE.test(line)) break;
    if (line.trim().length > 0) end = lineStart + line.trimEnd().length;
    if (newline < 0) break;
    lineStart = newline + 1;
  }
  return end;
}

/** Whether [start, end) holds at least MIN_PEM_BODY base64 characters. */
function hasKeyBody(text: string, start: number, end: number): boolean {
  let count = 0;
  for (let i = start; i < end && count < MIN_PEM_BODY; i++) if (BASE64_CHAR.test(text.charAt(i))) count++;
  return count >= MIN_PEM_BODY;
}

const BEARER = /(?<![A-Za-z0-9_])[Bb]earer[ \t]+([A-Za-z0-9._~+/-]+=*)(?![A-Za-z0-9._~+/=-])/g;

/**
 * `Bearer <token>` (an Authorization header, a curl line): the token, when it looks random
 * (see `looksRandom`). High: the scheme word plus a random value is unambiguous.
 */
export const detectBearerTokens: Detector = (text, emit) => {
  for (const match of text.matchAll(BEARER)) {
    const token = match[1] ?? '';
    if (!looksRandom(token) || characterClasses(token) < 2) continue;
    const start = match.index + match[0].length - token.length;
    emit(finding('api_key', 'bearer_token', start, start + token.length, 'high'));
  }
};
