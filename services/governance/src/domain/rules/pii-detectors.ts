/**
 * Detectors for the personal data `@engram/redaction` leaves to governance (its README: "Email
 * addresses and phone numbers: personal data, not secrets; governance's policy decides"). Same
 * conventions as that library: spans are UTF-16 offsets of the value only (never its label), a
 * match must stand alone (not glued to a word or a longer number), and placeholders are
 * `[redacted:<type>]`.
 */

/** What these detectors find; also the name inside the placeholder. */
export type ContactType = 'email' | 'phone';

/** A contact detail found in a text: `text.slice(start, end)`. */
export interface ContactFinding {
  readonly type: ContactType;
  readonly start: number;
  readonly end: number;
}

// Local part and domain of RFC 5321 addresses as people write them (no quoted local parts, no
// IP-literal domains); the top-level domain is alphabetic, so "v1.2@3.4" is not an address.
const EMAIL =
  /(?<![A-Za-z0-9._%+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,63})@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}(?![A-Za-z0-9-]|\.[A-Za-z0-9])/g;

/** Email addresses. */
export function detectEmails(text: string): ContactFinding[] {
  const found: ContactFinding[] = [];
  for (const match of text.matchAll(EMAIL)) {
    found.push({ type: 'email', start: match.index, end: match.index + match[0].length });
  }
  return found;
}

const NOT_BEFORE = String.raw`(?<![A-Za-z0-9_+\-.])`;
const NOT_AFTER = String.raw`(?![A-Za-z0-9_]|[-.][0-9])`;

const PHONE_SHAPES: readonly RegExp[] = [
  // Mainland China mobile numbers, optionally with +86: 13800138000, 138 0013 8000, 138-0013-8000.
  new RegExp(`${NOT_BEFORE}(?:\\+?86[ -]?)?1[3-9][0-9](?:[ -]?[0-9]{4}){2}${NOT_AFTER}`, 'g'),
  // International numbers written with a leading +: +44 20 7946 0958, +1 (415) 555-0132.
  new RegExp(`${NOT_BEFORE}\\+[1-9](?:[ .-]?\\(?[0-9]\\)?){6,14}${NOT_AFTER}`, 'g'),
  // North American numbers: (415) 555-0132, 415-555-0132, 415.555.0132.
  new RegExp(
    `(?<![A-Za-z0-9_+\\-.(])(?:\\([2-9][0-9]{2}\\) ?|[2-9][0-9]{2}[-.])[2-9][0-9]{2}[-.][0-9]{4}${NOT_AFTER}`,
    'g',
  ),
  // Mainland China landlines with an area code: 010-12345678, 0755-1234567.
  new RegExp(`${NOT_BEFORE}0[1-9][0-9]{1,2}-[2-9][0-9]{6,7}${NOT_AFTER}`, 'g'),
];

// A number of 7–15 digits (spaces, dots, hyphens and parentheses between them) right after a
// phone label: "phone: 5550132777", "tel. 555 0132", "手机号是 13800138000", "电话：88886666".
const LABELLED_PHONE =
  /(?:\b(?:phone|telephone|tel|mobile|cell|whatsapp)(?:[ \t]*(?:number|no\.?|#))?|电话(?:号码)?|手机(?:号码?)?|联系方式)[ \t]*(?:[:：=]|is|是|为)?[ \t]*(\+?[0-9](?:[ .()-]?[0-9]){6,14})(?![0-9])/gi;

function digitCount(text: string): number {
  let count = 0;
  for (const ch of text) if (ch >= '0' && ch <= '9') count++;
  return count;
}

/**
 * Phone numbers: Chinese mobiles and landlines, `+`-prefixed international numbers (8–15
 * digits, E.164), North American numbers in their punctuated forms, and any 7–15 digit number
 * after a phone label (English or Chinese). Bare digit runs without a label or a known shape are
 * not phones (order numbers, amounts, years and dates pass).
 */
export function detectPhones(text: string): ContactFinding[] {
  const found: ContactFinding[] = [];
  for (const shape of PHONE_SHAPES) {
    for (const match of text.matchAll(shape)) {
      const digits = digitCount(match[0]);
      if (digits < 7 || digits > 15) continue;
      if (match[0].startsWith('+') && digits < 8) continue;
      found.push({ type: 'phone', start: match.index, end: match.index + match[0].length });
    }
  }
  for (const match of text.matchAll(LABELLED_PHONE)) {
    const number = match[1] ?? '';
    const start = match.index + match[0].length - number.length;
    found.push({ type: 'phone', start, end: start + number.length });
  }
  return found;
}
