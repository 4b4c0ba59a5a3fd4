import {
  IBAN_LENGTHS,
  cardScheme,
  cnIdCheckCharacter,
  ibanRemainder,
  isCalendarDate,
  passesLuhn,
} from './checksums.js';
import { type Detector, finding } from './detector.js';

// Numbers are findings only when they stand alone: not part of a word or identifier
// ("order_4111…", "x4111…"), not the continuation of a decimal or a hyphenated id ("3.4111…",
// "12-4111…"), and not followed by one.
const WORD_CHAR = /[A-Za-z0-9_]/;

function standsAlone(text: string, start: number, end: number): boolean {
  const before = text.charAt(start - 1);
  const after = text.charAt(end);
  if (WORD_CHAR.test(before) || WORD_CHAR.test(after)) return false;
  if (/[.,-]/.test(before) && /[0-9]/.test(text.charAt(start - 2))) return false;
  if (/[.,-]/.test(after) && /[0-9]/.test(text.charAt(end + 1))) return false;
  return true;
}

// A run of digit groups joined by single spaces or hyphens.
const DIGIT_RUN = /[0-9]+(?:[ -][0-9]+)*/g;
const CARD_LENGTH = { min: 13, max: 19 } as const;

/**
 * Payment card numbers: 13–19 digits, written together or in groups joined by one kind of
 * separator (spaces or hyphens) laid out as cards print them — a first group of four, then
 * groups of four or six, and a last group of one to six ("4111 1111 1111 1111",
 * "3782-822463-10005"). The digits must fall in a known issuer range with that range's card
 * lengths (Visa, Mastercard, Amex, Discover, Diners, JCB, UnionPay, Maestro, Mir, RuPay) and pass
 * the Luhn check. Within a run of groups ("2024 4111 1111 1111 1111 12") each group may start a
 * card, the longest valid one from there (cards found inside one another overlap and are merged
 * by `redact`); a card inside a run is delimited by spaces, so a hyphenated run is only taken whole.
 */
export const detectPaymentCards: Detector = (text, emit) => {
  for (const run of text.matchAll(DIGIT_RUN)) {
    if (run[0].length < CARD_LENGTH.min) continue;
    const groups: { start: number; digits: string }[] = [];
    const separators: string[] = [];
    for (const part of run[0].matchAll(/[0-9]+|[ -]/g)) {
      if (part[0] === ' ' || part[0] === '-') separators.push(part[0]);
      else groups.push({ start: run.index + part.index, digits: part[0] });
    }
    // Every start is tried, even inside a card already found: "4000 4111 1111 1111 1111" may
    // hold a valid card at both starts, and redacting their union leaves no digit of either.
    for (let first = 0; first < groups.length; first++) {
      const card = longestCardFrom(text, groups, separators, first);
      if (card) emit(finding('payment_card', 'payment_card', card.start, card.end, 'high'));
    }
  }
};

function longestCardFrom(
  text: string,
  groups: readonly { start: number; digits: string }[],
  separators: readonly string[],
  first: number,
): { start: number; end: number } | undefined {
  const head = groups[first];
  if (head === undefined) return undefined;
  // A card inside a run starts after a space, never after a hyphen (part of a longer id).
  if (first > 0 && separators[first - 1] !== ' ') return undefined;
  let best: { start: number; end: number } | undefined;
  let digits = '';
  for (let last = first; last < groups.length; last++) {
    const group = groups[last];
    if (group === undefined) break;
    if (last > first && separators[last - 1] !== separators[first]) break;
    digits += group.digits;
    if (digits.length > CARD_LENGTH.max) break;
    if (last === first + 1 && head.digits.length !== 4) break;
    const end = group.start + group.digits.length;
    if (digits.length < CARD_LENGTH.min) continue;
    // Middle groups have four or six digits; the last one may be shorter.
    const middleOk = groups
      .slice(first + 1, last)
      .every((g) => g.digits.length === 4 || g.digits.length === 6);
    if (!middleOk || (last > first && group.digits.length > 6)) continue;
    // A card inside a run ends before a space, never before a hyphen.
    if (last < groups.length - 1 && separators[last] !== ' ') continue;
    if (!standsAlone(text, head.start, end)) continue;
    if (cardScheme(digits) !== undefined && passesLuhn(digits)) {
      best = { start: head.start, end };
    }
  }
  return best;
}

// Province-level administrative division codes (GB/T 2260), the first two digits.
const CN_PROVINCES = new Set([
  11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46, 50, 51, 52, 53, 54, 61,
  62, 63, 64, 65, 71, 81, 82, 83, 91,
]);
const CN_ID = /[1-9][0-9]{16}[0-9Xx]/g;

/**
 * Chinese resident identity numbers (GB 11643-1999): 18 characters — a six-digit region code in a
 * real province, a birth date YYYYMMDD that exists in the calendar (1900–2099), a three-digit
 * sequence, and the ISO 7064 MOD 11-2 check character (0–9 or X). The 15-digit numbers issued
 * before 1999 carry no check digit: see `detectChineseResidentIds15`.
 */
