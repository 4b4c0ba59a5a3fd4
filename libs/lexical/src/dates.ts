/**
 * Time expressions in a message, resolved against the message's own timestamp in the session's
 * time zone — never against the wall clock. English and Chinese go through chrono-node (its `en`
 * and `zh.hans` parsers), plus a few rules for forms it misses or reads differently from Chinese
 * usage: weeks start on Monday (chrono's "下周三" said on a Sunday lands ten days later), bare
 * periods ("下周", "上个月", "去年", "这个周末", "月底"), "两周前/后", a bare day of the month
 * ("五号"), "明年三月", "end of the year" and "in 2019". Every mention is a half-open range of UTC
 * epoch milliseconds with its granularity, so "next month" is the whole month and "Tuesday at 3pm"
 * starts at 15:00 local time.
 */
import * as chrono from 'chrono-node';
import type { Lang } from './sentences.js';

/** How precise a mention is. */
export type Granularity = 'minute' | 'day' | 'weekend' | 'week' | 'month' | 'year';

/** A resolved time expression. */
export interface TimeMention {
  /** The matched text and its UTF-16 offset in the searched text. */
  readonly text: string;
  readonly index: number;
  /** Start of the range (UTC ms); the exact instant when `granularity` is `minute`. */
  readonly from: number;
  /** End of the range, exclusive (UTC ms): the end of the last calendar day it covers. */
  readonly until: number;
  readonly granularity: Granularity;
  /**
   * True when only the direction decided the date: a bare weekday ("Friday", "周五"), a month and
   * day without a year ("March 5th"), a bare day of the month ("五号"). The sentence's tense should
   * then decide whether it is a plan or an event.
   */
  readonly ambiguous: boolean;
}

/** What relative expressions resolve against: the message time in the session's zone. */
export interface TimeReference {
  readonly occurredAt: number;
  readonly timeZone: string;
}

/**
 * Which way an ambiguous expression leans: a plan's "Friday" is the coming one, an event's
 * "Friday" the last one.
 */
export type Direction = 'future' | 'past';

// ---------------------------------------------------------------------------------------------
// Calendar and time-zone arithmetic (civil dates as {year, month 1–12, day})

/** A calendar date. */
export interface CivilDate {
  readonly year: number;
  readonly month: number;
  readonly day: number;
}

/** Wall-clock time in a zone. */
export interface LocalDateTime extends CivilDate {
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let format = formatters.get(timeZone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, format);
  }
  return format;
}

/** The zone if the runtime knows it, else `UTC` (a session with a bad zone still gets dates). */
export function safeTimeZone(timeZone: string): string {
  if (timeZone === '') return 'UTC';
  try {
    formatter(timeZone);
    return timeZone;
  } catch {
    return 'UTC';
  }
}

/** The wall-clock time of an instant in a zone. */
export function toLocal(epochMs: number, timeZone: string): LocalDateTime {
  const parts: Record<string, number> = {};
  for (const part of formatter(timeZone).formatToParts(new Date(epochMs))) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return {
    year: parts['year'] ?? 1970,
    month: parts['month'] ?? 1,
    day: parts['day'] ?? 1,
    hour: parts['hour'] ?? 0,
    minute: parts['minute'] ?? 0,
    second: parts['second'] ?? 0,
  };
}

/** The zone's offset from UTC at an instant, in minutes (Shanghai: 480). */
export function offsetMinutes(epochMs: number, timeZone: string): number {
  const local = toLocal(epochMs, timeZone);
  const asUtc = Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second);
  return Math.round((asUtc - Math.floor(epochMs / 1000) * 1000) / 60_000);
}

/** The instant of a wall-clock time in a zone (a time skipped by DST resolves after the gap). */
export function fromLocal(
  date: CivilDate & { readonly hour?: number; readonly minute?: number },
  timeZone: string,
): number {
  const wall = Date.UTC(date.year, date.month - 1, date.day, date.hour ?? 0, date.minute ?? 0);
  // The offsets in force half a day either side; a wall time maps to the instant whose local time
  // it is. Repeated (autumn): the earlier one. Skipped (spring): the earlier offset, which lands
  // after the gap.
  const before = offsetMinutes(wall - 43_200_000, timeZone);
  const after = offsetMinutes(wall + 43_200_000, timeZone);
  const candidates = [wall - before * 60_000, wall - after * 60_000].filter(
    (t) => t + offsetMinutes(t, timeZone) * 60_000 === wall,
  );
  return candidates.length > 0 ? Math.min(...candidates) : wall - before * 60_000;
}

