import { type Detector, finding } from './detector.js';
import { characterClasses } from './entropy.js';
import { ValueReader, plausiblePassword, trimUnquoted } from './labelled.js';

// Secrets found by the sentence around them rather than by their shape alone: a password-like
// token near a word for a password ("is 'Tr0ub4dor&3' a decent password?", "the admin login is
// …", "新密码我想设成 …"), and identity-document numbers after their label (passport numbers,
// UK National Insurance numbers). See decision 0028.

// A word for a password, in English or Chinese. "login" and "pin" only link a value through a
// connector ("the admin login is …"): on their own they are too common.
const PASSWORD_WORD =
  /(?<![A-Za-z0-9_])(?:pass(?:word|wd|phrase|code)s?|pwd)(?![A-Za-z0-9_])|密码|密碼|口令/gi;
const CONNECTED_WORD =
  /(?<![A-Za-z0-9_])(?:pass(?:word|wd|phrase|code)s?|pwd|login|log-in|pin)(?![A-Za-z0-9_])/gi;

// English connector: up to three words, then is/was/will be/should be/to/as/=/:, then the value.
const EN_CONNECTOR =
  /^(?:[ \t]+(?:[A-Za-z'-]{1,20}))?(?:[ \t]+(?:[A-Za-z'-]{1,20})){0,2}?[ \t]*(?:[ \t](?:is|was|are|will[ \t]+be|would[ \t]+be|should[ \t]+be|shall[ \t]+be|must[ \t]+be|becomes|to)[ \t]+|[ \t]*[:=\uFF1A][ \t]*)(?:(?:now|still|just|simply)[ \t]+)?/i;
// Chinese connector: up to twelve characters of the clause, then 设成/改成/是/为/：/…, then the value.
const ZH_CONNECTOR =
  /^[^\n。！？!?，,；;]{0,12}?(?:设置成|设置为|设成|设为|改成|改为|换成|换为|定为|定成|用的是|用|是|为|叫|：|:|=)(?:了)?[ \t\u3000]*/;

// Where a window stops: a line break, the end of a sentence or a semicolon.
const SENTENCE_END = /\n|[。！？；;]|[.!?](?=\s|$)/g;
const WINDOW = 80;

