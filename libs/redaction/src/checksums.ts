/** Luhn (mod 10) check over a string of ASCII digits, check digit last. */
export function passesLuhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let digit = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

interface IssuerRange {
  readonly scheme: string;
  /** Inclusive bounds on the number formed by the first `from.length` digits. */
  readonly from: string;
  readonly to: string;
  readonly lengths: readonly number[];
}

const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

// Issuer identification number ranges in use, with the card lengths each scheme issues
// (ISO/IEC 7812 registrations as published by the schemes). Deliberately not "any 13–19 digits
// starting with 3–6": the ranges and lengths together reject most long numbers that happen to
// pass Luhn.
const ISSUER_RANGES: readonly IssuerRange[] = [
  { scheme: 'visa', from: '4', to: '4', lengths: [13, 16, 19] },
  { scheme: 'mastercard', from: '51', to: '55', lengths: [16] },
  { scheme: 'mastercard', from: '2221', to: '2720', lengths: [16] },
  { scheme: 'amex', from: '34', to: '34', lengths: [15] },
  { scheme: 'amex', from: '37', to: '37', lengths: [15] },
  { scheme: 'discover', from: '6011', to: '6011', lengths: range(16, 19) },
  { scheme: 'discover', from: '644', to: '649', lengths: range(16, 19) },
  { scheme: 'discover', from: '65', to: '65', lengths: range(16, 19) },
  { scheme: 'diners', from: '300', to: '305', lengths: range(14, 19) },
  { scheme: 'diners', from: '3095', to: '3095', lengths: range(14, 19) },
  { scheme: 'diners', from: '36', to: '36', lengths: range(14, 19) },
  { scheme: 'diners', from: '38', to: '39', lengths: range(16, 19) },
  { scheme: 'jcb', from: '3528', to: '3589', lengths: range(16, 19) },
  { scheme: 'unionpay', from: '62', to: '62', lengths: range(16, 19) },
  { scheme: 'maestro', from: '5018', to: '5018', lengths: range(13, 19) },
  { scheme: 'maestro', from: '5020', to: '5020', lengths: range(13, 19) },
  { scheme: 'maestro', from: '5038', to: '5038', lengths: range(13, 19) },
  { scheme: 'maestro', from: '5893', to: '5893', lengths: range(13, 19) },
  { scheme: 'maestro', from: '6304', to: '6304', lengths: range(13, 19) },
  { scheme: 'maestro', from: '6759', to: '6759', lengths: range(13, 19) },
  { scheme: 'maestro', from: '6761', to: '6763', lengths: range(13, 19) },
  { scheme: 'mir', from: '2200', to: '2204', lengths: range(16, 19) },
  { scheme: 'rupay', from: '60', to: '60', lengths: [16] },
  { scheme: 'rupay', from: '508', to: '508', lengths: [16] },
  { scheme: 'rupay', from: '81', to: '82', lengths: [16] },
];

/** The card scheme whose issuer range and length admit these digits, if any. */
export function cardScheme(digits: string): string | undefined {
  for (const issuer of ISSUER_RANGES) {
    if (!issuer.lengths.includes(digits.length)) continue;
    const prefix = Number(digits.slice(0, issuer.from.length));
    if (prefix >= Number(issuer.from) && prefix <= Number(issuer.to)) return issuer.scheme;
  }
  return undefined;
}

// GB 11643-1999 weights: 2^(17-i) mod 11 for positions 0..16.
const CN_ID_WEIGHTS = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2] as const;
const CN_ID_CHECK = '10X98765432';

/**
 * The ISO 7064 MOD 11-2 check character (0–9 or X) of the first 17 digits of a Chinese resident
 * identity number (GB 11643-1999).
 */
export function cnIdCheckCharacter(first17: string): string {
  let sum = 0;
  for (let i = 0; i < 17; i++) sum += (first17.charCodeAt(i) - 48) * (CN_ID_WEIGHTS[i] ?? 0);
  return CN_ID_CHECK.charAt(sum % 11);
}

/** Whether year-month-day is a real Gregorian calendar date. */
export function isCalendarDate(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
  return day <= days;
}

// IBAN lengths by country (SWIFT IBAN registry).
// prettier-ignore
export const IBAN_LENGTHS: Readonly<Record<string, number>> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BI: 27, BR: 29, BY: 28,
  CH: 21, CR: 22, CY: 28, CZ: 24, DE: 22, DJ: 27, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18,
  FK: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23, GL: 18, GR: 27, GT: 28, HR: 21, HU: 28, IE: 22,
  IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LC: 32, LI: 21, LT: 20, LU: 20,
  LV: 21, LY: 25, MC: 27, MD: 24, ME: 22, MK: 19, MN: 20, MR: 27, MT: 31, MU: 30, NI: 28, NL: 18,
  NO: 15, OM: 23, PK: 24, PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, RU: 33, SA: 24, SC: 31,
  SD: 18, SE: 24, SI: 19, SK: 24, SM: 27, SO: 23, ST: 25, SV: 28, TL: 23, TN: 24, TR: 26, UA: 29,
  VA: 22, VG: 24, XK: 20, YE: 30,
};

/**
 * ISO 13616 MOD 97-10 over an IBAN without spaces (upper-case letters and digits): the first four
 * characters moved to the end, letters as 10–35, the number mod 97 must be 1.
 */
export function ibanRemainder(compact: string): number {
  const rearranged = compact.slice(4) + compact.slice(0, 4);
  let remainder = 0;
  for (let i = 0; i < rearranged.length; i++) {
    const code = rearranged.charCodeAt(i);
    const value = code >= 65 ? code - 55 : code - 48;
    remainder = value >= 10 ? (remainder * 100 + value) % 97 : (remainder * 10 + value) % 97;
  }
  return remainder;
}
