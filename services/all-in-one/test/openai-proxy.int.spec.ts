/**
 * The OpenAI-compatible memory proxy end to end: the official `openai` client, with only
 * `baseURL` and `apiKey` (the Engram bearer token) changed, against the proxy in front of a real
 * all-in-one (the proxy mounted on its own port under `/v1/`) whose chat model is the scripted
 * OpenAI-compatible server (the one allowed fake).
 */
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import OpenAI, { APIError } from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import {
  ChatAppendMode,
  ChatRole,
  ContextLayer,
  LayerStatus,
  type ChatResponse,
} from '@engram/contracts/context';
import { MessageRole } from '@engram/contracts/ingestion';
import {
  startScriptedOpenAI,
  type ChatCompletionBody,
  type RecordedRequest,
  type ScriptedOpenAI,
  type ScriptedReply,
} from '../../../libs/llm/test/scripted-openai.js';
import { callerOf, failure, newSecret, startServer, tokenFor, type TestServer } from './harness.js';

const secret = newSecret();
/** The next streamed chat replies, in order (the proxy's only model calls are Chat's streams). */
const chatReplies: ScriptedReply[] = [];
let upstream: ScriptedOpenAI;
/** An upstream without a `/models` route (for the fallback of the model list). */
let bareUpstream: ScriptedOpenAI;
let engram: TestServer;
/** The same, over the upstream without `/models`. */
let bare: TestServer;
/** An all-in-one without a chat model. */
let unconfigured: TestServer;

const llmEnv = (baseURL: string): Record<string, string> => ({
  ENGRAM_LLM_BASE_URL: baseURL,
  ENGRAM_LLM_MODEL: 'scripted-model',
  ENGRAM_LLM_API_KEY: 'upstream-key',
  ENGRAM_LLM_MAX_RETRIES: '0',
  ENGRAM_CHAT_ALLOWED_MODELS: 'scripted-large',
});

/**
 * The proxy's base URL on `server`: the all-in-one's own port, where the context module mounts the
 * handler under `/v1/` (HTTP/1.1 beside gRPC, decision 0035) with its model list
 * (`listChatModels`), and the server authenticates the bearer before the handler runs.
 */
function proxyOf(server: TestServer): string {
  return `${server.server.url}/v1`;
}

let proxyURL: string;
let bareProxyURL: string;
let unconfiguredURL: string;

beforeAll(async () => {
  const script = (request: RecordedRequest): ScriptedReply =>
    request.body.stream === true
      ? (chatReplies.shift() ?? { status: 500, message: 'no chat reply scripted' })
      : { status: 500, message: 'only chat replies are scripted' };
  upstream = await startScriptedOpenAI(script, { models: ['scripted-model', 'scripted-large'] });
  bareUpstream = await startScriptedOpenAI(script);
  engram = await startServer(secret, { env: llmEnv(upstream.baseURL) });
  bare = await startServer(secret, { env: llmEnv(bareUpstream.baseURL) });
  unconfigured = await startServer(secret);
  proxyURL = proxyOf(engram);
  bareProxyURL = proxyOf(bare);
  unconfiguredURL = proxyOf(unconfigured);
}, 120_000);

afterAll(async () => {
  await engram.stop();
  await bare.stop();
  await unconfigured.stop();
  await upstream.close();
  await bareUpstream.close();
});

/** The official client as an app would configure it: only the base URL and the key differ. */
async function clientFor(subject: string, baseURL = proxyURL): Promise<OpenAI> {
  return new OpenAI({
    baseURL,
    apiKey: await tokenFor(secret, { subject, tenantId: 'acme' }),
    maxRetries: 0,
  });
}

const as = callerOf(secret);

/** The chat-completions requests the upstream received (Chat's model calls), newest last. */
const chatCalls = (): ChatCompletionBody[] =>
  upstream.requests.filter((r) => r.body.stream === true).map((r) => r.body);

async function messagesOf(session: string, subject: string) {
  const { messages } = await engram.ingestion.listMessages({ parent: session }, await as(subject));
  return messages;
}

