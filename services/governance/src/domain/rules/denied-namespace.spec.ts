import { describe, expect, it } from '@jest/globals';
import { context, evaluationOf, event, fact } from '../../../test/fixtures/rules.js';
import { deniedBy } from './denied-namespace.js';
import { judge } from './engine.js';
import { resolvePolicy } from './policy.js';

describe('rule denied_namespace', () => {
  const policy = resolvePolicy({ deniedNamespaces: ['health', 'internal.*'] });

  it('matches exact names and prefixes ending in *', () => {
    expect(deniedBy('health', policy.deniedNamespaces)).toBe('health');
    expect(deniedBy('internal.audit', policy.deniedNamespaces)).toBe('internal.*');
    expect(deniedBy('healthy_food', policy.deniedNamespaces)).toBeUndefined();
    expect(deniedBy('internal', policy.deniedNamespaces)).toBeUndefined();
  });

  it('rejects a FACT in a denied namespace', async () => {
    const [judgement] = await judge([fact({ namespace: 'internal.flags' })], context({ policy }));
    expect(judgement?.outcome).toBe('REJECTED');
    expect(judgement?.decidingRule).toBe('denied_namespace');
    expect(judgement?.rejection).toEqual({ reason: 'MEMORY_REJECTED', field: 'namespace' });
    expect(judgement?.reason).toBe(
      'Rejected by denied_namespace: namespace internal.flags is denied by the policy (internal.*).',
    );
  });

  it('passes other namespaces and types without a namespace', async () => {
    const judgements = await judge([fact({ namespace: 'healthy_food' }), event()], context({ policy }));
    expect(judgements.map((j) => evaluationOf(j, 'denied_namespace').verdict)).toEqual(['PASSED', 'PASSED']);
  });

  it('denies nothing by default', async () => {
    const [judgement] = await judge([fact({ namespace: 'health' })], context());
    expect(judgement?.outcome).toBe('ACCEPTED');
  });
});
