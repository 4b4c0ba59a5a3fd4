/**
 * Model compaction against the scripted OpenAI-compatible server (real HTTP on 127.0.0.1, the real
 * `openai` client); only the model's answers are scripted.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { OpenAIChatModel } from '@engram/llm';
import { replies, startScriptedOpenAI, type ScriptedOpenAI } from '../../../libs/llm/test/scripted-openai.js';
import {
  COMPACTION_SCHEMA_NAME,
  COMPACT_PROMPT_VERSION,
  modelCompactor,
} from '../src/domain/compaction/index.js';
import type { CompactionBase, CompactionMessage } from '../src/domain/types.js';

let server: ScriptedOpenAI | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const messages: CompactionMessage[] = [
  ['m1', 'USER', 'Which database should we use for the billing service?'],
  ['m2', 'ASSISTANT', 'PostgreSQL 16 fits best.'],
  ['m3', 'USER', "OK, let's go with PostgreSQL 16. Which region should staging run in?"],
].map(([id, role, content], i) => ({
  id: id ?? '',
  sequence: i + 1,
  role: role as CompactionMessage['role'],
  content: content ?? '',
  participantName: '',
  time: 1_700_000_000_000 + i,
}));

const base: CompactionBase = {
  summary: 'User: The team is building a billing service.',
  keyPoints: [],
  openLoops: [{ id: 'loop-1', text: 'Which database should the billing service use?' }],
};

function model(baseURL: string) {
  return new OpenAIChatModel({ baseURL, apiKey: 'test-key', model: 'scripted-model', initialBackoffMs: 1 });
}

describe('modelCompactor', () => {
  it('sends the previous summary, open loops with ids and the transcript with ids under the schema', async () => {
    server = await startScriptedOpenAI(
      replies({
        content: JSON.stringify({
          summary: 'The user is building a billing service and chose PostgreSQL 16.',
          key_points: [{ text: 'The billing service uses PostgreSQL 16.', source_message_ids: ['m3', 'm2'] }],
          open_loops: [{ text: 'Which region should staging run in?', source_message_ids: ['m3'] }],
          resolved_open_loop_ids: ['loop-1'],
        }),
        promptTokens: 321,
        completionTokens: 45,
      }),
    );
    const result = await modelCompactor(model(server.baseURL)).compact(base, messages, {
      summaryMaxTokens: 800,
      countTokens,
      language: 'en',
    });
    expect(result).toEqual({
      summary: 'The user is building a billing service and chose PostgreSQL 16.',
      keyPoints: [{ text: 'The billing service uses PostgreSQL 16.', sourceMessageIds: ['m2', 'm3'] }],
      openLoops: [{ text: 'Which region should staging run in?', sourceMessageIds: ['m3'] }],
      resolvedOpenLoopIds: ['loop-1'],
      usage: { promptTokens: 321, completionTokens: 45 },
    });
    expect(server.requests).toHaveLength(1);
    const body = server.requests[0]!.body;
    expect(body.response_format?.json_schema?.name).toBe(COMPACTION_SCHEMA_NAME);
    const schema = JSON.stringify(body.response_format?.json_schema?.schema);
    for (const field of [
      'summary',
      'key_points',
      'open_loops',
      'resolved_open_loop_ids',
      'source_message_ids',
    ])
      expect(schema).toContain(field);
    const user = body.messages?.[1]?.content ?? '';
    expect(user).toContain('User: The team is building a billing service.');
    expect(user).toContain('[loop-1] Which database should the billing service use?');
    expect(user).toContain('[m1] user: Which database should we use for the billing service?');
    expect(user).toContain('[m3] user:');
    expect(COMPACT_PROMPT_VERSION).toBe('compact-v1');
  });

  it('filters unknown message and loop ids and cuts an over-long summary at a sentence', async () => {
    const long = Array.from(
      { length: 40 },
      (_, i) => `Sentence ${i + 1} of a summary that is too long.`,
    ).join(' ');
    server = await startScriptedOpenAI(
      replies({
        content: JSON.stringify({
          summary: long,
          key_points: [
            { text: 'Invented point.', source_message_ids: ['m999'] },
            { text: 'PostgreSQL 16 it is.', source_message_ids: ['m3', 'nope', 'm3'] },
          ],
          open_loops: [
            { text: 'Which database should the billing service use?', source_message_ids: ['m1'] },
            { text: 'Staging region is open.', source_message_ids: [] },
          ],
          resolved_open_loop_ids: ['loop-1', 'loop-unknown', 'loop-1'],
        }),
      }),
    );
    const result = await modelCompactor(model(server.baseURL)).compact(base, messages, {
      summaryMaxTokens: 60,
      countTokens,
      language: '',
    });
    expect(countTokens(result.summary)).toBeLessThanOrEqual(60);
    expect(result.summary).toMatch(/^Sentence 1 of a summary that is too long\..*too long\.$/u);
    expect(result.keyPoints).toEqual([{ text: 'PostgreSQL 16 it is.', sourceMessageIds: ['m3'] }]);
    expect(result.openLoops).toEqual([{ text: 'Staging region is open.', sourceMessageIds: [] }]);
    expect(result.resolvedOpenLoopIds).toEqual(['loop-1']);
    expect(result.usage).toEqual({ promptTokens: 10, completionTokens: 5 });
  });

  it('writes the prompt in Chinese for a Chinese session', async () => {
    server = await startScriptedOpenAI(
      replies({
        content: JSON.stringify({
          summary: '用户选了 PostgreSQL 16。',
          key_points: [],
          open_loops: [],
          resolved_open_loop_ids: [],
        }),
      }),
    );
    const result = await modelCompactor(model(server.baseURL)).compact(
      { summary: '', keyPoints: [], openLoops: [] },
      messages,
      { summaryMaxTokens: 100, countTokens, language: 'zh-CN' },
    );
    expect(result.summary).toBe('用户选了 PostgreSQL 16。');
    expect(server.requests[0]!.body.messages?.[0]?.content).toContain('滚动摘要');
    expect(server.requests[0]!.body.messages?.[1]?.content).toContain('（无）');
  });
});
