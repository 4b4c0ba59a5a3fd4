/**
 * Chat end to end in the production topology: the context service as its own gRPC server,
 * calling an all-in-one server (ingestion, governance, retrieval) over HTTP/2, and the scripted
 * OpenAI-compatible server as the model (the one allowed fake). Everything else is real.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createContextServer, loadConfig } from '@engram/context';
import {
  ChatAppendMode,
  ChatRole,
  CompactionMode,
  ContextService,
  ContextLayer,
  FinishReason,
  LayerStatus,
} from '@engram/contracts/context';
import type { ChatRequestSchema, ChatResponse } from '@engram/contracts/context';
import { type IngestionService, MessageRole, SessionStatus } from '@engram/contracts/ingestion';
import {
  startScriptedOpenAI,
  type RecordedRequest,
  type ScriptedOpenAI,
  type ScriptedReply,
} from '../../../libs/llm/test/scripted-openai.js';
import { callerOf, failure, newSecret, serviceSecretOf, startServer, tempDir } from './harness.js';

const secret = newSecret();
let model: ScriptedOpenAI;
/** The next streamed chat replies, in order. */
const chatReplies: ScriptedReply[] = [];
let stopAll: () => Promise<void>;
let stopContext: () => Promise<void>;
let dataDir: string;
let allUrl: string;
let ingestion: Client<typeof IngestionService>;
let context: Client<typeof ContextService>;

beforeAll(async () => {
  model = await startScriptedOpenAI((request: RecordedRequest) => {
    if (request.body.stream === true) {
      return chatReplies.shift() ?? { status: 500, message: 'no chat reply scripted' };
    }
    // Compaction asks for JSON under its schema.
    return {
      content: JSON.stringify({
        summary: 'The user and the assistant discussed the Lisbon trip at length.',
        key_points: [{ text: 'The trip to Lisbon is in May.', source_message_ids: [] }],
        open_loops: [],
        resolved_open_loop_ids: [],
      }),
    };
  });
  dataDir = tempDir();
  const all = await startServer(secret, { dataDir });
  stopAll = all.stop;
  ingestion = all.ingestion;
  allUrl = all.server.url;
  const contextServer = await createContextServer(
    loadConfig({
      ENGRAM_PORT: '0',
      ENGRAM_JWT_SECRET: secret,
      ENGRAM_SERVICE_JWT_SECRET: serviceSecretOf(secret),
      ENGRAM_DATA_DIR: dataDir,
      ENGRAM_LOG_LEVEL: 'silent',
      ENGRAM_INGESTION_URL: all.server.url,
      ENGRAM_GOVERNANCE_URL: all.server.url,
      ENGRAM_RETRIEVAL_URL: all.server.url,
      ENGRAM_LLM_BASE_URL: model.baseURL,
      ENGRAM_LLM_MODEL: 'scripted-model',
      ENGRAM_LLM_API_KEY: 'test-key',
      ENGRAM_LLM_MAX_RETRIES: '0',
      ENGRAM_CHAT_ALLOWED_MODELS: 'scripted-large',
    }),
    { handleSignals: false },
  );
  stopContext = () => contextServer.server.shutdown();
  context = createClient(ContextService, createGrpcTransport({ baseUrl: contextServer.server.url }));
}, 90_000);

afterAll(async () => {
  await stopContext();
  await stopAll();
  await model.close();
});

const as = callerOf(secret);

async function newSession(subject: string): Promise<string> {
  const { session } = await ingestion.createSession({ session: {} }, await as(subject));
  return session!.name;
}

async function collect(
  request: MessageInitShape<typeof ChatRequestSchema>,
  subject: string,
): Promise<ChatResponse[]> {
  const events: ChatResponse[] = [];
  for await (const event of context.chat(request, await as(subject))) events.push(event);
  return events;
}

const deltas = (events: ChatResponse[]) =>
  events.flatMap((e) => (e.event.case === 'delta' ? [e.event.value.text] : []));
const done = (events: ChatResponse[]) =>
  events.flatMap((e) => (e.event.case === 'done' ? [e.event.value] : []))[0]!;

