/**
 * OpenAIChatModel against the scripted OpenAI-compatible server (real HTTP, the real `openai`
 * client); only the model's answers are scripted.
 */
import { Code } from '@connectrpc/connect';
import { afterEach, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { isEngramError, type EngramError } from '@engram/errors';
import { isModelOutputInvalid, type ChatMessage } from '../src/index.js';
import { modelAt, ScriptedServer } from './scripted-model.js';
import type { ScriptedReply } from './scripted-openai.js';

const answerSchema = z.object({
  topic: z.string().min(1),
  confidence: z.number().min(0).max(1),
});

const messages: ChatMessage[] = [
  { role: 'system', content: 'Name the topic of the text.' },
  { role: 'user', content: 'How long should I knead bread dough?' },
];

const server = new ScriptedServer();

/** `completeJson` of the topic question under `answerSchema`, with no other request option. */
const askTopic = (baseURL: string, options: Parameters<typeof modelAt>[1] = {}) =>
  modelAt(baseURL, options).completeJson({ messages, schema: answerSchema, schemaName: 'topic_answer' });
afterEach(() => server.close());
const start = (...list: ScriptedReply[]) => server.start(...list);

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

describe('OpenAIChatModel.completeJson', () => {
  it('returns the parsed answer of a valid first reply and sends the strict JSON schema', async () => {
    const scripted = await start({
      content: '{"topic":"baking","confidence":0.9}',
      promptTokens: 42,
      completionTokens: 7,
    });
    const result = await modelAt(scripted.baseURL).completeJson({
      messages,
      schema: answerSchema,
      schemaName: 'topic_answer',
      temperature: 0,
    });

    expect(result).toEqual({
      value: { topic: 'baking', confidence: 0.9 },
      usage: { promptTokens: 42, completionTokens: 7 },
      attempts: 1,
    });
    expect(scripted.requests).toHaveLength(1);
    const { body, headers } = scripted.requests[0]!;
    expect(headers.authorization).toBe('Bearer test-key');
    expect(body.model).toBe('scripted-model');
    expect(body.temperature).toBe(0);
    expect(body.messages).toEqual(messages);
    expect(body.response_format?.type).toBe('json_schema');
    expect(body.response_format?.json_schema?.name).toBe('topic_answer');
    expect(body.response_format?.json_schema?.strict).toBe(true);
    const schema = body.response_format?.json_schema?.schema;
    expect(schema).not.toHaveProperty('$schema');
    expect(schema).toMatchObject({
      type: 'object',
      required: ['topic', 'confidence'],
      additionalProperties: false,
      properties: { topic: { type: 'string' }, confidence: { type: 'number', minimum: 0, maximum: 1 } },
    });
  });

  it('accepts JSON wrapped in a Markdown fence', async () => {
    const scripted = await start({ content: '```json\n{"topic":"cars","confidence":1}\n```' });
    const result = await askTopic(scripted.baseURL);
    expect(result.value).toEqual({ topic: 'cars', confidence: 1 });
  });

  it('retries invalid JSON with the parse error in the conversation and sums the usage', async () => {
    const scripted = await start(
      { content: 'The topic is baking.', promptTokens: 40, completionTokens: 6 },
      { content: '{"topic":"baking","confidence":0.8}', promptTokens: 70, completionTokens: 9 },
    );
    const result = await askTopic(scripted.baseURL);

    expect(result.value).toEqual({ topic: 'baking', confidence: 0.8 });
    expect(result.attempts).toBe(2);
    expect(result.usage).toEqual({ promptTokens: 110, completionTokens: 15 });
    const retry = scripted.requests[1]!.body.messages!;
    expect(retry.slice(0, 2)).toEqual(messages);
    expect(retry[2]).toEqual({ role: 'assistant', content: 'The topic is baking.' });
    expect(retry[3]!.role).toBe('user');
    expect(retry[3]!.content).toMatch(/not valid JSON/u);
    expect(retry).toHaveLength(4);
  });

  it('retries a schema mismatch with the validation error naming the field', async () => {
    const scripted = await start(
      { content: '{"topic":"baking","confidence":7}' },
      { content: '{"topic":"baking","confidence":0.7}' },
    );
    const result = await askTopic(scripted.baseURL);
    expect(result.attempts).toBe(2);
    const feedback = scripted.requests[1]!.body.messages![3]!.content;
    expect(feedback).toMatch(/does not match the topic_answer schema/u);
    expect(feedback).toMatch(/confidence/u);
  });

  it('gives up after three schema-invalid answers with UNAVAILABLE, DEPENDENCY_UNAVAILABLE, failure output_invalid', async () => {
    const scripted = await start(
      { content: '{"topic":""}' },
      { content: '{"topic":""}' },
      { content: '{"topic":""}' },
      { content: '{"topic":"never asked","confidence":1}' },
    );
    const error = await engramRejection(askTopic(scripted.baseURL));

    expect(scripted.requests).toHaveLength(3);
    expect(error.code).toBe(Code.Unavailable);
    expect(error.reason).toBe('DEPENDENCY_UNAVAILABLE');
    expect(error.metadata).toEqual({
      dependency: 'model',
      failure: 'output_invalid',
      schema: 'topic_answer',
      attempts: 3,
    });
    expect(isModelOutputInvalid(error)).toBe(true);
    expect(error.message).toMatch(/3 attempts/u);
    expect(error.message).toMatch(/topic/u);
    // The conversation grows by the rejected answer and its feedback per attempt.
    expect(scripted.requests.map((r) => r.body.messages!.length)).toEqual([2, 4, 6]);
  });

  it('honours maxAttempts', async () => {
    const scripted = await start({ content: 'no' }, { content: '{"topic":"x","confidence":0}' });
    const error = await engramRejection(
      modelAt(scripted.baseURL).completeJson({
        messages,
        schema: answerSchema,
        schemaName: 'topic_answer',
        maxAttempts: 1,
      }),
    );
    expect(isModelOutputInvalid(error)).toBe(true);
    expect(error.message).toMatch(/not valid JSON/u);
    expect(scripted.requests).toHaveLength(1);
  });

  it('asks again, more briefly, when the answer was cut off at the output limit', async () => {
    const scripted = await start(
      { content: '{"topic":"bak', finishReason: 'length' },
      { content: '{"topic":"baking","confidence":0.5}' },
    );
    const result = await askTopic(scripted.baseURL);
    expect(result.attempts).toBe(2);
    expect(scripted.requests[1]!.body.messages![3]!.content).toMatch(/cut off/u);
  });

  it('retries a 500 and succeeds within the transport retries (not counted as attempts)', async () => {
    const scripted = await start({ status: 500 }, { content: '{"topic":"baking","confidence":0.9}' });
    const result = await askTopic(scripted.baseURL, { maxRetries: 2 });
    expect(result.attempts).toBe(1);
    expect(scripted.requests).toHaveLength(2);
  });

  it('reports a server that keeps answering 500 as UNAVAILABLE DEPENDENCY_UNAVAILABLE (dependency model)', async () => {
    const scripted = await start({ status: 500 }, { status: 503 }, { status: 500 });
    const error = await engramRejection(askTopic(scripted.baseURL, { maxRetries: 2 }));
    expect(scripted.requests).toHaveLength(3);
    expect(error.code).toBe(Code.Unavailable);
    expect(error.reason).toBe('DEPENDENCY_UNAVAILABLE');
    expect(error.metadata).toEqual({ dependency: 'model' });
    expect(isModelOutputInvalid(error)).toBe(false);
    expect(error.message).toMatch(/HTTP 500/u);
    expect(error.message).toMatch(/3 tries/u);
  });

  it('does not retry a 400 and reports it as UNAVAILABLE with its status', async () => {
    const scripted = await start({ status: 400, message: 'response_format is not supported' });
    const error = await engramRejection(askTopic(scripted.baseURL, { maxRetries: 2 }));
    expect(scripted.requests).toHaveLength(1);
    expect(error.code).toBe(Code.Unavailable);
    expect(error.metadata).toEqual({ dependency: 'model' });
    expect(error.message).toMatch(/HTTP 400/u);
  });

  it('reports a refused connection as UNAVAILABLE DEPENDENCY_UNAVAILABLE', async () => {
    const scripted = await start();
    const { baseURL } = scripted;
    await server.close();
    const error = await engramRejection(askTopic(baseURL, { maxRetries: 1 }));
    expect(error.code).toBe(Code.Unavailable);
    expect(error.reason).toBe('DEPENDENCY_UNAVAILABLE');
    expect(error.metadata).toEqual({ dependency: 'model' });
    expect(error.message).toMatch(/2 tries/u);
  });

  it('reports a dropped connection as UNAVAILABLE after the retries', async () => {
    const scripted = await start({ drop: true }, { drop: true });
    const error = await engramRejection(askTopic(scripted.baseURL, { maxRetries: 1 }));
    expect(scripted.requests).toHaveLength(2);
    expect(error.code).toBe(Code.Unavailable);
    expect(error.metadata).toEqual({ dependency: 'model' });
  });

  it('times out a slow answer as UNAVAILABLE DEPENDENCY_UNAVAILABLE', async () => {
    const scripted = await start({ content: '{"topic":"late","confidence":1}', delayMs: 5_000 });
    const started = performance.now();
    const error = await engramRejection(askTopic(scripted.baseURL, { timeoutMs: 200, maxRetries: 0 }));
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(error.code).toBe(Code.Unavailable);
    expect(error.reason).toBe('DEPENDENCY_UNAVAILABLE');
    expect(error.metadata).toEqual({ dependency: 'model' });
    expect(error.message).toMatch(/timed out/iu);
  });

  it('retries a timed-out request within the transport retries', async () => {
    const scripted = await start(
      { content: '{"topic":"late","confidence":1}', delayMs: 5_000 },
      { content: '{"topic":"on time","confidence":1}' },
    );
    const result = await askTopic(scripted.baseURL, { timeoutMs: 200, maxRetries: 1 });
    expect(result.value.topic).toBe('on time');
    expect(result.attempts).toBe(1);
    expect(scripted.requests).toHaveLength(2);
  });

  it('rejects with the signal reason when the caller aborts, without retrying', async () => {
    const scripted = await start({ content: '{"topic":"late","confidence":1}', delayMs: 5_000 });
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    setTimeout(() => {
      controller.abort(reason);
    }, 100);
    await expect(
      modelAt(scripted.baseURL, { maxRetries: 3 }).completeJson({
        messages,
        schema: answerSchema,
        schemaName: 'topic_answer',
        signal: controller.signal,
      }),
    ).rejects.toBe(reason);
    expect(scripted.requests).toHaveLength(1);
  });

  it('rejects a schema name the API would refuse before calling the model', async () => {
    const scripted = await start();
    const error = await engramRejection(
      modelAt(scripted.baseURL).completeJson({ messages, schema: answerSchema, schemaName: 'topic answer' }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(scripted.requests).toHaveLength(0);
  });
});

describe('startScriptedOpenAI', () => {
  it('streams a scripted answer as server-sent chunks the openai client reassembles', async () => {
    const scripted = await start({
      content: 'Knead for ten minutes.',
      chunks: ['Knead ', 'for ten', ' minutes.'],
    });
    const { default: OpenAI } = await import('openai');
    const client = new OpenAI({ baseURL: scripted.baseURL, apiKey: 'k', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'scripted-model',
      messages: [{ role: 'user', content: 'How long?' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    let usage: { prompt_tokens: number } | undefined;
    for await (const chunk of stream) {
      const piece = chunk.choices[0]?.delta.content;
      if (piece !== undefined && piece !== null && piece !== '') pieces.push(piece);
      if (chunk.usage) usage = chunk.usage;
    }
    expect(pieces).toEqual(['Knead ', 'for ten', ' minutes.']);
    expect(usage?.prompt_tokens).toBe(10);
    expect(scripted.requests[0]!.body.stream).toBe(true);
  });
});