export const detectChineseResidentIds: Detector = (text, emit) => {
  for (const match of text.matchAll(CN_ID)) {
    const id = match[0];
    const start = match.index;
    if (!standsAlone(text, start, start + id.length)) continue;
    if (!CN_PROVINCES.has(Number(id.slice(0, 2)))) continue;
    const year = Number(id.slice(6, 10));
    if (year < 1900 || year > 2099) continue;
    if (!isCalendarDate(year, Number(id.slice(10, 12)), Number(id.slice(12, 14)))) continue;
    if (cnIdCheckCharacter(id.slice(0, 17)) !== id.charAt(17).toUpperCase()) continue;
    emit(finding('national_id', 'cn_resident_id', start, start + id.length, 'high'));
  }
};

const US_SSN = /([0-9]{3})([- ]?)([0-9]{2})\2([0-9]{4})/g;
// Numbers printed in advertising and never valid for a person.
const SSN_PUBLISHED_EXAMPLES = new Set(['078051120', '219099999']);
const SSN_LABEL =
  /(?:ssn|social[ \t]+security(?:[ \t]+(?:number|no\.?|#))?|社会安全号码?|社会保障号码?)[^\n]{0,16}$/i;

/**
 * US social security numbers, outside the ranges never assigned (area 000, 666 and 900–999,
 * group 00, serial 0000) and the two numbers published in advertisements. Written `AAA-GG-SSSS`:
 * high when "SSN" or "social security" comes shortly before on the same line, otherwise medium
 * (the shape has no checksum). Written as nine digits or `AAA GG SSSS`: only after that label
 * (high), since nine digits alone are as often an order or phone number.
 */
export const detectUsSocialSecurityNumbers: Detector = (text, emit) => {
  for (const match of text.matchAll(US_SSN)) {
    const start = match.index;
    const end = start + match[0].length;
    if (!standsAlone(text, start, end)) continue;
    const hyphenated = match[2] === '-';
    // Inside a longer run of space-separated digit groups (a card, a phone number).
    if (
      match[2] === ' ' &&
      (/[0-9] $/.test(text.slice(start - 2, start)) || /^ [0-9]/.test(text.slice(end)))
    ) {
      continue;
    }
    const area = Number(match[1]);
    if (area === 0 || area === 666 || area >= 900) continue;
    const digits = `${match[1] ?? ''}${match[3] ?? ''}${match[4] ?? ''}`;
    if (match[3] === '00' || match[4] === '0000' || SSN_PUBLISHED_EXAMPLES.has(digits)) continue;
    const labelled = SSN_LABEL.test(text.slice(Math.max(0, start - 40), start));
    if (!hyphenated && !labelled) continue;
    emit(finding('national_id', 'us_ssn', start, end, labelled ? 'high' : 'medium'));
  }
};

const CN_ID_15 = /[1-9][0-9]{14}/g;
const CN_ID_LABEL =
  /(?:身份证|身份證|证件|證件|居民身份|id[ \t]*(?:card|number|no\.?|#)|identity[ \t]+(?:card|number)|resident[ \t]+id)[^\n]{0,16}$/i;

/**
 * Chinese resident identity numbers of the 15-digit format issued before 1999 (region code,
 * birth date YYMMDD in the 1900s, a three-digit sequence, no check digit): only after their label
 * (身份证, 证件号, ID card/number), since fifteen digits alone are as often an IMEI or an order number.
 */
export const detectChineseResidentIds15: Detector = (text, emit) => {
  for (const match of text.matchAll(CN_ID_15)) {
    const id = match[0];
    const start = match.index;
    if (!standsAlone(text, start, start + id.length)) continue;
    if (!CN_PROVINCES.has(Number(id.slice(0, 2)))) continue;
    if (!isCalendarDate(1900 + Number(id.slice(6, 8)), Number(id.slice(8, 10)), Number(id.slice(10, 12))))
      continue;
    if (!CN_ID_LABEL.test(text.slice(Math.max(0, start - 40), start))) continue;
    emit(finding('national_id', 'cn_resident_id', start, start + id.length, 'high'));
  }
};

const IBAN_START = /[A-Za-z]{2}[0-9]{2}/g;

/**
 * IBANs: a country code with its registered IBAN length, two check digits and the BBAN in upper
 * case or all in lower case, written together or in groups of four separated by single spaces, passing ISO 13616
 * MOD 97-10. Domestic account numbers carry no checksum that makes them recognisable and are not
 * detected.
 */
export const detectIbans: Detector = (text, emit) => {
  for (const match of text.matchAll(IBAN_START)) {
    const start = match.index;
    if (WORD_CHAR.test(text.charAt(start - 1))) continue;
    // Upper or lower case, not mixed (de89…, DE89…).
    const country = match[0].slice(0, 2);
    const lower = country === country.toLowerCase();
    if (!lower && country !== country.toUpperCase()) continue;
    const letter = lower ? /[a-z0-9]/ : /[A-Z0-9]/;
    const length = IBAN_LENGTHS[match[0].slice(0, 2).toUpperCase()];
    if (length === undefined) continue;
    let compact = match[0];
    let end = start + 4;
    while (compact.length < length && end < text.length) {
      const char = text.charAt(end);
      if (letter.test(char)) {
        compact += char;
        end++;
      } else if (char === ' ' && compact.length % 4 === 0 && letter.test(text.charAt(end + 1))) {
        end++;
      } else {
        break;
      }
    }
    if (compact.length !== length || WORD_CHAR.test(text.charAt(end))) continue;
    if (ibanRemainder(compact.toUpperCase()) !== 1) continue;
    emit(finding('bank_account', 'iban', start, end, 'high'));
  }
};