/** The date `days` after a date (negative: before). */
export function addDays(date: CivilDate, days: number): CivilDate {
  const t = new Date(Date.UTC(date.year, date.month - 1, date.day + days));
  return { year: t.getUTCFullYear(), month: t.getUTCMonth() + 1, day: t.getUTCDate() };
}

/** The first day of the month `months` after a date's month. */
export function addMonths(date: CivilDate, months: number): CivilDate {
  const t = new Date(Date.UTC(date.year, date.month - 1 + months, 1));
  return { year: t.getUTCFullYear(), month: t.getUTCMonth() + 1, day: 1 };
}

/** ISO weekday: Monday 1 … Sunday 7. */
export function isoWeekday(date: CivilDate): number {
  const day = new Date(Date.UTC(date.year, date.month - 1, date.day)).getUTCDay();
  return day === 0 ? 7 : day;
}

/** The Monday of the (Monday-based) week of a date. */
export function mondayOf(date: CivilDate): CivilDate {
  return addDays(date, 1 - isoWeekday(date));
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** `YYYY-MM-DD` of an instant in a zone. */
export function localDateString(epochMs: number, timeZone: string): string {
  const d = toLocal(epochMs, timeZone);
  return `${d.year}-${String(d.month).padStart(2, '0')}-${String(d.day).padStart(2, '0')}`;
}

/** `YYYY-MM-DD HH:mm` of an instant in a zone. */
export function localDateTimeString(epochMs: number, timeZone: string): string {
  const d = toLocal(epochMs, timeZone);
  return `${localDateString(epochMs, timeZone)} ${String(d.hour).padStart(2, '0')}:${String(d.minute).padStart(2, '0')}`;
}

// ---------------------------------------------------------------------------------------------
// Chinese numerals

const ZH_DIGITS: Readonly<Record<string, number>> = {
  零: 0,
  〇: 0,
  一: 1,
  二: 2,
  两: 2,
  三: 3,
  四: 4,
  五: 5,
  六: 6,
  七: 7,
  八: 8,
  九: 9,
};

/**
 * A number written in Arabic digits or Chinese numerals up to the thousands ("12", "十二",
 * "二十八", "一百二十", "两千"); `几` counts as 3, `半` as 0.5. NaN when it is neither.
 */
export function parseNumber(text: string): number {
  const t = text.normalize('NFKC').trim();
  if (/^\d+(?:\.\d+)?$/u.test(t)) return Number(t);
  if (t === '几') return 3;
  if (t === '半') return 0.5;
  if (!/^[零〇一二两三四五六七八九十百千]+$/u.test(t)) return Number.NaN;
  let total = 0;
  let current = 0;
  for (const ch of t) {
    if (ch === '十' || ch === '百' || ch === '千') {
      const unit = ch === '十' ? 10 : ch === '百' ? 100 : 1000;
      total += (current === 0 ? 1 : current) * unit;
      current = 0;
    } else {
      current = ZH_DIGITS[ch] ?? 0;
    }
  }
  return total + current;
}

const ZH_NUMBER = '(?:\\d{1,4}|[零〇一二两三四五六七八九十百千]{1,5})';
const ZH_WEEKDAY: Readonly<Record<string, number>> = {
  一: 1,
  二: 2,
  三: 3,
  四: 4,
  五: 5,
  六: 6,
  日: 7,
  天: 7,
  末: 6,
};
/** 上上 −2, 上 −1, 这/本/今 0, 下 +1, 下下 +2. */
function zhShift(prefix: string | undefined): number {
  switch (prefix) {
    case '上上':
    case '前':
      return -2;
    case '上':
    case '去':
      return -1;
    case '下':
    case '明':
      return 1;
    case '下下':
    case '后':
      return 2;
    default:
      return 0;
  }
}

// ---------------------------------------------------------------------------------------------
// Extra chrono parsers (each tags the granularity it stands for)

const GRANULARITY_TAG = 'engram/granularity/';

/** The message's local date, from chrono's reference (instant + the zone offset we passed). */
function referenceDate(context: chrono.ParsingContext): CivilDate {
  const offset = context.reference.getTimezoneOffset();
  const t = new Date(context.reference.instant.getTime() + offset * 60_000);
  return { year: t.getUTCFullYear(), month: t.getUTCMonth() + 1, day: t.getUTCDate() };
}

function resultFor(
  context: chrono.ParsingContext,
  match: RegExpMatchArray,
  date: CivilDate,
  granularity: Granularity,
  end?: CivilDate,
): chrono.ParsingResult {
  const start = { year: date.year, month: date.month, day: date.day };
  const result =
    end === undefined
      ? context.createParsingResult(match.index ?? 0, match[0], start)
      : context.createParsingResult(match.index ?? 0, match[0], start, {
          year: end.year,
          month: end.month,
          day: end.day,
        });
  return result.addTag(`${GRANULARITY_TAG}${granularity}`);
}

function parser(
  pattern: RegExp,
  extract: (context: chrono.ParsingContext, match: RegExpMatchArray) => chrono.ParsingResult | null,
): chrono.Parser {
  return { pattern: () => pattern, extract };
}

/** 下周三 / 上上周五 / 这周日 / 本星期二: the weekday of a Monday-based week. */
const zhRelativeWeekday = parser(
  /(上上|下下|上|下|这|本)(?:个)?(?:周|星期|礼拜)([一二三四五六日天])/u,
  (context, match) => {
    const monday = addDays(mondayOf(referenceDate(context)), 7 * zhShift(match[1]));
    return resultFor(context, match, addDays(monday, (ZH_WEEKDAY[match[2] ?? ''] ?? 1) - 1), 'day');
  },
);

/** 下周 / 上个星期 / 这周 / 本周: the whole week. */
const zhRelativeWeek = parser(
  /(上上|下下|上|下|这|本)(?:个)?(?:周|星期|礼拜)(?![一二三四五六日天末])/u,
  (context, match) => {
    const monday = addDays(mondayOf(referenceDate(context)), 7 * zhShift(match[1]));
    return resultFor(context, match, monday, 'week', addDays(monday, 6));
  },
);

/** 周末 / 这个周末 / 下周末 / 上周末: Saturday and Sunday. */
const zhWeekend = parser(/(上上|下下|上|下|这|本)?(?:个)?(?:周末|礼拜天和礼拜六)/u, (context, match) => {
  const saturday = addDays(mondayOf(referenceDate(context)), 7 * zhShift(match[1]) + 5);
  return resultFor(context, match, saturday, 'weekend', addDays(saturday, 1));
});

/** 下个月 / 上个月 / 这个月 / 本月, optionally 底/初/中 or a day (下个月十号). */
const zhRelativeMonth = parser(
  new RegExp(`(上上|下下|上|下|这|本)(?:个)?月(?:(底|末|初|中)|(${ZH_NUMBER})(?:号|日))?`, 'u'),
  (context, match) => {
    const first = addMonths(referenceDate(context), zhShift(match[1]));
    return monthPart(context, match, first, match[2], match[3]);
  },
);

/** 月底 / 月初 / 月中 of the current month. */
const zhMonthPart = parser(/(?<![上下这本个\d一二三四五六七八九十])月(底|末|初|中)/u, (context, match) => {
  const first = addMonths(referenceDate(context), 0);
  return monthPart(context, match, first, match[1], undefined);
});

function monthPart(
  context: chrono.ParsingContext,
  match: RegExpMatchArray,
  first: CivilDate,
  part: string | undefined,
  dayText: string | undefined,
): chrono.ParsingResult {
  const last = daysInMonth(first.year, first.month);
  if (dayText !== undefined) {
    const day = Math.min(last, Math.max(1, parseNumber(dayText)));
    return resultFor(context, match, { ...first, day }, 'day');
  }
  if (part === '底' || part === '末') {
    return resultFor(context, match, { ...first, day: last - 4 }, 'day', { ...first, day: last });
  }
  if (part === '初') return resultFor(context, match, first, 'day', { ...first, day: 5 });
  if (part === '中') return resultFor(context, match, { ...first, day: 11 }, 'day', { ...first, day: 20 });
  return resultFor(context, match, first, 'month', { ...first, day: last });
}

/** 去年 / 明年 / 今年, optionally 底/初 or a month and day (明年三月, 去年5月3日). */
const zhRelativeYear = parser(
  new RegExp(`(前|去|今|明|后)年(?:(底|末|初)|(${ZH_NUMBER})月(?:(${ZH_NUMBER})(?:号|日))?)?`, 'u'),
  (context, match) => {
    const year = referenceDate(context).year + zhShift(match[1]);
    if (match[2] === '底' || match[2] === '末') {
      return resultFor(context, match, { year, month: 12, day: 1 }, 'month', { year, month: 12, day: 31 });
    }
    if (match[2] === '初') {
      return resultFor(context, match, { year, month: 1, day: 1 }, 'month', { year, month: 1, day: 31 });
    }
    if (match[3] !== undefined) {
      const month = Math.min(12, Math.max(1, parseNumber(match[3])));
      if (match[4] !== undefined) {
        const day = Math.min(daysInMonth(year, month), Math.max(1, parseNumber(match[4])));
        return resultFor(context, match, { year, month, day }, 'day');
      }
      return resultFor(context, match, { year, month, day: 1 }, 'month', {
        year,
        month,
        day: daysInMonth(year, month),
      });
    }
    return resultFor(context, match, { year, month: 1, day: 1 }, 'year', { year, month: 12, day: 31 });
  },
);

/** 两周前 / 3周后 / 两个礼拜以后 (chrono reads 星期 and 礼拜 but not 周 as a unit). */
const zhWeeksAgoOrLater = parser(
  new RegExp(`(${ZH_NUMBER}|几)(?:个)?周(?:之|以)?(前|后)`, 'u'),
  (context, match) => {
    const weeks = parseNumber(match[1] ?? '');
    if (Number.isNaN(weeks)) return null;
    const sign = match[2] === '前' ? -1 : 1;
    return resultFor(context, match, addDays(referenceDate(context), sign * 7 * weeks), 'day');
  },
);

/** A bare day of the month (五号, 20日): this month's, or the next/previous one if it has passed. */
const zhDayOfMonth = parser(
  new RegExp(`(?<![\\d月零〇一二两三四五六七八九十百千])(${ZH_NUMBER})(?:号|日)(?![子期常])`, 'u'),
  (context, match) => {
    const day = parseNumber(match[1] ?? '');
    if (Number.isNaN(day) || day < 1 || day > 31) return null;
    const today = referenceDate(context);
    let first = addMonths(today, 0);
    if (context.option.forwardDate === true && day < today.day) first = addMonths(today, 1);
    if (context.option.forwardDate !== true && day > today.day) first = addMonths(today, -1);
    const date = { ...first, day: Math.min(day, daysInMonth(first.year, first.month)) };
    return resultFor(context, match, date, 'day').addTag(AMBIGUOUS_TAG);
  },
);

/** 十一月底 / 3月初 / 五月中: part of a named month (this year's, or the next/last one by direction). */
const zhNamedMonthPart = parser(
  new RegExp(`(?<![\\d年零〇一二两三四五六七八九十])(${ZH_NUMBER})月(底|末|初|中)`, 'u'),
  (context, match) => {
    const month = parseNumber(match[1] ?? '');
    if (Number.isNaN(month) || month < 1 || month > 12) return null;
    const today = referenceDate(context);
    let year = today.year;
    if (context.option.forwardDate === true && month < today.month) year++;
    if (context.option.forwardDate !== true && month > today.month) year--;
    return monthPart(context, match, { year, month, day: 1 }, match[2], undefined);
  },
);

/** 年底 / 年初 of the current year. */
const zhYearPart = parser(/(?<![前去今明后\d零〇一二两三四五六七八九十])年(底|末|初)/u, (context, match) => {
  const year = referenceDate(context).year;
  return match[1] === '初'
    ? resultFor(context, match, { year, month: 1, day: 1 }, 'month', { year, month: 1, day: 31 })
    : resultFor(context, match, { year, month: 12, day: 1 }, 'month', { year, month: 12, day: 31 });
});

/** Seasons (northern hemisphere): spring March–May, summer June–August, autumn September–November, winter December–February. */
const SEASON_START: Readonly<Record<string, number>> = {
  spring: 3,
  summer: 6,
  fall: 9,
  autumn: 9,
  winter: 12,
  春天: 3,
  春季: 3,
  夏天: 6,
  夏季: 6,
  秋天: 9,
  秋季: 9,
  冬天: 12,
  冬季: 12,
};

function seasonResult(
  context: chrono.ParsingContext,
  match: RegExpMatchArray,
  shift: number,
  season: string,
): chrono.ParsingResult | null {
  const month = SEASON_START[season.toLowerCase()];
  if (month === undefined) return null;
  const first = { year: referenceDate(context).year + shift, month, day: 1 };
  const last = addDays(addMonths(first, 3), -1);
  return resultFor(context, match, first, 'month', last);
}

/** "last summer", "next spring", "this winter". */
const enSeason = parser(
  /\b(last|this|next|past|coming)\s+(spring|summer|fall|autumn|winter)\b/iu,
  (context, match) => {
    const which = (match[1] ?? '').toLowerCase();
    return seasonResult(
      context,
      match,
      which === 'last' || which === 'past' ? -1 : which === 'next' ? 1 : 0,
      match[2] ?? '',
    );
  },
);

/** 去年夏天 / 今年冬天 / 明年春天. */
const zhSeason = parser(/(前|去|今|明|后)年(春天|春季|夏天|夏季|秋天|秋季|冬天|冬季)/u, (context, match) =>
  seasonResult(context, match, zhShift(match[1]), match[2] ?? ''),
);

/** "(by the) end of the year/month/week" (chrono reads "end of the year" as a year from now). */
const enEndOfPeriod = parser(
  /\b(?:the\s+)?end\s+of\s+(?:the|this)\s+(year|month|week)\b/iu,
  (context, match) => {
    const today = referenceDate(context);
    const unit = (match[1] ?? '').toLowerCase();
    if (unit === 'year') {
      return resultFor(context, match, { year: today.year, month: 12, day: 27 }, 'day', {
        year: today.year,
        month: 12,
        day: 31,
      });
    }
    if (unit === 'month') {
      const last = daysInMonth(today.year, today.month);
      return resultFor(context, match, { ...today, day: last - 4 }, 'day', { ...today, day: last });
    }
    const sunday = addDays(mondayOf(today), 6);
    return resultFor(context, match, addDays(sunday, -2), 'day', sunday);
  },
);

/** "in 2019", "since 2020", "back in 2015": a whole year. */
const enYear = parser(/\b(?:in|since|during|back in)\s+((?:19|20)\d{2})\b/iu, (context, match) => {
  const year = Number(match[1]);
  return resultFor(context, match, { year, month: 1, day: 1 }, 'year', { year, month: 12, day: 31 });
});

/** "on the 20th": a day of this month, or the next/previous one. */
const enDayOfMonth = parser(/\bon\s+the\s+(\d{1,2})(?:st|nd|rd|th)\b(?!\s+of\b)/iu, (context, match) => {
  const day = Number(match[1]);
  if (day < 1 || day > 31) return null;
  const today = referenceDate(context);
  let first = addMonths(today, 0);
  if (context.option.forwardDate === true && day < today.day) first = addMonths(today, 1);
  if (context.option.forwardDate !== true && day > today.day) first = addMonths(today, -1);
  const date = { ...first, day: Math.min(day, daysInMonth(first.year, first.month)) };
  return resultFor(context, match, date, 'day').addTag(AMBIGUOUS_TAG);
});

/** chrono's own relative-weekday parser for Chinese, replaced by the Monday-based one above. */
export const REPLACED_ZH_PARSER = 'ZHHansRelationWeekdayParser';

function buildChinese(): chrono.Chrono {
  const configuration = chrono.zh.hans.createCasualConfiguration();
  const before = configuration.parsers.length;
  configuration.parsers = configuration.parsers.filter((p) => p.constructor.name !== REPLACED_ZH_PARSER);
  if (configuration.parsers.length !== before - 1) {
    // A chrono upgrade renamed or dropped the parser: fail loudly rather than mix week conventions.
    throw new Error(`chrono-node: expected exactly one ${REPLACED_ZH_PARSER} to replace`);
  }
  configuration.parsers.push(
    zhRelativeWeekday,
    zhRelativeWeek,
    zhWeekend,
    zhRelativeMonth,
    zhMonthPart,
    zhRelativeYear,
    zhWeeksAgoOrLater,
    zhDayOfMonth,
    zhNamedMonthPart,
    zhYearPart,
    zhSeason,
  );
  return new chrono.Chrono(configuration);
}

function buildEnglish(): chrono.Chrono {
  const english = chrono.en.casual.clone();
  english.parsers.push(enEndOfPeriod, enYear, enDayOfMonth, enSeason);
  return english;
}

let parsers: { readonly en: chrono.Chrono; readonly zh: chrono.Chrono } | undefined;

function parsersFor(language: Lang): chrono.Chrono {
  parsers ??= { en: buildEnglish(), zh: buildChinese() };
  return parsers[language];
}

// ---------------------------------------------------------------------------------------------
// Granularity and ranges

const EN_WEEK = /\b(?:next|this|last|coming|past|following)\s+week\b/iu;
const EN_WEEKEND = /\bweekend\b/iu;
const EN_MONTH = /\b(?:next|this|last|coming|past|following)\s+month\b/iu;
const EN_YEAR = /\b(?:next|this|last|coming|past|following)\s+year\b/iu;
const EN_RELATIVE_AMOUNT =
  /\b(?:in|within|after)\s+(?:a|an|one|a few|few|several|\d+|\w+)\s+\w+|\bago\b|\bfrom now\b|\blater\b/iu;

function granularityOf(result: chrono.ParsedResult): Granularity {
  for (const tag of result.tags()) {
    if (tag.startsWith(GRANULARITY_TAG)) return tag.slice(GRANULARITY_TAG.length) as Granularity;
  }
  const start = result.start;
  if (start.isCertain('hour')) return 'minute';
  const text = result.text;
  if (EN_RELATIVE_AMOUNT.test(text)) return 'day';
  if (EN_WEEKEND.test(text)) return 'weekend';
  if (EN_WEEK.test(text)) return 'week';
  if (EN_MONTH.test(text)) return 'month';
  if (EN_YEAR.test(text)) return 'year';
  if (start.isCertain('day') || start.isCertain('weekday')) return 'day';
  if (start.isCertain('month')) return 'month';
  if (start.isCertain('year')) return 'year';
  return 'day';
}

function dateOf(components: chrono.ParsedComponents): CivilDate {
  return {
    year: components.get('year') ?? 1970,
    month: components.get('month') ?? 1,
    day: components.get('day') ?? 1,
  };
}

/** The first and last calendar day a mention covers. */
function dayRange(start: CivilDate, granularity: Granularity): { first: CivilDate; last: CivilDate } {
  switch (granularity) {
    case 'week': {
      const monday = mondayOf(start);
      return { first: monday, last: addDays(monday, 6) };
    }
    case 'weekend': {
      const saturday = addDays(mondayOf(start), 5);
      return { first: saturday, last: addDays(saturday, 1) };
    }
    case 'month':
      return {
        first: { ...start, day: 1 },
        last: { ...start, day: daysInMonth(start.year, start.month) },
      };
    case 'year':
      return {
        first: { year: start.year, month: 1, day: 1 },
        last: { year: start.year, month: 12, day: 31 },
      };
    default:
      return { first: start, last: start };
  }
}

/** Words that put a date behind the speaker; chrono's forward mode pushes "last Sunday" ahead. */
const BACKWARD_WORDS = /\b(?:last|ago|previous|past|earlier)\b|yesterday/iu;
/** "一点" / "两点" alone are more often "a bit" / "two points" than a clock time. */
const CLOCK_ONLY = /^[一两]点$/u;
/** Words that anchor a weekday or date to a week: "next Tuesday", "this Friday", "下周三". */
/** "29 years (old)", "two weeks": an amount of time, not a point in it. */
const BARE_AMOUNT =
  /^(?:for\s+)?(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|few|several|couple of)\s+(?:years?|months?|weeks?|days?|hours?|minutes?)(?:\s+old|\s+now)?$/iu;
/** Today's parts ("this morning"): chrono's forward mode moves them to tomorrow once they passed. */
const TODAY_WORDS = /\b(?:this (?:morning|afternoon|evening)|today|earlier)\b|今天|今早|今晚|今儿/iu;
/** "I can't wait for the day they…", "in the day": chrono reads a day; nothing is dated. */
const THE_DAY = /^(?:in\s+)?the\s+day\b(?!\s+(?:after|before))/iu;
/** "morning person", "night owl", "evening class": a part of the day alone anchors nothing. */
const PART_OF_DAY_ONLY = /^(?:in the\s+)?(?:morning|afternoon|evening|night|noon|midnight)s?$/iu;
const RELATIVE_WORDS =
  /\b(?:next|last|this|coming|past|following)\b|(?:[上下这本]|下下|上上)(?:个)?(?:周|星期|礼拜)/iu;
const AMBIGUOUS_TAG = 'engram/ambiguous';

function compare(a: CivilDate, b: CivilDate): number {
  return a.year - b.year || a.month - b.month || a.day - b.day;
}

/**
 * chrono's Chinese parsers do their calendar arithmetic with the process's local-time getters
 * (`refDate.getDate()`), ignoring the reference's zone, while its English parsers honour the zone.
 * Both agree when handed an instant whose local-time getters in this process show the session's
 * wall-clock time, with the process's own offset as the zone: every component chrono produces is
 * then wall-clock time in the session's zone, and `fromLocal` turns it into an instant. (A wall
 * time inside a DST gap of the process's zone would be off by the gap; servers run in UTC.)
 */
function wallClockReference(local: LocalDateTime): chrono.ParsingReference {
  const wall = Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second);
  let instant = wall + new Date(wall).getTimezoneOffset() * 60_000;
  instant = wall + new Date(instant).getTimezoneOffset() * 60_000;
  return { instant: new Date(instant), timezone: -new Date(instant).getTimezoneOffset() };
}

