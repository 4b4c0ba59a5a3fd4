import { describe, expect, it } from '@jest/globals';
import type { ExtractionInput } from '../candidate.js';
import { extractionPrompt, systemPrompt } from './index.js';

const AT = Date.parse('2025-03-03T09:00:00+08:00');

function cell(languageCode: string, ...contents: readonly string[]): ExtractionInput {
  return {
    memCellId: 'cell-1',
    sessionId: 'session-1',
    languageCode,
    timeZone: 'Asia/Shanghai',
    messages: contents.map((content, i) => ({
      id: `m${i + 1}`,
      sequence: i + 1,
      role: i % 2 === 0 ? 'USER' : 'ASSISTANT',
      content,
      occurredAt: AT + i * 60_000,
    })),
  };
}

describe('extractionPrompt', () => {
  it('sends the system prompt of the extractor and the transcript with the session zone', () => {
    const prompt = extractionPrompt('FACT', cell('en', 'From now on please answer more concisely.', 'Sure.'));
    expect(prompt.version).toBe('extract-v1');
    expect(prompt.language).toBe('en');
    expect(prompt.schemaName).toBe('memory_extraction_fact');
    expect(prompt.messages).toEqual([
      { role: 'system', content: systemPrompt('FACT', 'en') },
      {
        role: 'user',
        content:
          'Session time zone: Asia/Shanghai (UTC+08:00 at the first message shown).\nTranscript:\n' +
          '[m1] 2025-03-03T09:00:00+08:00 (Mon) user: From now on please answer more concisely.\n' +
          '[m2] 2025-03-03T09:01:00+08:00 (Mon) assistant: Sure.',
      },
    ]);
  });

  it('chooses the Chinese templates for a Chinese conversation', () => {
    const prompt = extractionPrompt('FORESIGHT', cell('', '我下周三要交论文。', 'Good luck!'));
    expect(prompt.language).toBe('zh');
    expect(prompt.messages[0]?.content).toBe(systemPrompt('FORESIGHT', 'zh'));
    expect(prompt.messages[1]?.content).toContain(
      '[m1] 2025-03-03T09:00:00+08:00 (周一) user: 我下周三要交论文。',
    );
    expect(prompt.schemaName).toBe('memory_extraction_foresight');
  });

  it('says so when a long MemCell is cut to its latest messages', () => {
    const long = cell(
      'en',
      ...Array.from({ length: 40 }, (_, i) => `Message ${i + 1}: ${'words '.repeat(60)}`),
    );
    const prompt = extractionPrompt('EVENT', long, { maxChars: 2_000, maxMessageChars: 500 });
    const user = prompt.messages[1]?.content ?? '';
    expect(prompt.transcript.omitted).toBeGreaterThan(30);
    expect(user).toContain(`only the latest ${40 - prompt.transcript.omitted} of its 40 messages are shown`);
    expect(user).toContain('[m40] ');
    expect(user).not.toContain('[m1] ');
  });
});
