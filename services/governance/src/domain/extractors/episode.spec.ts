import { describe, expect, it } from '@jest/globals';
import type { ExtractionInput, SourceMessage } from '../candidate.js';
import { extractEpisode, terms } from './episode.js';
import { suppressedMessageIds } from './forget.js';

function cell(...messages: readonly (readonly [SourceMessage['role'], string])[]): ExtractionInput {
  return {
    memCellId: 'cell-1',
    sessionId: 'session-1',
    languageCode: '',
    timeZone: 'UTC',
    messages: messages.map(([role, content], i) => ({
      id: `m${i + 1}`,
      sequence: i + 1,
      role,
      content,
      occurredAt: Date.parse('2026-01-28T09:00:00Z') + i * 30_000,
    })),
  };
}

describe('extractEpisode', () => {
  it('summarises a cell by its most central sentences, with speakers', () => {
    const input = cell(
      ['USER', 'I ran my first marathon two weeks ago and my knee still hurts.'],
      [
        'ASSISTANT',
        'Congratulations on the marathon! Rest and ice should help the knee. Are you stretching?',
      ],
      ['USER', "Thanks. I'm planning to run another marathon in October, so the knee worries me."],
    );
    const [episode] = extractEpisode(input);
    expect(episode).toMatchObject({
      type: 'EPISODE',
      sourceKind: 'INFERRED',
      confidence: 0.6,
      occurredAt: Date.parse('2026-01-28T09:00:00Z'),
      languageCode: 'en',
      evidence: { messageIds: ['m1', 'm2', 'm3'], memCellId: 'cell-1' },
    });
    expect(episode!.text).toMatch(/^User: /u);
    expect(episode!.text).toContain('marathon');
    expect(episode!.text).toContain('knee');
    expect(episode!.evidence.excerpt!.length).toBeLessThanOrEqual(200);
  });

  it('splits Chinese sentences and labels speakers in Chinese', () => {
    const input = cell(
      ['USER', '最近工作压力好大，天天加班。'],
      ['ASSISTANT', '听起来很辛苦，要注意休息。有什么具体让你压力大的事吗？'],
      ['USER', '主要是项目下周五就要上线了，我负责的模块还没测完。'],
    );
    const [episode] = extractEpisode(input);
    expect(episode!.languageCode).toBe('zh');
    expect(episode!.text).toMatch(/^用户：/u);
    expect(episode!.text).toContain('上线');
  });

  it('always keeps one of the user’s sentences', () => {
    const [episode] = extractEpisode(
      cell(
        ['USER', 'Can you recommend a good book about building habits?'],
        [
          'ASSISTANT',
          'Sure — Atomic Habits by James Clear is a popular choice. I really like its chapter on identity-based habits.',
        ],
        ['USER', "Thanks, I'll check it out."],
      ),
    );
    expect(episode!.text).toMatch(/User: Can you recommend a good book about building habits\?/u);
    expect(episode!.text).toContain('Atomic Habits');
  });

  it('keeps the summary within 500 characters', () => {
    const long = Array.from(
      { length: 40 },
      (_, i) => `Sentence ${i} is about the garden project and the tomato plants.`,
    ).join(' ');
    const [episode] = extractEpisode(cell(['USER', long], ['ASSISTANT', long], ['USER', long]));
    expect(Array.from(episode!.text).length).toBeLessThanOrEqual(500);
  });

  it('skips cells with fewer than two user messages, and small talk', () => {
    expect(
      extractEpisode(
        cell(['USER', 'I ran my first marathon two weeks ago.'], ['ASSISTANT', 'Congratulations!']),
      ),
    ).toEqual([]);
    expect(
      extractEpisode(
        cell(
          ['USER', 'hey how are you doing'],
          ['ASSISTANT', "I'm doing well, thanks!"],
          ['USER', 'just wanted to chat lol'],
        ),
      ),
    ).toEqual([]);
  });

  it('leaves out what the user asked not to remember', () => {
    const input = cell(
      ['USER', 'My bank PIN is 4821 and my account is at Chase.'],
      ['ASSISTANT', 'Noted.'],
      ['USER', "Please forget what I just said, don't remember it."],
      ['USER', 'Anyway, I want to plan a garden with tomatoes and basil this spring.'],
      ['USER', 'The garden gets a lot of sun, so tomatoes should do well.'],
    );
    const [episode] = extractEpisode(input, suppressedMessageIds(input));
    expect(episode!.text).not.toContain('4821');
    expect(episode!.evidence.messageIds).toEqual(['m2', 'm4', 'm5']);
  });
});

describe('terms', () => {
  it('drops stopwords, stems English and makes Chinese bigrams', () => {
    expect(terms('I love the habits')).toEqual(['love', 'habit']);
    expect(terms('时间管理')).toEqual(['时间', '间管', '管理']);
  });
});
