// Blueprint §7, end to end through the hard rules: "From now on please answer more concisely. My
// goal for the next 30 days is to solve 200 problems." (and the Chinese original).
import { describe, expect, it } from '@jest/globals';
import { DAY, NOW, FakeStore, context, evaluationOf, testId } from '../../../test/fixtures/rules.js';
import type { Candidate } from '../candidate.js';
import { judge } from './engine.js';
import { resolvePolicy } from './policy.js';

const SAID_AT = NOW - 5 * 60_000;

function candidates(language: 'en' | 'zh'): Candidate[] {
  const evidence = { messageIds: [testId(42)], memCellId: testId(7) };
  return [
    {
      type: 'FACT',
      namespace: 'user_preference',
      key: 'answer_style',
      value: { style: 'concise' },
      text: language === 'en' ? 'The user prefers concise answers.' : '用户希望回答更简洁。',
      languageCode: language,
      sourceKind: 'EXPLICIT_USER_STATEMENT',
      scopeHint: 'SELF',
      confidence: 0.95,
      occurredAt: SAID_AT,
      evidence,
    },
    {
      type: 'FACT',
      namespace: 'oj_goal',
      key: 'current_goal',
      value: { goal: '200 problems in 30 days' },
      text: language === 'en' ? 'Goal: solve 200 problems in the next 30 days.' : '目标：未来30天刷200道题。',
      languageCode: language,
      sourceKind: 'EXPLICIT_USER_STATEMENT',
      confidence: 0.91,
      ttlHintMs: 30 * DAY,
      ttlReason: language === 'en' ? 'the user said "next 30 days"' : '用户说“未来30天”',
      occurredAt: SAID_AT,
      evidence,
    },
  ];
}

describe.each(['en', 'zh'] as const)('blueprint §7 example (%s)', (language) => {
  it('accepts the preference and the goal, with the goal expiring 30 days after the message', async () => {
    const [preference, goal] = await judge(
      candidates(language),
      context({ mode: 'extract', store: new FakeStore() }),
    );
    expect(preference).toMatchObject({ outcome: 'ACCEPTED', decidingRule: 'quota' });
    expect(preference?.memory).toMatchObject({
      type: 'FACT',
      namespace: 'user_preference',
      key: 'answer_style',
      value: { style: 'concise' },
      scope: 'SELF',
      ownerId: 'user-1',
      status: 'ACTIVE',
    });
    expect(preference?.memory).not.toHaveProperty('expiresAt');
    expect(goal).toMatchObject({ outcome: 'ACCEPTED' });
    expect(goal?.memory).toMatchObject({
      namespace: 'oj_goal',
      key: 'current_goal',
      expiresAt: SAID_AT + 30 * DAY,
    });
    expect(evaluationOf(goal, 'ttl_cap').verdict).toBe('PASSED');
    for (const judgement of [preference, goal]) {
      expect(judgement?.evaluations.map((e) => e.verdict)).not.toContain('REJECTED');
    }
  });

  it('caps the goal lower when the policy caps FACT lifetimes', async () => {
    const policy = resolvePolicy({ ttlLimits: { FACT: { maxTtlMs: 7 * DAY } } });
    const [, goal] = await judge(candidates(language), context({ policy }));
    expect(goal?.outcome).toBe('ACCEPTED');
    expect(goal?.memory?.expiresAt).toBe(NOW + 7 * DAY);
    expect(evaluationOf(goal, 'ttl_cap').verdict).toBe('ADJUSTED');
  });

  it('drops the goal under a stricter confidence threshold, keeping the preference', async () => {
    const policy = resolvePolicy({ confidenceThreshold: 0.93 });
    const [preference, goal] = await judge(candidates(language), context({ policy }));
    expect(preference?.outcome).toBe('ACCEPTED');
    expect(goal).toMatchObject({ outcome: 'REJECTED', decidingRule: 'confidence_threshold' });
  });

  it('supersedes an older answer style and merges a repeated goal', async () => {
    const store = new FakeStore();
    store.add({ id: 'old-style', value: { style: 'detailed' } });
    store.add({
      id: 'goal',
      namespace: 'oj_goal',
      key: 'current_goal',
      value: { goal: '200 problems in 30 days' },
    });
    const [preference, goal] = await judge(candidates(language), context({ store }));
    expect(preference).toMatchObject({ outcome: 'SUPERSEDED', supersedesId: 'old-style' });
    expect(goal).toMatchObject({ outcome: 'MERGED_DUPLICATE', duplicateOfId: 'goal' });
  });
});
