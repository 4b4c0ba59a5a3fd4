import { describe, expect, it } from '@jest/globals';
import {
  context,
  evaluationOf,
  event,
  fact,
  fakeApiKey,
  fakeCardNumber,
  fakePassword,
  fakeResidentId,
} from '../../../test/fixtures/rules.js';
import type { Candidate } from '../candidate.js';
import { judge } from './engine.js';
import { resolvePolicy, type GovernancePolicy } from './policy.js';
import { redactCandidateForRecord } from './record.js';

const apiKey = fakeApiKey(1);
const password = fakePassword(2);
const card = fakeCardNumber(3);
const groupedCard = card.replace(/(\d{4})(?=\d)/g, '$1 ');
const residentId = fakeResidentId(4);

/** Judges one candidate; the whole result as JSON, to prove the secret is nowhere in it. */
async function judged(candidate: Candidate, policy: GovernancePolicy = resolvePolicy()) {
  const judgements = await judge([candidate], context({ policy }));
  return { judgement: judgements[0]!, json: JSON.stringify(judgements) };
}

const REDACT_ALL = resolvePolicy({
  secretActions: {
    'secret.api_key': 'REDACT',
    'secret.access_token': 'REDACT',
    'secret.private_key': 'REDACT',
    'secret.password': 'REDACT',
  },
  piiActions: {
    'pii.payment_card_number': 'REDACT',
    'pii.government_id_number': 'REDACT',
    'pii.bank_account_number': 'REDACT',
  },
});

const CASES: [string, string, string, 'secret_denial' | 'pii_denial', string][] = [
  ['an API key', `My OpenAI key is ${apiKey}, keep it for later.`, apiKey, 'secret_denial', 'secret.api_key'],
  [
    'a password statement',
    `Remember that my password is ${password} for the bank site.`,
    password,
    'secret_denial',
    'secret.password',
  ],
  [
    'a Chinese password statement',
    `我的密码是 ${password}，记住它`,
    password,
    'secret_denial',
    'secret.password',
  ],
  [
    'a payment card (Luhn-valid)',
    `My card number is ${groupedCard}.`,
    card,
    'pii_denial',
    'pii.payment_card_number',
  ],
  [
    'a Chinese resident ID (checksum-valid)',
    `我的身份证号是${residentId}。`,
    residentId,
    'pii_denial',
    'pii.government_id_number',
  ],
];

/** The secret's digits or characters, in any grouping, must be absent. */
function expectAbsent(json: string, secret: string): void {
  expect(json).not.toContain(secret);
  if (/^\d+$/.test(secret)) expect(json.replace(/[\s-]/g, '')).not.toContain(secret);
}

