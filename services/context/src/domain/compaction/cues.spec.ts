import { describe, expect, it } from '@jest/globals';
import {
  conversationLanguage,
  detectLanguage,
  isDecision,
  isPending,
  isQuestion,
  isRequest,
  splitSentences,
} from './cues.js';

describe('splitSentences', () => {
  it('splits Chinese and Latin sentences but not numbers, abbreviations or file names', () => {
    expect(
      splitSentences(
        '我们用 PostgreSQL 16.2。预算多少？好的！See e.g. node.js v1.5 today. Dr. Li agreed; done?',
      ),
    ).toEqual([
      '我们用 PostgreSQL 16.2。',
      '预算多少？',
      '好的！',
      'See e.g. node.js v1.5 today.',
      'Dr. Li agreed;',
      'done?',
    ]);
  });

  it('splits at line breaks and keeps closing quotes with their sentence', () => {
    expect(splitSentences('He said "yes."\n第二行')).toEqual(['He said "yes."', '第二行']);
  });
});

describe('language', () => {
  it('detects Chinese when CJK characters outnumber Latin words', () => {
    expect(detectLanguage('我们决定用 PostgreSQL')).toBe('zh');
    expect(detectLanguage('We use PostgreSQL')).toBe('en');
  });

  it('prefers the session language, else the user messages', () => {
    expect(conversationLanguage('zh-Hans', [{ role: 'USER', content: 'hello' }])).toBe('zh');
    expect(conversationLanguage('fr', [{ role: 'USER', content: '你好' }])).toBe('en');
    expect(
      conversationLanguage('', [
        { role: 'USER', content: '你好，预算是多少' },
        { role: 'ASSISTANT', content: 'The budget is not known yet, let me check it for you' },
      ]),
    ).toBe('zh');
  });
});

describe('cues', () => {
  it.each([
    'We decided to use PostgreSQL 16.',
    "Let's go with the blue theme.",
    'Confirmed: the launch is on Friday.',
    'From now on, answer in English.',
    '那就用 Redis 吧。',
    '我们决定下周上线。',
    '已经确认：预算是五百美元。',
    '以后都用中文回答。',
  ])('takes "%s" as a decision', (sentence) => {
    expect(isDecision(sentence)).toBe(true);
  });

  it.each([
    'We have not decided yet.',
    'Should we decide on the database?',
    '我还没决定。',
    '我不确定这个方案。',
    '以后再说吧。',
    '请确认一下部署时间。',
    'The weather is nice.',
  ])('does not take "%s" as a decision', (sentence) => {
    expect(isDecision(sentence)).toBe(false);
  });

  it.each([
    'Which region should we use?',
    'how many replicas do we need',
    'which region should we use',
    '预算是多少',
    '你确定吗',
    '为什么要用 Redis。',
  ])('takes "%s" as a question', (sentence) => {
    expect(isQuestion(sentence)).toBe(true);
  });

  it.each(['We use three replicas.', '我们用三个副本。', 'What a great idea.', 'How we ship matters.'])(
    'does not take "%s" as a question',
    (sentence) => {
      expect(isQuestion(sentence)).toBe(false);
    },
  );

  it('tells requests and pending items', () => {
    expect(isRequest('Could you summarize the thread?')).toBe(true);
    expect(isRequest('Which region?')).toBe(false);
    expect(isPending("I'll get back to you on the pricing.")).toBe(true);
    expect(isPending('TODO: rotate the keys.')).toBe(true);
    expect(isPending('部署区域待定。')).toBe(true);
    expect(isPending('回头再看看预算。')).toBe(true);
    expect(isPending('The pricing is 20 dollars.')).toBe(false);
  });
});