/**
 * Every time expression in `text`, resolved against `reference`. With `future`, a bare weekday or
 * month ("Friday", "三月") is the next one; with `past`, the last one.
 */
export function findTimeMentions(
  text: string,
  language: Lang,
  reference: TimeReference,
  direction: Direction,
): TimeMention[] {
  const timeZone = safeTimeZone(reference.timeZone);
  const local = toLocal(reference.occurredAt, timeZone);
  const results = parsersFor(language).parse(text, wallClockReference(local), {
    forwardDate: direction === 'future',
  });
  const today: CivilDate = { year: local.year, month: local.month, day: local.day };
  const mentions: TimeMention[] = [];
  for (const result of results) {
    const tags = new Set([...result.tags()].filter((t) => t.startsWith('engram/')));
    const granularity = granularityOf(result);
    let start = dateOf(result.start);
    // chrono's types say `end?:`, but it sets null when there is no end.
    const end = result.end ?? undefined;
    const explicitEnd = end === undefined ? undefined : dateOf(end);
    let shift = 0;
    // chrono picks the nearest weekday or month when not told to look forward; an event's is behind.
    if (direction === 'past' && compare(start, today) > 0) {
      if (!result.start.isCertain('day') && result.start.isCertain('weekday')) shift = -7;
      else if (!result.start.isCertain('year') && result.start.isCertain('month')) {
        start = { ...start, year: start.year - 1 };
      }
    }
    start = addDays(start, shift);
    if (direction === 'future' && TODAY_WORDS.test(result.text) && compare(start, today) > 0) continue;
    if (direction === 'future' && BACKWARD_WORDS.test(result.text)) continue;
    if (language === 'zh' && CLOCK_ONLY.test(result.text)) continue;
    if (
      language === 'en' &&
      (PART_OF_DAY_ONLY.test(result.text) || BARE_AMOUNT.test(result.text) || THE_DAY.test(result.text))
    ) {
      continue;
    }
    const ambiguous =
      tags.has(AMBIGUOUS_TAG) ||
      (!RELATIVE_WORDS.test(result.text) &&
        !result.start.isCertain('year') &&
        (result.start.isCertain('weekday') || result.start.isCertain('month')));
    const { first, last } = dayRange(start, granularity);
    const lastDay = explicitEnd === undefined ? last : addDays(explicitEnd, shift);
    const from =
      granularity === 'minute'
        ? fromLocal(
            { ...start, hour: result.start.get('hour') ?? 0, minute: result.start.get('minute') ?? 0 },
            timeZone,
          )
        : fromLocal(first, timeZone);
    const until = fromLocal(addDays(compare(lastDay, first) < 0 ? first : lastDay, 1), timeZone);
    mentions.push({ text: result.text, index: result.index, from, until, granularity, ambiguous });
  }
  return mentions;
}

