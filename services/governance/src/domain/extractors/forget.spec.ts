import { describe, expect, it } from '@jest/globals';
import type { ExtractionInput, SourceMessage } from '../candidate.js';
import { forgetRequests, suppressedMessageIds } from './forget.js';
import { extractOffline } from './index.js';

function cell(...messages: readonly (readonly [SourceMessage['role'], string])[]): ExtractionInput {
  return {
    memCellId: 'cell-1',
    sessionId: 'session-1',
    languageCode: '',
    timeZone: 'Asia/Shanghai',
    messages: messages.map(([role, content], i) => ({
      id: `m${i + 1}`,
      sequence: i + 1,
      role,
      content,
      occurredAt: Date.parse('2026-01-28T10:00:00+08:00') + i * 30_000,
    })),
  };
}

describe('forgetRequests', () => {
  it.each([
    "Please don't remember this, but I'm going through a divorce.",
    "Don't save this: my bank PIN is 4821.",
    'Please forget what I said about my ex.',
    "You don't need to remember that.",
    'This is off the record.',
    '这个别记哈，我最近在偷偷找工作。',
    '你别记下来：我其实不喜欢我现在的工作。',
    '不要记住我刚才说的电话号码。',
    '请忘掉这件事。',
  ])('recognises "%s"', (content) => {
    expect(forgetRequests(cell(['USER', content]))).toHaveLength(1);
  });

  it.each([
    "I don't remember where I parked my car yesterday.",
    'I forgot my umbrella.',
    'Remember to buy milk.',
    '我不记得了。',
    '我忘了带钥匙。',
    '这个别告诉别人。',
  ])('does not take "%s" for a request', (content) => {
    expect(forgetRequests(cell(['USER', content]))).toEqual([]);
  });

  it('covers earlier user messages when the request points back', () => {
    const input = cell(
      ['USER', '我的手机号是13812345678。'],
      ['ASSISTANT', '好的，已经看到了。'],
      ['USER', '不要记住我刚才说的电话号码。'],
    );
    expect(forgetRequests(input)).toEqual([
      {
        messageId: 'm3',
        scope: 'previous',
        coveredMessageIds: ['m1', 'm3'],
        excerpt: '不要记住我刚才说的电话号码。',
      },
    ]);
    expect([...suppressedMessageIds(input)]).toEqual(['m1', 'm3']);
  });

  it('covers only its own message when it introduces what follows', () => {
    const input = cell(
      ['USER', 'I live in Seattle.'],
      ['USER', "Don't save this: I'm looking for a new job."],
    );
    expect(forgetRequests(input)[0]).toMatchObject({ scope: 'message', coveredMessageIds: ['m2'] });
  });
});

describe('extractOffline and forget requests', () => {
  it('proposes nothing from covered messages', () => {
    const input = cell(
      ['USER', "I'm allergic to peanuts."],
      ['USER', '这个别记哈，我下周三要去面试，我不喜欢现在的工作。'],
    );
    const out = extractOffline(input, ['FACT', 'FORESIGHT', 'EVENT', 'EPISODE']);
    const cited = Object.values(out).flatMap((candidates) =>
      candidates.flatMap((c) => c.evidence.messageIds),
    );
    expect(cited).not.toContain('m2');
    expect(out.FACT.map((c) => c.key)).toEqual(['allergy.peanut']);
    expect(out.FORESIGHT).toEqual([]);
  });
});
