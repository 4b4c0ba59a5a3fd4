import { type Detector, finding } from './detector.js';
import { RANDOMNESS_THRESHOLDS, characterClasses, looksRandom } from './entropy.js';
import type { SecretFinding } from './types.js';

// Labelled values: a label that names a secret ("password", "api_key", "DB_PASSWORD", "密码"), a
// separator, and the value. Only the value is a finding. Which label means what, and what a
// value must look like to count, is decided here in code rather than in one large regex.

type LabelKind = 'password' | 'secret';

// A label as written in code, config, JSON, HTTP headers or CLI flags: an identifier with dots
// and hyphens ("config.apiKey", "x-api-key", "DB_PASSWORD"), not continuing a longer identifier.
const IDENT = String.raw`(?<![A-Za-z0-9_$.])([A-Za-z_$][A-Za-z0-9_$.-]{0,63})`;
// `=`, `:`, `:=`, `=>`, full-width `：` `＝`; or prose "is"/"was". Horizontal space only: a label
// at the end of a line does not reach into the next one.
const SEPARATOR = String.raw`(?:[ \t]{0,4}(?::=|=>|[:=\uFF1A\uFF1D])[ \t]{0,4}|[ \t]+(?:is|was)[ \t]+)`;
// A value follows: a quote, or printable ASCII other than a quote.
const VALUE_AHEAD = '(?=["\'`!#-&(-_a-~])';

const LABELLED = new RegExp(`${IDENT}["']?(${SEPARATOR})${VALUE_AHEAD}`, 'g');

// "password for my gmail account is …", "the passcode to the router was …"
const PASSWORD_PROSE = new RegExp(
  String.raw`(?<![A-Za-z0-9_])(?:password|passwd|passphrase|passcode|pwd)` +
    String.raw`[ \t]+(?:for|to|of|on|at|in)[ \t]+(?:(?:the|my|our|your|his|her|their|this|that)[ \t]+)?` +
    String.raw`[A-Za-z0-9@._-]{1,40}(?:[ \t]+[A-Za-z]{2,12})?` +
    String.raw`[ \t]+(?:is|was)[ \t]*[:\uFF1A]?[ \t]*` +
    VALUE_AHEAD,
  'gi',
);

// 密码是…, 登录密码：…, 口令为…, 密钥=…; the value is ASCII (passwords and keys are typed in
// ASCII), so it ends where the Chinese text resumes: "密码是abc123你记一下".
const CHINESE_LABELLED = new RegExp(
  String.raw`(密码|口令|密钥|秘钥|私钥|令牌)[ \t\u3000]*(?:是|为|[:=\uFF1A\uFF1D])[ \t\u3000]*[:\uFF1A]?[ \t\u3000]*` +
    String.raw`["'\u201C\u2018\u300C\u300E]?(?=[!#-&(-_a-~])`,
  'g',
);