// ---------------------------------------------------------------------------------------------
// Durations ("the next 30 days", "接下来三个月", "this month")

/** A period a goal is set for. */
export interface Duration {
  /** The words that state it, quoted in the TTL reason. */
  readonly text: string;
  /** Calendar days from the message to the end of the period. */
  readonly days: number;
  /** End of the period (UTC ms). */
  readonly until: number;
}

const EN_UNITS: Readonly<Record<string, number>> = { day: 1, week: 7, month: 30, year: 365 };
const EN_NUMBERS: Readonly<Record<string, number>> = {
  a: 1,
  an: 1,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  fifteen: 15,
  twenty: 20,
  thirty: 30,
  sixty: 60,
  ninety: 90,
  hundred: 100,
  few: 3,
  couple: 2,
};

function unitsToDays(
  amount: number,
  unit: string,
  reference: TimeReference,
): { days: number; until: number } {
  const timeZone = safeTimeZone(reference.timeZone);
  const local = toLocal(reference.occurredAt, timeZone);
  const today: CivilDate = { year: local.year, month: local.month, day: local.day };
  const normalized = unit.toLowerCase().replace(/s$/u, '');
  let end: CivilDate;
  if (normalized === 'month' || unit === '月') {
    const whole = Math.trunc(amount);
    const target = addMonths(today, whole);
    end = { ...target, day: Math.min(today.day, daysInMonth(target.year, target.month)) };
    if (amount !== whole) end = addDays(end, Math.round((amount - whole) * 30));
  } else if (normalized === 'year' || unit === '年') {
    end = addDays(today, Math.round(amount * 365));
    if (Number.isInteger(amount)) end = { ...today, year: today.year + amount };
  } else {
    const perUnit = EN_UNITS[normalized] ?? (unit === '周' || unit === '星期' || unit === '礼拜' ? 7 : 1);
    end = addDays(today, Math.round(amount * perUnit));
  }
  const days = Math.round(
    (Date.UTC(end.year, end.month - 1, end.day) - Date.UTC(today.year, today.month - 1, today.day)) /
      86_400_000,
  );
  return { days, until: reference.occurredAt + days * 86_400_000 };
}

