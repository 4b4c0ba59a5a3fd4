import { afterEach, describe, expect, it } from '@jest/globals';
import {
  findDuration,
  findTimeMentions,
  fromLocal,
  localDateString,
  localDateTimeString,
  parseNumber,
  type Direction,
  type TimeMention,
} from './dates.js';
import type { Lang } from './sentences.js';

const SHANGHAI = 'Asia/Shanghai';
const NEW_YORK = 'America/New_York';

function first(
  text: string,
  language: Lang,
  at: string,
  timeZone: string,
  direction: Direction = 'future',
): TimeMention {
  const [mention] = findTimeMentions(text, language, { occurredAt: Date.parse(at), timeZone }, direction);
  if (mention === undefined) throw new Error(`no time expression found in ${text}`);
  return mention;
}

/** The local calendar days a mention covers, as `first..last`. */
function days(mention: TimeMention, timeZone: string): string {
  return `${localDateString(mention.from, timeZone)}..${localDateString(mention.until - 1, timeZone)}`;
}

describe('relative dates resolve against the message time, never the wall clock', () => {
  it('crosses a month boundary', () => {
    // Friday 30 January 2026.
    expect(
      localDateString(
        first('I have a dentist appointment next Tuesday at 3pm', 'en', '2026-01-30T10:00:00Z', 'UTC').from,
        'UTC',
      ),
    ).toBe('2026-02-03');
    expect(
      localDateTimeString(first('next Tuesday at 3pm', 'en', '2026-01-30T10:00:00Z', 'UTC').from, 'UTC'),
    ).toBe('2026-02-03 15:00');
    expect(days(first('明天下午三点我有个面试', 'zh', '2026-01-31T20:00:00+08:00', SHANGHAI), SHANGHAI)).toBe(
      '2026-02-01..2026-02-01',
    );
    expect(
      days(first('我昨天去医院做了体检', 'zh', '2026-03-01T09:00:00+08:00', SHANGHAI, 'past'), SHANGHAI),
    ).toBe('2026-02-28..2026-02-28');
  });

  it('reads the calendar day in the session zone: the same instant is 1 April in Shanghai and 31 March in UTC', () => {
    const at = '2026-03-31T18:00:00Z';
    for (const [text, language] of [
      ["I'm seeing my doctor tomorrow morning.", 'en'],
      ['我明天早上要去看医生。', 'zh'],
    ] as const) {
      const inShanghai = first(text, language, at, SHANGHAI);
      const inUtc = first(text, language, at, 'UTC');
      expect(localDateString(inShanghai.from, SHANGHAI)).toBe('2026-04-02');
      expect(localDateString(inUtc.from, 'UTC')).toBe('2026-04-01');
      // The range starts at local midnight of that day.
      expect(inShanghai.from).toBe(Date.parse('2026-04-02T00:00:00+08:00'));
      expect(inUtc.from).toBe(Date.parse('2026-04-01T00:00:00Z'));
    }
  });

  describe('whatever the process time zone', () => {
    const original = process.env['TZ'];
    afterEach(() => {
      if (original === undefined) delete process.env['TZ'];
      else process.env['TZ'] = original;
    });

    it('gives the same answers in Los Angeles and Kolkata as in UTC', () => {
      // chrono's Chinese parsers use the process's local-time getters; the resolution must not.
      const cases = [
        ['明天下午三点我有个面试', 'zh', '2026-01-31T20:00:00+08:00', SHANGHAI],
        ['下周三我要去北京出差', 'zh', '2026-02-01T23:30:00+08:00', SHANGHAI],
        ['I have a dentist appointment next Tuesday at 3pm', 'en', '2026-01-28T23:30:00-05:00', NEW_YORK],
      ] as const;
      const resolve = () => cases.map(([text, language, at, zone]) => first(text, language, at, zone));
      process.env['TZ'] = 'UTC';
      const inUtc = resolve();
      for (const zone of ['America/Los_Angeles', 'Asia/Kolkata']) {
        process.env['TZ'] = zone;
        expect(resolve()).toEqual(inUtc);
      }
      expect(localDateTimeString(inUtc[0]!.from, SHANGHAI)).toBe('2026-02-01 15:00');
      expect(localDateString(inUtc[1]!.from, SHANGHAI)).toBe('2026-02-04');
      expect(localDateTimeString(inUtc[2]!.from, NEW_YORK)).toBe('2026-02-03 15:00');
    });
  });

  it('keeps wall-clock times across a DST change in the session zone', () => {
    // Saturday 7 March 2026 in New York; clocks go forward on Sunday 8 March.
    const mention = first('tomorrow at 3pm', 'en', '2026-03-07T12:00:00-05:00', NEW_YORK);
    expect(mention.from).toBe(Date.parse('2026-03-08T15:00:00-04:00'));
    expect(fromLocal({ year: 2026, month: 3, day: 8, hour: 2, minute: 30 }, NEW_YORK)).toBe(
      Date.parse('2026-03-08T03:30:00-04:00'),
    );
  });
});