describe('rules secret_denial and pii_denial', () => {
  describe.each(CASES)('%s', (_name, sentence, secret, rule, category) => {
    it('in text: rejected, and absent from the result', async () => {
      const { judgement, json } = await judged(event({ text: sentence }));
      expect(judgement.outcome).toBe('REJECTED');
      expect(judgement.decidingRule).toBe(rule);
      expect(evaluationOf(judgement, rule)).toMatchObject({
        verdict: 'REJECTED',
        field: 'text',
        note: `matched ${category} in text`,
      });
      expect(judgement.memory).toBeUndefined();
      expectAbsent(json, secret);
    });

    it('in a FACT value: rejected, and absent from the result', async () => {
      const { judgement, json } = await judged(
        fact({ namespace: 'profile', key: 'credentials', value: { note: sentence }, text: '' }),
      );
      expect(judgement.outcome).toBe('REJECTED');
      expect(evaluationOf(judgement, rule).note).toBe(`matched ${category} in text and value`);
      expectAbsent(json, secret);
    });

    it('with a redacting policy: written with a placeholder, and absent from the result', async () => {
      const { judgement, json } = await judged(
        fact({ value: { note: sentence }, text: sentence }),
        REDACT_ALL,
      );
      expect(judgement.outcome).toBe('ACCEPTED');
      expect(evaluationOf(judgement, rule)).toMatchObject({
        verdict: 'ADJUSTED',
        note: `redacted ${category} in text and value`,
      });
      expect(judgement.memory?.text).toMatch(/\[redacted:[a-z_]+\]/);
      expectAbsent(json, secret);
    });
  });

  it('finds a card number stored as a JSON number, and redacts it to a string', async () => {
    const number = Number(card);
    expect(String(number)).toBe(card);
    const rejected = await judged(fact({ value: { card: number } }));
    expect(rejected.judgement.outcome).toBe('REJECTED');
    const redacted = await judged(fact({ value: { card: number } }), REDACT_ALL);
    expect(redacted.judgement.memory?.value).toEqual({ card: '[redacted:payment_card]' });
    expectAbsent(redacted.json, card);
  });

  it('finds secrets in the evidence excerpt, metadata and TTL reason too', async () => {
    const excerpt = await judged(fact({ evidence: { messageIds: [], excerpt: `key ${apiKey}` } }));
    const metadata = await judged(fact({ metadata: { note: `password: ${password}` } }));
    const reason = await judged(fact({ ttlHintMs: 1000, ttlReason: `token ${apiKey}` }));
    expect(evaluationOf(excerpt.judgement, 'secret_denial').note).toBe(
      'matched secret.api_key in evidence.excerpt',
    );
    expect(evaluationOf(metadata.judgement, 'secret_denial').note).toBe(
      'matched secret.password in metadata',
    );
    expect(evaluationOf(reason.judgement, 'secret_denial').note).toBe('matched secret.api_key in ttl_reason');
    for (const { json } of [excerpt, metadata, reason]) {
      expect(json).not.toContain(apiKey);
      expect(json).not.toContain(password);
    }
  });

  it('redacts secrets in every field when the policy says so, and the TTL note never shows them', async () => {
    const { judgement, json } = await judged(
      fact({
        evidence: { messageIds: [], excerpt: `key ${apiKey}` },
        metadata: { note: `password: ${password}` },
        ttlHintMs: 86_400_000,
        ttlReason: `until ${apiKey} rotates`,
      }),
      REDACT_ALL,
    );
    expect(judgement.outcome).toBe('ACCEPTED');
    expect(judgement.memory?.evidence.excerpt).toBe('key [redacted:api_key]');
    expect(judgement.memory?.metadata).toEqual({ note: 'password: [redacted:password]' });
    expect(evaluationOf(judgement, 'ttl_cap').note).toContain('until [redacted:api_key] rotates');
    expect(json).not.toContain(apiKey);
    expect(json).not.toContain(password);
  });

  it('finds a card written in full-width digits', async () => {
    const fullWidth = Array.from(groupedCard)
      .map((c) => (c === ' ' ? c : String.fromCharCode(c.charCodeAt(0) + 0xfee0)))
      .join('');
    const rejected = await judged(event({ text: `卡号 ${fullWidth}` }));
    expect(rejected.judgement.outcome).toBe('REJECTED');
    expect(rejected.judgement.decidingRule).toBe('pii_denial');
    const redacted = await judged(event({ text: `卡号 ${fullWidth}` }), REDACT_ALL);
    expect(redacted.judgement.memory?.text).toBe('卡号 [redacted:payment_card]');
  });

  it('finds a full-width card next to an ASCII secret, and redacts both', async () => {
    const fullWidth = Array.from(card)
      .map((c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0))
      .join('');
    const text = `key ${apiKey} card ${fullWidth}`;
    const rejected = await judged(
      event({ text }),
      resolvePolicy({ secretActions: { 'secret.api_key': 'REDACT' } }),
    );
    expect(rejected.judgement.decidingRule).toBe('pii_denial');
    const redacted = await judged(event({ text }), REDACT_ALL);
    expect(redacted.judgement.memory?.text).toBe('key [redacted:api_key] card [redacted:payment_card]');
  });

  it('never echoes personal data of the TTL reason in the trace', async () => {
    const { judgement, json } = await judged(
      fact({ ttlHintMs: 86_400_000, ttlReason: 'until I call 13800138000 back' }),
    );
    expect(judgement.outcome).toBe('QUARANTINED');
    expect(evaluationOf(judgement, 'ttl_cap').note).toContain('(until I call [redacted:phone] back)');
    expect(json).not.toContain('13800138000');
  });

  it('passes numbers that only look like secrets: a Luhn-failing card, an ID with a wrong check character', async () => {
    const badCard = card.slice(0, -1) + String((Number(card.slice(-1)) + 1) % 10);
    const badId = residentId.slice(0, -1) + (residentId.endsWith('1') ? '2' : '1');
    const { judgement } = await judged(
      event({ text: `Order ${badCard} shipped; ticket ${badId}; solved 200 problems.` }),
    );
    expect(judgement.outcome).toBe('ACCEPTED');
    expect(evaluationOf(judgement, 'secret_denial').verdict).toBe('PASSED');
    expect(evaluationOf(judgement, 'pii_denial').verdict).toBe('PASSED');
  });

  it('talking about passwords without giving one passes', async () => {
    const { judgement } = await judged(
      event({ text: 'The user reset their password yesterday and prefers a password manager.' }),
    );
    expect(judgement.outcome).toBe('ACCEPTED');
  });

  it('rejects when one category rejects even if another is redacted', async () => {
    const policy = resolvePolicy({ secretActions: { 'secret.password': 'REDACT' } });
    const { judgement, json } = await judged(event({ text: `password: ${password}, key ${apiKey}` }), policy);
    expect(judgement.outcome).toBe('REJECTED');
    expect(evaluationOf(judgement, 'secret_denial').note).toBe('matched secret.api_key in text');
    expect(json).not.toContain(apiKey);
    expect(json).not.toContain(password);
  });

  it('cannot be disabled: secret_denial runs even if a hand-built policy lists it as disabled', async () => {
    const policy = { ...resolvePolicy(), disabledRules: ['secret_denial' as const] };
    const { judgement } = await judged(event({ text: `key ${apiKey}` }), policy);
    expect(judgement.outcome).toBe('REJECTED');
  });
});

