import { describe, expect, it } from '@jest/globals';
import type { SourceMessage } from '../candidate.js';
import { conversationLanguage } from './language.js';

const said = (...contents: readonly (readonly [SourceMessage['role'], string])[]): SourceMessage[] =>
  contents.map(([role, content], i) => ({ id: `m${i}`, sequence: i, role, content, occurredAt: 0 }));

describe('conversationLanguage', () => {
  it('follows the session language when it has one', () => {
    expect(conversationLanguage({ languageCode: 'zh-Hans', messages: said(['USER', 'Hello there']) })).toBe(
      'zh',
    );
    expect(conversationLanguage({ languageCode: 'ZH', messages: said(['USER', 'Hello']) })).toBe('zh');
    expect(
      conversationLanguage({ languageCode: 'en-GB', messages: said(['USER', '你好，我想问一下']) }),
    ).toBe('en');
    expect(conversationLanguage({ languageCode: 'de', messages: said(['USER', '你好']) })).toBe('en');
  });

  it('detects Chinese from the user messages’ CJK ratio otherwise', () => {
    expect(
      conversationLanguage({ languageCode: '', messages: said(['USER', '我最近在用 React 写一个小项目']) }),
    ).toBe('zh');
    expect(
      conversationLanguage({
        languageCode: '',
        messages: said(
          ['USER', 'My goal is to learn 中文'],
          ['ASSISTANT', '好的，我们开始吧！今天先学拼音和声调。'],
        ),
      }),
    ).toBe('en');
    expect(
      conversationLanguage({ languageCode: '', messages: said(['ASSISTANT', '你好，有什么可以帮你？']) }),
    ).toBe('zh');
  });

  it('falls back to English when nothing can be told', () => {
    expect(conversationLanguage({ languageCode: '', messages: [] })).toBe('en');
    expect(conversationLanguage({ languageCode: '', messages: said(['USER', '123 !!!']) })).toBe('en');
  });
});
