import { describe, expect, it } from '@jest/globals';
import { localDateString, localDateTimeString } from '@engram/lexical';
import type { ExtractionInput } from '../candidate.js';
import { extractForesight } from './foresight.js';

const NEW_YORK = 'America/New_York';
const SHANGHAI = 'Asia/Shanghai';
/** Wednesday 28 January 2026. */
const WEDNESDAY_NY = '2026-01-28T10:00:00-05:00';
const WEDNESDAY_SH = '2026-01-28T10:00:00+08:00';

function said(content: string, at: string, timeZone: string): ExtractionInput {
  return {
    memCellId: 'cell-1',
    sessionId: 'session-1',
    languageCode: '',
    timeZone,
    messages: [{ id: 'm1', sequence: 1, role: 'USER', content, occurredAt: Date.parse(at) }],
  };
}

function dates(content: string, at: string, timeZone: string): string[] {
  return extractForesight(said(content, at, timeZone)).map((c) =>
    localDateString(c.validFrom ?? 0, timeZone),
  );
}

describe('extractForesight', () => {
  it('reads an appointment with its time', () => {
    const [plan] = extractForesight(
      said('I have a dentist appointment next Tuesday at 3pm.', WEDNESDAY_NY, NEW_YORK),
    );
    expect(plan).toMatchObject({
      type: 'FORESIGHT',
      sourceKind: 'EXPLICIT_USER_STATEMENT',
      languageCode: 'en',
      occurredAt: Date.parse(WEDNESDAY_NY),
      evidence: {
        messageIds: ['m1'],
        memCellId: 'cell-1',
        excerpt: 'I have a dentist appointment next Tuesday at 3pm.',
      },
      metadata: { time_expression: 'next Tuesday at 3pm', time_granularity: 'minute' },
    });
    expect(localDateTimeString(plan!.validFrom!, NEW_YORK)).toBe('2026-02-03 15:00');
    // Valid until the end of that day.
    expect(plan!.validUntil).toBe(Date.parse('2026-02-04T00:00:00-05:00'));
    expect(plan!.text).toBe('I have a dentist appointment next Tuesday at 3pm. (2026-02-03 15:00)');
    expect(plan!.confidence).toBeGreaterThanOrEqual(0.8);
  });

  it('reads a Chinese plan', () => {
    const [plan] = extractForesight(said('下周三我要去北京出差。', WEDNESDAY_SH, SHANGHAI));
    expect(plan).toMatchObject({ languageCode: 'zh', text: '下周三我要去北京出差。（2026-02-04）' });
    expect(plan!.validFrom).toBe(Date.parse('2026-02-04T00:00:00+08:00'));
    expect(plan!.validUntil).toBe(Date.parse('2026-02-05T00:00:00+08:00'));
  });

  it('resolves across a month boundary and in the session zone', () => {
    expect(
      dates("Tomorrow I'm meeting my old roommate for lunch at noon.", '2026-01-31T20:00:00Z', 'UTC'),
    ).toEqual(['2026-02-01']);
    expect(dates('明天下午三点我有个面试，有点紧张。', '2026-01-31T20:00:00+08:00', SHANGHAI)).toEqual([
      '2026-02-01',
    ]);
    // 18:00 UTC on 31 March is already 02:00 on 1 April in Shanghai.
    expect(dates("I'm seeing my doctor tomorrow morning.", '2026-03-31T18:00:00Z', SHANGHAI)).toEqual([
      '2026-04-02',
    ]);
    expect(dates("I'm seeing my doctor tomorrow morning.", '2026-03-31T18:00:00Z', 'UTC')).toEqual([
      '2026-04-01',
    ]);
  });

  it('gives coarse plans their whole period, with lower confidence', () => {
    const [plan] = extractForesight(said('我打算下个月去日本旅游。', WEDNESDAY_SH, SHANGHAI));
    expect(plan!.validFrom).toBe(Date.parse('2026-02-01T00:00:00+08:00'));
    expect(plan!.validUntil).toBe(Date.parse('2026-03-01T00:00:00+08:00'));
    expect(plan!.confidence).toBeLessThan(0.8);
  });

  it('reads a plan for the rest of the current period from its future cue', () => {
    const [show] = extractForesight(
      said('Super excited for my upcoming performance in Tokyo this month.', WEDNESDAY_NY, NEW_YORK),
    );
    expect(show).toMatchObject({
      validFrom: Date.parse(WEDNESDAY_NY),
      validUntil: Date.parse('2026-02-01T00:00:00-05:00'),
    });
    expect(dates('这个月我要去上海出差。', WEDNESDAY_SH, SHANGHAI)).toEqual(['2026-01-28']);
    expect(dates('I am so busy this month.', WEDNESDAY_NY, NEW_YORK)).toEqual([]);
  });

  it('counts family events and "remind me" requests', () => {
    expect(dates('My son Max turns 8 on Friday.', WEDNESDAY_NY, NEW_YORK)).toEqual(['2026-01-30']);
    expect(
      dates('Remind me that I have a job interview on Thursday at 10am.', WEDNESDAY_NY, NEW_YORK),
    ).toEqual(['2026-01-29']);
    expect(dates('我们公司下个月十号开年会。', WEDNESDAY_SH, SHANGHAI)).toEqual(['2026-02-10']);
  });

  it('skips questions, past events, habits, goals and other people’s plans', () => {
    for (const [text, at, zone] of [
      ['Do you think I should go to the dentist next week?', WEDNESDAY_NY, NEW_YORK],
      ["What's the weather like in Paris tomorrow?", WEDNESDAY_NY, NEW_YORK],
      ['I quit my job last Friday!', WEDNESDAY_NY, NEW_YORK],
      ['We had dinner at an Italian place on Friday.', WEDNESDAY_NY, NEW_YORK],
      ['My grandmother passed away in December.', WEDNESDAY_NY, NEW_YORK],
      ['My goal for the next 30 days is to solve 200 problems.', WEDNESDAY_NY, NEW_YORK],
      ['He is flying to Paris next week.', WEDNESDAY_NY, NEW_YORK],
      ["I'm not a morning person.", WEDNESDAY_NY, NEW_YORK],
      ['If I win the lottery tomorrow I will quit.', WEDNESDAY_NY, NEW_YORK],
      ['我上周搬到了上海。', WEDNESDAY_SH, SHANGHAI],
      ['以后请你回答时更简洁一点。', WEDNESDAY_SH, SHANGHAI],
      ['周末我们总是一起玩的。', WEDNESDAY_SH, SHANGHAI],
      ['他下周去北京。', WEDNESDAY_SH, SHANGHAI],
      ['明天你有空吗？', WEDNESDAY_SH, SHANGHAI],
    ] as const) {
      expect([text, extractForesight(said(text, at, zone))]).toEqual([text, []]);
    }
  });

  it('reads a bare weekday with an arrangement verb as ahead', () => {
    expect(dates('周五晚上七点我约了朋友吃饭。', WEDNESDAY_SH, SHANGHAI)).toEqual(['2026-01-30']);
  });
});