/** The APIError a call rejects with. */
async function apiError(call: Promise<unknown>): Promise<APIError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof APIError)) throw new Error(`expected an APIError, got ${String(error)}`);
  return error;
}

describe('POST /v1/chat/completions', () => {
  it('remembers across turns: turn 3 sees a fact from turn 1 through the session, not the client', async () => {
    const client = await clientFor('ann');
    chatReplies.push({ content: 'Noted: your sister Ottoline lives in Reykjavik.' });
    const first = await client.chat.completions
      .create({
        model: 'scripted-model',
        messages: [
          { role: 'system', content: 'You are a helpful assistant.' },
          { role: 'user', content: 'My sister Ottoline lives in Reykjavik.' },
        ],
      })
      .withResponse();
    const session = first.response.headers.get('x-engram-session')!;
    expect(session).toMatch(/^sessions\/[0-9A-Z]+$/);
    expect(first.data).toMatchObject({
      object: 'chat.completion',
      model: 'scripted-model',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Noted: your sister Ottoline lives in Reykjavik.' },
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    });
    expect(first.response.headers.get('x-request-id')).toBeTruthy();

    // Turns 2 and 3 send only the new message, and the session header they got back.
    const headers = { 'x-engram-session': session };
    chatReplies.push({ content: 'Sounds lovely.' });
    const second = await client.chat.completions
      .create(
        { model: 'scripted-model', messages: [{ role: 'user', content: 'I am planning a trip.' }] },
        { headers },
      )
      .withResponse();
    expect(second.response.headers.get('x-engram-session')).toBe(session);
    chatReplies.push({ content: 'In Reykjavik.' });
    const third = await client.chat.completions.create(
      { model: 'scripted-model', messages: [{ role: 'user', content: 'Where does my sister live?' }] },
      { headers },
    );
    expect(third.choices[0]!.message.content).toBe('In Reykjavik.');
    expect(third.id).not.toBe(first.data.id);
    const prompt = chatCalls().at(-1)!.messages!;
    expect(prompt.at(-1)).toMatchObject({ role: 'user', content: 'Where does my sister live?' });
    expect(prompt.some((m) => m.content.includes('Ottoline lives in Reykjavik'))).toBe(true);
    expect((await messagesOf(session, 'ann')).map((m) => m.role)).toEqual([
      MessageRole.USER,
      MessageRole.ASSISTANT,
      MessageRole.USER,
      MessageRole.ASSISTANT,
      MessageRole.USER,
      MessageRole.ASSISTANT,
    ]);
  });

  it('without a header, lands every turn of a conversation sent in full in one session', async () => {
    const client = await clientFor('bea');
    const opening = [
      { role: 'system' as const, content: 'Be brief.' },
      { role: 'user' as const, content: 'Hello from a stateless app.' },
    ];
    chatReplies.push({ content: 'Hi!' });
    const first = await client.chat.completions
      .create({ model: 'scripted-model', messages: opening })
      .withResponse();
    const session = first.response.headers.get('x-engram-session')!;
    chatReplies.push({ content: 'Fine.' });
    const second = await client.chat.completions
      .create({
        model: 'scripted-model',
        messages: [
          ...opening,
          { role: 'assistant', content: 'Hi!' },
          { role: 'user', content: 'How are you?' },
        ],
      })
      .withResponse();
    expect(second.response.headers.get('x-engram-session')).toBe(session);
    // The resent history is not appended again: the session is the source of truth.
    expect((await messagesOf(session, 'bea')).map((m) => m.content)).toEqual([
      'Hello from a stateless app.',
      'Hi!',
      'How are you?',
      'Fine.',
    ]);
  });

  it('appends the earlier messages of a conversation when it creates its session', async () => {
    const client = await clientFor('cal');
    chatReplies.push({ content: 'Blue, you said.' });
    const { response } = await client.chat.completions
      .create({
        model: 'scripted-model',
        messages: [
          { role: 'user', content: 'My favourite colour is blue.' },
          { role: 'assistant', content: 'Good to know.' },
          { role: 'user', content: 'What is my favourite colour?' },
        ],
      })
      .withResponse();
    const session = response.headers.get('x-engram-session')!;
    expect((await messagesOf(session, 'cal')).map((m) => m.content)).toEqual([
      'My favourite colour is blue.',
      'Good to know.',
      'What is my favourite colour?',
      'Blue, you said.',
    ]);
    // The model sees them as the session's recent turns.
    expect(
      chatCalls()
        .at(-1)!
        .messages!.slice(-3)
        .map((m) => m.content),
    ).toEqual(['My favourite colour is blue.', 'Good to know.', 'What is my favourite colour?']);
  });

  it('streams chunks whose deltas concatenate to the answer, with usage last', async () => {
    const client = await clientFor('dan');
    chatReplies.push({ content: 'Lisbon is sunny in May.', chunks: ['Lisbon ', 'is sunny ', 'in May.'] });
    const { data: stream, response } = await client.chat.completions
      .create({
        model: 'scripted-model',
        messages: [{ role: 'user', content: 'Weather in Lisbon in May?' }],
        stream: true,
        stream_options: { include_usage: true },
        max_completion_tokens: 64,
        temperature: 0.2,
      })
      .withResponse();
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const session = response.headers.get('x-engram-session')!;
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('Lisbon is sunny in May.');
    expect(new Set(chunks.map((c) => `${c.object} ${c.id}`)).size).toBe(1);
    expect(chunks[0]!.object).toBe('chat.completion.chunk');
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 5 } });
    expect(chatCalls().at(-1)).toMatchObject({ max_tokens: 64, temperature: 0.2 });
    expect((await messagesOf(session, 'dan')).map((m) => m.content)).toEqual([
      'Weather in Lisbon in May?',
      'Lisbon is sunny in May.',
    ]);
  });

  it('passes tool calls through unchanged and continues the loop with the tool result', async () => {
    const client = await clientFor('eve');
    const tools = [
      {
        type: 'function' as const,
        function: {
          name: 'get_weather',
          description: 'Current weather of a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ];
    const question = { role: 'user' as const, content: 'Weather in Lisbon now?' };
    chatReplies.push({
      content: '',
      toolCalls: [{ id: 'call_7', name: 'get_weather', arguments: '{"city":"Lisbon"}' }],
    });
    const called = await client.chat.completions
      .create({ model: 'scripted-model', messages: [question], tools })
      .withResponse();
    const session = called.response.headers.get('x-engram-session')!;
    const choice = called.data.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.tool_calls).toEqual([
      { id: 'call_7', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lisbon"}' } },
    ]);
    expect(chatCalls().at(-1)!.tools).toMatchObject([
      { type: 'function', function: { name: 'get_weather' } },
    ]);

    // The app runs the tool and sends its whole loop back, as OpenAI apps do.
    chatReplies.push({ content: 'It is 21°C and sunny in Lisbon.' });
    const answered = await client.chat.completions
      .create({
        model: 'scripted-model',
        tools,
        messages: [
          question,
          { role: 'assistant', content: null, tool_calls: choice.message.tool_calls! },
          { role: 'tool', tool_call_id: 'call_7', content: '{"celsius":21,"sky":"sunny"}' },
        ],
      })
      .withResponse();
    expect(answered.response.headers.get('x-engram-session')).toBe(session);
    expect(answered.data.choices[0]!.message.content).toBe('It is 21°C and sunny in Lisbon.');
    const prompt = chatCalls().at(-1)!.messages!;
    expect(prompt.slice(-3)).toMatchObject([
      { role: 'user', content: 'Weather in Lisbon now?' },
      { role: 'assistant', tool_calls: [{ id: 'call_7', function: { name: 'get_weather' } }] },
      { role: 'tool', tool_call_id: 'call_7', content: '{"celsius":21,"sky":"sunny"}' },
    ]);
    const stored = await messagesOf(session, 'eve');
    expect(stored.map((m) => [m.role, m.content, m.toolCallId])).toEqual([
      [MessageRole.USER, 'Weather in Lisbon now?', ''],
      [MessageRole.ASSISTANT, '', ''],
      [MessageRole.TOOL, '{"celsius":21,"sky":"sunny"}', 'call_7'],
      [MessageRole.ASSISTANT, 'It is 21°C and sunny in Lisbon.', ''],
    ]);
  });

  it('streams tool calls as delta.tool_calls', async () => {
    const client = await clientFor('fay');
    chatReplies.push({
      content: '',
      toolCalls: [{ id: 'call_9', name: 'lookup', arguments: '{"q":"tides today"}' }],
    });
    const stream = await client.chat.completions.create({
      model: 'scripted-model',
      stream: true,
      messages: [{ role: 'user', content: 'When is high tide?' }],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
    });
    const calls = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      calls.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(calls).toEqual([
      {
        index: 0,
        id: 'call_9',
        type: 'function',
        function: { name: 'lookup', arguments: '{"q":"tides today"}' },
      },
    ]);
    expect(finish).toBe('tool_calls');
  });

  it('ends a stream that fails after it started with an error event, and appends nothing', async () => {
    const client = await clientFor('ida');
    const { session } = await engram.ingestion.createSession({ session: {} }, await as('ida'));
    chatReplies.push({
      content: 'The first part, then',
      chunks: ['The first part', ', then'],
      cutAfterChunks: 1,
    });
    const stream = await client.chat.completions.create(
      { model: 'scripted-model', stream: true, messages: [{ role: 'user', content: 'Go on.' }] },
      { headers: { 'x-engram-session': session!.name } },
    );
    let received = '';
    const error = await apiError(
      (async () => {
        for await (const chunk of stream) received += chunk.choices[0]?.delta.content ?? '';
      })(),
    );
    expect(received).toBe('The first part');
    expect(error).toMatchObject({ code: 'DEPENDENCY_UNAVAILABLE', type: 'server_error' });
    expect(error.error).toMatchObject({ metadata: { dependency: 'model' } });
    expect(await messagesOf(session!.name, 'ida')).toEqual([]);
  });

  it('cancels Chat when the client aborts mid-stream: nothing is appended', async () => {
    const client = await clientFor('gus');
    const { session } = await engram.ingestion.createSession({ session: {} }, await as('gus'));
    chatReplies.push({ content: 'x'.repeat(400), chunkDelayMs: 100 });
    const aborted = upstream.aborted;
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      {
        model: 'scripted-model',
        stream: true,
        messages: [{ role: 'user', content: 'Tell me a long story.' }],
      },
      { headers: { 'x-engram-session': session!.name }, signal: controller.signal },
    );
    // The client's stream ends quietly when its own signal aborts it.
    let received = '';
    for await (const chunk of stream) {
      received += chunk.choices[0]?.delta.content ?? '';
      if (received !== '') controller.abort();
    }
    expect(received.length).toBeLessThan(400);
    for (let i = 0; i < 50 && upstream.aborted === aborted; i++) await new Promise((r) => setTimeout(r, 100));
    expect(upstream.aborted).toBe(aborted + 1);
    expect(await messagesOf(session!.name, 'gus')).toEqual([]);
  });
});

