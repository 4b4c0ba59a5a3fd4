import { describe, expect, it } from '@jest/globals';
import { TOOL_CALL_OVERHEAD_TOKENS, tokenizerFor } from './tokenizer.js';
import type { AssembledMessage } from './types.js';

function message(overrides: Partial<AssembledMessage> = {}): AssembledMessage {
  return { role: 'USER', content: 'Hello there', name: '', toolCallId: '', toolCalls: [], ...overrides };
}

describe('tokenizerFor', () => {
  it.each([
    ['gpt-4o', 'o200k_base'],
    ['gpt-4o-mini-2024-07-18', 'o200k_base'],
    ['gpt-4.1-nano', 'o200k_base'],
    ['gpt-4.5-preview', 'o200k_base'],
    ['gpt-5', 'o200k_base'],
    ['o1-mini', 'o200k_base'],
    ['o3', 'o200k_base'],
    ['o4-mini', 'o200k_base'],
    ['gpt-4', 'cl100k_base'],
    ['gpt-4-turbo', 'cl100k_base'],
    ['gpt-4-0613', 'cl100k_base'],
    ['gpt-3.5-turbo', 'cl100k_base'],
    ['GPT-4O', 'o200k_base'],
  ])('maps %s exactly to %s', (model, encoding) => {
    const tk = tokenizerFor(model);
    expect(tk.encoding).toBe(encoding);
    expect(tk.approximate).toBe(false);
    expect(tk.safetyFactor).toBe(1);
    expect(tk.model).toBe(model);
  });

  it.each(['qwen-max', '', 'claude-3', 'gpt-3', 'o2'])('counts unknown model %p approximately', (model) => {
    const tk = tokenizerFor(model);
    expect(tk.encoding).toBe('o200k_base');
    expect(tk.approximate).toBe(true);
    expect(tk.safetyFactor).toBe(1.1);
  });

  it('honours configured extra mappings, longest prefix first, before the built-in ones', () => {
    const tk = tokenizerFor('qwen-max', { extraMappings: { qwen: 'cl100k_base' } });
    expect(tk).toMatchObject({ encoding: 'cl100k_base', approximate: false });
    const override = tokenizerFor('gpt-4-custom', { extraMappings: { 'gpt-4-c': 'o200k_base' } });
    expect(override).toMatchObject({ encoding: 'o200k_base', approximate: false });
  });

  it('reports the chat-format constants and known context windows', () => {
    expect(tokenizerFor('gpt-4o')).toMatchObject({
      tokensPerMessage: 3,
      replyPrimingTokens: 3,
      contextWindowTokens: 128_000,
    });
    expect(tokenizerFor('gpt-4o-mini').contextWindowTokens).toBe(128_000);
    expect(tokenizerFor('gpt-4.1-mini').contextWindowTokens).toBe(1_047_576);
    expect(tokenizerFor('gpt-3.5-turbo').contextWindowTokens).toBe(16_385);
    expect(tokenizerFor('gpt-4').contextWindowTokens).toBe(8_192);
    expect(tokenizerFor('gpt-4-turbo-2024-04-09').contextWindowTokens).toBe(128_000);
    expect(tokenizerFor('qwen-max').contextWindowTokens).toBe(0);
  });

  it('counts text with the encoding of the model', () => {
    expect(tokenizerFor('gpt-4o').count('')).toBe(0);
    expect(tokenizerFor('gpt-4o').count('hello world')).toBe(2);
    expect(tokenizerFor('gpt-4').count('hello world')).toBe(2);
    // "你好世界" differs between the encodings.
    expect(tokenizerFor('gpt-4o').count('你好世界')).not.toBe(tokenizerFor('gpt-4').count('你好世界'));
  });

  it('multiplies approximate counts by 1.10 and rounds up, exactly for multiples of ten', () => {
    const exact = tokenizerFor('gpt-4o');
    const approx = tokenizerFor('some-model');
    const ten = 'one two three four five six seven eight nine ten';
    expect(exact.count(ten)).toBe(10);
    expect(approx.count(ten)).toBe(11);
    expect(approx.count('hello world')).toBe(3); // ceil(2.2)
    expect(approx.count('')).toBe(0);
  });

  it('counts special-token text as plain text instead of throwing', () => {
    const tk = tokenizerFor('gpt-4o');
    expect(tk.count('a <|endoftext|> b')).toBeGreaterThan(3);
  });

  it('counts a message as overhead + content (+ name + 1) + tool calls', () => {
    const tk = tokenizerFor('gpt-4o');
    const content = tk.count('Hello there');
    expect(tk.countMessage(message())).toBe(3 + content);
    expect(tk.countMessage(message({ name: 'alice' }))).toBe(3 + content + tk.count('alice') + 1);
    const withCall = message({
      role: 'ASSISTANT',
      content: '',
      toolCalls: [{ id: 'call_1', name: 'get_weather', argumentsJson: '{"city":"Paris"}' }],
    });
    expect(tk.countMessage(withCall)).toBe(
      3 + tk.count('get_weather') + tk.count('{"city":"Paris"}') + TOOL_CALL_OVERHEAD_TOKENS,
    );
  });

  it('counts a tool definition with the cookbook formula', () => {
    const tk = tokenizerFor('gpt-4o');
    const tool = {
      name: 'get_weather',
      description: 'Get the weather.',
      parametersJsonSchema: JSON.stringify({
        type: 'object',
        properties: {
          city: { type: 'string', description: 'The city.' },
          unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        },
        required: ['city'],
      }),
    };
    const expected =
      7 + // func_init (o200k_base)
      tk.count('get_weather:Get the weather') +
      3 + // prop_init
      (3 + tk.count('city:string:The city')) +
      (3 - 3 + (3 + tk.count('celsius')) + (3 + tk.count('fahrenheit')) + tk.count('unit:string:'));
    expect(tk.countToolParameter(tool)).toBe(expected);
    expect(tk.toolListOverheadTokens).toBe(12);
    // cl100k_base models start each function with 10 tokens.
    const cl = tokenizerFor('gpt-4');
    expect(cl.countToolParameter({ ...tool, parametersJsonSchema: '' })).toBe(
      10 + cl.count('get_weather:Get the weather'),
    );
  });

  it('counts nested property schemas instead of ignoring them', () => {
    const tk = tokenizerFor('gpt-4o');
    const flat = { type: 'object', properties: { tags: { type: 'array' } } };
    const nested = { type: 'object', properties: { tags: { type: 'array', items: { type: 'string' } } } };
    const count = (schema: object) =>
      tk.countToolParameter({ name: 't', description: '', parametersJsonSchema: JSON.stringify(schema) });
    expect(count(nested)).toBe(count(flat) + tk.count('{"items":{"type":"string"}}'));
  });

  it('is fast enough for thousands of counts per request', () => {
    const tk = tokenizerFor('gpt-4o');
    const start = performance.now();
    for (let i = 0; i < 5000; i++)
      tk.countMessage(message({ content: `message ${i}: some ordinary chat text.` }));
    expect(performance.now() - start).toBeLessThan(2000);
  });
});
