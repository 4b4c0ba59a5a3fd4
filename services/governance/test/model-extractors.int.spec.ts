/**
 * The model extractors against the scripted OpenAI-compatible server (the one permitted fake: only
 * the model's answers are scripted; HTTP, the `openai` client, the JSON Schema, parsing and
 * retries are real, through the real `OpenAIChatModel`).
 */
import { Code } from '@connectrpc/connect';
import { afterEach, describe, expect, it } from '@jest/globals';
import { isModelOutputInvalid, OpenAIChatModel } from '@engram/llm';
import { isEngramError, type EngramError } from '@engram/runtime';
import {
  replies,
  startScriptedOpenAI,
  type RecordedRequest,
  type ScriptedOpenAI,
  type ScriptedReply,
} from '../../../libs/llm/test/scripted-openai.js';
import type { ExtractionInput, ExtractorName, SourceMessage } from '../src/domain/candidate.js';
import { createModelExtractor, type ModelExtractorOptions } from '../src/model-extractors.js';

const DAY_MS = 86_400_000;
const CELL = '01JNQ8ZK5V00000000000CE11A';
const M1 = '01JNQ8ZK5V0000000000000001';
const M2 = '01JNQ8ZK5V0000000000000002';
const M3 = '01JNQ8ZK5V0000000000000003';
const NOT_IN_CELL = '01JNQ8ZK5V00000000000000ZZ';

let server: ScriptedOpenAI | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function extractorReplying(
  list: readonly ScriptedReply[],
  options: { timeoutMs?: number; maxRetries?: number } & ModelExtractorOptions = {},
) {
  const { timeoutMs, maxRetries, ...extractorOptions } = options;
  server = await startScriptedOpenAI(replies(...list));
  const model = new OpenAIChatModel({
    baseURL: server.baseURL,
    model: 'scripted-model',
    initialBackoffMs: 1,
    maxBackoffMs: 5,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(maxRetries === undefined ? {} : { maxRetries }),
  });
  return { server, run: createModelExtractor(model, extractorOptions) };
}

function memCell(
  timeZone: string,
  languageCode: string,
  messages: readonly (readonly [id: string, role: SourceMessage['role'], content: string, at: string])[],
): ExtractionInput {
  return {
    memCellId: CELL,
    sessionId: '01JNQ8ZK5V00000000000SE551',
    languageCode,
    timeZone,
    messages: messages.map(([id, role, content, at], i) => ({
      id,
      sequence: i + 1,
      role,
      content,
      occurredAt: Date.parse(at),
    })),
  };
}

const run = (
  extractor: ReturnType<typeof createModelExtractor>,
  name: ExtractorName,
  input: ExtractionInput,
  signal = new AbortController().signal,
) => extractor(name, input, signal);