const EN_DURATION =
  /\b(?:for\s+|over\s+|in\s+|within\s+|during\s+)?(?:the\s+)?(?:next|coming|following|upcoming)\s+(?:(\d+|[a-z]+)\s+)?(day|week|month|year)s?\b/iu;
const EN_WITHIN = /\b(?:in|within)\s+(\d+|[a-z]+)\s+(day|week|month|year)s?\b/iu;
const EN_THIS_PERIOD = /\b(?:this|by the end of (?:the|this))\s+(week|month|year)\b/iu;

const ZH_DURATION = new RegExp(
  `(接下来|未来|最近|近|这|今后|之后)的?\\s*(${ZH_NUMBER}|几|半)\\s*(?:个)?\\s*(天|周|星期|礼拜|月|年)`,
  'u',
);
const ZH_WITHIN = new RegExp(`(${ZH_NUMBER}|半)\\s*(?:个)?\\s*(天|周|星期|礼拜|月|年)\\s*(?:之|以)?内`, 'u');
const ZH_THIS_PERIOD = /(这个|本|今)(周|星期|月|年)(?:底|内)?/u;

/**
 * The period a goal is set for, if the sentence states one: "the next 30 days", "within 3
 * months", "this month", "接下来三个月", "最近 30 天", "三个月内", "这个月", "今年". A bare
 * "最近" ("lately") without an amount is not a period.
 */
