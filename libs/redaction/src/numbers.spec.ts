import { describe, expect, it } from '@jest/globals';
import { fakeCardNumber, fakeCnResidentId, fakeIban, groupDigits, luhnCheckDigit } from '@engram/testing';
import { detectSecrets, type SecretType } from './index.js';

function spans(text: string, type: SecretType): string[] {
  return detectSecrets(text, { types: [type] }).map((f) => text.slice(f.start, f.end));
}

/** The same number with its last digit changed, so that it fails the Luhn check. */
function breakLuhn(card: string): string {
  const last = Number(card.slice(-1));
  return card.slice(0, -1) + String((last + 1) % 10);
}

describe('detectSecrets: payment cards', () => {
  const visa = fakeCardNumber('4', 16, 1);
  const mastercard = fakeCardNumber('52', 16, 2);
  const mastercard2 = fakeCardNumber('2720', 16, 3);
  const amex = fakeCardNumber('37', 15, 4);
  const unionpay = fakeCardNumber('62', 19, 5);
  const jcb = fakeCardNumber('3530', 16, 6);
  const discover = fakeCardNumber('6011', 16, 7);

  it('builds Luhn-valid test numbers (the check digit completes a known valid number)', () => {
    expect(luhnCheckDigit('411111111111111')).toBe('1');
    expect(luhnCheckDigit('7992739871')).toBe('3');
  });

  it.each([
    ['a Visa number written together', visa],
    ['a Visa number in groups of four', groupDigits(visa, [4, 4, 4, 4], ' ')],
    ['a Mastercard number with hyphens', groupDigits(mastercard, [4, 4, 4, 4], '-')],
    ['a Mastercard number in the 2-series', mastercard2],
    ['an Amex number grouped 4-6-5', groupDigits(amex, [4, 6, 5], ' ')],
    ['a 19-digit UnionPay number', groupDigits(unionpay, [4, 4, 4, 4, 3], ' ')],
    ['a JCB number', jcb],
    ['a Discover number', discover],
  ])('finds %s', (_name, card) => {
    expect(spans(`卡号 ${card}，有效期 12/27`, 'payment_card')).toEqual([card]);
    expect(spans(`card:${card}.`, 'payment_card')).toEqual([card]);
  });

  it('finds a card after a year in the same run of digit groups, without the year', () => {
    const grouped = groupDigits(visa, [4, 4, 4, 4], ' ');
    expect(spans(`2024 ${grouped} 12`, 'payment_card')).toEqual([grouped]);
  });

  it('ignores a number of card length that fails the Luhn check', () => {
    expect(
      detectSecrets(`order ${breakLuhn(visa)} and ${groupDigits(breakLuhn(amex), [4, 6, 5], ' ')}`),
    ).toEqual([]);
  });

  it('ignores Luhn-valid numbers outside the issuer ranges or their lengths', () => {
    const unknownIssuer = fakeCardNumber('9', 16, 8);
    const amexTooLong = fakeCardNumber('37', 16, 9);
    const timestamp = fakeCardNumber('17', 13, 10);
    expect(detectSecrets(`${unknownIssuer} ${amexTooLong} ts=${timestamp}`)).toEqual([]);
  });

  it('ignores a card-valid number inside a longer identifier, decimal or hyphenated id', () => {
    expect(
      detectSecrets(
        `ref_${visa} ${visa}x 3.${visa} ${visa}.5 12-${groupDigits(visa, [4, 4, 4, 4], '-')} ${groupDigits(visa, [4, 4, 4, 4], '-')}-77`,
      ),
    ).toEqual([]);
  });

  it('ignores digits grouped unlike a card or with mixed separators', () => {
    expect(
      detectSecrets(
        `${groupDigits(visa, [2, 7, 7], ' ')} ${groupDigits(visa, [4, 4, 4, 4], '-').replace(/-(?=\d{4}$)/, ' ')}`,
      ),
    ).toEqual([]);
  });
});

