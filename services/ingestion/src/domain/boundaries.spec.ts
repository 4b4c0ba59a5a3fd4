import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  DEFAULT_BOUNDARY_RULES,
  calendarDay,
  isValidTimeZone,
  ruleBoundaries,
  silenceExpired,
  type BoundaryRules,
  type TailMessage,
} from './boundaries.js';

const MINUTE = 60_000;
const at = (iso: string) => Date.parse(iso);
const tail = (...items: [string, number?][]): TailMessage[] =>
  items.map(([iso, tokens], i) => ({ sequence: i + 1, occurredAt: at(iso), tokenCount: tokens ?? 10 }));

describe('calendar days and time zones', () => {
  it('renders the day in the zone', () => {
    // 2023-05-08T17:30Z is already May 9 in Shanghai (UTC+8).
    expect(calendarDay(at('2023-05-08T17:30:00Z'), 'UTC')).toBe('2023-05-08');
    expect(calendarDay(at('2023-05-08T17:30:00Z'), 'Asia/Shanghai')).toBe('2023-05-09');
  });
  it('knows IANA zones and refuses others', () => {
    expect(isValidTimeZone('Asia/Shanghai')).toBe(true);
    expect(isValidTimeZone('UTC')).toBe(true);
    expect(isValidTimeZone('Mars/Olympus')).toBe(false);
    expect(isValidTimeZone('')).toBe(false);
  });
});

