import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { allergyKey, itemKey, languageKey, relationKey, slug } from './keys.js';

// proto/engram/governance/v1/memory.proto: namespace and key are 1–128 characters of [a-z0-9_.-].
const KEY = /^[a-z0-9_.-]{1,128}$/u;

describe('FACT keys', () => {
  it('give the same slot to the same item in both languages', () => {
    expect(itemKey('tea')).toBe('item.tea');
    expect(itemKey('茶')).toBe('item.tea');
    expect(itemKey('Spicy food')).toBe(itemKey('辣'));
    expect(itemKey('horror movies')).toBe(itemKey('恐怖片'));
    expect(itemKey('the sci-fi movies')).toBe('item.sci_fi_movie');
  });

  it('are stable for unknown Chinese items and reversible from code points', () => {
    expect(itemKey('榴莲')).toBe('item.durian');
    expect(itemKey('科幻电影')).toBe('item.zh-79d1-5e7b-7535-5f71');
    expect(itemKey('科幻电影')).toBe(itemKey(' 科幻电影 '));
  });

  it('name relations that can be many by name, and single ones without', () => {
    expect(relationKey('wife', 'Anna')).toBe('wife');
    expect(relationKey('daughter', 'Lily')).toBe('daughter.lily');
    expect(relationKey('daughter')).toBe('daughter');
    expect(relationKey('son', '乐乐')).toBe('son.zh-4e50-4e50');
    expect(allergyKey('peanuts')).toBe('allergy.peanut');
    expect(languageKey('yue')).toBe('language.yue');
  });

  it('always satisfy the contract pattern', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 200 }), (text) => {
        for (const key of [itemKey(text), allergyKey(text), relationKey('friend', text), `x.${slug(text)}`]) {
          expect(key).toMatch(KEY);
        }
      }),
      { numRuns: 300 },
    );
  });
});
