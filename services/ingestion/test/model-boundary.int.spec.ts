/**
 * The language-model topic-shift judge against the scripted OpenAI-compatible server (the one
 * permitted fake: only the model's answers are scripted; HTTP, the client, JSON Schema and
 * validation are real).
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { isModelOutputInvalid, OpenAIChatModel } from '@engram/llm';
import {
  replies,
  startScriptedOpenAI,
  type ScriptedOpenAI,
  type ScriptedReply,
} from '../../../libs/llm/test/scripted-openai.js';
import type { JudgedMessage } from '../src/domain/boundary-judgement.js';
import { detectTopicShiftsWithModel } from '../src/domain/model-boundary.js';

const messages: JudgedMessage[] = [
  { sequence: 11, role: 'USER', content: 'How long should I knead bread dough?' },
  { sequence: 12, role: 'ASSISTANT', content: 'About ten minutes, until it is smooth.' },
  { sequence: 13, role: 'USER', content: 'And how long should it rise?' },
  { sequence: 14, role: 'ASSISTANT', content: 'One to two hours at room temperature.' },
  { sequence: 15, role: 'USER', content: '我的车刹车时有异响，怎么回事？' },
  { sequence: 16, role: 'ASSISTANT', content: '很可能是刹车片磨损了。' },
  { sequence: 17, role: 'TOOL', content: '{"nearest_garage": "2.1 km"}' },
  { sequence: 18, role: 'USER', content: 'Can I replace the pads myself?' },
  { sequence: 19, role: 'ASSISTANT', content: 'Yes, with a jack and a socket set.' },
];

let server: ScriptedOpenAI | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function modelReplying(...list: ScriptedReply[]) {
  server = await startScriptedOpenAI(replies(...list));
  return {
    server,
    model: new OpenAIChatModel({ baseURL: server.baseURL, model: 'scripted-model', maxRetries: 0 }),
  };
}

const answer = (boundaries: { after_sequence: number; rationale: string }[]) => ({
  content: JSON.stringify({ boundaries }),
});

describe('detectTopicShiftsWithModel', () => {
  it('returns the model’s boundaries with their rationales as notes', async () => {
    const { server, model } = await modelReplying({
      ...answer([{ after_sequence: 14, rationale: 'from baking bread to car brake noise' }]),
      promptTokens: 300,
      completionTokens: 20,
    });
    const result = await detectTopicShiftsWithModel(messages, model);

    expect(result).toEqual({
      splits: [{ afterSequence: 14, score: 1, note: 'from baking bread to car brake noise' }],
      usage: { promptTokens: 300, completionTokens: 20 },
      attempts: 1,
    });
    const { body } = server.requests[0]!;
    expect(body.temperature).toBe(0);
    expect(body.response_format?.json_schema?.name).toBe('topic_boundaries');
    expect(body.response_format?.json_schema?.schema).toMatchObject({
      properties: {
        boundaries: {
          items: { properties: { after_sequence: { enum: [12, 14, 17] }, rationale: { maxLength: 200 } } },
        },
      },
    });
    const [system, user] = body.messages!;
    expect(system!.role).toBe('system');
    expect(system!.content).toMatch(/Chinese, English or both/u);
    expect(user!.content).toContain(
      [
        '[11] user: How long should I knead bread dough?',
        '[12] assistant: About ten minutes, until it is smooth.',
        '[13] user: And how long should it rise?',
        '[14] assistant: One to two hours at room temperature.',
        '[15] user: 我的车刹车时有异响，怎么回事？',
        '[16] assistant: 很可能是刹车片磨损了。',
        '[17] tool: {"nearest_garage": "2.1 km"}',
        '[18] user: Can I replace the pads myself?',
        '[19] assistant: Yes, with a jack and a socket set.',
      ].join('\n'),
    );
    expect(user!.content).toMatch(/Allowed after_sequence values: 12, 14, 17$/u);
  });

  it('returns no split when the model finds none', async () => {
    const { model } = await modelReplying(answer([]));
    const result = await detectTopicShiftsWithModel(messages, model);
    expect(result.splits).toEqual([]);
    expect(result.attempts).toBe(1);
  });

  it('orders the splits and keeps the first rationale of a repeated boundary', async () => {
    const { model } = await modelReplying(
      answer([
        { after_sequence: 17, rationale: 'second' },
        { after_sequence: 14, rationale: ' first ' },
        { after_sequence: 17, rationale: 'again' },
      ]),
    );
    const { splits } = await detectTopicShiftsWithModel(messages, model);
    expect(splits).toEqual([
      { afterSequence: 14, score: 1, note: 'first' },
      { afterSequence: 17, score: 1, note: 'second' },
    ]);
  });

  it('asks again after an answer that is not JSON and sums the usage', async () => {
    const { server, model } = await modelReplying(
      { content: 'The topic changes after message 14.', promptTokens: 300, completionTokens: 10 },
      {
        ...answer([{ after_sequence: 14, rationale: 'baking to cars' }]),
        promptTokens: 330,
        completionTokens: 20,
      },
    );
    const result = await detectTopicShiftsWithModel(messages, model);
    expect(result.splits.map((s) => s.afterSequence)).toEqual([14]);
    expect(result.attempts).toBe(2);
    expect(result.usage).toEqual({ promptTokens: 630, completionTokens: 30 });
    expect(server.requests).toHaveLength(2);
  });

  it('treats an out-of-range or misplaced sequence as invalid output and asks again with the allowed values', async () => {
    const { server, model } = await modelReplying(
      answer([{ after_sequence: 42, rationale: 'beyond the tail' }]),
      // 15 is in the tail but is a user message: a split there would separate it from its reply.
      answer([{ after_sequence: 15, rationale: 'splits a user turn from its reply' }]),
      answer([{ after_sequence: 14, rationale: 'baking to cars' }]),
    );
    const result = await detectTopicShiftsWithModel(messages, model);
    expect(result.splits).toEqual([{ afterSequence: 14, score: 1, note: 'baking to cars' }]);
    expect(result.attempts).toBe(3);
    for (const request of server.requests.slice(1)) {
      const feedback = request.body.messages!.at(-1)!;
      expect(feedback.role).toBe('user');
      expect(feedback.content).toMatch(/allowed values: 12, 14, 17/u);
      expect(feedback.content).toMatch(/after_sequence/u);
    }
  });

  it('gives up with output_invalid when every answer is out of range', async () => {
    const { model } = await modelReplying(
      answer([{ after_sequence: 99, rationale: 'x' }]),
      answer([{ after_sequence: 99, rationale: 'x' }]),
      answer([{ after_sequence: 99, rationale: 'x' }]),
    );
    const error = await detectTopicShiftsWithModel(messages, model).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isModelOutputInvalid(error)).toBe(true);
  });

  it('rejects a rationale over 200 characters as invalid output', async () => {
    const { server, model } = await modelReplying(
      answer([{ after_sequence: 14, rationale: 'x'.repeat(201) }]),
      answer([{ after_sequence: 14, rationale: 'short' }]),
    );
    const result = await detectTopicShiftsWithModel(messages, model);
    expect(result.splits[0]!.note).toBe('short');
    expect(server.requests[1]!.body.messages!.at(-1)!.content).toMatch(/rationale/u);
  });

  it('shortens long contents, keeping their start and end, on one line', async () => {
    const long = `START ${'lorem ipsum '.repeat(200)}\n\nEND`;
    const { server, model } = await modelReplying(answer([]));
    await detectTopicShiftsWithModel(
      [
        { sequence: 1, role: 'USER', content: long },
        { sequence: 2, role: 'ASSISTANT', content: 'ok' },
        { sequence: 3, role: 'USER', content: 'next' },
      ],
      model,
      { maxMessageChars: 100 },
    );
    const line = server.requests[0]!.body.messages![1]!.content.split('\n').find((l) =>
      l.startsWith('[1] '),
    )!;
    const shown = line.slice('[1] user: '.length);
    expect(Array.from(shown)).toHaveLength(100);
    expect(shown.startsWith('START lorem ipsum')).toBe(true);
    expect(shown.endsWith('lorem ipsum END')).toBe(true);
    expect(shown).toContain('…');
  });

  it('does not call the model when no split point exists', async () => {
    const { server, model } = await modelReplying();
    const result = await detectTopicShiftsWithModel(
      [
        { sequence: 1, role: 'USER', content: 'hello' },
        { sequence: 2, role: 'ASSISTANT', content: 'hi' },
      ],
      model,
    );
    expect(result).toEqual({ splits: [], usage: { promptTokens: 0, completionTokens: 0 }, attempts: 0 });
    expect(server.requests).toHaveLength(0);
  });
});