describe('redactCandidateForRecord', () => {
  it('redacts every secret and the personal data the policy does not allow, whatever the actions', () => {
    const candidate = fact({
      text: `key ${apiKey}, card ${groupedCard}, mail ann@example.com`,
      value: { id: residentId },
      evidence: { messageIds: [], excerpt: `password: ${password}` },
    });
    const recorded = redactCandidateForRecord(
      candidate,
      resolvePolicy({ piiActions: { 'pii.email_address': 'ALLOW' } }),
    );
    const json = JSON.stringify(recorded);
    for (const secret of [apiKey, card, residentId, password]) expectAbsent(json, secret);
    expect(recorded.text).toBe('key [redacted:api_key], card [redacted:payment_card], mail ann@example.com');
    expect(recorded.key).toBe(candidate.key);
  });
});

describe('secret_denial reads structure as text (issue 18, finding 4)', () => {
  const word = 'Tr0ub4dor&3';

  it('rejects {"password": "Tr0ub4dor&3"}: the key labels the value', async () => {
    const { judgement, json } = await judged(fact({ value: { password: word }, text: 'A login.' }));
    expect(judgement.outcome).toBe('REJECTED');
    expect(judgement.decidingRule).toBe('secret_denial');
    expect(json).not.toContain(word);
  });

  it('rejects a FACT whose key labels its scalar value, and nested pairs', async () => {
    const scalar = await judged(
      fact({ namespace: 'accounts', key: 'password', value: word, text: 'A login.' }),
    );
    expect(scalar.judgement.outcome).toBe('REJECTED');
    const nested = await judged(fact({ value: { bank: { pwd: [word] } }, text: 'A login.' }));
    expect(nested.judgement.outcome).toBe('REJECTED');
  });

  it('scans namespace and key, read together as namespace: key', async () => {
    const { judgement } = await judged(
      fact({ namespace: 'router.wifi_password', key: 'zx9-klp2w-tr0ub', value: { note: 'x' } }),
    );
    expect(judgement.outcome).toBe('REJECTED');
    expect(judgement.decidingRule).toBe('secret_denial');
    expect(judgement.rejection?.field).toBe('key');
  });

  it('reads metadata entries as key: value', async () => {
    const { judgement, json } = await judged(fact({ metadata: { password: word } }));
    expect(judgement.outcome).toBe('REJECTED');
    expect(json).not.toContain(word);
  });

  it('with a redacting policy, removes only the value under its label', async () => {
    const { judgement, json } = await judged(
      fact({ value: { password: word, site: 'bank' }, metadata: { pwd: word } }),
      REDACT_ALL,
    );
    expect(judgement.outcome).toBe('ACCEPTED');
    expect(json).not.toContain(word);
    expect(json).toContain('"password":"[redacted:password]"');
    expect(json).toContain('"site":"bank"');
  });

  it('denies memories carrying passwords said in prose and identity-document numbers (finding 3)', async () => {
    for (const text of [
      `The user asked whether '${word}' is a decent password.`,
      '用户说新密码想设成 Qw3rty!9zz',
      'The user gave passport number E12345678.',
      'The user mentioned NI number AB 12 34 56 C.',
    ]) {
      const { judgement } = await judged(fact({ text, value: { note: 'n' } }));
      expect(judgement.outcome).toBe('REJECTED');
    }
  });
});