/** The EngramError a promise rejects with (fails the test when it resolves or throws otherwise). */
async function engramRejection(promise: Promise<unknown>): Promise<EngramError> {
  try {
    await promise;
  } catch (error) {
    if (isEngramError(error)) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

const systemOf = (request: RecordedRequest | undefined) => request?.body.messages?.[0]?.content ?? '';
const userOf = (request: RecordedRequest | undefined) => request?.body.messages?.[1]?.content ?? '';

// ---------------------------------------------------------------------------------------------
// Blueprint §7: "From now on please answer more concisely. My goal for the next 30 days is to
// solve 200 problems." and the second seed's Chinese original.

const SAID_AT = '2025-03-03T09:00:00+08:00';

const EXAMPLE = {
  en: {
    languageCode: 'en',
    content:
      'From now on please answer more concisely. My goal for the next 30 days is to solve 200 problems.',
    reply: 'Got it: short answers from now on. Good luck with the 200 problems!',
    goal: 'solve 200 problems',
    period: 'next 30 days',
    styleText: 'The user wants concise answers.',
    goalText: 'Goal: solve 200 problems in the next 30 days.',
    ttlReason: 'the user said "next 30 days"',
    system: ['Never keep', '[redacted:api_key]', '"Today" for a statement is the date of its own message'],
    line: `[${M1}] 2025-03-03T09:00:00+08:00 (Mon) user: From now on please answer more concisely.`,
    zone: 'Session time zone: Asia/Shanghai (UTC+08:00 at the first message shown).',
  },
  zh: {
    // No session language: detected from the messages.
    languageCode: '',
    content: '以后请你回答时更简洁一点。我最近 30 天目标是刷 200 道题。',
    reply: '好的，以后简短回答。祝你刷题顺利！',
    goal: '刷 200 道题',
    period: '最近 30 天',
    styleText: '用户希望回答更简洁。',
    goalText: '目标：最近 30 天刷 200 道题。',
    ttlReason: '用户说"最近 30 天"',
    system: ['绝不保留', '[redacted:api_key]', '"今天"指的是这条消息自己的日期'],
    line: `[${M1}] 2025-03-03T09:00:00+08:00 (周一) user: 以后请你回答时更简洁一点。`,
    zone: '会话时区：Asia/Shanghai（第一条显示的消息时为 UTC+08:00）。',
  },
} as const;

function exampleAnswer(language: 'en' | 'zh', evidence: readonly string[] = [M1]) {
  const e = EXAMPLE[language];
  return JSON.stringify({
    candidates: [
      {
        type: 'FACT',
        namespace: 'user_preference',
        key: 'answer_style',
        value: [{ field: 'style', value: 'concise' }],
        text: e.styleText,
        source_kind: 'explicit_user_statement',
        scope_hint: 'self',
        confidence: 0.95,
        ttl_days: null,
        ttl_reason: null,
        valid_from: null,
        valid_until: null,
        evidence_message_ids: evidence,
      },
      {
        type: 'FACT',
        namespace: 'goal',
        key: 'current_goal',
        value: [
          { field: 'goal', value: e.goal },
          { field: 'durationDays', value: 30 },
          { field: 'period', value: e.period },
        ],
        text: e.goalText,
        source_kind: 'explicit_user_statement',
        scope_hint: 'self',
        confidence: 0.91,
        ttl_days: 30,
        ttl_reason: e.ttlReason,
        valid_from: '2025-03-03T09:00:00+08:00',
        valid_until: '2025-04-02T09:00:00+08:00',
        evidence_message_ids: evidence,
      },
    ],
  });
}

function exampleCell(language: 'en' | 'zh'): ExtractionInput {
  const e = EXAMPLE[language];
  return memCell('Asia/Shanghai', e.languageCode, [
    [M1, 'USER', e.content, SAID_AT],
    [M2, 'ASSISTANT', e.reply, '2025-03-03T09:00:04+08:00'],
  ]);
}

describe.each(['en', 'zh'] as const)('the FACT extractor on the blueprint §7 example (%s)', (language) => {
  it('yields the preference FACT and the 30-day goal FACT with a 30-day TTL hint', async () => {
    const { server, run: extractor } = await extractorReplying([
      { content: exampleAnswer(language), promptTokens: 1_900, completionTokens: 240 },
    ]);
    const { candidates, usage } = await run(extractor, 'FACT', exampleCell(language));

    expect(usage).toEqual({ promptTokens: 1_900, completionTokens: 240, calls: 1, model: 'scripted-model' });
    expect(candidates).toHaveLength(2);
    const [style, goal] = candidates;
    const evidence = { messageIds: [M1], memCellId: CELL, excerpt: EXAMPLE[language].content };
    expect(style).toEqual({
      type: 'FACT',
      namespace: 'user_preference',
      key: 'answer_style',
      value: { style: 'concise' },
      text: EXAMPLE[language].styleText,
      languageCode: language,
      sourceKind: 'EXPLICIT_USER_STATEMENT',
      scopeHint: 'SELF',
      confidence: 0.95,
      occurredAt: Date.parse(SAID_AT),
      evidence,
      metadata: { extractor: 'model.fact', model: 'scripted-model', prompt_version: 'extract-v1' },
    });
    expect(goal).toMatchObject({
      type: 'FACT',
      namespace: 'goal',
      key: 'current_goal',
      value: { goal: EXAMPLE[language].goal, durationDays: 30, period: EXAMPLE[language].period },
      sourceKind: 'EXPLICIT_USER_STATEMENT',
      scopeHint: 'SELF',
      confidence: 0.91,
      ttlHintMs: 30 * DAY_MS,
      ttlReason: EXAMPLE[language].ttlReason,
      occurredAt: Date.parse(SAID_AT),
      validFrom: Date.parse(SAID_AT),
      validUntil: Date.parse(SAID_AT) + 30 * DAY_MS,
      evidence,
    });

    // What the model was asked: the system prompt in the conversation's language, the transcript
    // with each message's local time, the extractor's strict schema, temperature 0.
    expect(server.requests).toHaveLength(1);
    const request = server.requests[0];
    expect(request?.body.model).toBe('scripted-model');
    expect(request?.body.temperature).toBe(0);
    expect(request?.body.messages?.map((m) => m.role)).toEqual(['system', 'user']);
    for (const phrase of EXAMPLE[language].system) expect(systemOf(request)).toContain(phrase);
    expect(userOf(request)).toContain(EXAMPLE[language].zone);
    expect(userOf(request)).toContain(EXAMPLE[language].line);
    expect(userOf(request)).toContain(`[${M2}] 2025-03-03T09:00:04+08:00`);
    expect(request?.body.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'memory_extraction_fact', strict: true },
    });
    expect(request?.body.response_format?.json_schema?.schema).toMatchObject({
      type: 'object',
      required: ['candidates'],
      additionalProperties: false,
    });
  });
});