describe('detectSecrets: Chinese resident identity numbers', () => {
  const id = fakeCnResidentId('110105', '19900307', '123');
  const withX = (() => {
    for (let sequence = 100; sequence < 999; sequence++) {
      const candidate = fakeCnResidentId('440305', '19851231', String(sequence));
      if (candidate.endsWith('X')) return candidate;
    }
    throw new Error('no sequence gives check character X');
  })();

  it('computes the check character from its definition (a published sample number checks)', () => {
    // GB 11643-1999 Appendix sample: 11010519491231002 → X.
    expect(fakeCnResidentId('110105', '19491231', '002')).toBe('11010519491231002X');
  });

  it('finds an identity number with a valid check digit and birth date, in Chinese text', () => {
    expect(spans(`我的身份证号是${id}，请保密`, 'national_id')).toEqual([id]);
    expect(detectSecrets(id)[0]?.rule).toBe('cn_resident_id');
    expect(detectSecrets(id)[0]?.confidence).toBe('high');
  });

  it('finds a number whose check character is X, in either case', () => {
    expect(spans(`ID ${withX}`, 'national_id')).toEqual([withX]);
    expect(spans(`ID ${withX.toLowerCase()}`, 'national_id')).toEqual([withX.toLowerCase()]);
  });

  it('ignores a wrong check character', () => {
    const wrong = id.slice(0, 17) + (id.endsWith('0') ? '1' : '0');
    expect(detectSecrets(wrong)).toEqual([]);
  });

  it('ignores an impossible birth date, an unknown province and a number inside a longer one', () => {
    const february30 = fakeCnResidentId('110105', '19900230', '123');
    const noProvince = fakeCnResidentId('990105', '19900307', '123');
    const year1850 = fakeCnResidentId('110105', '18500307', '123');
    expect(detectSecrets(`${february30} ${noProvince} ${year1850} 9${id} ${id}7`)).toEqual([]);
  });

  it('accepts 29 February only in a leap year', () => {
    expect(spans(fakeCnResidentId('310101', '20000229', '456'), 'national_id')).toHaveLength(1);
    expect(spans(fakeCnResidentId('310101', '19000229', '456'), 'national_id')).toEqual([]);
  });
});

describe('detectSecrets: US social security numbers', () => {
  it('finds a number in a valid range, high when labelled and medium otherwise', () => {
    const labelled = detectSecrets('SSN: 536-22-8147');
    expect(labelled.map((f) => [f.rule, f.confidence])).toEqual([['us_ssn', 'high']]);
    expect(detectSecrets('reach me with 536-22-8147 if needed')[0]?.confidence).toBe('medium');
  });

  it.each([
    '000-22-8147',
    '666-22-8147',
    '900-22-8147',
    '999-22-8147',
    '536-00-8147',
    '536-22-0000',
    '078-05-1120',
  ])('ignores %s, which is never assigned to a person', (ssn) => {
    expect(detectSecrets(`SSN ${ssn}`)).toEqual([]);
  });

  it('ignores the same shape inside longer hyphenated numbers', () => {
    expect(detectSecrets('part 12-536-22-8147 and 536-22-8147-01 and 536-22-81470')).toEqual([]);
  });
});

describe('detectSecrets: IBANs', () => {
  const german = fakeIban('DE', '370400440532013000');
  const british = fakeIban('GB', 'NWBK60161331926819');

  it('computes check digits that reproduce a published example IBAN', () => {
    expect(german).toBe('DE89370400440532013000');
  });

  it('finds an IBAN written together or in groups of four', () => {
    const grouped = german.replace(/(.{4})(?!$)/g, '$1 ');
    expect(spans(`IBAN: ${german}`, 'bank_account')).toEqual([german]);
    expect(spans(`pay to ${grouped} today`, 'bank_account')).toEqual([grouped]);
    expect(spans(`${british}.`, 'bank_account')).toEqual([british]);
  });

  it('ignores a wrong checksum, a wrong length and an unknown country', () => {
    const badCheck = german.slice(0, 2) + '00' + german.slice(4);
    const tooShort = fakeIban('DE', '37040044053201300');
    const unknownCountry = fakeIban('ZZ', '370400440532013000');
    expect(detectSecrets(`${badCheck} ${tooShort} ${unknownCountry} X${german}`)).toEqual([]);
  });
});
