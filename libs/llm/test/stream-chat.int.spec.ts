/**
 * OpenAIChatModel.streamChat against the scripted OpenAI-compatible server (real HTTP, the real
 * `openai` client); only the model's answers are scripted.
 */
import { Code } from '@connectrpc/connect';
import { afterEach, describe, expect, it } from '@jest/globals';
import { isEngramError, type EngramError } from '@engram/errors';
import {
  OpenAIChatModel,
  type ChatDoneEvent,
  type ChatStreamEvent,
  type ChatTurn,
  type StreamChatRequest,
} from '../src/index.js';
import { modelAt, ScriptedServer } from './scripted-model.js';
import type { ScriptedReply } from './scripted-openai.js';

const messages: ChatTurn[] = [
  { role: 'system', content: 'You are a baking assistant.' },
  { role: 'user', content: 'How long should I knead bread dough?' },
];

const server = new ScriptedServer();
afterEach(() => server.close());
const start = (...list: ScriptedReply[]) => server.start(...list);

async function collect(stream: AsyncIterable<ChatStreamEvent>): Promise<ChatStreamEvent[]> {
  const events: ChatStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

function doneOf(events: readonly ChatStreamEvent[]): ChatDoneEvent {
  const last = events.at(-1);
  if (last?.type !== 'done') throw new Error('the stream did not end with a done event');
  return last;
}

/** The EngramError an iteration rejects with, and the events yielded before it. */
async function engramRejection(
  stream: AsyncIterable<ChatStreamEvent>,
): Promise<{ error: EngramError; events: ChatStreamEvent[] }> {
  const events: ChatStreamEvent[] = [];
  try {
    for await (const event of stream) events.push(event);
  } catch (error) {
    if (isEngramError(error)) return { error, events };
    throw error;
  }
  throw new Error('expected a rejection');
}

function chat(baseURL: string, request: Partial<StreamChatRequest> = {}, options = {}) {
  return modelAt(baseURL, options).streamChat({ messages, ...request });
}

describe('OpenAIChatModel.streamChat', () => {
  it('yields the text deltas in order, then one done event whose text is their concatenation', async () => {
    const scripted = await start({
      content: 'Knead for ten minutes.',
      chunks: ['Knead ', 'for ten', ' minutes.'],
      promptTokens: 31,
      completionTokens: 6,
    });
    const events = await collect(chat(scripted.baseURL));

    expect(events).toEqual([
      { type: 'delta', text: 'Knead ' },
      { type: 'delta', text: 'for ten' },
      { type: 'delta', text: ' minutes.' },
      {
        type: 'done',
        text: 'Knead for ten minutes.',
        toolCalls: [],
        finishReason: 'stop',
        usage: { promptTokens: 31, completionTokens: 6 },
      },
    ]);
    const { body } = scripted.requests[0]!;
    expect(body.stream).toBe(true);
    expect(body.stream_options).toEqual({ include_usage: true });
    expect(body.model).toBe('scripted-model');
    expect(body.messages).toEqual(messages);
    // Unset options are left to the endpoint.
    for (const key of ['tools', 'temperature', 'top_p', 'max_tokens', 'stop'])
      expect(body).not.toHaveProperty(key);
  });

  it('never yields an empty delta (the role chunk carries empty content)', async () => {
    const scripted = await start({ content: 'Yes.', chunks: ['', 'Yes', '', '.'] });
    const events = await collect(chat(scripted.baseURL));
    expect(events.filter((e) => e.type === 'delta').map((e) => e.text)).toEqual(['Yes', '.']);
    expect(doneOf(events).text).toBe('Yes.');
  });

  it('sends the tools, tool messages, names, stop sequences and sampling options', async () => {
    const scripted = await start({ content: 'It is sunny.' });
    const conversation: ChatTurn[] = [
      { role: 'system', content: 'Use tools when needed.' },
      { role: 'user', content: 'Weather in Oslo and Bergen?', name: 'ada' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'call_1', name: 'weather', argumentsJson: '{"city":"Oslo"}' },
          { id: 'call_2', name: 'clock', argumentsJson: '' },
        ],
      },
      { role: 'tool', content: 'sunny, 21 °C', toolCallId: 'call_1', name: 'ignored' },
      { role: 'tool', content: '14:02', toolCallId: 'call_2' },
    ];
    await collect(
      chat(scripted.baseURL, {
        messages: conversation,
        tools: [
          {
            name: 'weather',
            description: 'Current weather of a city.',
            parametersJsonSchema:
              '{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}',
          },
          { name: 'clock', description: '', parametersJsonSchema: '' },
        ],
        temperature: 0.3,
        topP: 0.9,
        maxOutputTokens: 256,
        stop: ['\n\nUser:'],
        model: 'other-model',
      }),
    );

    const { body } = scripted.requests[0]!;
    expect(body.model).toBe('other-model');
    expect(body.temperature).toBe(0.3);
    expect(body.top_p).toBe(0.9);
    expect(body.max_tokens).toBe(256);
    expect(body).not.toHaveProperty('max_completion_tokens');
    expect(body.stop).toEqual(['\n\nUser:']);
    expect(body.messages).toEqual([
      { role: 'system', content: 'Use tools when needed.' },
      { role: 'user', content: 'Weather in Oslo and Bergen?', name: 'ada' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
          { id: 'call_2', type: 'function', function: { name: 'clock', arguments: '{}' } },
        ],
      },
      { role: 'tool', content: 'sunny, 21 °C', tool_call_id: 'call_1' },
      { role: 'tool', content: '14:02', tool_call_id: 'call_2' },
    ]);
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'weather',
          description: 'Current weather of a city.',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
      { type: 'function', function: { name: 'clock', parameters: { type: 'object', properties: {} } } },
    ]);
  });

  it('sends max_completion_tokens when configured to', async () => {
    const scripted = await start({ content: 'ok' });
    const model = new OpenAIChatModel({
      baseURL: scripted.baseURL,
      model: 'o3-mini',
      outputTokensParameter: 'max_completion_tokens',
    });
    await collect(model.streamChat({ messages, maxOutputTokens: 100 }));
    expect(scripted.requests[0]!.body.max_completion_tokens).toBe(100);
    expect(scripted.requests[0]!.body).not.toHaveProperty('max_tokens');
  });

  it('assembles tool calls streamed in fragments and finishes with tool_calls', async () => {
    const scripted = await start({
      content: 'Let me check.',
      toolCalls: [
        { id: 'call_a', name: 'weather', arguments: '{"city":"Oslo","unit":"celsius"}' },
        { id: 'call_b', name: 'weather', arguments: '{"city":"Bergen","unit":"celsius"}' },
      ],
    });
    const events = await collect(chat(scripted.baseURL));
    const done = doneOf(events);
    expect(done.finishReason).toBe('tool_calls');
    expect(done.text).toBe('Let me check.');
    expect(done.toolCalls).toEqual([
      { id: 'call_a', name: 'weather', argumentsJson: '{"city":"Oslo","unit":"celsius"}' },
      { id: 'call_b', name: 'weather', argumentsJson: '{"city":"Bergen","unit":"celsius"}' },
    ]);
    // Argument fragments are never yielded as text.
    expect(
      events
        .filter((e) => e.type === 'delta')
        .map((e) => e.text)
        .join(''),
    ).toBe('Let me check.');
  });

  it('reports a tool-call-only reply with empty text and no deltas', async () => {
    const scripted = await start({
      content: '',
      toolCalls: [{ id: 'call_x', name: 'clock', arguments: '{}' }],
    });
    const events = await collect(chat(scripted.baseURL));
    expect(events).toHaveLength(1);
    expect(doneOf(events)).toMatchObject({
      text: '',
      finishReason: 'tool_calls',
      toolCalls: [{ id: 'call_x', name: 'clock', argumentsJson: '{}' }],
    });
  });

  it.each(['length', 'content_filter'] as const)('reports the finish reason %s', async (finishReason) => {
    const scripted = await start({ content: 'Knead for', finishReason });
    const done = doneOf(await collect(chat(scripted.baseURL)));
    expect(done.finishReason).toBe(finishReason);
    expect(done.text).toBe('Knead for');
    expect(done.toolCalls).toEqual([]);
  });

  it('drops tool calls cut off at the output limit', async () => {
    const scripted = await start({
      content: '',
      toolCalls: [{ id: 'call_a', name: 'weather', arguments: '{"city":"Os' }],
      finishReason: 'length',
    });
    const done = doneOf(await collect(chat(scripted.baseURL)));
    expect(done.finishReason).toBe('length');
    expect(done.toolCalls).toEqual([]);
  });

  it('aborts mid-stream: rejects with the signal reason and closes the connection to the model', async () => {
    const scripted = await start({
      content: 'one two three four five six seven eight nine ten',
      chunks: ['one ', 'two ', 'three ', 'four ', 'five ', 'six ', 'seven ', 'eight ', 'nine ', 'ten'],
      chunkDelayMs: 100,
    });
    const controller = new AbortController();
    const reason = new Error('caller cancelled');
    const seen: string[] = [];
    const iteration = (async () => {
      for await (const event of chat(scripted.baseURL, { signal: controller.signal }, { maxRetries: 3 })) {
        if (event.type === 'delta') {
          seen.push(event.text);
          if (seen.length === 2) controller.abort(reason);
        }
      }
    })();
    await expect(iteration).rejects.toBe(reason);
    await scripted.settled();
    expect(seen).toEqual(['one ', 'two ']);
    expect(scripted.aborted).toBe(1);
    expect(scripted.requests).toHaveLength(1);
    expect(scripted.requests[0]!.abortedByClient).toBe(true);
  });

  it('closes the connection when the consumer stops iterating early', async () => {
    const scripted = await start({
      content: 'a b c d e f',
      chunks: ['a ', 'b ', 'c ', 'd ', 'e ', 'f'],
      chunkDelayMs: 50,
    });
    for await (const event of chat(scripted.baseURL)) {
      expect(event).toEqual({ type: 'delta', text: 'a ' });
      break;
    }
    await scripted.settled();
    expect(scripted.aborted).toBe(1);
  });

  it('rejects at once when the signal is already aborted, without calling the model', async () => {
    const scripted = await start({ content: 'never' });
    const reason = new Error('too late');
    await expect(collect(chat(scripted.baseURL, { signal: AbortSignal.abort(reason) }))).rejects.toBe(reason);
    expect(scripted.requests).toHaveLength(0);
  });

  it('a completed stream does not count as aborted', async () => {
    const scripted = await start({ content: 'done', chunkDelayMs: 5 });
    await collect(chat(scripted.baseURL));
    await scripted.settled();
    expect(scripted.aborted).toBe(0);
    expect(scripted.requests[0]!.abortedByClient).toBe(false);
  });

  it('retries a 503 before the reply has begun', async () => {
    const scripted = await start({ status: 503 }, { content: 'Ten minutes.' });
    const done = doneOf(await collect(chat(scripted.baseURL, {}, { maxRetries: 1 })));
    expect(done.text).toBe('Ten minutes.');
    expect(scripted.requests).toHaveLength(2);
  });

  it('reports a model that keeps answering 503 as UNAVAILABLE DEPENDENCY_UNAVAILABLE (dependency model)', async () => {
    const scripted = await start({ status: 503 }, { status: 503 });
    const { error, events } = await engramRejection(chat(scripted.baseURL, {}, { maxRetries: 1 }));
    expect(events).toEqual([]);
    expect(scripted.requests).toHaveLength(2);
    expect(error.code).toBe(Code.Unavailable);
    expect(error.reason).toBe('DEPENDENCY_UNAVAILABLE');
    expect(error.metadata).toEqual({ dependency: 'model' });
    expect(error.message).toMatch(/HTTP 503/u);
    expect(error.message).toMatch(/2 tries/u);
  });

  it('reports a reply cut off mid-stream as UNAVAILABLE after the deltas already sent, without retrying', async () => {
    const scripted = await start(
      { content: 'one two three', chunks: ['one ', 'two ', 'three'], cutAfterChunks: 2 },
      { content: 'never asked' },
    );
    const { error, events } = await engramRejection(chat(scripted.baseURL, {}, { maxRetries: 3 }));
    expect(events).toEqual([
      { type: 'delta', text: 'one ' },
      { type: 'delta', text: 'two ' },
    ]);
    expect(error.code).toBe(Code.Unavailable);
    expect(error.reason).toBe('DEPENDENCY_UNAVAILABLE');
    expect(error.metadata).toEqual({ dependency: 'model' });
    expect(scripted.requests).toHaveLength(1);
  });

  it('times out a stream that goes silent as UNAVAILABLE', async () => {
    const scripted = await start({ content: 'slow reply', chunks: ['slow ', 'reply'], chunkDelayMs: 3_000 });
    const started = performance.now();
    const { error } = await engramRejection(chat(scripted.baseURL, {}, { timeoutMs: 1_000, maxRetries: 2 }));
    expect(performance.now() - started).toBeLessThan(2_500);
    expect(error.code).toBe(Code.Unavailable);
    expect(error.message).toMatch(/no data for 1000 ms/u);
    expect(scripted.requests).toHaveLength(1);
  });

  it('does not time out a long reply whose chunks keep coming', async () => {
    const scripted = await start({
      content: 'a b c d e f g h',
      chunks: ['a ', 'b ', 'c ', 'd ', 'e ', 'f ', 'g ', 'h'],
      chunkDelayMs: 200,
    });
    const done = doneOf(await collect(chat(scripted.baseURL, {}, { timeoutMs: 1_000 })));
    expect(done.text).toBe('a b c d e f g h');
  });

  it('reports context_length_exceeded as INVALID_ARGUMENT FIELD_INVALID on budget.total_tokens, without retrying', async () => {
    const scripted = await start({
      status: 400,
      code: 'context_length_exceeded',
      message:
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens.",
    });
    const { error } = await engramRejection(chat(scripted.baseURL, {}, { maxRetries: 2 }));
    expect(scripted.requests).toHaveLength(1);
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.reason).toBe('FIELD_INVALID');
    expect(error.metadata).toEqual({ field: 'budget.total_tokens' });
  });

  it('recognises a too-long request by its message when the server sends no code (vLLM)', async () => {
    const scripted = await start({
      status: 400,
      message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
    });
    const { error } = await engramRejection(chat(scripted.baseURL));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.metadata).toEqual({ field: 'budget.total_tokens' });
  });

  it('reports an unknown requested model as FIELD_INVALID on model, an unknown configured one as UNAVAILABLE', async () => {
    const scripted = await start(
      { status: 404, code: 'model_not_found', message: 'The model `nope` does not exist' },
      { status: 404, code: 'model_not_found', message: 'The model `scripted-model` does not exist' },
    );
    const requested = await engramRejection(chat(scripted.baseURL, { model: 'nope' }));
    expect(requested.error.code).toBe(Code.InvalidArgument);
    expect(requested.error.metadata).toEqual({ field: 'model' });
    const configured = await engramRejection(chat(scripted.baseURL));
    expect(configured.error.code).toBe(Code.Unavailable);
    expect(configured.error.metadata).toEqual({ dependency: 'model' });
  });

  it('reports a refused sampling parameter as FIELD_INVALID on its generation field', async () => {
    const scripted = await start({
      status: 400,
      param: 'temperature',
      message: 'temperature must be at most 2',
    });
    const { error } = await engramRejection(chat(scripted.baseURL, { temperature: 3 }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.metadata).toEqual({ field: 'generation.temperature' });
  });

  it('reports other client errors (bad credentials) as UNAVAILABLE without retrying', async () => {
    const scripted = await start({ status: 401, message: 'invalid api key' });
    const { error } = await engramRejection(chat(scripted.baseURL, {}, { maxRetries: 2 }));
    expect(scripted.requests).toHaveLength(1);
    expect(error.code).toBe(Code.Unavailable);
    expect(error.message).toMatch(/HTTP 401/u);
  });

  it('rejects a tool whose parameter schema is not a JSON object before calling the model', async () => {
    const scripted = await start({ content: 'never' });
    const { error } = await engramRejection(
      chat(scripted.baseURL, { tools: [{ name: 'bad', description: '', parametersJsonSchema: '[1]' }] }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.metadata).toEqual({ field: 'tools[0].parameters_json_schema' });
    expect(scripted.requests).toHaveLength(0);
  });
});
