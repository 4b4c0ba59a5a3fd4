import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  fakeAnthropicKey,
  fakeAwsAccessKeyId,
  fakeCardNumber,
  fakeCnResidentId,
  fakeGithubToken,
  fakeGoogleApiKey,
  fakeIban,
  fakeJwt,
  fakeOpenAiKey,
  fakePemPrivateKey,
  fakeSlackBotToken,
  fakeStripeKey,
  groupDigits,
} from '@engram/testing';
import { SECRET_TYPES, detectSecrets, placeholderFor, redact, type SecretFinding } from './index.js';

const seed = fc.integer({ min: 0, max: 2 ** 31 - 1 });

// Secrets that are secrets wherever they stand between spaces (no label needed).
const secret = fc.oneof(
  seed.map(fakeOpenAiKey),
  seed.map(fakeAnthropicKey),
  seed.map(fakeAwsAccessKeyId),
  seed.map((s) => fakeGithubToken('p', s)),
  seed.map(fakeSlackBotToken),
  seed.map(fakeGoogleApiKey),
  seed.map((s) => fakeStripeKey('live', s)),
  seed.map((s) => fakeJwt(s)),
  seed.map((s) => fakePemPrivateKey(s, 'PRIVATE KEY', 2)),
  seed.map((s) => fakeCardNumber('4', 16, s)),
  seed.map((s) => groupDigits(fakeCardNumber('52', 16, s), [4, 4, 4, 4], ' ')),
  seed.map((s) => groupDigits(fakeCardNumber('37', 15, s), [4, 6, 5], '-')),
  fc
    .tuple(fc.constantFrom('110105', '440305', '320102'), fc.integer({ min: 100, max: 999 }))
    .map(([region, sequence]) => fakeCnResidentId(region, '19900307', String(sequence))),
  fc.integer({ min: 10 ** 9, max: 10 ** 10 - 1 }).map((n) => fakeIban('DE', `37040044${n}`)),
);

// Pieces that exercise every rule: labels, separators, quotes, digits, placeholders, CJK.
const fragment = fc.oneof(
  fc.constantFrom(
    'password: ',
    'pwd=',
    'my password is ',
    'DB_PASSWORD=',
    '"password": "',
    'token=',
    'api_key = ',
    'secret: ',
    'Bearer ',
    'Authorization: Basic ',
    'postgres://app:',
    '@db:5432',
    '密码是',
    '密钥：',
    'SSN ',
    '536-22-8147',
    '-----BEGIN PRIVATE KEY-----\n',
    '\n-----END PRIVATE KEY-----',
    '[redacted:api_key]',
    '[redacted:password]',
    'hunter2',
    'Tr0ub4dor&3',
    'a8Kq2LmP9vR4tW7yB1nZ',
    'QUFBQUFBQUFB',
    'eyJhbGciOiJIUzI1NiJ9',
    '4111',
    '1111',
    '2024',
    '0',
    '7',
    'DE89',
    'sk-',
    'AKIA',
    'the',
    'my',
    ' is ',
    'key',
    '为',
    '\\n',
    '://',
    '110105',
    '19900307',
    ' 0044 ',
    '4111 1111 1111 1111',
    'Authorization: Bearer ',
    '我',
  ),
  fc.constantFrom(
    ' ',
    '\n',
    '\t',
    '-',
    '_',
    '.',
    ',',
    ':',
    '=',
    '"',
    "'",
    '`',
    '[',
    ']',
    '(',
    ')',
    '@',
    '/',
    '，',
    '。',
    '：',
  ),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 3 }),
  secret,
);
const fragmentText = fc.array(fragment, { maxLength: 24 }).map((parts) => parts.join(''));
const codeUnits = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) });
const anyText = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
  codeUnits,
  fragmentText,
);
const typeSubset = fc.subarray([...SECRET_TYPES], { minLength: 1 });

function wellFormed(text: string, findings: readonly SecretFinding[]): void {
  for (const [i, f] of findings.entries()) {
    expect(Number.isInteger(f.start) && Number.isInteger(f.end)).toBe(true);
    expect(0 <= f.start && f.start < f.end && f.end <= text.length).toBe(true);
    const previous = findings[i - 1];
    if (previous)
      expect(previous.start < f.start || (previous.start === f.start && previous.end >= f.end)).toBe(true);
  }
}

describe('detectSecrets and redact: properties', () => {
  it('never throw on any string', () => {
    fc.assert(
      fc.property(anyText, typeSubset, (text, types) => {
        detectSecrets(text);
        redact(text, { types });
      }),
      { numRuns: 500 },
    );
  });

  it('report offsets within the text, in order', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        wellFormed(text, detectSecrets(text));
      }),
      { numRuns: 500 },
    );
  });

  it('replace exactly the reported, disjoint spans with their placeholders', () => {
    fc.assert(
      fc.property(anyText, typeSubset, (text, types) => {
        const { text: redacted, findings } = redact(text, { types });
        let rebuilt = '';
        let cursor = 0;
        for (const f of findings) {
          expect(f.start).toBeGreaterThanOrEqual(cursor);
          expect(types).toContain(f.type);
          rebuilt += text.slice(cursor, f.start) + placeholderFor(f.type);
          cursor = f.end;
        }
        expect(redacted).toBe(rebuilt + text.slice(cursor));
      }),
      { numRuns: 500 },
    );
  });

  it('leave nothing of the requested types to find, so redacting twice changes nothing', () => {
    fc.assert(
      fc.property(anyText, typeSubset, (text, types) => {
        const once = redact(text, { types }).text;
        expect(detectSecrets(once, { types })).toEqual([]);
        expect(redact(once, { types }).text).toBe(once);
      }),
      { numRuns: 1000 },
    );
  });

  it('never let a secret standing between spaces survive, whatever surrounds it', () => {
    fc.assert(
      fc.property(fragmentText, secret, fragmentText, (before, value, after) => {
        const start = before.length + 1;
        const end = start + value.length;
        const { findings } = redact(`${before} ${value} ${after}`);
        expect(findings.some((f) => f.start <= start && end <= f.end)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('are deterministic', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        expect(redact(text)).toEqual(redact(text));
      }),
      { numRuns: 200 },
    );
  });
});
