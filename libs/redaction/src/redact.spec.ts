import { describe, expect, it } from '@jest/globals';
import {
  fakeAnthropicKey,
  fakeCardNumber,
  fakeCnResidentId,
  fakeGenericSecret,
  fakeJwt,
  fakeOpenAiKey,
  fakePemPrivateKey,
  groupDigits,
} from '@engram/testing';
import { SECRET_TYPES, containsSecret, placeholderFor, redact } from './index.js';

describe('redact', () => {
  const key = fakeAnthropicKey(1);
  const card = groupDigits(fakeCardNumber('4', 16, 2), [4, 4, 4, 4], ' ');
  const id = fakeCnResidentId('320102', '19880815', '271');
  const message = `key ${key}; password: hunter2!; card ${card}; 身份证${id}`;

  it('replaces each secret with a placeholder naming its type, and keeps labels and the text around', () => {
    expect(redact(message).text).toBe(
      'key [redacted:api_key]; password: [redacted:password]; card [redacted:payment_card]; 身份证[redacted:national_id]',
    );
  });

  it('writes placeholders as [redacted:<type>] for every type', () => {
    expect(SECRET_TYPES.map(placeholderFor)).toEqual([
      '[redacted:api_key]',
      '[redacted:password]',
      '[redacted:payment_card]',
      '[redacted:national_id]',
      '[redacted:bank_account]',
    ]);
  });

  it('reports one finding per placeholder with offsets into the input', () => {
    const { findings } = redact(message);
    expect(findings.map((f) => [f.type, message.slice(f.start, f.end)])).toEqual([
      ['api_key', key],
      ['password', 'hunter2!'],
      ['payment_card', card],
      ['national_id', id],
    ]);
  });

  it('redacts only the requested types and leaves the others in place', () => {
    const result = redact(message, { types: ['password', 'national_id'] });
    expect(result.text).toBe(
      `key ${key}; password: [redacted:password]; card ${card}; 身份证[redacted:national_id]`,
    );
    expect(result.findings.map((f) => f.type)).toEqual(['password', 'national_id']);
  });

  it('merges overlapping findings into one placeholder named after the longest', () => {
    const jwt = fakeJwt(3);
    const text = `token=${jwt}`;
    // Found twice (a JWT, and a labelled token), replaced once.
    expect(redact(text)).toEqual({
      text: 'token=[redacted:api_key]',
      findings: [{ type: 'api_key', rule: 'jwt', start: 6, end: text.length, confidence: 'high' }],
    });
  });

  it('names a merged span after the type listed first when two types cover the same characters', () => {
    const openai = fakeOpenAiKey(4);
    expect(redact(`password: ${openai}`).text).toBe('password: [redacted:api_key]');
  });

  it('keeps a whole private key block as one placeholder even if its body holds other matches', () => {
    const pem = fakePemPrivateKey(5);
    expect(redact(`before\n${pem}\nafter`).text).toBe('before\n[redacted:api_key]\nafter');
  });

  it('returns text without secrets unchanged, with no findings', () => {
    const text = 'Nothing to hide here: version 1.2.3, call 555-0132.';
    expect(redact(text)).toEqual({ text, findings: [] });
  });

  it('is deterministic and idempotent', () => {
    const once = redact(message).text;
    expect(redact(message).text).toBe(once);
    expect(redact(once)).toEqual({ text: once, findings: [] });
  });

  it('does not find, next to a placeholder, a neighbour that was not a secret before redaction', () => {
    // The card is glued to the JWT ("…7.4111…", like a decimal), so it is not a card; once the
    // JWT becomes a placeholder it must still not become one.
    const jwt = fakeJwt(7).slice(0, -1) + '7';
    const text = `${jwt}.${fakeCardNumber('4', 16, 8)}`;
    const once = redact(text).text;
    expect(once.startsWith('[redacted:api_key].')).toBe(true);
    expect(redact(once).text).toBe(once);
  });

  it('redacts every occurrence of a repeated secret', () => {
    const secret = fakeGenericSecret(6);
    expect(redact(`api_key=${secret}\napi_key=${secret}`).text).toBe(
      'api_key=[redacted:api_key]\napi_key=[redacted:api_key]',
    );
  });
});

describe('containsSecret', () => {
  it('says whether a text holds a secret of the given types', () => {
    expect(containsSecret('password: hunter2!')).toBe(true);
    expect(containsSecret('password: hunter2!', { types: ['api_key'] })).toBe(false);
    expect(containsSecret('no secrets here')).toBe(false);
  });
});