describe('Chinese forms', () => {
  // Sunday 1 February 2026, 10:00 in Shanghai: its Monday-based week is 26 January – 1 February.
  const SUNDAY = '2026-02-01T10:00:00+08:00';
  const on = (text: string, direction: Direction = 'future', at = SUNDAY) =>
    days(first(text, 'zh', at, SHANGHAI, direction), SHANGHAI);

  it('counts weeks from Monday (chrono alone puts 下周三 ten days after a Sunday)', () => {
    expect(on('下周三')).toBe('2026-02-04..2026-02-04');
    expect(on('这周三', 'past')).toBe('2026-01-28..2026-01-28');
    expect(on('上周三', 'past')).toBe('2026-01-21..2026-01-21');
    expect(on('下下周三')).toBe('2026-02-11..2026-02-11');
    expect(on('下个星期一')).toBe('2026-02-02..2026-02-02');
  });

  it('reads bare periods as ranges', () => {
    expect(on('我下周要搬家')).toBe('2026-02-02..2026-02-08');
    expect(on('我上周搬到了上海', 'past')).toBe('2026-01-19..2026-01-25');
    expect(on('我下个月去日本')).toBe('2026-03-01..2026-03-31');
    expect(on('上个月辞职了', 'past')).toBe('2026-01-01..2026-01-31');
    expect(on('我去年跑了马拉松', 'past')).toBe('2025-01-01..2025-12-31');
    expect(on('下周末去爬山')).toBe('2026-02-07..2026-02-08');
    expect(on('上周末', 'past')).toBe('2026-01-24..2026-01-25');
    expect(on('明年三月')).toBe('2027-03-01..2027-03-31');
    expect(on('十一月底要交论文')).toBe('2026-11-26..2026-11-30');
    expect(on('去年夏天', 'past')).toBe('2025-06-01..2025-08-31');
  });

  it('counts weeks ago and later, and days of the month', () => {
    expect(on('两周前', 'past')).toBe('2026-01-18..2026-01-18');
    expect(on('3周后')).toBe('2026-02-22..2026-02-22');
    expect(on('我们公司下个月十号开年会')).toBe('2026-03-10..2026-03-10');
    // A bare day of the month that has passed is next month's when looking ahead.
    const wednesday = '2026-01-28T10:00:00+08:00';
    expect(on('五号要交报告', 'future', wednesday)).toBe('2026-02-05..2026-02-05');
    expect(on('五号交了报告', 'past', wednesday)).toBe('2026-01-05..2026-01-05');
  });

  it('does not read 一点 ("a bit") as one o’clock', () => {
    expect(
      findTimeMentions(
        '以后请你回答时更简洁一点。',
        'zh',
        { occurredAt: Date.parse(SUNDAY), timeZone: SHANGHAI },
        'future',
      ),
    ).toEqual([]);
  });
});

