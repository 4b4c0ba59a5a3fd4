import { describe, expect, it } from '@jest/globals';
import { context, evaluationOf, fact } from '../../../test/fixtures/rules.js';
import { judge } from './engine.js';
import { resolvePolicy } from './policy.js';

describe('rule confidence_threshold', () => {
  it('rejects a candidate below the threshold', async () => {
    const [judgement] = await judge([fact({ confidence: 0.42 })], context());
    expect(judgement?.outcome).toBe('REJECTED');
    expect(judgement?.decidingRule).toBe('confidence_threshold');
    expect(judgement?.reason).toBe(
      'Rejected by confidence_threshold: confidence 0.42 is below the threshold 0.60.',
    );
    expect(judgement?.rejection).toEqual({ reason: 'MEMORY_REJECTED', field: 'confidence' });
  });

  it('accepts a candidate exactly at the threshold', async () => {
    const [judgement] = await judge([fact({ confidence: 0.6 })], context());
    expect(evaluationOf(judgement, 'confidence_threshold')).toMatchObject({
      verdict: 'PASSED',
      note: 'confidence 0.60 is at or above the threshold 0.60',
    });
    expect(judgement?.outcome).toBe('ACCEPTED');
  });

  it('accepts a confidence of 0 when the threshold is 0', async () => {
    const [judgement] = await judge(
      [fact({ confidence: 0 })],
      context({ policy: resolvePolicy({ confidenceThreshold: 0 }) }),
    );
    expect(judgement?.outcome).toBe('ACCEPTED');
  });

  it('quarantines a candidate between the threshold and the review threshold', async () => {
    const policy = resolvePolicy({ reviewConfidenceThreshold: 0.8 });
    const [held, clear] = await judge(
      [fact({ confidence: 0.7 }), fact({ key: 'tone', confidence: 0.8 })],
      context({ policy }),
    );
    expect(held?.outcome).toBe('QUARANTINED');
    expect(held?.decidingRule).toBe('confidence_threshold');
    expect(held?.memory?.status).toBe('QUARANTINED');
    expect(held?.memory?.statusReason).toBe(
      'confidence_threshold: confidence 0.70 is below the review threshold 0.80',
    );
    expect(clear?.outcome).toBe('ACCEPTED');
  });

  it('does not run when the policy disables it', async () => {
    const policy = resolvePolicy({ disabledRules: ['confidence_threshold'] });
    const [judgement] = await judge([fact({ confidence: 0.1 })], context({ policy }));
    expect(evaluationOf(judgement, 'confidence_threshold')).toEqual({
      rule: 'confidence_threshold',
      verdict: 'NOT_EVALUATED',
      note: 'disabled by the policy',
    });
    expect(judgement?.outcome).toBe('ACCEPTED');
  });
});
