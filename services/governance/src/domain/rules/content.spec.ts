import { describe, expect, it } from '@jest/globals';
import type { JsonValue } from '@engram/store';
import { fact } from '../../../test/fixtures/rules.js';
import { contentPieces, listFields, rewriteContent } from './content.js';
import { canonicalJson, jsonDepth } from './json.js';
import { codePoints, formatDuration, renderFactText, truncate } from './text.js';

describe('contentPieces and rewriteContent', () => {
  const candidate = fact({
    value: { outer: { list: ['a', 42, true, null] } },
    evidence: { messageIds: [], excerpt: 'quote' },
    metadata: { app: 'tutor' },
    ttlReason: 'because',
  });

  it('reads every string, number and key with its field, and every key–value pair as text', () => {
    expect(contentPieces(candidate)).toEqual([
      { field: 'namespace', text: 'user_preference' },
      { field: 'key', text: 'answer_style' },
      { field: 'key', text: 'user_preference: answer_style' },
      { field: 'text', text: 'The user prefers concise answers.' },
      { field: 'value', text: 'outer' },
      { field: 'value', text: 'list' },
      { field: 'value', text: 'a' },
      { field: 'value', text: 'list: a' },
      { field: 'value', text: '42' },
      { field: 'value', text: 'list: 42' },
      { field: 'evidence.excerpt', text: 'quote' },
      { field: 'metadata', text: 'app' },
      { field: 'metadata', text: 'tutor' },
      { field: 'metadata', text: 'app: tutor' },
      { field: 'ttl_reason', text: 'because' },
    ]);
    expect(contentPieces(candidate, ['text']).map((p) => p.field)).toEqual(['text']);
  });

  it('rewrites every piece, turning a rewritten number into a string and keeping others', () => {
    const rewritten = rewriteContent(candidate, (text) => (text === '42' ? '[x]' : text.toUpperCase()));
    expect(rewritten.value).toEqual({ OUTER: { LIST: ['A', '[x]', true, null] } });
    expect(rewritten.evidence.excerpt).toBe('QUOTE');
    expect(rewritten.metadata).toEqual({ APP: 'TUTOR' });
    expect(rewritten.ttlReason).toBe('BECAUSE');
    expect(rewriteContent(candidate, (t) => t)).toEqual(candidate);
  });

  it('keeps both entries when a rewrite makes two keys equal', () => {
    const rewritten = rewriteContent(fact({ value: { a1: 1, a2: 2 } }), (text) => text.replace(/^a\d$/, 'a'));
    expect(rewritten.value).toEqual({ a: 1, 'a (2)': 2 });
  });

  it('lists fields for notes in a fixed order', () => {
    expect(listFields(['metadata', 'text'])).toBe('text and metadata');
    expect(listFields(['ttl_reason', 'value', 'text'])).toBe('text, value and ttl_reason');
    expect(listFields(['value'])).toBe('value');
  });
});

describe('json and text helpers', () => {
  it('compares values canonically and measures depth', () => {
    expect(canonicalJson({ b: 1, a: { d: 2, c: 3 } })).toBe('{"a":{"c":3,"d":2},"b":1}');
    expect(jsonDepth({ a: [{}] })).toBe(3);
    expect(jsonDepth('x')).toBe(0);
  });

  it('measures the depth of a very wide or very deep value without overflowing the stack', () => {
    // Spreading 500 000 depths into Math.max threw RangeError (INTERNAL on the wire).
    expect(jsonDepth({ wide: new Array<number>(500_000).fill(1) })).toBe(2);
    let deep: JsonValue = 0;
    for (let i = 0; i < 100_000; i++) deep = i % 2 === 0 ? [deep] : { d: deep };
    expect(jsonDepth(deep)).toBe(100_000);
  });

  it('counts code points, not UTF-16 units, and truncates on them', () => {
    expect(codePoints('😀a')).toBe(2);
    expect(truncate('😀😀😀', 2)).toBe('😀…');
  });

  it('formats durations', () => {
    expect(formatDuration(30 * 86_400_000)).toBe('30 days');
    expect(formatDuration(3_600_000)).toBe('1 hour');
    expect(formatDuration(90 * 60_000)).toBe('90 minutes');
    expect(formatDuration(250)).toBe('250 ms');
  });

  it('renders FACT text from nested values', () => {
    expect(renderFactText('profile', 'city', { city: 'Hangzhou', since: 2019, tags: ['a'] }, 100)).toBe(
      'profile / city: city: Hangzhou; since: 2019; tags: ["a"]',
    );
  });
});