export function findDuration(text: string, language: Lang, reference: TimeReference): Duration | undefined {
  if (language === 'en') {
    const next = EN_DURATION.exec(text) ?? EN_WITHIN.exec(text);
    if (next !== null) {
      const amountText = (next[1] ?? 'one').toLowerCase();
      const amount = /^\d+$/u.test(amountText) ? Number(amountText) : (EN_NUMBERS[amountText] ?? 1);
      return { text: next[0].trim(), ...unitsToDays(amount, next[2] ?? 'day', reference) };
    }
    const period = EN_THIS_PERIOD.exec(text);
    if (period !== null) return periodEnd(period[0], (period[1] ?? 'month').toLowerCase(), reference);
    return undefined;
  }
  const next = ZH_DURATION.exec(text) ?? ZH_WITHIN.exec(text);
  if (next !== null) {
    const zhAmount = next.length > 3 ? next[2] : next[1];
    const unit = next.length > 3 ? next[3] : next[2];
    const amount = parseNumber(zhAmount ?? '');
    if (!Number.isNaN(amount))
      return { text: next[0].trim(), ...unitsToDays(amount, unit ?? '天', reference) };
  }
  const period = ZH_THIS_PERIOD.exec(text);
  if (period !== null) {
    const unit = period[2] === '年' ? 'year' : period[2] === '月' ? 'month' : 'week';
    return periodEnd(period[0], unit, reference);
  }
  return undefined;
}