describe('errors, OpenAI-style', () => {
  it('answers a malformed body 400 naming the field, and bad JSON 400', async () => {
    const client = await clientFor('hal');
    const empty = await apiError(client.chat.completions.create({ model: 'scripted-model', messages: [] }));
    expect(empty).toMatchObject({
      status: 400,
      code: 'FIELD_INVALID',
      param: 'messages',
      type: 'invalid_request_error',
    });
    const role = await apiError(
      client.chat.completions.create({
        model: 'scripted-model',
        messages: [{ role: 'assistant', content: 'I speak last.' }],
      }),
    );
    expect(role).toMatchObject({ status: 400, code: 'FIELD_INVALID', param: 'messages[0].role' });
    const n = await apiError(
      client.chat.completions.create({
        model: 'scripted-model',
        n: 2,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    );
    expect(n).toMatchObject({ status: 400, code: 'FIELD_INVALID', param: 'n' });

    const token = await tokenFor(secret, { subject: 'hal', tenantId: 'acme' });
    const response = await fetch(`${proxyURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{"model": "scripted-model", ',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: { code: 'MESSAGE_MALFORMED', type: 'invalid_request_error' },
    });
  });

  it("refuses a model the server does not allow with Chat's error", async () => {
    const client = await clientFor('hal');
    const error = await apiError(
      client.chat.completions.create({ model: 'gpt-unknown', messages: [{ role: 'user', content: 'Hi' }] }),
    );
    expect(error).toMatchObject({ status: 400, code: 'FIELD_INVALID', param: 'model' });
  });

  it('answers 503 naming the settings when no upstream model is configured', async () => {
    const client = await clientFor('ivy', unconfiguredURL);
    const error = await apiError(
      client.chat.completions.create({ model: 'any', messages: [{ role: 'user', content: 'Hi' }] }),
    );
    expect(error).toMatchObject({ status: 503, code: 'MODEL_NOT_CONFIGURED', type: 'server_error' });
    expect(error.message).toContain('ENGRAM_LLM_BASE_URL');
    expect(error.message).toContain('ENGRAM_LLM_MODEL');
    const models = await apiError(client.models.list());
    expect(models).toMatchObject({ status: 503, code: 'MODEL_NOT_CONFIGURED' });
  });

  it('answers a bad token 401 with the token error reason', async () => {
    const client = new OpenAI({ baseURL: proxyURL, apiKey: 'not-a-token', maxRetries: 0 });
    const error = await apiError(
      client.chat.completions.create({
        model: 'scripted-model',
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    );
    expect(error).toMatchObject({ status: 401, type: 'authentication_error', code: 'TOKEN_MALFORMED' });
  });

  it("answers another user's session 404, the RPC's NOT_FOUND", async () => {
    const { session } = await engram.ingestion.createSession({ session: {} }, await as('jon'));
    const client = await clientFor('kim');
    const error = await apiError(
      client.chat.completions.create(
        { model: 'scripted-model', messages: [{ role: 'user', content: 'Hi' }] },
        { headers: { 'x-engram-session': session!.name.replace('sessions/', '') } },
      ),
    );
    expect(error).toMatchObject({ status: 404, code: 'RESOURCE_NOT_FOUND' });
  });

  it('answers a tool result that continues no tool call with STATE_CONFLICT', async () => {
    const client = await clientFor('lou');
    const { session } = await engram.ingestion.createSession({ session: {} }, await as('lou'));
    const error = await apiError(
      client.chat.completions.create(
        {
          model: 'scripted-model',
          messages: [
            { role: 'user', content: 'Q?' },
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
            },
            { role: 'tool', tool_call_id: 'c1', content: 'ok' },
          ],
        },
        { headers: { 'x-engram-session': session!.name } },
      ),
    );
    expect(error).toMatchObject({ status: 400, code: 'STATE_CONFLICT' });
  });

  it('answers an unknown path 404, a wrong method 405 and an oversized body 413', async () => {
    const authorization = `Bearer ${await tokenFor(secret, { subject: 'hal', tenantId: 'acme' })}`;
    const unknown = await fetch(`${proxyURL}/embeddings`, {
      method: 'POST',
      headers: { authorization },
      body: '{}',
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'RESOURCE_NOT_FOUND' } });
    const method = await fetch(`${proxyURL}/chat/completions`, { headers: { authorization } });
    expect(method.status).toBe(405);
    expect(method.headers.get('allow')).toBe('POST');
    expect(await method.json()).toMatchObject({
      error: { code: 'NOT_IMPLEMENTED', metadata: { allow: 'POST' } },
    });
    const big = await fetch(`${proxyURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'scripted-model',
        messages: [{ role: 'user', content: 'x'.repeat(9 * 1024 * 1024) }],
      }),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ error: { code: 'MESSAGE_TOO_LARGE' } });
  });
});