describe('model extractors', () => {
  it('retry malformed JSON and report the usage of both attempts', async () => {
    const { server, run: extractor } = await extractorReplying([
      {
        content: '{"candidates": [{"type": "FACT", "namespace": "user_pref',
        promptTokens: 1_000,
        completionTokens: 30,
      },
      { content: exampleAnswer('en'), promptTokens: 1_100, completionTokens: 200 },
    ]);
    const { candidates, usage } = await run(extractor, 'FACT', exampleCell('en'));

    expect(candidates.map((c) => `${c.namespace ?? ''}/${c.key ?? ''}`)).toEqual([
      'user_preference/answer_style',
      'goal/current_goal',
    ]);
    expect(usage).toEqual({ promptTokens: 2_100, completionTokens: 230, calls: 2, model: 'scripted-model' });
    expect(server.requests).toHaveLength(2);
    const retry = server.requests[1]?.body.messages ?? [];
    expect(retry).toHaveLength(4);
    expect(retry[3]?.content).toMatch(/not valid JSON/u);
  });

  it('retry an answer the schema refuses, showing the model the field at fault', async () => {
    const missingReason = JSON.parse(exampleAnswer('en')) as { candidates: Record<string, unknown>[] };
    missingReason.candidates[1] = { ...missingReason.candidates[1], ttl_reason: null };
    const { server, run: extractor } = await extractorReplying([
      { content: JSON.stringify(missingReason) },
      { content: exampleAnswer('en') },
    ]);
    const { candidates, usage } = await run(extractor, 'FACT', exampleCell('en'));
    expect(candidates).toHaveLength(2);
    expect(usage?.calls).toBe(2);
    expect(server.requests[1]?.body.messages?.[3]?.content).toMatch(/ttl_days needs a ttl_reason/u);
  });

  it('fail with UNAVAILABLE DEPENDENCY_UNAVAILABLE (output_invalid) after three invalid answers', async () => {
    const { server, run: extractor } = await extractorReplying([
      { content: 'I found two facts.' },
      { content: '{"candidates": "none"}' },
      { content: '```json\n{"facts": []}\n```' },
    ]);
    const error = await engramRejection(run(extractor, 'FACT', exampleCell('en')));
    expect(error.code).toBe(Code.Unavailable);
    expect(error.reason).toBe('DEPENDENCY_UNAVAILABLE');
    expect(isModelOutputInvalid(error)).toBe(true);
    expect(error.metadata).toMatchObject({
      dependency: 'model',
      schema: 'memory_extraction_fact',
      attempts: 3,
    });
    expect(server.requests).toHaveLength(3);
  });

  it('ride out a 429 within the model client’s transport retries (one call, two requests)', async () => {
    const { server, run: extractor } = await extractorReplying(
      [
        { status: 429, message: 'Rate limit reached', headers: { 'retry-after-ms': '2' } },
        { content: exampleAnswer('en'), promptTokens: 1_000, completionTokens: 200 },
      ],
      { maxRetries: 2 },
    );
    const { candidates, usage } = await run(extractor, 'FACT', exampleCell('en'));
    expect(candidates).toHaveLength(2);
    expect(usage).toEqual({ promptTokens: 1_000, completionTokens: 200, calls: 1, model: 'scripted-model' });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]?.body).toEqual(server.requests[0]?.body);
  });

  it('fail with UNAVAILABLE DEPENDENCY_UNAVAILABLE when the model keeps answering 429', async () => {
    const { server, run: extractor } = await extractorReplying(
      [{ status: 429 }, { status: 429 }, { status: 429 }],
      { maxRetries: 2 },
    );
    const error = await engramRejection(run(extractor, 'EVENT', exampleCell('en')));
    expect(error.code).toBe(Code.Unavailable);
    expect(error.reason).toBe('DEPENDENCY_UNAVAILABLE');
    expect(error.metadata).toEqual({ dependency: 'model' });
    expect(error.message).toMatch(/HTTP 429/u);
    expect(server.requests).toHaveLength(3);
  });

  it('fail with UNAVAILABLE DEPENDENCY_UNAVAILABLE when the model times out', async () => {
    const { run: extractor } = await extractorReplying([{ content: exampleAnswer('en'), delayMs: 5_000 }], {
      timeoutMs: 200,
      maxRetries: 0,
    });
    const started = performance.now();
    const error = await engramRejection(run(extractor, 'FACT', exampleCell('en')));
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(error.code).toBe(Code.Unavailable);
    expect(error.reason).toBe('DEPENDENCY_UNAVAILABLE');
    expect(error.metadata).toEqual({ dependency: 'model' });
    expect(error.message).toMatch(/timed out/iu);
  });

  it('stop when the job is cancelled, with the signal’s reason', async () => {
    const { run: extractor } = await extractorReplying([{ content: exampleAnswer('en'), delayMs: 5_000 }]);
    const controller = new AbortController();
    const reason = new Error('job cancelled');
    setTimeout(() => {
      controller.abort(reason);
    }, 100);
    await expect(run(extractor, 'FACT', exampleCell('en'), controller.signal)).rejects.toBe(reason);
  });

  it('pass through a relative date the model resolved against the message’s own time', async () => {
    // Said on Saturday evening in New York (already Sunday in UTC) before the switch to daylight
    // saving time: "tomorrow at 3pm" is Sunday 9 March, 15:00 EDT (UTC-4).
    const input = memCell('America/New_York', 'en', [
      [M1, 'USER', 'I have a dentist appointment tomorrow at 3pm.', '2025-03-08T22:30:00-05:00'],
      [M2, 'ASSISTANT', 'Noted. Anything to prepare?', '2025-03-08T22:30:05-05:00'],
    ]);
    const answer = {
      candidates: [
        {
          type: 'FORESIGHT',
          text: 'The user has a dentist appointment on 2025-03-09 at 15:00.',
          source_kind: 'explicit_user_statement',
          scope_hint: 'self',
          confidence: 0.9,
          valid_from: '2025-03-09T15:00:00-04:00',
          valid_until: '2025-03-10T00:00:00-04:00',
          evidence_message_ids: [M1],
        },
      ],
    };
    const { server, run: extractor } = await extractorReplying([{ content: JSON.stringify(answer) }]);
    const { candidates } = await run(extractor, 'FORESIGHT', input);

    expect(candidates).toEqual([
      expect.objectContaining({
        type: 'FORESIGHT',
        occurredAt: Date.parse('2025-03-09T03:30:00Z'),
        validFrom: Date.UTC(2025, 2, 9, 19, 0),
        validUntil: Date.UTC(2025, 2, 10, 4, 0),
        evidence: {
          messageIds: [M1],
          memCellId: CELL,
          excerpt: 'I have a dentist appointment tomorrow at 3pm.',
        },
      }),
    ]);
    const request = server.requests[0];
    expect(request?.body.response_format?.json_schema?.name).toBe('memory_extraction_foresight');
    expect(userOf(request)).toContain(
      'Session time zone: America/New_York (UTC-05:00 at the first message shown).',
    );
    expect(userOf(request)).toContain(
      `[${M1}] 2025-03-08T22:30:00-05:00 (Sat) user: I have a dentist appointment tomorrow at 3pm.`,
    );
    expect(systemOf(request)).toContain('against the time of the message it appears in');
  });

  it('drop evidence ids that are not messages of the MemCell, and candidates left without any', async () => {
    const input = memCell('UTC', 'en', [
      [M1, 'USER', 'I moved to Lisbon last month.', '2025-05-02T10:00:00Z'],
      [M2, 'ASSISTANT', 'How are you finding it?', '2025-05-02T10:00:03Z'],
      [M3, 'USER', 'I also adopted a cat called Miso.', '2025-05-02T10:01:00Z'],
    ]);
    const event = (text: string, evidence: readonly string[]) => ({
      type: 'EVENT',
      text,
      source_kind: 'explicit_user_statement',
      scope_hint: 'self',
      confidence: 0.85,
      occurred_at: '2025-04-01T00:00:00+00:00',
      evidence_message_ids: evidence,
    });
    const { run: extractor } = await extractorReplying([
      {
        content: JSON.stringify({
          candidates: [
            event('The user moved to Lisbon in April 2025.', [NOT_IN_CELL, M1, 'm1']),
            event('The user was born in Porto.', [NOT_IN_CELL]),
            event('The user adopted a cat called Miso.', [M3, M2, M3]),
          ],
        }),
      },
    ]);
    const { candidates } = await run(extractor, 'EVENT', input);
    expect(candidates.map((c) => [c.text, c.evidence.messageIds])).toEqual([
      ['The user moved to Lisbon in April 2025.', [M1]],
      ['The user adopted a cat called Miso.', [M2, M3]],
    ]);
    // The excerpt quotes the user, not the assistant's question.
    expect(candidates[1]?.evidence.excerpt).toBe('I also adopted a cat called Miso.');
  });

  it('never show the model what the user asked not to remember, nor accept it as evidence', async () => {
    const input = memCell('UTC', 'en', [
      [M1, 'USER', "Don't save this: my bank PIN is [redacted:pin].", '2025-05-02T10:00:00Z'],
      [M2, 'USER', 'I work as a nurse at the Charité.', '2025-05-02T10:00:30Z'],
    ]);
    const fact = (key: string, evidence: readonly string[]) => ({
      type: 'FACT',
      namespace: 'profile',
      key,
      value: [{ field: key, value: key === 'occupation' ? 'nurse' : 'Charité' }],
      text: `The user's ${key}.`,
      source_kind: 'explicit_user_statement',
      scope_hint: 'self',
      confidence: 0.9,
      ttl_days: null,
      ttl_reason: null,
      valid_from: null,
      valid_until: null,
      evidence_message_ids: evidence,
    });
    const { server, run: extractor } = await extractorReplying([
      { content: JSON.stringify({ candidates: [fact('employer', [M1]), fact('occupation', [M2])] }) },
    ]);
    const { candidates } = await run(extractor, 'FACT', input);
    expect(candidates.map((c) => c.key)).toEqual(['occupation']);
    expect(userOf(server.requests[0])).not.toContain(M1);
    expect(userOf(server.requests[0])).not.toContain('PIN');
  });

  it('show a long MemCell’s latest messages within the budget and say so', async () => {
    const messages = Array.from({ length: 60 }, (_, i) => {
      const id = `01JNQ8ZK5V00000000000001${String(i).padStart(2, '0')}`;
      const at = new Date(Date.parse('2025-05-02T10:00:00Z') + i * 60_000).toISOString();
      return [
        id,
        i % 2 === 0 ? 'USER' : 'ASSISTANT',
        `Message ${i}: ${'lorem ipsum '.repeat(20)}`,
        at,
      ] as const;
    });
    const { server, run: extractor } = await extractorReplying([{ content: '{"candidates": []}' }], {
      maxTranscriptChars: 3_000,
    });
    const { candidates, usage } = await run(extractor, 'EPISODE', memCell('UTC', 'en', messages));
    expect(candidates).toEqual([]);
    expect(usage?.calls).toBe(1);
    const user = userOf(server.requests[0]);
    const shown = user.split('\n').filter((line) => line.startsWith('['));
    expect(shown.length).toBeGreaterThan(5);
    expect(shown.length).toBeLessThan(20);
    expect(shown.join('\n').length).toBeLessThanOrEqual(3_000);
    expect(shown.at(-1)).toContain('Message 59:');
    expect(user).toContain(`only the latest ${shown.length} of its 60 messages are shown`);
  });

  it('do not call the model for a MemCell in which the user says nothing', async () => {
    const { server, run: extractor } = await extractorReplying([]);
    const input = memCell('UTC', 'en', [[M1, 'ASSISTANT', 'Hello! How can I help?', '2025-05-02T10:00:00Z']]);
    await expect(run(extractor, 'EPISODE', input)).resolves.toEqual({
      candidates: [],
      usage: { promptTokens: 0, completionTokens: 0, calls: 0, model: 'scripted-model' },
    });
    expect(server.requests).toHaveLength(0);
  });
});