/** The rest of the current week, month or year (at least one day). */
function periodEnd(text: string, unit: string, reference: TimeReference): Duration {
  const timeZone = safeTimeZone(reference.timeZone);
  const local = toLocal(reference.occurredAt, timeZone);
  const today: CivilDate = { year: local.year, month: local.month, day: local.day };
  const last =
    unit === 'year'
      ? { year: today.year, month: 12, day: 31 }
      : unit === 'month'
        ? { ...today, day: daysInMonth(today.year, today.month) }
        : addDays(mondayOf(today), 6);
  const until = fromLocal(addDays(last, 1), timeZone);
  const days = Math.max(1, Math.round((until - reference.occurredAt) / 86_400_000));
  return { text: text.trim(), days, until };
}

/** How a mention's date reads in a candidate's text: `2026-02-03 15:00`, `2026-02-03`, `2026-02`. */
export function describeMention(mention: TimeMention, timeZone: string): string {
  switch (mention.granularity) {
    case 'minute':
      return localDateTimeString(mention.from, timeZone);
    case 'month':
      return localDateString(mention.from, timeZone).slice(0, 7);
    case 'year':
      return localDateString(mention.from, timeZone).slice(0, 4);
    case 'week':
    case 'weekend':
      return `${localDateString(mention.from, timeZone)}/${localDateString(mention.until - 1, timeZone)}`;
    default:
      return localDateString(mention.from, timeZone);
  }
}