const QUOTE_CHAR = /["'`\u201C\u201D\u2018\u2019\u300C\u300D\u300E\u300F]/;
const OPENING = /["'`\u201C\u2018\u300C\u300E]/;
const VERSION = /^v?\d+(?:\.\d+)+(?:[-+][0-9A-Za-z.-]+)?$/i;
const EMAIL_OR_URL = /@[A-Za-z0-9-]+\.[A-Za-z]{2,}$|:\/\/|^www\./i;
const CONSTANT_OR_TICKET = /^[A-Z0-9_]+$|^[A-Z][A-Z0-9]*-\d+$/;
const CODE_LIKE = /[()[\]{}<>]|^[~./]|^\$/;
// Dates, times, amounts and ranges: digits with separators ("2024-03-01", "8-16", "1,299.00").
const NUMBER_WITH_SEPARATORS = /^(?=.*[.,:/-])[0-9.,:/-]+$/;

/** Letter–digit alternations: "Tr0ub4dor" has four, "iPhone15" one. */
function alternations(value: string): number {
  let count = 0;
  for (let i = 1; i < value.length; i++) {
    const a = /[0-9]/.test(value.charAt(i - 1));
    const b = /[0-9]/.test(value.charAt(i));
    if (a !== b && /[A-Za-z0-9]/.test(value.charAt(i - 1)) && /[A-Za-z0-9]/.test(value.charAt(i))) count++;
  }
  return count;
}

function notAToken(value: string): boolean {
  return (
    value.includes('[redacted:') ||
    VERSION.test(value) ||
    EMAIL_OR_URL.test(value) ||
    CONSTANT_OR_TICKET.test(value) ||
    CODE_LIKE.test(value) ||
    NUMBER_WITH_SEPARATORS.test(value)
  );
}

/**
 * A token that is a password whatever the words around it, once it stands in a sentence about a
 * password: 6–64 characters, three character classes or more, and a symbol or at least two
 * letter–digit alternations ("Tr0ub4dor&3", "X9$kq2!z"; not "iPhone15", "ERR_AUTH_401", "v2.3.1").
 */
function strongToken(value: string): boolean {
  if (value.length < 6 || value.length > 64 || /^[A-Za-z]+$/.test(value)) return false;
  if (characterClasses(value) < 3 || notAToken(value)) return false;
  return /[^A-Za-z0-9]/.test(value) || alternations(value) >= 2;
}

/** A quoted token in a sentence about a password: 4–64 characters, two classes or more. */
function quotedToken(value: string): boolean {
  return value.length >= 4 && value.length <= 64 && characterClasses(value) >= 2 && !notAToken(value);
}

/**
 * The sentence window around [start, end): up to WINDOW characters each side, cut at a sentence
 * end, and widened to whole tokens (so that windows of neighbouring words can be scanned once).
 */
function windowAround(text: string, start: number, end: number): { from: number; to: number } {
  let from = Math.max(0, start - WINDOW);
  let to = Math.min(text.length, end + WINDOW);
  while (from > 0 && /[!-~]/.test(text.charAt(from - 1))) from--;
  while (to < text.length && /[!-~]/.test(text.charAt(to))) to++;
  const before = text.slice(from, start);
  for (const stop of before.matchAll(SENTENCE_END)) {
    from = Math.max(from, start - before.length + stop.index + stop[0].length);
  }
  const after = text.slice(end, to);
  const stop = new RegExp(SENTENCE_END.source, 'g').exec(after);
  if (stop) to = end + stop.index;
  return { from, to };
}

const TOKEN = /[!-~]+/g;

function emitWindowTokens(text: string, from: number, to: number, emit: Parameters<Detector>[1]): void {
  const window = text.slice(from, to);
  for (const match of window.matchAll(TOKEN)) {
    const lead = /^[:=,;(\uFF1A]*/.exec(match[0])?.[0].length ?? 0;
    const raw = match[0].slice(lead);
    const at = from + match.index + lead;
    if (OPENING.test(raw.charAt(0))) {
      // A quoted token: up to the closing quote, with no space inside.
      const close = raw.slice(1).search(QUOTE_CHAR);
      if (close < 0) continue;
      const value = raw.slice(1, 1 + close);
      if (quotedToken(value))
        emit(finding('password', 'prose_password', at + 1, at + 1 + value.length, 'medium'));
      continue;
    }
    const value = trimUnquoted(raw.replace(/[?!"'`]+$/, ''));
    if (strongToken(value)) emit(finding('password', 'prose_password', at, at + value.length, 'medium'));
  }
}

function emitConnected(
  text: string,
  at: number,
  reader: ValueReader,
  labelStart: number,
  emit: Parameters<Detector>[1],
  chinese: boolean,
): void {
  const value = reader.read(at, 128);
  if (value === undefined) return;
  const password = value.quoted ? value.text : trimUnquoted(value.text.replace(/[?!]+$/, ''));
  const end = value.start + password.length;
  if (!plausiblePassword(password, value.quoted, text, end, { prose: false, labelStart })) return;
  if (notAToken(password)) return;
  // A bare value after a connector must not be a word: a digit or a symbol in it, or quotes.
  const shaped = value.quoted || /[^A-Za-z]/.test(password);
  if (
    !shaped ||
    (!chinese && !value.quoted && characterClasses(password) < 2 && !/^\d{6,}$/.test(password))
  ) {
    return;
  }
  if (!value.quoted && password.length < 6 && !chinese) return;
  emit(
    finding(
      'password',
      'prose_password',
      value.start,
      end,
      characterClasses(password) >= 3 ? 'high' : 'medium',
    ),
  );
}

/**
 * Passwords said in prose, in English and Chinese: a value linked to a password word by a
 * connector ("my new password will be X", "the admin login is X", "set the wifi passcode to X",
 * "新密码我想设成 X", "口令改为 X"), a quoted token in a sentence about a password ("is 'X' a
 * decent password?"), and a strong token (three classes, and a symbol or letter–digit
 * alternations) anywhere in such a sentence ("X is my new password").
 */
export const detectProsePasswords: Detector = (text, emit) => {
  const reader = new ValueReader(text);
  for (const match of text.matchAll(CONNECTED_WORD)) {
    const after = text.slice(match.index + match[0].length, match.index + match[0].length + 80);
    const connector = EN_CONNECTOR.exec(after);
    // "login to server01", "pin to the top": "to" links a value to a password word only.
    const loose = /^(?:login|log-in|pin)$/i.test(match[0]) && /[ \t]to[ \t]+$/i.test(connector?.[0] ?? '');
    if (connector && !loose) {
      emitConnected(
        text,
        match.index + match[0].length + connector[0].length,
        reader,
        match.index,
        emit,
        false,
      );
    }
  }
  let scanned = 0;
  for (const match of text.matchAll(PASSWORD_WORD)) {
    const end = match.index + match[0].length;
    if (/^[\u4E00-\u9FFF]/.test(match[0])) {
      const connector = ZH_CONNECTOR.exec(text.slice(end, end + 40));
      if (connector) emitConnected(text, end + connector[0].length, reader, match.index, emit, true);
    }
    const { from, to } = windowAround(text, match.index, end);
    // Windows of neighbouring password words overlap: what was scanned is not scanned again.
    if (match.index > scanned) emitWindowTokens(text, Math.max(from, scanned), match.index, emit);
    if (to > Math.max(end, scanned)) emitWindowTokens(text, Math.max(end, scanned), to, emit);
    scanned = Math.max(scanned, to);
  }
};

// "passport number", "passport no.", "passport #", "passport:", 护照号码, 护照号.
const PASSPORT =
  /(?<![A-Za-z])passport(?:[ \t]+(?:number|num|no\.?|#|id))?(?:[ \t]*(?:[:#=\uFF1A]|[ \t](?:is|was))[ \t]*|[ \t]+(?=[A-Za-z]?\d))|(?:护照|護照)(?:号码|號碼|号|號)?(?:[ \t\u3000]*(?:是|为|：|:)?[ \t\u3000]*)/gi;
const PASSPORT_VALUE = /^[A-Za-z]{0,2}[0-9][A-Za-z0-9]{4,9}(?![A-Za-z0-9])/;

/**
 * Passport numbers after their label (passport number / passport no. / 护照号): 6–10 letters and
 * digits with at least four digits ("E12345678", "123456789"). Without the label a passport
 * number has no shape of its own, so it is not looked for.
 */
export const detectPassportNumbers: Detector = (text, emit) => {
  for (const match of text.matchAll(PASSPORT)) {
    const at = match.index + match[0].length;
    const value = PASSPORT_VALUE.exec(text.slice(at, at + 16));
    if (value === null) continue;
    const digits = value[0].replace(/[^0-9]/g, '').length;
    if (value[0].length < 6 || digits < 4) continue;
    emit(finding('national_id', 'passport_number', at, at + value[0].length, 'high'));
  }
};

// Prefix letters: the first not D F I Q U V, the second not D F I O Q U V; some pairs never issued.
const UK_NINO =
  /(?<![A-Za-z0-9])([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z])( ?)(\d{2})\2(\d{2})\2(\d{2})\2([A-D])(?![A-Za-z0-9])/g;
const NINO_NOT_ISSUED = new Set(['BG', 'GB', 'KN', 'NK', 'NT', 'TN', 'ZZ']);
const NINO_LABEL =
  /(?:national[ \t]+insurance(?:[ \t]+(?:number|no\.?))?|\bNI(?:NO)?(?:[ \t]+(?:number|no\.?))?|英国国民保险号(?:码)?)[^\n]{0,16}$/i;

/**
 * UK National Insurance numbers, "AB123456C" or "AB 12 34 56 C": the prefix letters of HMRC's
 * rules, six digits, a suffix A–D. High after their label (national insurance, NI number, NINO);
 * written in the printed groups without a label, medium; compact and unlabelled, not reported
 * (product codes share that shape).
 */
export const detectUkNationalInsuranceNumbers: Detector = (text, emit) => {
  for (const match of text.matchAll(UK_NINO)) {
    const prefix = match[1] ?? '';
    if (NINO_NOT_ISSUED.has(prefix)) continue;
    const labelled = NINO_LABEL.test(text.slice(Math.max(0, match.index - 48), match.index));
    const spaced = match[2] === ' ';
    if (!labelled && !spaced) continue;
    emit(
      finding(
        'national_id',
        'uk_national_insurance_number',
        match.index,
        match.index + match[0].length,
        labelled ? 'high' : 'medium',
      ),
    );
  }
};
