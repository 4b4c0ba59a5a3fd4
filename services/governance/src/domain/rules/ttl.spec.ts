import { describe, expect, it } from '@jest/globals';
import { DAY, NOW, context, evaluationOf, event, fact } from '../../../test/fixtures/rules.js';
import { judge } from './engine.js';
import { resolvePolicy } from './policy.js';

const HOUR = 3_600_000;

describe('rule ttl_cap', () => {
  it('counts a TTL hint from the occurred time', async () => {
    const occurredAt = NOW - 2 * HOUR;
    const [judgement] = await judge(
      [fact({ ttlHintMs: 30 * DAY, ttlReason: 'the user said "next 30 days"', occurredAt })],
      context(),
    );
    expect(judgement?.memory?.expiresAt).toBe(occurredAt + 30 * DAY);
    expect(evaluationOf(judgement, 'ttl_cap')).toEqual({
      rule: 'ttl_cap',
      verdict: 'PASSED',
      note: `expires ${new Date(occurredAt + 30 * DAY).toISOString()} (ttl hint 30 days from occur_time (the user said "next 30 days"))`,
    });
  });

  it('counts a TTL hint from the decision time when the occurred time is unknown', async () => {
    const [judgement] = await judge([fact({ ttlHintMs: 7 * DAY })], context());
    expect(judgement?.memory?.expiresAt).toBe(NOW + 7 * DAY);
  });

  it('prefers an explicit expiry to the hint', async () => {
    const [judgement] = await judge([fact({ ttlHintMs: 7 * DAY, expiresAt: NOW + DAY })], context());
    expect(judgement?.memory?.expiresAt).toBe(NOW + DAY);
  });

  it('leaves a memory without hint, expiry or default TTL unexpiring', async () => {
    const [judgement] = await judge([fact()], context());
    expect(evaluationOf(judgement, 'ttl_cap')).toMatchObject({ verdict: 'PASSED', note: 'no expiry' });
    expect(judgement?.memory).not.toHaveProperty('expiresAt');
  });

  it('defaults a FORESIGHT expiry to its valid_until_time', async () => {
    const validUntil = NOW + 10 * DAY;
    const [judgement] = await judge(
      [event({ type: 'FORESIGHT', validFrom: NOW + DAY, validUntil })],
      context(),
    );
    expect(judgement?.memory).toMatchObject({ expiresAt: validUntil, validFrom: NOW + DAY, validUntil });
    expect(evaluationOf(judgement, 'ttl_cap').verdict).toBe('PASSED');
  });

  it('caps a FORESIGHT at 365 days by default, as an adjustment', async () => {
    const [judgement] = await judge([event({ type: 'FORESIGHT', validUntil: NOW + 400 * DAY })], context());
    expect(judgement?.outcome).toBe('ACCEPTED');
    expect(judgement?.memory?.expiresAt).toBe(NOW + 365 * DAY);
    expect(evaluationOf(judgement, 'ttl_cap')).toMatchObject({
      verdict: 'ADJUSTED',
      field: 'expire_time',
      details: { max_ttl: '365 days' },
    });
    expect(evaluationOf(judgement, 'ttl_cap').note).toContain(
      'expire_time capped to 365 days for a FORESIGHT',
    );
    expect(judgement?.reason).toBe('Accepted (adjusted by ttl_cap).');
  });

  it('caps an explicit expiry too', async () => {
    const policy = resolvePolicy({ ttlLimits: { FACT: { maxTtlMs: 90 * DAY } } });
    const [judgement] = await judge([fact({ expiresAt: NOW + 1000 * DAY })], context({ policy }));
    expect(judgement?.memory?.expiresAt).toBe(NOW + 90 * DAY);
  });

  it("applies the type's default TTL to a memory written without expiry, as an adjustment", async () => {
    const policy = resolvePolicy({ ttlLimits: { EVENT: { defaultTtlMs: 180 * DAY } } });
    const [judgement] = await judge([event()], context({ policy }));
    expect(judgement?.memory?.expiresAt).toBe(NOW + 180 * DAY);
    expect(evaluationOf(judgement, 'ttl_cap')).toMatchObject({
      verdict: 'ADJUSTED',
      note: `expires ${new Date(NOW + 180 * DAY).toISOString()} (the EVENT default TTL of 180 days)`,
    });
  });

  it('rejects a memory whose hinted lifetime ended before it was written', async () => {
    const [judgement] = await judge([fact({ ttlHintMs: DAY, occurredAt: NOW - 2 * DAY })], context());
    expect(judgement?.outcome).toBe('REJECTED');
    expect(judgement?.decidingRule).toBe('ttl_cap');
    expect(judgement?.rejection?.field).toBe('ttl_hint');
  });

  it('rejects a FORESIGHT whose validity already ended', async () => {
    const [judgement] = await judge(
      [event({ type: 'FORESIGHT', validFrom: NOW - 3 * DAY, validUntil: NOW - DAY })],
      context(),
    );
    expect(judgement?.outcome).toBe('REJECTED');
    expect(judgement?.decidingRule).toBe('ttl_cap');
  });

  it('leaves expiries alone when disabled', async () => {
    const policy = resolvePolicy({ disabledRules: ['ttl_cap'] });
    const [judgement] = await judge(
      [event({ type: 'FORESIGHT', validUntil: NOW + 400 * DAY })],
      context({ policy }),
    );
    expect(evaluationOf(judgement, 'ttl_cap').verdict).toBe('NOT_EVALUATED');
    expect(judgement?.memory).not.toHaveProperty('expiresAt');
  });
});