describe('English forms', () => {
  // Wednesday 28 January 2026, 10:00 in New York.
  const WEDNESDAY = '2026-01-28T10:00:00-05:00';
  const on = (text: string, direction: Direction = 'future') =>
    days(first(text, 'en', WEDNESDAY, NEW_YORK, direction), NEW_YORK);

  it('reads a bare weekday or date ahead for plans and behind for events', () => {
    expect(on('on Friday')).toBe('2026-01-30..2026-01-30');
    expect(on('on Friday', 'past')).toBe('2026-01-23..2026-01-23');
    expect(on('on March 5th', 'past')).toBe('2025-03-05..2025-03-05');
    expect(first('on Friday', 'en', WEDNESDAY, NEW_YORK).ambiguous).toBe(true);
    expect(first('next Friday', 'en', WEDNESDAY, NEW_YORK).ambiguous).toBe(false);
  });

  it('reads periods as ranges', () => {
    expect(on('next week')).toBe('2026-02-02..2026-02-08');
    expect(on('next month')).toBe('2026-02-01..2026-02-28');
    expect(on('this weekend')).toBe('2026-01-31..2026-02-01');
    expect(on('in October')).toBe('2026-10-01..2026-10-31');
    expect(on('I graduated in 2019', 'past')).toBe('2019-01-01..2019-12-31');
    expect(on('I broke my arm last summer', 'past')).toBe('2025-06-01..2025-08-31');
    expect(on('by the end of the year')).toBe('2026-12-27..2026-12-31');
    expect(on('two weeks ago', 'past')).toBe('2026-01-14..2026-01-14');
  });

  it('ignores amounts, bare parts of the day and past expressions when looking ahead', () => {
    const none = (text: string) =>
      findTimeMentions(text, 'en', { occurredAt: Date.parse(WEDNESDAY), timeZone: NEW_YORK }, 'future');
    expect(none("I'm 29 years old")).toEqual([]);
    expect(none("I'm not a morning person")).toEqual([]);
    expect(none('I quit my job last Friday')).toEqual([]);
    expect(none('I was at the gym this morning')).toEqual([]);
    expect(none("I can't wait for the day they're all back to normal")).toEqual([]);
    expect(on('the day after tomorrow')).toBe('2026-01-30..2026-01-30');
  });
});

describe('findDuration', () => {
  const reference = (at: string, timeZone = 'UTC') => ({ occurredAt: Date.parse(at), timeZone });

  it('reads the period of a goal', () => {
    const at = '2026-01-28T09:00:00Z';
    expect(
      findDuration('My goal for the next 30 days is to solve 200 problems', 'en', reference(at)),
    ).toEqual({
      text: 'for the next 30 days',
      days: 30,
      until: Date.parse(at) + 30 * 86_400_000,
    });
    expect(findDuration('我最近 30 天目标是刷 200 道题', 'zh', reference(at))?.days).toBe(30);
    expect(findDuration('我接下来三个月要减掉十斤', 'zh', reference(at))?.days).toBe(90);
    expect(findDuration('两周内学会', 'zh', reference(at))?.days).toBe(14);
    expect(findDuration('I want to lose 5 kg in the next two months', 'en', reference(at))?.days).toBe(59);
  });

  it('reads "this month" to the end of the month in the session zone', () => {
    const duration = findDuration(
      '这个月我的目标是每天背50个单词',
      'zh',
      reference('2026-01-28T10:00:00+08:00', SHANGHAI),
    );
    expect(duration?.until).toBe(Date.parse('2026-02-01T00:00:00+08:00'));
  });

  it('does not take a weekday or "lately" for a period', () => {
    expect(
      findDuration("I'm going to Berlin next Friday", 'en', reference('2026-01-28T09:00:00Z')),
    ).toBeUndefined();
    expect(findDuration('最近工作压力好大', 'zh', reference('2026-01-28T09:00:00Z'))).toBeUndefined();
  });
});

describe('parseNumber', () => {
  it('reads Arabic and Chinese numerals', () => {
    expect(parseNumber('12')).toBe(12);
    expect(parseNumber('十')).toBe(10);
    expect(parseNumber('二十八')).toBe(28);
    expect(parseNumber('一百二十')).toBe(120);
    expect(parseNumber('两千')).toBe(2000);
    expect(parseNumber('abc')).toBeNaN();
  });
});
