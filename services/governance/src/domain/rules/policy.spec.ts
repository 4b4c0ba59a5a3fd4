import { describe, expect, it } from '@jest/globals';
import { HARD_RULES } from './engine.js';
import {
  CONTRACT_LIMITS,
  DEFAULT_POLICY,
  MANDATORY_RULES,
  POLICY_RULES,
  type PolicyError,
  RULE_NAMES,
  isPolicyError,
  resolvePolicy,
  type GovernancePolicyOverride,
} from './policy.js';

const DAY = 86_400_000;

describe('DEFAULT_POLICY', () => {
  it('has the defaults policy.proto documents', () => {
    expect(DEFAULT_POLICY.confidenceThreshold).toBe(0.6);
    expect(DEFAULT_POLICY.reviewConfidenceThreshold).toBe(0);
    // "Default: only FORESIGHT, with a maximum of 365 days" (and no default TTL anywhere).
    expect(DEFAULT_POLICY.ttlLimits).toEqual({ FORESIGHT: { maxTtlMs: 365 * DAY } });
    expect(DEFAULT_POLICY.maxMemoriesPerOwner).toBe(100_000);
    expect(DEFAULT_POLICY.maxEvergreenPerOwner).toBe(100);
    expect(DEFAULT_POLICY.disabledRules).toEqual([]);
  });

  it('rejects every secret, payment card, government ID and bank account by default', () => {
    expect(Object.values(DEFAULT_POLICY.secretActions)).toEqual(['REJECT', 'REJECT', 'REJECT', 'REJECT']);
    expect(DEFAULT_POLICY.piiActions['pii.payment_card_number']).toBe('REJECT');
    expect(DEFAULT_POLICY.piiActions['pii.government_id_number']).toBe('REJECT');
    expect(DEFAULT_POLICY.piiActions['pii.bank_account_number']).toBe('REJECT');
    expect(DEFAULT_POLICY.piiActions['pii.email_address']).toBe('QUARANTINE');
    expect(DEFAULT_POLICY.piiActions['pii.phone_number']).toBe('QUARANTINE');
  });

  it('uses the content limits of memory.proto', () => {
    expect(DEFAULT_POLICY.limits).toEqual(CONTRACT_LIMITS);
    expect(CONTRACT_LIMITS).toMatchObject({
      maxTextChars: 8000,
      maxValueBytes: 8192,
      maxValueDepth: 8,
      maxNamespaceChars: 128,
      maxKeyChars: 128,
      maxMetadataEntries: 32,
      maxMetadataKeyChars: 64,
      maxMetadataValueChars: 512,
      maxExcerptChars: 1000,
      maxTtlReasonChars: 500,
      maxEvidenceRefs: 100,
    });
  });

  it('refuses scope hints the caller cannot use, and holds less trusted supersessions and injections for review', () => {
    expect(DEFAULT_POLICY.scopeDenied).toBe('REJECT');
    expect(DEFAULT_POLICY.lowerTrustSupersede).toBe('QUARANTINE');
    expect(DEFAULT_POLICY.promptInjection).toBe('QUARANTINE');
  });

  it('is frozen', () => {
    expect(Object.isFrozen(DEFAULT_POLICY)).toBe(true);
    expect(Object.isFrozen(DEFAULT_POLICY.ttlLimits.FORESIGHT)).toBe(true);
  });
});

describe('the rule catalogue', () => {
  it('lists the engine rules in evaluation order', () => {
    expect(HARD_RULES.map((r) => r.name)).toEqual([...RULE_NAMES]);
    expect(POLICY_RULES.map((r) => r.name)).toEqual([...RULE_NAMES]);
  });

  it('marks the rules policy.proto calls mandatory', () => {
    expect([...MANDATORY_RULES].sort()).toEqual([
      'dedupe_supersede',
      'schema',
      'scope_authorization',
      'secret_denial',
    ]);
  });
});

describe('resolvePolicy', () => {
  it('returns the defaults without an override', () => {
    expect(resolvePolicy()).toEqual(DEFAULT_POLICY);
  });

  it('lays scalars and lists over the defaults and merges maps per entry', () => {
    const policy = resolvePolicy({
      confidenceThreshold: 0.7,
      ttlLimits: { FACT: { defaultTtlMs: 30 * DAY, maxTtlMs: 90 * DAY } },
      piiActions: { 'pii.email_address': 'REDACT' },
      deniedNamespaces: ['internal.*'],
      limits: { maxTextChars: 2000 },
    });
    expect(policy.confidenceThreshold).toBe(0.7);
    expect(policy.ttlLimits).toEqual({
      FORESIGHT: { maxTtlMs: 365 * DAY },
      FACT: { defaultTtlMs: 30 * DAY, maxTtlMs: 90 * DAY },
    });
    expect(policy.piiActions['pii.email_address']).toBe('REDACT');
    expect(policy.piiActions['pii.phone_number']).toBe('QUARANTINE');
    expect(policy.deniedNamespaces).toEqual(['internal.*']);
    expect(policy.limits.maxTextChars).toBe(2000);
    expect(policy.limits.maxValueBytes).toBe(8192);
    expect(Object.isFrozen(policy.limits)).toBe(true);
  });

  it('removes a type limit given as null', () => {
    expect(resolvePolicy({ ttlLimits: { FORESIGHT: null } }).ttlLimits).toEqual({});
  });

  it.each<[string, GovernancePolicyOverride, string]>([
    ['a threshold above 1', { confidenceThreshold: 1.5 }, 'confidenceThreshold'],
    ['a negative review threshold', { reviewConfidenceThreshold: -0.1 }, 'reviewConfidenceThreshold'],
    ['disabling a mandatory rule', { disabledRules: ['secret_denial'] }, 'disabledRules'],
    ['an unknown rule', { disabledRules: ['nope' as never] }, 'disabledRules'],
    [
      'quarantining a secret',
      { secretActions: { 'secret.password': 'QUARANTINE' as never } },
      'secretActions.secret.password',
    ],
    [
      'an unknown PII action',
      { piiActions: { 'pii.phone_number': 'SHRUG' as never } },
      'piiActions.pii.phone_number',
    ],
    ['raising a contract limit', { limits: { maxTextChars: 100_000 } }, 'limits.maxTextChars'],
    ['a zero limit', { limits: { maxValueBytes: 0 } }, 'limits.maxValueBytes'],
    ['an invalid key pattern', { limits: { keyPattern: '[a-z' } }, 'limits.keyPattern'],
    ['a malformed denied namespace', { deniedNamespaces: ['Bad Name'] }, 'deniedNamespaces'],
    [
      'a default TTL above the maximum',
      { ttlLimits: { FACT: { defaultTtlMs: 2 * DAY, maxTtlMs: DAY } } },
      'ttlLimits.FACT.defaultTtlMs',
    ],
    ['a fractional quota', { maxMemoriesPerOwner: 10.5 }, 'maxMemoriesPerOwner'],
    ['an unknown scope action', { scopeDenied: 'WIDEN' as never }, 'scopeDenied'],
  ])('refuses %s, naming the setting', (_name, override, path) => {
    let error: unknown;
    try {
      resolvePolicy(override);
    } catch (e) {
      error = e;
    }
    expect(isPolicyError(error)).toBe(true);
    expect((error as PolicyError).path).toBe(path);
  });
});
