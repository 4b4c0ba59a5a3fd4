import { describe, expect, it } from '@jest/globals';
import { asksCurrentState, queryForm, queryTimeWindow } from './query.js';

const REFERENCE = Date.UTC(2026, 5, 15, 12); // Monday 15 June 2026, 12:00 UTC

describe('queryTimeWindow', () => {
  it('resolves relative and absolute dates against the reference time', () => {
    // "last May" → the whole of May 2026; "in 2023" → the year.
    expect(queryTimeWindow('What did I do last May?', 'en', REFERENCE)).toMatchObject({
      gte: Date.UTC(2026, 4, 1),
      lt: Date.UTC(2026, 5, 1),
    });
    expect(queryTimeWindow('Where did we travel in 2023?', 'en', REFERENCE)).toMatchObject({
      gte: Date.UTC(2023, 0, 1),
      lt: Date.UTC(2024, 0, 1),
    });
    // 上周六: the Saturday of the previous (Monday-first) week, 13 June 2026.
    expect(queryTimeWindow('上周六我们吃了什么？', 'zh', REFERENCE)).toMatchObject({
      gte: Date.UTC(2026, 5, 13),
      lt: Date.UTC(2026, 5, 14),
    });
  });

  it('spans every expression and names them', () => {
    const window = queryTimeWindow('between March 2024 and May 2024', 'en', REFERENCE);
    expect(window?.gte).toBe(Date.UTC(2024, 2, 1));
    expect(window?.lt).toBe(Date.UTC(2024, 5, 1));
    expect(window?.expressions.length).toBeGreaterThan(0);
  });

  it('finds nothing in a query that names no time', () => {
    expect(queryTimeWindow('What is my favourite colour?', 'en', REFERENCE)).toBeUndefined();
    expect(queryTimeWindow('我住在哪里？', 'zh', REFERENCE)).toBeUndefined();
  });
});

describe('asksCurrentState', () => {
  it.each([
    ['What is my favourite colour?', 'en'],
    ['Where do I live?', 'en'],
    ['Who is my manager now', 'en'],
    ['Where does my sister live?', 'en'],
    ['Which language am I learning?', 'en'],
    ['我最喜欢什么颜色？', 'zh'],
    ['我住在哪里？', 'zh'],
    ['我现在的饮食习惯是什么？', 'zh'],
  ] as const)('%s asks how things stand now', (query, language) => {
    expect(asksCurrentState(query, language)).toBe(true);
  });

  it.each([
    ['When did Caroline go to the LGBTQ support group?', 'en'],
    ['What was my first car?', 'en'],
    ['Do you remember the trip to Rome?', 'en'],
    ["I'm so happy today, I got an A on my test.", 'en'],
    ['你还记得我们去年去的海边吗？', 'zh'],
    ['我今天考试得了一百分。', 'zh'],
    ['上次我们吃了什么？', 'zh'],
    ["What is Caroline's identity?", 'en'],
    ['What should I do after he moves?', 'en'],
    ['我还可以帮忙做什么家务呢？', 'zh'],
  ] as const)('%s does not', (query, language) => {
    expect(asksCurrentState(query, language)).toBe(false);
  });
});

describe('queryForm', () => {
  it.each([
    ['When did Caroline go to the LGBTQ support group?', 'en', 'QUESTION'],
    ['which instrument does she play', 'en', 'QUESTION'],
    ["I'm so happy today, I got an A on my math test.", 'en', 'STATEMENT'],
    ['violin Hangzhou green tea', 'en', 'KEYWORDS'],
    ['我最喜欢什么颜色', 'zh', 'QUESTION'],
    ['妈妈，我今天考试得了一百分！', 'zh', 'STATEMENT'],
    ['绿茶 西湖', 'zh', 'KEYWORDS'],
  ] as const)('%s (%s) is %s', (query, language, form) => {
    expect(queryForm(query, language)).toBe(form);
  });
});