describe('Chat', () => {
  it('streams the answer after the context and appends both turns', async () => {
    const session = await newSession('ann');
    chatReplies.push({ content: 'Lisbon is sunny in May.', chunks: ['Lisbon ', 'is sunny ', 'in May.'] });
    const before = model.requests.length;
    const events = await collect(
      { session, userMessage: 'What is the weather in Lisbon in May?', budget: { totalTokens: 2_000 } },
      'ann',
    );
    expect(events[0]!.event.case).toBe('context');
    expect(deltas(events)).toEqual(['Lisbon ', 'is sunny ', 'in May.']);
    const end = done(events);
    expect(end).toMatchObject({
      text: 'Lisbon is sunny in May.',
      finishReason: FinishReason.STOP,
      replayed: false,
    });
    expect(end.tokenUsage).toMatchObject({
      promptTokens: 10n,
      completionTokens: 5n,
      model: 'scripted-model',
    });
    const sent = model.requests[before]!.body;
    expect(sent.model).toBe('scripted-model');
    expect(sent.messages!.at(-1)).toMatchObject({
      role: 'user',
      content: 'What is the weather in Lisbon in May?',
    });

    const { messages } = await ingestion.listMessages({ parent: session }, await as('ann'));
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      [MessageRole.USER, 'What is the weather in Lisbon in May?'],
      [MessageRole.ASSISTANT, 'Lisbon is sunny in May.'],
    ]);
    expect(messages[1]!.metadata).toMatchObject({
      'engram.model': 'scripted-model',
      'engram.finish_reason': 'stop',
    });
    expect(end.userMessage).toBe(messages[0]!.name);
    expect(end.assistantMessage).toBe(messages[1]!.name);

    // The next turn sees the previous one as recent turns.
    chatReplies.push({ content: 'Yes.' });
    const next = await collect(
      {
        session,
        userMessage: 'Should I pack sunscreen?',
        budget: { totalTokens: 2_000 },
        includeContextMessages: true,
      },
      'ann',
    );
    const assembly = next[0]!.event.case === 'context' ? next[0]!.event.value.assembly! : undefined;
    expect(assembly!.messages.map((m) => m.content)).toEqual([
      'What is the weather in Lisbon in May?',
      'Lisbon is sunny in May.',
      'Should I pack sunscreen?',
    ]);
  });

  it('replays a completed call for a retry with the same request id', async () => {
    const session = await newSession('bob');
    chatReplies.push({ content: 'Forty-two.' });
    const request = {
      session,
      userMessage: 'The answer?',
      budget: { totalTokens: 1_000 },
      requestId: 'chat-1',
    };
    const first = await collect(request, 'bob');
    const calls = model.requests.length;
    const second = await collect(request, 'bob');
    expect(model.requests.length).toBe(calls);
    expect(done(second)).toMatchObject({
      text: 'Forty-two.',
      replayed: true,
      assistantMessage: done(first).assistantMessage,
    });
    const { messages } = await ingestion.listMessages({ parent: session }, await as('bob'));
    expect(messages).toHaveLength(2);
    expect(await failure(collect({ ...request, userMessage: 'Another question' }, 'bob'))).toMatchObject({
      code: Code.InvalidArgument,
      reason: 'REQUEST_ID_REUSED',
    });
  });

  it('returns and stores tool calls, and pairs their results in later contexts', async () => {
    const session = await newSession('cy');
    chatReplies.push({
      content: '',
      toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Lisbon"}' }],
    });
    const events = await collect(
      {
        session,
        userMessage: 'Weather in Lisbon now?',
        budget: { totalTokens: 2_000 },
        tools: [
          { name: 'get_weather', description: 'Current weather', parametersJsonSchema: '{"type":"object"}' },
        ],
      },
      'cy',
    );
    const end = done(events);
    expect(end.finishReason).toBe(FinishReason.TOOL_CALLS);
    expect(end.toolCalls).toMatchObject([
      { id: 'call_1', name: 'get_weather', argumentsJson: '{"city":"Lisbon"}' },
    ]);
    const sent = model.requests.at(-1)!.body;
    expect(sent['tools']).toMatchObject([{ type: 'function', function: { name: 'get_weather' } }]);
    await ingestion.appendMessages(
      {
        parent: session,
        messages: [{ role: MessageRole.TOOL, toolCallId: 'call_1', content: '21°C, sunny' }],
      },
      await as('cy'),
    );
    const built = await context.buildContext(
      { session, userMessage: 'So, shorts?', budget: { totalTokens: 2_000 } },
      await as('cy'),
    );
    expect(built.messages.map((m) => m.role)).toEqual([
      ChatRole.USER,
      ChatRole.ASSISTANT,
      ChatRole.TOOL,
      ChatRole.USER,
    ]);
    expect(built.messages[1]!.toolCalls.map((c) => c.id)).toEqual(['call_1']);
    expect(built.messages[2]!.toolCallId).toBe('call_1');
  });

  it('cancels the model call when the client goes away, and appends nothing', async () => {
    const session = await newSession('dee');
    chatReplies.push({ content: 'x'.repeat(400), chunkDelayMs: 100 });
    const aborted = model.aborted;
    const controller = new AbortController();
    const stream = context.chat(
      { session, userMessage: 'Tell me a long story.', budget: { totalTokens: 1_000 } },
      { ...(await as('dee')), signal: controller.signal },
    );
    await expect(
      (async () => {
        for await (const event of stream) if (event.event.case === 'delta') controller.abort();
      })(),
    ).rejects.toThrow();
    for (let i = 0; i < 50 && model.aborted === aborted; i++) await new Promise((r) => setTimeout(r, 100));
    expect(model.aborted).toBe(aborted + 1);
    const { messages } = await ingestion.listMessages({ parent: session }, await as('dee'));
    expect(messages).toHaveLength(0);
  });

  it('aborts the append when the session moved on during the call', async () => {
    const session = await newSession('eve');
    chatReplies.push({ content: 'slow answer', chunks: ['slow ', 'answer'], chunkDelayMs: 400 });
    const request = { session, userMessage: 'Hello?', budget: { totalTokens: 1_000 } };
    const pending = collect(request, 'eve');
    await new Promise((r) => setTimeout(r, 200));
    await ingestion.appendMessages(
      { parent: session, messages: [{ role: MessageRole.USER, content: 'meanwhile' }] },
      await as('eve'),
    );
    expect(await failure(pending)).toMatchObject({ code: Code.Aborted, reason: 'ETAG_MISMATCH' });
    const { messages } = await ingestion.listMessages({ parent: session }, await as('eve'));
    expect(messages.map((m) => m.content)).toEqual(['meanwhile']);
  });

  it('maps model failures and refuses models that are not allowed', async () => {
    const session = await newSession('fin');
    chatReplies.push({ status: 503, message: 'overloaded' });
    expect(
      await failure(collect({ session, userMessage: 'Hi', budget: { totalTokens: 1_000 } }, 'fin')),
    ).toMatchObject({
      code: Code.Unavailable,
      reason: 'DEPENDENCY_UNAVAILABLE',
      metadata: { dependency: 'model' },
    });
    expect(
      await failure(
        collect({ session, userMessage: 'Hi', model: 'gpt-9', budget: { totalTokens: 1_000 } }, 'fin'),
      ),
    ).toMatchObject({ code: Code.InvalidArgument, reason: 'FIELD_INVALID', metadata: { field: 'model' } });
    chatReplies.push({ content: 'Large hello.' });
    const events = await collect(
      {
        session,
        userMessage: 'Hi',
        model: 'scripted-large',
        budget: { totalTokens: 1_000 },
        appendMode: ChatAppendMode.NONE,
      },
      'fin',
    );
    expect(done(events)).toMatchObject({ text: 'Large hello.', userMessage: '', assistantMessage: '' });
    expect(model.requests.at(-1)!.body.model).toBe('scripted-large');
    const { messages } = await ingestion.listMessages({ parent: session }, await as('fin'));
    expect(messages).toHaveLength(0);
  });

  it('compacts automatically with the model once the tail passes the threshold', async () => {
    const session = await newSession('gil');
    const long = 'We talked about the trip to Lisbon, the hotels in Alfama and the tram lines. '.repeat(8);
    await ingestion.appendMessages(
      {
        parent: session,
        messages: Array.from({ length: 10 }, (_, i) => ({
          role: i % 2 === 0 ? MessageRole.USER : MessageRole.ASSISTANT,
          content: `${i}: ${long}`,
        })),
      },
      await as('gil'),
    );
    chatReplies.push({ content: 'Noted.' });
    const request: MessageInitShape<typeof ChatRequestSchema> = {
      session,
      userMessage: 'Anything else?',
      budget: { totalTokens: 4_000 },
      compaction: { thresholdTokens: 200, keepRecentTurns: 2, mode: CompactionMode.AUTO },
    };
    const end = done(await collect(request, 'gil'));
    expect(end.compactionStarted).toBe(true);
    let state = (await context.getSessionState({ name: `${session}/state` }, await as('gil'))).sessionState!;
    for (let i = 0; i < 100 && state.version === 0n; i++) {
      await new Promise((r) => setTimeout(r, 100));
      state = (await context.getSessionState({ name: `${session}/state` }, await as('gil'))).sessionState!;
    }
    expect(state.summary).toBe('The user and the assistant discussed the Lisbon trip at length.');
    expect(state.keyPoints.map((k) => k.text)).toEqual(['The trip to Lisbon is in May.']);
    expect(state.compactedThroughSequence).toBe(10n);
    expect(state.uncompactedMessageCount).toBe(2n);
  });

  it('appends only the reply in REPLY_ONLY mode and refuses when the newest message differs', async () => {
    const session = await newSession('hal');
    const who = await as('hal');
    await ingestion.appendMessages(
      { parent: session, messages: [{ role: MessageRole.USER, content: 'Ping?' }] },
      who,
    );
    chatReplies.push({ content: 'Pong.' });
    const end = done(
      await collect(
        {
          session,
          userMessage: 'Ping?',
          budget: { totalTokens: 1_000 },
          appendMode: ChatAppendMode.REPLY_ONLY,
        },
        'hal',
      ),
    );
    expect(end.userMessage).toBe('');
    const { messages } = await ingestion.listMessages({ parent: session }, who);
    expect(messages.map((m) => m.content)).toEqual(['Ping?', 'Pong.']);
    // The stored copy of the user message is not sent twice.
    const sent = model.requests.at(-1)!.body.messages!;
    expect(sent.filter((m) => m.content === 'Ping?')).toHaveLength(1);
    expect(
      await failure(
        collect(
          {
            session,
            userMessage: 'Other?',
            budget: { totalTokens: 1_000 },
            appendMode: ChatAppendMode.REPLY_ONLY,
          },
          'hal',
        ),
      ),
    ).toMatchObject({ code: Code.FailedPrecondition, reason: 'STATE_CONFLICT' });
  });

  it('refuses to append to a closed session, and stores an over-long reply cut with a flag', async () => {
    const closed = await newSession('ivy');
    const who = await as('ivy');
    await ingestion.updateSession(
      { session: { name: closed, status: SessionStatus.CLOSED }, updateMask: { paths: ['status'] } },
      who,
    );
    expect(
      await failure(collect({ session: closed, userMessage: 'Hi', budget: { totalTokens: 1_000 } }, 'ivy')),
    ).toMatchObject({ code: Code.FailedPrecondition, reason: 'SESSION_CLOSED' });

    const session = await newSession('ivy');
    const long = 'word '.repeat(7_000);
    chatReplies.push({ content: long, chunks: [long.slice(0, 20_000), long.slice(20_000)] });
    const end = done(
      await collect({ session, userMessage: 'Talk a lot.', budget: { totalTokens: 1_000 } }, 'ivy'),
    );
    expect(end.text).toBe(long);
    const { messages } = await ingestion.listMessages({ parent: session }, who);
    expect(Array.from(messages[1]!.content)).toHaveLength(32_000);
    expect(messages[1]!.metadata['engram.truncated']).toBe('true');
  });
});

