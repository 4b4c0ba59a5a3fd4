import { describe, expect, it } from '@jest/globals';
import { context, evaluationOf, event, fact } from '../../../test/fixtures/rules.js';
import { judge } from './engine.js';
import { resolvePolicy } from './policy.js';

const EMAIL = 'ann.lee@example.com';
const PHONE = '13800138000';

describe('rule pii_denial: email addresses and phone numbers', () => {
  it('quarantines them by default, naming the category, not the value', async () => {
    const [mail, phone] = await judge(
      [
        event({ text: `The user's email is ${EMAIL}.` }),
        fact({ namespace: 'profile', key: 'phone', value: { phone: PHONE }, text: '' }),
      ],
      context(),
    );
    expect(mail?.outcome).toBe('QUARANTINED');
    expect(mail?.decidingRule).toBe('pii_denial');
    expect(mail?.memory?.status).toBe('QUARANTINED');
    expect(mail?.memory?.statusReason).toBe('pii_denial: matched pii.email_address in text');
    expect(mail?.reason).toBe(
      'Quarantined by pii_denial: matched pii.email_address in text; held for review.',
    );
    expect(phone?.outcome).toBe('QUARANTINED');
    expect(evaluationOf(phone, 'pii_denial').note).toBe('matched pii.phone_number in text and value');
    expect(JSON.stringify(phone?.evaluations)).not.toContain(PHONE);
  });

  it('redacts them when the policy says REDACT', async () => {
    const policy = resolvePolicy({
      piiActions: { 'pii.email_address': 'REDACT', 'pii.phone_number': 'REDACT' },
    });
    const [judgement] = await judge(
      [event({ text: `Reach the user at ${EMAIL} or ${PHONE}.` })],
      context({ policy }),
    );
    expect(judgement?.outcome).toBe('ACCEPTED');
    expect(evaluationOf(judgement, 'pii_denial')).toMatchObject({
      verdict: 'ADJUSTED',
      note: 'redacted pii.email_address in text; pii.phone_number in text',
    });
    expect(judgement?.memory?.text).toBe('Reach the user at [redacted:email] or [redacted:phone].');
    expect(JSON.stringify(judgement)).not.toContain(EMAIL);
  });

  it('rejects them when the policy says REJECT', async () => {
    const policy = resolvePolicy({ piiActions: { 'pii.email_address': 'REJECT' } });
    const [judgement] = await judge([event({ text: `Email: ${EMAIL}` })], context({ policy }));
    expect(judgement?.outcome).toBe('REJECTED');
    expect(judgement?.rejection).toEqual({
      reason: 'MEMORY_REJECTED',
      field: 'text',
      details: { categories: 'pii.email_address' },
    });
  });

  it('lets them through when the policy says ALLOW', async () => {
    const policy = resolvePolicy({ piiActions: { 'pii.email_address': 'ALLOW' } });
    const [judgement] = await judge([event({ text: `Email: ${EMAIL}` })], context({ policy }));
    expect(judgement?.outcome).toBe('ACCEPTED');
    expect(evaluationOf(judgement, 'pii_denial')).toMatchObject({
      verdict: 'PASSED',
      note: 'allowed by policy: pii.email_address in text',
    });
    expect(judgement?.memory?.text).toBe(`Email: ${EMAIL}`);
  });

  it('redacts what it must and quarantines the rest when categories differ', async () => {
    const policy = resolvePolicy({ piiActions: { 'pii.email_address': 'REDACT' } });
    const [judgement] = await judge([event({ text: `Mail ${EMAIL}, call ${PHONE}` })], context({ policy }));
    expect(judgement?.outcome).toBe('QUARANTINED');
    expect(evaluationOf(judgement, 'pii_denial').note).toBe(
      'matched pii.phone_number in text; redacted pii.email_address in text',
    );
    expect(judgement?.memory?.text).toBe(`Mail [redacted:email], call ${PHONE}`);
  });

  it('is not evaluated when disabled', async () => {
    const policy = resolvePolicy({ disabledRules: ['pii_denial'] });
    const [judgement] = await judge([event({ text: `Email: ${EMAIL}` })], context({ policy }));
    expect(judgement?.outcome).toBe('ACCEPTED');
    expect(evaluationOf(judgement, 'pii_denial').verdict).toBe('NOT_EVALUATED');
  });
});
