import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from '@jest/globals';
import { ChatAppendMode, ChatDoneEventSchema, FinishReason, ToolRendering } from '@engram/contracts/context';
import { MessageRole } from '@engram/contracts/ingestion';
import { isEngramError } from '@engram/errors';
import {
  chatRequestOf,
  closingChunksOf,
  completionOf,
  conversationExternalId,
  parseChatCompletionBody,
  planChat,
} from './mapping.js';

const plan = (body: Record<string, unknown>) => planChat(parseChatCompletionBody({ model: 'm', ...body }));

/** The field and reason a body is refused with. */
function refusal(body: Record<string, unknown>): [string | undefined, string] {
  try {
    plan(body);
  } catch (error) {
    if (isEngramError(error)) return [String(error.metadata['field']), error.reason];
    throw error;
  }
  throw new Error('expected the body to be refused');
}

const toolCall = {
  id: 'call_1',
  type: 'function',
  function: { name: 'weather', arguments: '{"city":"Oslo"}' },
};

describe('planChat: a user turn', () => {
  it('maps the last user message, the system and developer messages, generation and tools', () => {
    const p = plan({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: [{ type: 'text', text: 'Answer in English.' }] },
        { role: 'user', content: 'Hi, I am Ada.' },
        { role: 'assistant', content: 'Hello Ada.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What' },
            { type: 'text', text: 'is my name?' },
          ],
        },
      ],
      max_tokens: 50,
      max_completion_tokens: 60,
      temperature: 0.5,
      top_p: 0.9,
      stop: 'END',
      tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }],
      seed: 7,
    });
    expect(p).toMatchObject({
      systemPrompt: 'Be brief.\n\nAnswer in English.',
      userMessage: 'What\nis my name?',
      appendMode: ChatAppendMode.BOTH,
      generation: { maxOutputTokens: 60, temperature: 0.5, topP: 0.9, stop: ['END'] },
      tools: [{ name: 'weather', description: '', parametersJsonSchema: '{"type":"object"}' }],
      toolResults: [],
      stream: false,
    });
    expect(p.history).toEqual([
      { role: MessageRole.USER, content: 'Hi, I am Ada.' },
      { role: MessageRole.ASSISTANT, content: 'Hello Ada.', toolCalls: [] },
    ]);
    expect(chatRequestOf(p, 'sessions/s1', 4000)).toMatchObject({
      session: 'sessions/s1',
      userMessage: 'What\nis my name?',
      model: 'm',
      budget: { totalTokens: 4000 },
      systemPrompt: 'Be brief.\n\nAnswer in English.',
      toolRendering: ToolRendering.PARAMETER,
      appendMode: ChatAppendMode.BOTH,
    });
  });

  it('derives one external id per conversation from its system prompt and first user message', () => {
    const first = plan({
      messages: [
        { role: 'system', content: 'S' },
        { role: 'user', content: 'Hello' },
      ],
    });
    const later = plan({
      messages: [
        { role: 'system', content: 'S' },
        { role: 'user', content: 'Hello' },
        { role: 'assistant', content: 'Hi' },
        { role: 'user', content: 'More' },
      ],
    });
    expect(later.externalId).toBe(first.externalId);
    expect(first.externalId).toBe(conversationExternalId('S', 'Hello'));
    expect(first.externalId).toMatch(/^[A-Za-z0-9_.:/-]{1,128}$/);
    expect(conversationExternalId('S', 'Hello!')).not.toBe(first.externalId);
  });

  it('reads the stream flags', () => {
    const p = plan({
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect([p.stream, p.includeUsage]).toEqual([true, true]);
  });
});