describe('ruleBoundaries', () => {
  it('closes before a message on a later day, in the session time zone', () => {
    const messages = tail(['2023-05-08T15:50:00Z'], ['2023-05-08T15:55:00Z'], ['2023-05-08T16:05:00Z']);
    expect(ruleBoundaries(messages, 'UTC')).toEqual([]);
    // In Shanghai 16:05Z is 00:05 the next day.
    expect(ruleBoundaries(messages, 'Asia/Shanghai')).toEqual([
      { throughSequence: 2, reason: 'DATE_CHANGE' },
    ]);
  });

  it('closes before a message after a silence longer than the gap', () => {
    const messages = tail(['2023-05-08T10:00:00Z'], ['2023-05-08T10:30:00Z'], ['2023-05-08T11:00:01Z']);
    expect(ruleBoundaries(messages, 'UTC')).toEqual([{ throughSequence: 2, reason: 'TIME_GAP' }]);
  });

  it('prefers DATE_CHANGE over TIME_GAP when both hold', () => {
    const messages = tail(['2023-05-08T10:00:00Z'], ['2023-05-10T10:00:00Z']);
    expect(ruleBoundaries(messages, 'UTC')).toEqual([{ throughSequence: 1, reason: 'DATE_CHANGE' }]);
  });

  it('ends a cell before the message that would take it over the token cap', () => {
    const rules: BoundaryRules = { ...DEFAULT_BOUNDARY_RULES, tokenCap: 100 };
    const messages = tail(
      ['2023-05-08T10:00:00Z', 60],
      ['2023-05-08T10:01:00Z', 40],
      ['2023-05-08T10:02:00Z', 1],
    );
    expect(ruleBoundaries(messages, 'UTC', rules)).toEqual([{ throughSequence: 2, reason: 'TOKEN_CAP' }]);
  });

  it('gives a single message over the token cap a cell of its own', () => {
    const rules: BoundaryRules = { ...DEFAULT_BOUNDARY_RULES, tokenCap: 100 };
    const messages = tail(
      ['2023-05-08T10:00:00Z', 10],
      ['2023-05-08T10:01:00Z', 500],
      ['2023-05-08T10:02:00Z', 1],
    );
    expect(ruleBoundaries(messages, 'UTC', rules)).toEqual([
      { throughSequence: 1, reason: 'TOKEN_CAP' },
      { throughSequence: 2, reason: 'TOKEN_CAP' },
    ]);
  });

  it('closes a cell as soon as it reaches the message cap', () => {
    const rules: BoundaryRules = { ...DEFAULT_BOUNDARY_RULES, messageCap: 3 };
    const messages = Array.from({ length: 7 }, (_, i) => ({
      sequence: 11 + i,
      occurredAt: at('2023-05-08T10:00:00Z') + i * MINUTE,
      tokenCount: 5,
    }));
    expect(ruleBoundaries(messages, 'UTC', rules)).toEqual([
      { throughSequence: 13, reason: 'MESSAGE_CAP' },
      { throughSequence: 16, reason: 'MESSAGE_CAP' },
    ]);
  });

  it('keeps a tail without a reason open', () => {
    expect(ruleBoundaries(tail(['2023-05-08T10:00:00Z'], ['2023-05-08T10:10:00Z']), 'UTC')).toEqual([]);
    expect(ruleBoundaries([], 'UTC')).toEqual([]);
  });

  it('holds its invariants on random conversations', () => {
    const arbitrary = fc.record({
      gaps: fc.array(fc.integer({ min: 0, max: 3 * 60 * MINUTE }), { minLength: 1, maxLength: 120 }),
      tokens: fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 120, maxLength: 120 }),
      tokenCap: fc.integer({ min: 50, max: 2_000 }),
      messageCap: fc.integer({ min: 1, max: 60 }),
      timeGapMs: fc.integer({ min: MINUTE, max: 120 * MINUTE }),
      timeZone: fc.constantFrom('UTC', 'Asia/Shanghai', 'America/New_York'),
    });
    fc.assert(
      fc.property(arbitrary, ({ gaps, tokens, tokenCap, messageCap, timeGapMs, timeZone }) => {
        const rules = { tokenCap, messageCap, timeGapMs };
        let time = at('2023-05-08T06:00:00Z');
        const messages = gaps.map((gap, i) => {
          time += gap;
          return { sequence: i + 1, occurredAt: time, tokenCount: tokens[i] ?? 1 };
        });
        const boundaries = ruleBoundaries(messages, timeZone, rules);
        // Cells: consecutive runs ending at each boundary.
        let start = 0;
        for (const boundary of boundaries) {
          const end = messages.findIndex((m) => m.sequence === boundary.throughSequence);
          expect(end).toBeGreaterThanOrEqual(start);
          const cell = messages.slice(start, end + 1);
          expect(cell.length).toBeLessThanOrEqual(messageCap);
          const sum = cell.reduce((n, m) => n + m.tokenCount, 0);
          if (cell.length > 1) expect(sum).toBeLessThanOrEqual(tokenCap);
          for (let i = 1; i < cell.length; i++) {
            const [a, b] = [cell[i - 1], cell[i]] as [TailMessage, TailMessage];
            expect(b.occurredAt - a.occurredAt).toBeLessThanOrEqual(timeGapMs);
            expect(calendarDay(b.occurredAt, timeZone)).toBe(calendarDay(a.occurredAt, timeZone));
          }
          // Every boundary is justified by its reason.
          const next = messages[end + 1];
          const last = cell[cell.length - 1] as TailMessage;
          switch (boundary.reason) {
            case 'DATE_CHANGE':
              expect(next).toBeDefined();
              expect(
                calendarDay((next as TailMessage).occurredAt, timeZone) >
                  calendarDay(last.occurredAt, timeZone),
              ).toBe(true);
              break;
            case 'TIME_GAP':
              expect((next as TailMessage).occurredAt - last.occurredAt).toBeGreaterThan(timeGapMs);
              break;
            case 'TOKEN_CAP':
              expect(next === undefined ? sum : sum + next.tokenCount).toBeGreaterThan(tokenCap);
              break;
            case 'MESSAGE_CAP':
              expect(cell.length).toBe(messageCap);
              break;
          }
          start = end + 1;
        }
        // The open rest has no rule boundary inside it and is below the message cap.
        const rest = messages.slice(start);
        expect(rest.length).toBeLessThan(messageCap);
        for (let i = 1; i < rest.length; i++) {
          const [a, b] = [rest[i - 1], rest[i]] as [TailMessage, TailMessage];
          expect(b.occurredAt - a.occurredAt).toBeLessThanOrEqual(timeGapMs);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('silenceExpired', () => {
  it('is true only after more than the gap', () => {
    const rules = DEFAULT_BOUNDARY_RULES;
    expect(silenceExpired(0, rules.timeGapMs, rules)).toBe(false);
    expect(silenceExpired(0, rules.timeGapMs + 1, rules)).toBe(true);
  });
});
