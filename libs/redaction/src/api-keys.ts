import { type Detector, finding } from './detector.js';
import { characterClasses, looksRandom, shannonEntropy } from './entropy.js';
import type { Confidence, SecretRule } from './types.js';

interface VendorPattern {
  readonly rule: SecretRule;
  /** Global regex; the whole match is the secret. */
  readonly pattern: RegExp;
  /** An extra check on the match beyond its shape; `text` and `index` give its context. */
  readonly accept?: (match: string, text: string, index: number) => boolean;
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
    // Personal, deploy, runner, pipeline-trigger, feed and OAuth application tokens:
    // glpat-<20 or more>, optionally with the routable suffix (".01.<7–9>").
    rule: 'gitlab_token',
    pattern: new RegExp(
      `${TOKEN_START}gl(?:pat|dt|rt|ptt|ft|oas|cbt|soat)-[A-Za-z0-9_-]{20,}(?:\\.[0-9a-z]{2}\\.[0-9a-z]{7,9})?${TOKEN_END}`,
      'g',
    ),
    accept: (match) => {
      const body = match.slice(match.indexOf('-') + 1);
      return /[0-9]/.test(body) && /[A-Za-z]/.test(body);
    },
  },
  {
    // npm access tokens: npm_ and 36 base62 characters.
    rule: 'npm_token',
    pattern: /(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9_])/g,
    accept: (match) => /[0-9]/.test(match.slice(4)) && /[A-Za-z]/.test(match.slice(4)),
  },
  {
    // Hugging Face user access tokens: hf_ and 34 or more letters (mixed case).
    rule: 'huggingface_token',
    pattern: /(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,40}(?![A-Za-z0-9_])/g,
    accept: (match) => /[a-z]/.test(match.slice(3)) && /[A-Z]/.test(match.slice(3)),
  },
  {
    // SendGrid API keys: SG.<22>.<43>.
    rule: 'sendgrid_api_key',
    pattern: /(?<![A-Za-z0-9_.-])SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g,
  },
  {
    // Twilio API key (SK…) and account (AC…) SIDs with 32 hex digits: only with "twilio" or an
    // auth-token label near them, since a SID alone is an identifier.
    rule: 'twilio_credential',
    pattern: /(?<![A-Za-z0-9_])(?:SK|AC)[0-9a-fA-F]{32}(?![A-Za-z0-9_])/g,
    accept: (_match, text, index) =>
      /twilio|auth[ _-]?token|account[ _-]?sid|api[ _-]?key/i.test(
        text.slice(Math.max(0, index - 80), index + 120),
      ),
  },
  {
    // Incoming-webhook and workflow URLs: whoever has one can post to the channel.
    rule: 'slack_webhook_url',
    pattern: /https:\/\/hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9_/-]{20,}/g,
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
      if (vendor.accept && !vendor.accept(value, text, match.index)) continue;
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

const AWS_SECRET = /(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=])/g;
const AWS_KEY_ID = /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/;
/** Entropy (bits per character) a 40-character value needs to pass for a key on its own. */
const AWS_ALONE_ENTROPY = 4.2;

/**
 * AWS secret access keys without a label: 40 base64 characters standing alone, mixing upper
 * case, lower case and digits. High within 200 characters of an access key id (AKIA…/ASIA…);
 * alone, medium and only with entropy of at least 4.2 bits per character (a path, a word run or
 * a hex digest does not reach it, and hex has no upper case).
 */
export const detectAwsSecretKeys: Detector = (text, emit) => {
  for (const match of text.matchAll(AWS_SECRET)) {
    const value = match[0];
    if (!/[a-z]/.test(value) || !/[A-Z]/.test(value) || !/[0-9]/.test(value)) continue;
    const near = AWS_KEY_ID.test(text.slice(Math.max(0, match.index - 200), match.index + 240));
    if (!near && (shannonEntropy(value) < AWS_ALONE_ENTROPY || !looksRandom(value))) continue;
    emit(
      finding('api_key', 'aws_secret_access_key', match.index, match.index + 40, near ? 'high' : 'medium'),
    );
  }
};
