import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { Candidate, ExtractionInput } from '../candidate.js';
import { extractOffline } from './index.js';

const KEY = /^[a-z0-9_.-]{1,128}$/u;

function input(contents: readonly string[], timeZone = 'Asia/Shanghai'): ExtractionInput {
  return {
    memCellId: 'cell-9',
    sessionId: 'session-9',
    languageCode: '',
    timeZone,
    messages: contents.map((content, i) => ({
      id: `m${i + 1}`,
      sequence: i + 1,
      role: i % 2 === 0 ? 'USER' : 'ASSISTANT',
      content,
      occurredAt: Date.parse('2026-01-28T10:00:00+08:00') + i * 60_000,
    })),
  };
}

/** What every candidate of the offline extractors promises. */
function checkCandidate(c: Candidate, cell: ExtractionInput): void {
  const ids = cell.messages.map((m) => m.id);
  expect(c.text.trim()).not.toBe('');
  expect(c.confidence).toBeGreaterThanOrEqual(0);
  expect(c.confidence).toBeLessThanOrEqual(1);
  expect(['zh', 'en']).toContain(c.languageCode);
  expect(c.scopeHint).toBe('SELF');
  expect(c.evidence.memCellId).toBe(cell.memCellId);
  expect(c.evidence.messageIds.length).toBeGreaterThan(0);
  for (const id of c.evidence.messageIds) expect(ids).toContain(id);
  expect(Array.from(c.evidence.excerpt ?? '').length).toBeLessThanOrEqual(200);
  if (c.type === 'FACT') {
    expect(c.namespace).toMatch(KEY);
    expect(c.key).toMatch(KEY);
    expect(typeof c.value).toBe('object');
  } else {
    expect(c.namespace).toBeUndefined();
  }
  if (c.type === 'EPISODE') expect(Array.from(c.text).length).toBeLessThanOrEqual(500);
  if (c.validFrom !== undefined) expect(c.validUntil!).toBeGreaterThan(c.validFrom);
  for (const [k, v] of Object.entries(c.metadata ?? {})) {
    expect(k).toMatch(/^[a-z0-9_.-]{1,64}$/u);
    expect(v.length).toBeLessThanOrEqual(512);
  }
}

describe('extractOffline', () => {
  const cell = input([
    '我叫王小明，下周三我要去北京出差。',
    '好的，祝你出差顺利！',
    '谢谢。我上周刚搬到了上海，以后请回答简洁一点。',
  ]);

  it('runs only the extractors asked for', () => {
    const facts = extractOffline(cell, ['FACT']);
    expect(facts.FACT.length).toBeGreaterThan(0);
    expect(facts.EPISODE).toEqual([]);
    expect(facts.EVENT).toEqual([]);
    expect(facts.FORESIGHT).toEqual([]);
    const all = extractOffline(cell, ['EPISODE', 'EVENT', 'FORESIGHT', 'FACT']);
    expect(all.FACT).toEqual(facts.FACT);
    expect(all.EPISODE).toHaveLength(1);
    expect(all.EVENT).toHaveLength(1);
    expect(all.FORESIGHT).toHaveLength(1);
  });

  it('is deterministic', () => {
    expect(extractOffline(cell, ['EPISODE', 'EVENT', 'FORESIGHT', 'FACT'])).toEqual(
      extractOffline(cell, ['EPISODE', 'EVENT', 'FORESIGHT', 'FACT']),
    );
  });

  it('fills evidence, excerpt, language and scope hint on every candidate', () => {
    const out = extractOffline(cell, ['EPISODE', 'EVENT', 'FORESIGHT', 'FACT']);
    for (const c of Object.values(out).flat()) checkCandidate(c, cell);
  });

  it('never throws and keeps its promises on arbitrary text', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 120 }),
      fc
        .array(
          fc.constantFrom(
            '我',
            '喜欢',
            '不',
            '明天',
            '下周三',
            '了',
            '。',
            '，',
            '?',
            'I',
            "don't",
            'like',
            'my',
            'wife',
            'Anna',
            'next',
            'Tuesday',
            'at',
            '3pm',
            'went',
            'yesterday',
            'goal',
            'is',
            'to',
            '30',
            'days',
            '！',
            ' ',
          ),
          { maxLength: 30 },
        )
        .map((words) => words.join(' ')),
    );
    fc.assert(
      fc.property(
        fc.array(text, { minLength: 1, maxLength: 4 }),
        fc.constantFrom('UTC', 'Asia/Shanghai', 'Not/AZone'),
        (contents, zone) => {
          const cellUnderTest = input(contents, zone);
          const out = extractOffline(cellUnderTest, ['EPISODE', 'EVENT', 'FORESIGHT', 'FACT']);
          for (const c of Object.values(out).flat()) checkCandidate(c, cellUnderTest);
        },
      ),
      { numRuns: 200 },
    );
  });
});
