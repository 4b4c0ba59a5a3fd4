import { describe, expect, it } from '@jest/globals';
import { DAY, NOW, context, evaluationOf, event, fact, testId } from '../../../test/fixtures/rules.js';
import type { Candidate } from '../candidate.js';
import { judge } from './engine.js';
import { resolvePolicy } from './policy.js';
import type { RejectionReason } from './types.js';

function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: 1 };
  for (let i = 1; i < depth; i++) value = { inner: value };
  return value;
}

async function judgeOne(candidate: Candidate, policy = resolvePolicy()) {
  const [judgement] = await judge([candidate], context({ policy }));
  return judgement!;
}

describe('rule schema', () => {
  it.each<[string, Candidate, RejectionReason, string]>([
    ['an unknown type', fact({ type: 'NOTE' as never }), 'FIELD_INVALID', 'type'],
    ['an unknown source kind', fact({ sourceKind: 'RUMOUR' as never }), 'FIELD_INVALID', 'source_kind'],
    ['an unknown scope', fact({ scopeHint: 'WORLD' as never }), 'FIELD_INVALID', 'scope_hint'],
    ['a missing confidence', fact({ confidence: undefined as never }), 'FIELD_REQUIRED', 'confidence'],
    ['a confidence above 1', fact({ confidence: 1.2 }), 'FIELD_INVALID', 'confidence'],
    ['a negative confidence', fact({ confidence: -0.1 }), 'FIELD_INVALID', 'confidence'],
    ['a NaN confidence', fact({ confidence: Number.NaN }), 'FIELD_INVALID', 'confidence'],
    ['a FACT without namespace', fact({ namespace: undefined }), 'FIELD_REQUIRED', 'namespace'],
    ['a FACT with an upper-case namespace', fact({ namespace: 'User Pref' }), 'FIELD_INVALID', 'namespace'],
    [
      'a FACT with a 129-character namespace',
      fact({ namespace: 'n'.repeat(129) }),
      'FIELD_INVALID',
      'namespace',
    ],
    ['a FACT without key', fact({ key: '' }), 'FIELD_REQUIRED', 'key'],
    ['a FACT with a key holding a slash', fact({ key: 'a/b' }), 'FIELD_INVALID', 'key'],
    ['a FACT without value', fact({ value: undefined }), 'FIELD_REQUIRED', 'value'],
    ['a FACT whose value is an array', fact({ value: ['concise'] }), 'FIELD_INVALID', 'value'],
    ['a FACT whose value is a string', fact({ value: 'concise' }), 'FIELD_INVALID', 'value'],
    ['a FACT whose value holds NaN', fact({ value: { n: Number.NaN } }), 'FIELD_INVALID', 'value'],
    ['a value nested 9 levels deep', fact({ value: nested(9) as never }), 'FIELD_INVALID', 'value'],
    ['a value over 8,192 bytes', fact({ value: { s: 'é'.repeat(4096) } }), 'FIELD_INVALID', 'value'],
    ['an EVENT with a namespace', event({ namespace: 'profile' }), 'FIELD_INVALID', 'namespace'],
    ['an EVENT with a value', event({ value: { a: 1 } }), 'FIELD_INVALID', 'value'],
    ['an EVENT without text', event({ text: '   ' }), 'FIELD_REQUIRED', 'text'],
    ['a text of 8,001 characters', event({ text: 'a'.repeat(8001) }), 'FIELD_INVALID', 'text'],
    [
      'a malformed language code',
      event({ languageCode: 'english please' }),
      'FIELD_INVALID',
      'language_code',
    ],
    ['an ORG hint without org_id', fact({ scopeHint: 'ORG' }), 'FIELD_REQUIRED', 'org_id'],
    ['an org_id without an ORG hint', fact({ orgId: 'org-a' }), 'FIELD_INVALID', 'org_id'],
    ['a zero TTL hint', fact({ ttlHintMs: 0 }), 'FIELD_INVALID', 'ttl_hint'],
    ['a negative TTL hint', fact({ ttlHintMs: -DAY }), 'FIELD_INVALID', 'ttl_hint'],
    [
      'a TTL reason of 501 characters',
      fact({ ttlHintMs: DAY, ttlReason: 'r'.repeat(501) }),
      'FIELD_INVALID',
      'ttl_reason',
    ],
    ['an expiry in the past', fact({ expiresAt: NOW - 1 }), 'FIELD_INVALID', 'expire_time'],
    ['an expiry equal to now', fact({ expiresAt: NOW }), 'FIELD_INVALID', 'expire_time'],
    ['an occurred time an hour ahead', event({ occurredAt: NOW + 3_600_000 }), 'FIELD_INVALID', 'occur_time'],
    ['a fractional time', event({ occurredAt: NOW + 0.5 }), 'FIELD_INVALID', 'occur_time'],
    ['an EVENT with a validity period', event({ validFrom: NOW }), 'FIELD_INVALID', 'valid_from_time'],
    [
      'a validity period ending before it starts',
      fact({ validFrom: NOW + DAY, validUntil: NOW }),
      'TIME_RANGE_INVALID',
      'valid_until_time',
    ],
    [
      'an empty validity period',
      fact({ validFrom: NOW, validUntil: NOW }),
      'TIME_RANGE_INVALID',
      'valid_until_time',
    ],
    [
      'a FORESIGHT without a validity period',
      event({ type: 'FORESIGHT', text: 'The user will travel to Tokyo.', occurredAt: NOW }),
      'FIELD_REQUIRED',
      'valid_until_time',
    ],
    [
      '33 metadata entries',
      fact({ metadata: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])) }),
      'FIELD_INVALID',
      'metadata',
    ],
    ['an upper-case metadata key', fact({ metadata: { App: 'tutor' } }), 'FIELD_INVALID', 'metadata'],
    [
      'a metadata value of 513 characters',
      fact({ metadata: { app: 'x'.repeat(513) } }),
      'FIELD_INVALID',
      'metadata',
    ],
    [
      '101 evidence messages',
      fact({ evidence: { messageIds: Array.from({ length: 101 }, (_, i) => testId(i)) } }),
      'FIELD_INVALID',
      'evidence.messages',
    ],
    [
      'an excerpt of 1,001 characters',
      fact({ evidence: { messageIds: [], excerpt: 'e'.repeat(1001) } }),
      'FIELD_INVALID',
      'evidence.excerpt',
    ],
    ['a value holding a Date', fact({ value: { at: new Date(0) as never } }), 'FIELD_INVALID', 'value'],
    ['a candidate without evidence', fact({ evidence: undefined as never }), 'FIELD_REQUIRED', 'evidence'],
  ])('rejects %s', async (_name, candidate, reason, field) => {
    const judgement = await judgeOne(candidate);
    expect(judgement.outcome).toBe('REJECTED');
    expect(judgement.decidingRule).toBe('schema');
    expect(judgement.rejection).toEqual({ reason, field });
    expect(evaluationOf(judgement, 'schema')).toMatchObject({ verdict: 'REJECTED', field });
    expect(judgement.memory).toBeUndefined();
  });

  it.each<[string, Candidate]>([
    ['a confidence of exactly 1', fact({ confidence: 1 })],
    ['a value nested exactly 8 levels deep', fact({ value: nested(8) as never })],
    ['a value of exactly 8,192 bytes', fact({ value: { s: 'x'.repeat(8192 - '{"s":""}'.length) } })],
    ['a text of 8,000 characters outside the BMP (16,000 UTF-16 units)', event({ text: '😀'.repeat(8000) })],
    ['an occurred time within the clock tolerance', event({ occurredAt: NOW + 60_000 })],
    ['a FORESIGHT with only valid_until_time', event({ type: 'FORESIGHT', validUntil: NOW + DAY })],
    ['a FORESIGHT with only valid_from_time', event({ type: 'FORESIGHT', validFrom: NOW + DAY })],
    ['a FACT with a validity period', fact({ validFrom: NOW, validUntil: NOW + DAY })],
    ['an ORG hint with org_id', fact({ scopeHint: 'ORG', orgId: 'org-a' })],
    ['a language code with a script', event({ languageCode: 'zh-Hans' })],
  ])('accepts %s', async (_name, candidate) => {
    const judgement = await judgeOne(candidate);
    expect(evaluationOf(judgement, 'schema').verdict).toBe('PASSED');
    expect(judgement.outcome).toBe('ACCEPTED');
  });

  it('narrows the namespace and key patterns with the policy, on top of the contract pattern', async () => {
    const policy = resolvePolicy({ limits: { keyPattern: '[a-z_]+', maxNamespaceChars: 10 } });
    expect(
      (await judgeOne(fact({ namespace: 'profile', key: 'answer.style' }), policy)).rejection,
    ).toMatchObject({ field: 'key' });
    expect((await judgeOne(fact({ namespace: 'user_preferences' }), policy)).rejection).toMatchObject({
      field: 'namespace',
    });
    expect((await judgeOne(fact({ namespace: 'profile' }), policy)).outcome).toBe('ACCEPTED');
  });

  it('lowers the text limit with the policy', async () => {
    const policy = resolvePolicy({ limits: { maxTextChars: 10 } });
    expect((await judgeOne(event({ text: 'eleven char' }), policy)).rejection).toMatchObject({
      field: 'text',
    });
  });

  it('renders the text of a FACT proposed without one from its value, and sorts the value keys', async () => {
    const judgement = await judgeOne(fact({ text: '', value: { tone: 'warm', style: 'concise' } }));
    expect(evaluationOf(judgement, 'schema')).toMatchObject({
      verdict: 'PASSED',
      note: 'text rendered from the value',
    });
    expect(judgement.memory?.text).toBe('user_preference / answer_style: style: concise; tone: warm');
    expect(JSON.stringify(judgement.memory?.value)).toBe('{"style":"concise","tone":"warm"}');
  });

  it('renders the text of a FACT whose text is missing altogether', async () => {
    const judgement = await judgeOne(fact({ text: undefined as never }));
    expect(judgement.memory?.text).toBe('user_preference / answer_style: style: concise');
  });

  it('trims the text', async () => {
    expect((await judgeOne(event({ text: '  The user moved.\n' }))).memory?.text).toBe('The user moved.');
  });

  it('drops an evergreen hint on a type that cannot be evergreen, as an adjustment', async () => {
    const judgement = await judgeOne(event({ evergreen: true }));
    expect(evaluationOf(judgement, 'schema')).toMatchObject({ verdict: 'ADJUSTED', field: 'evergreen' });
    expect(judgement.outcome).toBe('ACCEPTED');
    expect(judgement.memory?.evergreen).toBe(false);
  });

  it('keeps an evergreen hint on a FACT', async () => {
    expect((await judgeOne(fact({ evergreen: true }))).memory?.evergreen).toBe(true);
  });
});
