import { describe, expect, it } from '@jest/globals';
import type { Candidate } from './candidate.js';
import { withDefaultEvergreen } from './evergreen.js';

const fact = (namespace: string, overrides: Partial<Candidate> = {}): Candidate => ({
  type: 'FACT',
  namespace,
  key: 'k',
  value: { v: 1 },
  text: 'text',
  sourceKind: 'EXPLICIT_USER_STATEMENT',
  confidence: 0.95,
  evidence: { messageIds: ['m'] },
  ...overrides,
});

describe('withDefaultEvergreen', () => {
  it('pins explicitly stated preferences, profile facts and goals', () => {
    for (const namespace of ['user_preference', 'profile', 'goal']) {
      expect(withDefaultEvergreen(fact(namespace)).evergreen).toBe(true);
    }
  });

  it('leaves other namespaces, inferred facts, other types and explicit choices alone', () => {
    expect(withDefaultEvergreen(fact('relationship')).evergreen).toBeUndefined();
    expect(withDefaultEvergreen(fact('profile', { sourceKind: 'INFERRED' })).evergreen).toBeUndefined();
    expect(withDefaultEvergreen(fact('profile', { evergreen: false })).evergreen).toBe(false);
    expect(
      withDefaultEvergreen({ ...fact('profile'), type: 'EVENT', namespace: undefined }).evergreen,
    ).toBeUndefined();
  });
});