describe('planChat: a tool-loop continuation', () => {
  it('answers in REPLY_AFTER_TOOLS with the trailing tool results and the question before them', () => {
    const p = plan({
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        { role: 'assistant', content: null, tool_calls: [toolCall] },
        { role: 'tool', tool_call_id: 'call_1', content: 'Rain' },
      ],
    });
    expect(p.appendMode).toBe(ChatAppendMode.REPLY_AFTER_TOOLS);
    expect(p.userMessage).toBe('Weather in Oslo?');
    expect(p.toolResults).toEqual([{ role: MessageRole.TOOL, content: 'Rain', toolCallId: 'call_1' }]);
    expect(p.history).toEqual([
      { role: MessageRole.USER, content: 'Weather in Oslo?' },
      {
        role: MessageRole.ASSISTANT,
        content: '',
        toolCalls: [{ id: 'call_1', name: 'weather', argumentsJson: '{"city":"Oslo"}' }],
      },
    ]);
  });

  it('refuses tool results that follow no tool call', () => {
    expect(
      refusal({
        messages: [
          { role: 'user', content: 'Q' },
          { role: 'tool', tool_call_id: 'x', content: 'r' },
        ],
      }),
    ).toEqual(['messages[1]', 'FIELD_INVALID']);
  });
});

describe('parseChatCompletionBody: refusals name the field', () => {
  it.each([
    [{ messages: [] }, 'messages', 'FIELD_INVALID'],
    [{ model: undefined, messages: [{ role: 'user', content: 'Hi' }] }, 'model', 'FIELD_REQUIRED'],
    [{ messages: [{ role: 'robot', content: 'Hi' }] }, 'messages[0].role', 'FIELD_INVALID'],
    [
      { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] },
      'messages[0].content',
      'FIELD_INVALID',
    ],
    [{ messages: [{ role: 'assistant', content: 'last' }] }, 'messages[0].role', 'FIELD_INVALID'],
    [{ messages: [{ role: 'user', content: 'Hi' }], n: 3 }, 'n', 'FIELD_INVALID'],
    [
      { messages: [{ role: 'user', content: 'Hi' }], tool_choice: 'required' },
      'tool_choice',
      'FIELD_INVALID',
    ],
    [
      { messages: [{ role: 'user', content: 'Hi' }], response_format: { type: 'json_object' } },
      'response_format',
      'FIELD_INVALID',
    ],
    [{ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 0 }, 'max_tokens', 'FIELD_INVALID'],
  ])('%j → %s %s', (body, field, reason) => {
    expect(refusal(body)).toEqual([field, reason]);
  });

  it('accepts the defaults of the refused options and ignores upstream-only ones', () => {
    const p = plan({
      messages: [{ role: 'user', content: 'Hi' }],
      n: 1,
      tool_choice: 'auto',
      response_format: { type: 'text' },
      logprobs: false,
      user: 'u-1',
      presence_penalty: 0.3,
    });
    expect(p.userMessage).toBe('Hi');
  });
});

describe('completions', () => {
  const identity = { id: 'chatcmpl-1', created: 1, model: 'm' };
  const done = create(ChatDoneEventSchema, {
    text: '',
    toolCalls: [{ id: 'call_1', name: 'weather', argumentsJson: '{"city":"Oslo"}' }],
    finishReason: FinishReason.TOOL_CALLS,
    tokenUsage: { promptTokens: 12n, completionTokens: 3n },
  });
  const wire = {
    id: 'call_1',
    type: 'function',
    function: { name: 'weather', arguments: '{"city":"Oslo"}' },
  };

  it('a tool-call reply: null content, the calls unchanged, finish reason tool_calls, usage', () => {
    expect(completionOf(identity, done)).toEqual({
      ...identity,
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: null, refusal: null, tool_calls: [wire] },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
    });
  });

  it('closing chunks: delta.tool_calls with indexes, the finish reason, then usage when asked', () => {
    const chunks = closingChunksOf(identity, done, true);
    expect(chunks.map((c) => c.choices)).toEqual([
      [{ index: 0, delta: { tool_calls: [{ index: 0, ...wire }] }, logprobs: null, finish_reason: null }],
      [{ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' }],
      [],
    ]);
    expect(chunks.at(-1)).toMatchObject({ usage: { total_tokens: 15 } });
    expect(
      closingChunksOf(identity, create(ChatDoneEventSchema, { finishReason: FinishReason.LENGTH }), false),
    ).toEqual([
      {
        ...identity,
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'length' }],
      },
    ]);
  });
});