describe('Chat in append mode REPLY_AFTER_TOOLS (the contract the proxy continues tool loops with)', () => {
  async function toolLoopSession(subject: string): Promise<string> {
    const caller = await as(subject);
    const { session } = await engram.ingestion.createSession({ session: {} }, caller);
    await engram.ingestion.appendMessages(
      {
        parent: session!.name,
        messages: [
          { role: MessageRole.USER, content: 'How long is the Tagus?' },
          {
            role: MessageRole.ASSISTANT,
            content: '',
            toolCalls: [{ id: 'call_r', name: 'river_facts', argumentsJson: '{"river":"Tagus"}' }],
          },
          { role: MessageRole.TOOL, toolCallId: 'call_r', content: '1007 km' },
        ],
      },
      caller,
    );
    return session!.name;
  }

  it('ends the assembly with the tool result, leaves USER_MESSAGE empty and appends only the reply', async () => {
    const session = await toolLoopSession('ned');
    chatReplies.push({ content: 'The Tagus is 1007 km long.' });
    const events: ChatResponse[] = [];
    const call = engram.context.chat(
      {
        session,
        userMessage: 'How long is the Tagus?',
        budget: { totalTokens: 2_000 },
        appendMode: ChatAppendMode.REPLY_AFTER_TOOLS,
        includeContextMessages: true,
      },
      await as('ned'),
    );
    for await (const event of call) events.push(event);
    const assembly = events[0]!.event.case === 'context' ? events[0]!.event.value.assembly! : undefined;
    expect(assembly!.messages.slice(-3).map((m) => [m.role, m.content])).toEqual([
      [ChatRole.USER, 'How long is the Tagus?'],
      [ChatRole.ASSISTANT, ''],
      [ChatRole.TOOL, '1007 km'],
    ]);
    expect(assembly!.layers.find((l) => l.layer === ContextLayer.USER_MESSAGE)).toMatchObject({
      status: LayerStatus.EMPTY,
      usedTokens: 0,
    });
    expect(chatCalls().at(-1)!.messages!.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_r' });
    const done = events.at(-1)!.event;
    expect(done.case === 'done' && [done.value.userMessage, done.value.assistantMessage !== '']).toEqual([
      '',
      true,
    ]);
    expect((await messagesOf(session, 'ned')).map((m) => m.role)).toEqual([
      MessageRole.USER,
      MessageRole.ASSISTANT,
      MessageRole.TOOL,
      MessageRole.ASSISTANT,
    ]);
  });

  it('answers STATE_CONFLICT when user_message is not the question the tool results follow', async () => {
    const session = await toolLoopSession('ola');
    const request = {
      session,
      userMessage: 'Something else?',
      budget: { totalTokens: 2_000 },
      appendMode: ChatAppendMode.REPLY_AFTER_TOOLS,
    };
    const seen: ChatResponse[] = [];
    const drain = async () => {
      for await (const event of engram.context.chat(request, await as('ola'))) seen.push(event);
    };
    expect(await failure(drain())).toMatchObject({ code: Code.FailedPrecondition, reason: 'STATE_CONFLICT' });
    // Refused before the context event: nothing was streamed, nothing appended.
    expect(seen).toEqual([]);
    expect(await messagesOf(session, 'ola')).toHaveLength(3);
  });
});

describe('GET /v1/models', () => {
  it("lists the upstream's models", async () => {
    const client = await clientFor('max');
    const page = await client.models.list();
    expect(page.data).toEqual([
      { id: 'scripted-model', object: 'model', created: 0, owned_by: 'scripted' },
      { id: 'scripted-large', object: 'model', created: 0, owned_by: 'scripted' },
    ]);
    await expect(client.models.retrieve('scripted-large')).resolves.toMatchObject({ id: 'scripted-large' });
    expect(await apiError(client.models.retrieve('nope'))).toMatchObject({
      status: 404,
      code: 'RESOURCE_NOT_FOUND',
    });
  });

  it('lists the allowed chat models when the upstream has no /models route', async () => {
    const client = await clientFor('max', bareProxyURL);
    const page = await client.models.list();
    expect(page.data.map((m) => [m.id, m.owned_by])).toEqual([
      ['scripted-model', 'engram'],
      ['scripted-large', 'engram'],
    ]);
  });
});
