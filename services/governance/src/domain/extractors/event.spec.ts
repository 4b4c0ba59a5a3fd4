import { describe, expect, it } from '@jest/globals';
import { localDateString } from '@engram/lexical';
import type { ExtractionInput } from '../candidate.js';
import { extractEvents } from './event.js';

const NEW_YORK = 'America/New_York';
const SHANGHAI = 'Asia/Shanghai';
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

const when = (content: string, at: string, timeZone: string): string[] =>
  extractEvents(said(content, at, timeZone)).map((c) => localDateString(c.occurredAt ?? 0, timeZone));

describe('extractEvents', () => {
  it('dates an event from its relative time, across a month boundary', () => {
    const [event] = extractEvents(
      said('I went to a support group yesterday. It was really helpful.', '2026-03-01T15:00:00Z', 'UTC'),
    );
    expect(event).toMatchObject({
      type: 'EVENT',
      sourceKind: 'EXPLICIT_USER_STATEMENT',
      occurredAt: Date.parse('2026-02-28T00:00:00Z'),
      text: 'I went to a support group yesterday. (2026-02-28)',
      evidence: { messageIds: ['m1'], memCellId: 'cell-1', excerpt: 'I went to a support group yesterday.' },
    });
    expect(when('我昨天去医院做了体检。', '2026-03-01T09:00:00+08:00', SHANGHAI)).toEqual(['2026-02-28']);
  });

  it('reads periods and counts back', () => {
    expect(when('我上周搬到了上海。', WEDNESDAY_SH, SHANGHAI)).toEqual(['2026-01-19']);
    expect(
      when('I ran my first marathon two weeks ago and my knee still hurts.', WEDNESDAY_NY, NEW_YORK),
    ).toEqual(['2026-01-14']);
    expect(when('I quit my job last Friday!', WEDNESDAY_NY, NEW_YORK)).toEqual(['2026-01-23']);
    expect(when('We just moved to Denver last month.', WEDNESDAY_NY, NEW_YORK)).toEqual(['2025-12-01']);
    expect(when('三天前我在地铁上丢了钱包。', WEDNESDAY_SH, SHANGHAI)).toEqual(['2026-01-25']);
    expect(when('I graduated from MIT in 2019.', WEDNESDAY_NY, NEW_YORK)).toEqual(['2019-01-01']);
  });

  it('takes the message time for a salient event without a date', () => {
    expect(when('I just adopted a cat named Miso!', WEDNESDAY_NY, NEW_YORK)).toEqual(['2026-01-28']);
    expect(when('我刚买了一辆车。', WEDNESDAY_SH, SHANGHAI)).toEqual(['2026-01-28']);
    expect(when('I have been to Japan three times.', WEDNESDAY_NY, NEW_YORK)).toEqual(['2026-01-28']);
  });

  it('skips negations, habits, states, plans, questions, small talk and other people', () => {
    for (const [text, at, zone] of [
      ["I don't remember where I parked my car yesterday.", WEDNESDAY_NY, NEW_YORK],
      ["I've never been to Japan.", WEDNESDAY_NY, NEW_YORK],
      ['I used to play the piano.', WEDNESDAY_NY, NEW_YORK],
      ["I've been learning Spanish for a year.", WEDNESDAY_NY, NEW_YORK],
      ["I've had some tough times with my business.", WEDNESDAY_NY, NEW_YORK],
      ["I've been working on this for the past few months.", WEDNESDAY_NY, NEW_YORK],
      ['We got this!', WEDNESDAY_NY, NEW_YORK],
      ['Did you go to the concert yesterday?', WEDNESDAY_NY, NEW_YORK],
      ['My daughter just started kindergarten.', WEDNESDAY_NY, NEW_YORK],
      ['I always go running on Sundays.', WEDNESDAY_NY, NEW_YORK],
      ["I'm so tired today.", WEDNESDAY_NY, NEW_YORK],
      ['我不记得上次把钥匙放哪了。', WEDNESDAY_SH, SHANGHAI],
      ['我们结婚五年了。', WEDNESDAY_SH, SHANGHAI],
      ['我晚上总是睡不好。', WEDNESDAY_SH, SHANGHAI],
      ['主要是项目下周五就要上线了。', WEDNESDAY_SH, SHANGHAI],
      ['周五晚上七点我约了朋友吃饭。', WEDNESDAY_SH, SHANGHAI],
      ['我的目标是今年考过雅思7分。', WEDNESDAY_SH, SHANGHAI],
      ['好的，我知道了。', WEDNESDAY_SH, SHANGHAI],
      ['昨天我听说我的好朋友要搬家。', WEDNESDAY_SH, SHANGHAI],
      // Said at 10:00, tonight is ahead.
      ['今晚最喜欢的动画片不播了。', WEDNESDAY_SH, SHANGHAI],
      ['你昨天去哪了？', WEDNESDAY_SH, SHANGHAI],
    ] as const) {
      expect([text, extractEvents(said(text, at, zone))]).toEqual([text, []]);
    }
  });

  it('keeps the event of a sentence that also states a goal', () => {
    expect(when('我上个月辞职了，现在在准备考研。', WEDNESDAY_SH, SHANGHAI)).toEqual(['2025-12-01']);
  });
});