describe('a context service whose dependencies are down', () => {
  it('leaves the knowledge and facts layers UNAVAILABLE, or fails when strict', async () => {
    const dead = 'http://127.0.0.1:9';
    const degraded = await createContextServer(
      loadConfig({
        ENGRAM_PORT: '0',
        ENGRAM_JWT_SECRET: secret,
        ENGRAM_SERVICE_JWT_SECRET: serviceSecretOf(secret),
        ENGRAM_DATA_DIR: dataDir,
        ENGRAM_LOG_LEVEL: 'silent',
        ENGRAM_INGESTION_URL: allUrl,
        ENGRAM_GOVERNANCE_URL: dead,
        ENGRAM_RETRIEVAL_URL: dead,
      }),
      { handleSignals: false },
    );
    try {
      const client = createClient(ContextService, createGrpcTransport({ baseUrl: degraded.server.url }));
      const session = await newSession('jon');
      await ingestion.appendMessages(
        { parent: session, messages: [{ role: MessageRole.USER, content: 'Earlier question.' }] },
        await as('jon'),
      );
      const response = await client.buildContext(
        { session, userMessage: 'Now?', budget: { totalTokens: 1_000 } },
        await as('jon'),
      );
      const layer = (l: ContextLayer) => response.layers.find((x) => x.layer === l)!;
      expect(layer(ContextLayer.RETRIEVED_KNOWLEDGE).status).toBe(LayerStatus.UNAVAILABLE);
      expect(layer(ContextLayer.EVERGREEN_FACTS).status).toBe(LayerStatus.UNAVAILABLE);
      expect(layer(ContextLayer.RECENT_TURNS).itemsIncluded).toBe(1);
      expect(response.messages.at(-1)!.content).toBe('Now?');
      expect(
        await failure(
          client.buildContext(
            { session, userMessage: 'Now?', budget: { totalTokens: 1_000 }, strict: true },
            await as('jon'),
          ),
        ),
      ).toMatchObject({ code: Code.Unavailable, reason: 'DEPENDENCY_UNAVAILABLE' });
    } finally {
      await degraded.server.shutdown();
    }
  });
});
