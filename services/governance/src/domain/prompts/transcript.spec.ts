import { describe, expect, it } from '@jest/globals';
import type { SourceMessage } from '../candidate.js';
import { isoLocalTime, localWeekday, renderTranscript, transcriptLine } from './transcript.js';

const message = (id: string, content: string, occurredAt: string, role: SourceMessage['role'] = 'USER') => ({
  id,
  sequence: Number(id.replace(/\D/gu, '')),
  role,
  content,
  occurredAt: Date.parse(occurredAt),
});

describe('isoLocalTime', () => {
  it('renders the instant in the session zone with its offset', () => {
    expect(isoLocalTime(Date.parse('2025-03-03T01:00:00Z'), 'Asia/Shanghai')).toBe(
      '2025-03-03T09:00:00+08:00',
    );
    expect(isoLocalTime(Date.parse('2025-03-03T01:00:07Z'), 'UTC')).toBe('2025-03-03T01:00:07+00:00');
    expect(isoLocalTime(Date.parse('2025-03-04T03:30:00Z'), 'America/New_York')).toBe(
      '2025-03-03T22:30:00-05:00',
    );
    expect(isoLocalTime(Date.parse('2025-03-04T10:00:00Z'), 'Asia/Kolkata')).toBe(
      '2025-03-04T15:30:00+05:30',
    );
  });

  it('follows daylight saving time, and reads as the same instant', () => {
    const summer = Date.parse('2025-07-01T12:00:00Z');
    expect(isoLocalTime(summer, 'America/New_York')).toBe('2025-07-01T08:00:00-04:00');
    expect(Date.parse(isoLocalTime(summer, 'America/New_York'))).toBe(summer);
  });

  it('falls back to UTC for an unknown or empty zone', () => {
    expect(isoLocalTime(Date.parse('2025-03-03T01:00:00Z'), 'Mars/Olympus')).toBe(
      '2025-03-03T01:00:00+00:00',
    );
    expect(isoLocalTime(Date.parse('2025-03-03T01:00:00Z'), '')).toBe('2025-03-03T01:00:00+00:00');
  });
});

describe('localWeekday', () => {
  it('names the local day in the prompt language', () => {
    const lateSunday = Date.parse('2025-03-02T23:30:00+08:00');
    expect(localWeekday(lateSunday, 'Asia/Shanghai', 'en')).toBe('Sun');
    expect(localWeekday(lateSunday, 'Asia/Shanghai', 'zh')).toBe('周日');
    // Still Sunday afternoon in UTC, but already Monday in Tokyo.
    expect(localWeekday(Date.parse('2025-03-02T16:00:00Z'), 'Asia/Tokyo', 'en')).toBe('Mon');
  });
});

describe('transcriptLine', () => {
  it('renders [id] local time (weekday) role: content', () => {
    expect(
      transcriptLine(message('m1', 'Hi there', '2025-03-03T09:00:00+08:00'), 'Asia/Shanghai', 'en', 2000),
    ).toBe('[m1] 2025-03-03T09:00:00+08:00 (Mon) user: Hi there');
    expect(
      transcriptLine(
        { ...message('m2', '好的', '2025-03-03T09:00:05+08:00', 'ASSISTANT'), participantName: 'Bot' },
        'Asia/Shanghai',
        'zh',
        2000,
      ),
    ).toBe('[m2] 2025-03-03T09:00:05+08:00 (周一) assistant (Bot): 好的');
  });
});

describe('renderTranscript', () => {
  const messages = Array.from({ length: 10 }, (_, i) =>
    message(`m${i + 1}`, `message number ${i + 1} ${'x'.repeat(40)}`, `2025-03-03T09:0${i}:00Z`),
  );

  it('shows every message when they fit', () => {
    const transcript = renderTranscript(messages, 'UTC', 'en', { maxChars: 12_000, maxMessageChars: 2_000 });
    expect(transcript.omitted).toBe(0);
    expect(transcript.total).toBe(10);
    expect(transcript.shownIds).toEqual(messages.map((m) => m.id));
    expect(transcript.text.split('\n')).toHaveLength(10);
  });

  it('keeps the latest messages within the budget, contiguous', () => {
    const budget = messages
      .slice(7)
      .map((m) => transcriptLine(m, 'UTC', 'en', 2_000))
      .join('\n').length;
    const transcript = renderTranscript(messages, 'UTC', 'en', { maxChars: budget, maxMessageChars: 2_000 });
    expect(transcript.shownIds).toEqual(['m8', 'm9', 'm10']);
    expect(transcript.omitted).toBe(7);
    expect(transcript.text.length).toBe(budget);
    expect(
      renderTranscript(messages, 'UTC', 'en', { maxChars: budget - 1, maxMessageChars: 2_000 }).shownIds,
    ).toEqual(['m9', 'm10']);
    expect(transcript.text.startsWith('[m8] ')).toBe(true);
  });

  it('always shows the last message, shortened to maxMessageChars', () => {
    const huge = [...messages, message('m11', 'y'.repeat(10_000), '2025-03-03T09:30:00Z')];
    const transcript = renderTranscript(huge, 'UTC', 'en', { maxChars: 1_000, maxMessageChars: 900 });
    expect(transcript.shownIds).toEqual(['m11']);
    expect(transcript.text).toContain('…');
    expect(transcript.text.length).toBeLessThan(1_000);
  });
});