// scheme://user: and the rest of the token; where the password ends is decided in code (it may
// hold `/`, `#`, `@`: the user-info ends at the `@` followed by a host).
const URL_CREDENTIALS =
  /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,15}:\/\/[^\s:/?#@"'<>[\]]{0,128}:([^\s"'<>]{1,256})/g;
const URL_HOST = /^(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

const BASIC_AUTH =
  /(?<![A-Za-z0-9_-])authorization["']?[ \t]*[:=][ \t]*["']?basic[ \t]+([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])/gi;

/** Splits an identifier into lower-case words: "DB_PASSWORD" → db, password; "apiKey" → api, key. */
export function labelWords(identifier: string): string[] {
  return identifier
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[\s_.$-]+/)
    .filter((word) => word.length > 0);
}

// Keys and tokens that are not credentials: a qualifier in front of "key"/"token" that names a
// data-structure, pagination or language-model concept.
const NOT_SECRET_QUALIFIERS = new Set(
  (
    'public sort cache primary foreign partition idempotency dedup dedupe unique composite index ' +
    'object lookup map row hot shortcut routing react list group message i18n translation storage ' +
    'shard search page next prev previous continuation cancellation cancel max min prompt ' +
    'completion input output total num sync resume pagination special start end eos bos pad unk ' +
    'csrf xsrf request event state sequence'
  ).split(' '),
);

const PASSWORD_WORDS = new Set(['password', 'passwd', 'pwd', 'passphrase', 'passcode']);
const SECRET_SUFFIXES = ['apikey', 'secretkey', 'accesskey', 'privatekey', 'authkey', 'signingkey'];

/** What a label names: a password, a secret key or token, or neither. */
export function classifyLabel(identifier: string): LabelKind | undefined {
  const words = labelWords(identifier);
  const last = words.at(-1);
  if (last === undefined) return undefined;
  const qualifier = words.at(-2);
  if (PASSWORD_WORDS.has(last) || last.endsWith('password') || last.endsWith('passwd')) return 'password';
  // "pass" alone is a verb or a boarding pass; DB_PASS and smtpPass are passwords.
  if (last === 'pass' && words.length >= 2) return 'password';
  if (qualifier !== undefined && NOT_SECRET_QUALIFIERS.has(qualifier)) return undefined;
  if (
    last === 'key' ||
    last === 'secret' ||
    last === 'credential' ||
    last === 'credentials' ||
    last.endsWith('token') ||
    last.endsWith('secret') ||
    SECRET_SUFFIXES.some((suffix) => last.endsWith(suffix))
  ) {
    return 'secret';
  }
  return undefined;
}

// Values that say something about a password rather than being one.
const NOT_PASSWORDS = new Set(
  (
    'a an the is are was be been not no yes none null nil undefined true false void empty blank ' +
    'required optional needed necessary mandatory incorrect correct invalid valid wrong right ' +
    'missing hidden masked redacted changed reset expired protected encrypted hashed stored saved ' +
    'sent set unset updated same different too very long short weak strong secure insecure ' +
    'unknown forgotten lost here there below above following provided given enter entered type ' +
    'typed your my our their his her its this that what which who when where how must should ' +
    'will can cannot could would may might please field input change update use using with ' +
    'without for from into and or but case sensitive characters chars digits letters ' +
    'string str number int integer bool boolean any text varchar char bytes secretstr ' +
    'secretstring optional password passwd pwd passphrase secret tbd todo fixme'
  ).split(' '),
);

// Masks, placeholders (`[redacted:password]`, `<your password>`), templates (`${DB_PASSWORD}`,
// `{{ pw }}`, `%(pw)s`), environment references, URLs and paths: where a value comes from, not the value.
const PLACEHOLDER_VALUE =
  /^(?:[*•●xX#._-]+|\?+)$|^(?:\[|<|\{|\$[{A-Za-z_(]|%[(s]|[A-Za-z][A-Za-z0-9+.-]*:\/\/|~?\/|\.\.?\/)/;
// Code, not a value: a call (`input(…)`, `getenv(…)`) or a member path (`req.body.password`,
// `os.environ[…]`, `process.env.DB_PASSWORD`).
const CODE_VALUE = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*[([]|^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$/;

interface Value {
  readonly text: string;
  readonly start: number;
  readonly quoted: boolean;
}

// Unquoted values: printable ASCII except quotes. Secret values: a key's alphabet.
const isValueChar = (code: number): boolean =>
  code === 0x21 ||
  (code >= 0x23 && code <= 0x26) ||
  (code >= 0x28 && code <= 0x5f) ||
  (code >= 0x61 && code <= 0x7e);
const isKeyChar = (code: number): boolean =>
  (code >= 0x30 && code <= 0x39) ||
  (code >= 0x41 && code <= 0x5a) ||
  (code >= 0x61 && code <= 0x7a) ||
  code === 0x5f || // _
  code === 0x2d || // -
  code === 0x2b || // +
  code === 0x2f || // /
  code === 0x3d || // =
  code === 0x2e || // .
  code === 0x7e; // ~

/** A quoted value holds at most this many characters. */
const MAX_QUOTED = 256;
/** An unquoted password is read this far; a longer one fails the length check anyway. */
const PASSWORD_READ_LIMIT = 256;

/**
 * Reads values out of one text. Scanning moves forward, and each alphabet's last run is
 * remembered, so that the values of many labels inside one long run ("a=b=a=b=…",
 * "token=token=…") cost O(1) each instead of a rescan of the run.
 */
export class ValueReader {
  private readonly runs = new Map<(code: number) => boolean, { start: number; end: number }>();

  constructor(readonly text: string) {}

  /** End of the run of `accepts` characters from `at`. */
  runEnd(at: number, accepts: (code: number) => boolean): number {
    const cached = this.runs.get(accepts);
    if (cached && at >= cached.start && at <= cached.end) return cached.end;
    let end = at;
    while (end < this.text.length && accepts(this.text.charCodeAt(end))) end++;
    this.runs.set(accepts, { start: at, end });
    return end;
  }

  /** The quoted value opening at `at`, or the unquoted run there (its first `limit` characters). */
  read(at: number, limit: number): Value | undefined {
    const open = this.text.charAt(at);
    if (open === '"' || open === "'" || open === '`') {
      const stop = Math.min(this.text.length, at + 2 + MAX_QUOTED);
      for (let i = at + 1; i < stop; i++) {
        const char = this.text.charAt(i);
        if (char === open) return { text: this.text.slice(at + 1, i), start: at + 1, quoted: true };
        if (char === '\n') return undefined;
      }
      return undefined;
    }
    const end = Math.min(this.runEnd(at, isValueChar), at + limit);
    return end > at ? { text: this.text.slice(at, end), start: at, quoted: false } : undefined;
  }
}

/**
 * Trims an unquoted value: punctuation after it ("my password is hunter2.", "pw: x;"), a closing
 * bracket it did not open ("(password: hunter2)"), and a following URL query parameter
 * ("password=x&next=/").
 */
export function trimUnquoted(value: string): string {
  let trimmed = value;
  const query = /&[A-Za-z_][\w.-]*=/.exec(trimmed);
  if (query) trimmed = trimmed.slice(0, query.index);
  for (;;) {
    const last = trimmed.at(-1);
    if (last === undefined) break;
    const unopened =
      (last === ')' && !trimmed.includes('(')) ||
      (last === ']' && !trimmed.includes('[')) ||
      (last === '}' && !trimmed.includes('{'));
    if ('.,;:'.includes(last) || unopened) trimmed = trimmed.slice(0, -1);
    else break;
  }
  return trimmed;
}

/** Password values: 4–128 characters, not a word about passwords, a placeholder or code. */
export const PASSWORD_LENGTH = { min: 4, max: 128 } as const;

export interface ValueContext {
  /** The label is followed by "is"/"was" rather than by `:` or `=`. */
  readonly prose: boolean;
  /** Where the label starts. */
  readonly labelStart: number;
}

// "my password is …", "the wifi password was …": a sentence that is about one particular password.
// "The" only right before the label: "the best password is length" is advice, not a password.
const POSSESSIVE_BEFORE =
  /(?:^|[^A-Za-z])(?:(?:my|our|your|his|her|their)[ \t]+(?:[A-Za-z-]+[ \t]+)?|the[ \t]+)$/i;

/** Whether a value read after a password label can be a password (see the README's guards). */
export function plausiblePassword(
  value: string,
  quoted: boolean,
  text: string,
  end: number,
  context: ValueContext,
): boolean {
  if (value.length < PASSWORD_LENGTH.min || value.length > PASSWORD_LENGTH.max) return false;
  if (value.trim() !== value) return false;
  if (NOT_PASSWORDS.has(value.toLowerCase())) return false;
  if (PLACEHOLDER_VALUE.test(value) || CODE_VALUE.test(value)) return false;
  // Part of it was redacted already: what is left is no longer the password.
  if (value.includes('[redacted:')) return false;
  if (quoted || !/^[A-Za-z]+$/.test(value)) return true;
  // A bare word. "Password: must be at least 8 characters": a sentence continues after it.
  // (A placeholder there stands for a word that was redacted.)
  if (/^[ \t]+[A-Za-z[]/.test(text.slice(end, end + 3))) return false;
  // "A good password is length": in prose, a bare word is a password only after a possessive.
  if (context.prose) {
    return POSSESSIVE_BEFORE.test(text.slice(Math.max(0, context.labelStart - 40), context.labelStart));
  }
  return true;
}

const SECRET_VALUE = /^[A-Za-z0-9_\-+/=.~]+$/;
const AWS_SECRET_VALUE = /^[A-Za-z0-9/+]{40}$/;

/** Emits the finding for a labelled value if it is one; returns where the finding ends. */
function emitValue(
  kind: LabelKind,
  labelWordsOf: readonly string[],
  at: number,
  reader: ValueReader,
  context: ValueContext,
  emit: (finding: SecretFinding) => void,
): number | undefined {
  const { text } = reader;
  if (kind === 'password') {
    const value = reader.read(at, PASSWORD_READ_LIMIT);
    if (value === undefined) return undefined;
    const password = value.quoted ? value.text : trimUnquoted(value.text);
    const end = value.start + password.length;
    if (!plausiblePassword(password, value.quoted, text, end, context)) return undefined;
    const confidence = characterClasses(password) >= 2 ? 'high' : 'medium';
    emit(finding('password', 'labelled_password', value.start, end, confidence));
    return end;
  }
  let secret: string;
  let start = at;
  if (text.charAt(at) === '"' || text.charAt(at) === "'" || text.charAt(at) === '`') {
    const value = reader.read(at, MAX_QUOTED);
    if (value === undefined) return undefined;
    secret = value.text;
    start = value.start;
  } else {
    // An unquoted secret ends at the first character outside a key's alphabet.
    const end = reader.runEnd(at, isKeyChar);
    if (end - at > RANDOMNESS_THRESHOLDS.maxLength) return undefined;
    secret = trimUnquoted(text.slice(at, end));
  }
  if (!SECRET_VALUE.test(secret) || !looksRandom(secret)) return undefined;
  // A path to a file ("uploads/2024/05/report-v2.pdf"), not a key.
  if (/\/[^/]*\.[A-Za-z]{2,4}$/.test(secret)) return undefined;
  const aws =
    labelWordsOf.includes('secret') &&
    (labelWordsOf.includes('aws') || labelWordsOf.includes('access')) &&
    AWS_SECRET_VALUE.test(secret);
  const rule = aws ? 'aws_secret_access_key' : 'labelled_secret';
  emit(finding('api_key', rule, start, start + secret.length, aws ? 'high' : 'medium'));
  return start + secret.length;
}

/**
 * Values labelled as passwords or secrets in code, configuration, JSON, headers and prose:
 * `password: x`, `pwd=x`, `"passwd": "x"`, `DB_PASSWORD=x`, `my password is x`,
 * `the password for my bank is x`, `api_key = x`, `GITHUB_TOKEN=x`, `client_secret: "x"`.
 */
export const detectLabelledValues: Detector = (text, emit) => {
  const reader = new ValueReader(text);
  const pattern = new RegExp(LABELLED.source, LABELLED.flags);
  let match: RegExpExecArray | null;
  while ((match = pattern.exec(text)) !== null) {
    const identifier = match[1] ?? '';
    const separator = match[2] ?? '';
    const valueStart = match.index + match[0].length;
    const kind = classifyLabel(identifier);
    // "is"/"was" only after a single word ("my password is"), not after any identifier.
    const prose = /^[ \t]+(?:is|was)/.test(separator);
    const end =
      kind !== undefined && !(prose && /[._$-]/.test(identifier))
        ? emitValue(
            kind,
            labelWords(identifier),
            valueStart,
            reader,
            { prose, labelStart: match.index },
            emit,
          )
        : undefined;
    // Scan on from the end of the finding, or from the start of a rejected value: what follows
    // may hold another label ("a=token=…", "key=…:password=…").
    pattern.lastIndex = end ?? valueStart;
  }
  const passwordProse = new RegExp(PASSWORD_PROSE.source, PASSWORD_PROSE.flags);
  while ((match = passwordProse.exec(text)) !== null) {
    const valueStart = match.index + match[0].length;
    const context = { prose: true, labelStart: match.index };
    passwordProse.lastIndex =
      emitValue('password', ['password'], valueStart, reader, context, emit) ?? valueStart;
  }
};

/** 密码是…, 登录密码：…, 口令为…; 密钥/秘钥/私钥/令牌 followed by a random value. */
export const detectChineseLabelledValues: Detector = (text, emit) => {
  const reader = new ValueReader(text);
  for (const match of text.matchAll(CHINESE_LABELLED)) {
    const kind: LabelKind = match[1] === '密码' || match[1] === '口令' ? 'password' : 'secret';
    const context = { prose: false, labelStart: match.index };
    emitValue(kind, [], match.index + match[0].length, reader, context, emit);
  }
};

// What user-info passwords in documentation look like.
const URL_PASSWORD_PLACEHOLDERS =
  /^(?:password|passwd|pass|pwd|secret|x+|\*+|\.+|_+|-+|\$\{.*\}?|%[a-z(].*)$/i;

/** The password in a URL's user-info: `postgres://app:<password>@db:5432/x`. */
export const detectUrlPasswords: Detector = (text, emit) => {
  for (const match of text.matchAll(URL_CREDENTIALS)) {
    const rest = match[1] ?? '';
    const password = userInfoPassword(rest);
    if (password === undefined || URL_PASSWORD_PLACEHOLDERS.test(password)) continue;
    if (password.includes('[redacted:')) continue;
    const start = match.index + match[0].length - rest.length;
    emit(finding('password', 'url_password', start, start + password.length, 'high'));
  }
};

/**
 * The password at the start of `rest` (what follows `scheme://user:`): up to the first `@` after
 * which comes a host (and then `:port`, `/`, `?`, `#` or the end). Undefined when there is none,
 * or when what precedes is a port and a path (`host:8080/users/@alice`).
 */
function userInfoPassword(rest: string): string | undefined {
  let plain: number | undefined;
  let qualified: number | undefined;
  for (let at = rest.indexOf('@'); at > 0; at = rest.indexOf('@', at + 1)) {
    // Past a query ("?x=a@b.com") the user-info is over.
    if (/\?[^?#]*=/.test(rest.slice(0, at))) break;
    const after = rest.slice(at + 1);
    const hostEnd = after.search(/[/?#]/);
    const host = trimUnquoted(hostEnd < 0 ? after : after.slice(0, hostEnd));
    if (host === '' || !URL_HOST.test(host)) continue;
    plain ??= at;
    // A host with a dot, a port or "localhost" is surely the host; "t" in "s3cr@t/x" may not be.
    if (/[.:]|^localhost$/i.test(host)) qualified = at;
  }
  const at = qualified ?? plain;
  if (at === undefined) return undefined;
  const password = rest.slice(0, at);
  if (/^[0-9]{1,5}(?:[/?#]|$)/.test(password) && /[/?#]/.test(password)) return undefined;
  return password;
}

// `--password hunter2`, `--db-password hunter2` (the `=` form is a labelled value).
const LONG_PASSWORD_FLAG = /(?<![A-Za-z0-9_-])--(?:[a-z]+-)?(?:password|passwd|pass|pwd)[ \t]+(?=[^\s-])/gi;
// `-p hunter2` and `-phunter2` (MySQL's client); `redis-cli -a hunter2`; `sshpass -p hunter2`.
const SHORT_PASSWORD_FLAG = /(?<![A-Za-z0-9_-])-([pa])([ \t]+)?(?=[^\s-])/g;
// A command at the start of a line or after a shell operator or prompt (`$ `), optionally sudo
// and a path: "mysql" in a sentence is not a command line.
const COMMAND_START = String.raw`(?:^|[;&|\`(]|\$[ \t])[ \t]*(?:sudo[ \t]+)?(?:[^\s]*/)?`;
const MYSQL_LIKE = new RegExp(
  `${COMMAND_START}(?:mysql|mysqldump|mysqladmin|mysqlsh|mariadb|mariadb-dump|mycli)(?:\\.exe)?[ \t]`,
);
const SSHPASS = new RegExp(`${COMMAND_START}sshpass[ \t]`);
const REDIS_CLI = new RegExp(`${COMMAND_START}redis-cli[ \t]`);
const USER_FLAG = /(?:^|[ \t])(?:-u[ \t]*[^\s-]|--user[= ])/;

/**
 * Passwords given as command-line flags: `--password <value>` (any command); `-p <value>` or
 * `-p<value>` on a MySQL-family command line or after `-u <user>`; `sshpass -p <value>`;
 * `redis-cli -a <value>`. `-p` elsewhere is a port, a path or a parent flag and is left alone.
 */
export const detectCliPasswords: Detector = (text, emit) => {
  const reader = new ValueReader(text);
  const emitAt = (at: number, labelStart: number) => {
    const value = reader.read(at, PASSWORD_READ_LIMIT);
    if (value === undefined) return;
    const password = value.quoted ? value.text : trimUnquoted(value.text);
    const end = value.start + password.length;
    if (!plausiblePassword(password, true, text, end, { prose: false, labelStart })) return;
    emit(finding('password', 'cli_password', value.start, end, 'high'));
  };
  for (const match of text.matchAll(LONG_PASSWORD_FLAG)) emitAt(match.index + match[0].length, match.index);
  for (const match of text.matchAll(SHORT_PASSWORD_FLAG)) {
    const lineStart = text.lastIndexOf('\n', match.index) + 1;
    const line = text.slice(lineStart, match.index);
    const mysql = MYSQL_LIKE.test(line);
    const glued = match[2] === undefined;
    const command =
      match[1] === 'a'
        ? REDIS_CLI.test(line)
        : mysql || SSHPASS.test(line) || (!glued && USER_FLAG.test(line));
    if (!command || (glued && !mysql)) continue;
    const at = match.index + match[0].length;
    // A port after -p on a MySQL line is -P; digits alone after -p are taken as a password only there.
    if (!mysql && /^[0-9]+(?:\s|$)/.test(text.slice(at, at + 8))) continue;
    emitAt(at, match.index);
  }
};

/**
 * `Authorization: Basic <base64>`: the base64 value, which encodes `user:password`. It must
 * decode to printable text with a colon and a non-empty password.
 */
export const detectBasicAuth: Detector = (text, emit) => {
  for (const match of text.matchAll(BASIC_AUTH)) {
    const encoded = match[1] ?? '';
    let decoded: string;
    try {
      decoded = atob(encoded);
    } catch {
      continue;
    }
    const colon = decoded.indexOf(':');
    if (colon < 0 || colon === decoded.length - 1 || !/^[\x20-\x7E]+$/.test(decoded)) continue;
    const start = match.index + match[0].length - encoded.length;
    emit(finding('password', 'basic_auth_password', start, start + encoded.length, 'high'));
  }
};
