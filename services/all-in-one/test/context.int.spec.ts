import { Code, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  ChatRole,
  CompactionMode,
  CompactionOutcome,
  ContextLayer,
  type ContextService,
  LayerStatus,
  TraceItemKind,
  TraceReason,
  type BuildContextResponse,
} from '@engram/contracts/context';
import { type GovernanceService, MemoryType } from '@engram/contracts/governance';
import { type IngestionService, MessageRole } from '@engram/contracts/ingestion';
import type { Role } from '@engram/runtime';
import { authorized, failure, newSecret, startServer } from './harness.js';

const secret = newSecret();
let stop: () => Promise<void>;
let ingestion: Client<typeof IngestionService>;
let governance: Client<typeof GovernanceService>;
let context: Client<typeof ContextService>;

beforeAll(async () => {
  ({ stop, ingestion, governance, context } = await startServer(secret));
}, 60_000);

afterAll(async () => {
  await stop();
});

const as = (subject: string, roles: Role[] = []) => authorized(secret, { subject, tenantId: 'acme', roles });

async function newSession(subject: string, languageCode = 'en'): Promise<string> {
  const { session } = await ingestion.createSession({ session: { languageCode } }, await as(subject));
  return session!.name;
}

async function append(subject: string, session: string, turns: readonly [MessageRole, string][]) {
  for (let i = 0; i < turns.length; i += 100) {
    await ingestion.appendMessages(
      {
        parent: session,
        messages: turns.slice(i, i + 100).map(([role, content]) => ({ role, content })),
      },
      await as(subject),
    );
  }
}

/** Checks the accounting invariants every response must satisfy. */
function expectConsistent(response: BuildContextResponse, userMessage: string) {
  const last = response.messages.at(-1)!;
  expect(last.role).toBe(ChatRole.USER);
  expect(last.content).toBe(userMessage);
  expect(response.messageTokens).toHaveLength(response.messages.length);
  const tools = response.layers.find((l) => l.layer === ContextLayer.TOOLS)!;
  const sumMessages = response.messageTokens.reduce((a, b) => a + b, 0);
  const toolParameter = response.tools.length > 0 ? tools.usedTokens : 0;
  expect(response.totalTokens).toBe(sumMessages + toolParameter + response.tokenizer!.replyPrimingTokens);
  const sumLayers = response.layers.reduce((a, l) => a + l.usedTokens, 0);
  expect(sumLayers + response.overheadTokens).toBe(response.totalTokens);
  expect(response.totalTokens).toBeLessThanOrEqual(response.budgetTokens);
  expect(response.layers.map((l) => l.layer)).toEqual([
    ContextLayer.SYSTEM_PROMPT,
    ContextLayer.KEY_POINTS,
    ContextLayer.OPEN_LOOPS,
    ContextLayer.SESSION_SUMMARY,
    ContextLayer.EVERGREEN_FACTS,
    ContextLayer.RETRIEVED_KNOWLEDGE,
    ContextLayer.RECENT_TURNS,
    ContextLayer.TOOLS,
    ContextLayer.USER_MESSAGE,
  ]);
  for (const layer of response.layers) {
    expect(layer.usedTokens).toBeLessThanOrEqual(layer.budgetTokens);
    const included = response.trace.filter((t) => t.layer === layer.layer && t.included);
    expect(included.length).toBe(layer.itemsIncluded);
  }
}

describe('BuildContext', () => {
  it('assembles the layers in order with the latest message last, and the accounting adds up', async () => {
    const session = await newSession('ann');
    await append('ann', session, [
      [MessageRole.USER, 'I am planning a trip to Lisbon in May.'],
      [MessageRole.ASSISTANT, 'Lisbon in May is lovely. Do you need hotel suggestions?'],
      [MessageRole.USER, 'Yes, somewhere near Alfama please.'],
      [MessageRole.ASSISTANT, 'Memmo Alfama and Santiago de Alfama are good choices.'],
    ]);
    await governance.createMemory(
      {
        memory: {
          type: MemoryType.FACT,
          namespace: 'user_preference',
          key: 'answer_style',
          value: { style: 'concise' },
          text: 'Ann prefers concise answers.',
          evergreen: true,
          confidence: 0.95,
        },
      },
      await as('ann'),
    );
    const userMessage = 'Which of the two hotels is closer to the tram 28 line?';
    const request = {
      session,
      userMessage,
      model: 'gpt-4o',
      budget: { totalTokens: 4_000 },
      systemPrompt: 'You are a helpful travel assistant.',
      tools: [
        {
          name: 'book_hotel',
          description: 'Books a hotel room.',
          parametersJsonSchema: '{"type":"object","properties":{"hotel":{"type":"string"}}}',
        },
      ],
    };
    const response = await context.buildContext(request, await as('ann'));
    expectConsistent(response, userMessage);
    expect(response.tokenizer).toMatchObject({ encoding: 'o200k_base', approximate: false });
    const system = response.messages[0]!;
    expect(system.role).toBe(ChatRole.SYSTEM);
    expect(system.content.startsWith('You are a helpful travel assistant.')).toBe(true);
    expect(system.content).toContain('Ann prefers concise answers.');
    // The four stored turns follow the system message, oldest first.
    expect(response.messages.slice(1, 5).map((m) => m.content)).toEqual([
      'I am planning a trip to Lisbon in May.',
      'Lisbon in May is lovely. Do you need hotel suggestions?',
      'Yes, somewhere near Alfama please.',
      'Memmo Alfama and Santiago de Alfama are good choices.',
    ]);
    expect(response.tools.map((t) => t.name)).toEqual(['book_hotel']);
    const facts = response.trace.filter((t) => t.layer === ContextLayer.EVERGREEN_FACTS);
    expect(facts).toHaveLength(1);
    expect(facts[0]).toMatchObject({
      kind: TraceItemKind.MEMORY,
      included: true,
      reason: TraceReason.INCLUDED,
    });
    expect(response.trace.at(-1)).toMatchObject({
      id: 'request/userMessage',
      kind: TraceItemKind.USER_MESSAGE,
    });
    expect(response.lastSequence).toBe(4n);
    expect(response.knowledgeSearchStats).toBeDefined();

    // The same request over the same data gives the same assembly.
    const again = await context.buildContext({ ...request, knowledge: { options: {} } }, await as('ann'));
    expect(again.messages).toEqual(response.messages);
  });

  it('keeps a 500-turn session within every budget, dropping the oldest turns and saying why', async () => {
    const session = await newSession('bob');
    const turns: [MessageRole, string][] = [];
    for (let i = 0; i < 500; i++) {
      turns.push([
        i % 2 === 0 ? MessageRole.USER : MessageRole.ASSISTANT,
        `Turn ${i}: ${'we keep talking about the migration plan and its risks. '.repeat((i % 7) + 1)}`,
      ]);
    }
    await append('bob', session, turns);
    for (const totalTokens of [200, 1_000, 2_000, 8_000]) {
      const userMessage = `What did we say about risk number ${totalTokens}?`;
      const response = await context.buildContext(
        { session, userMessage, budget: { totalTokens } },
        await as('bob'),
      );
      expectConsistent(response, userMessage);
      const recent = response.layers.find((l) => l.layer === ContextLayer.RECENT_TURNS)!;
      expect(recent.detail).toContain('200 newest of 500');
      const turnsTrace = response.trace.filter((t) => t.kind === TraceItemKind.TURN);
      expect(turnsTrace).toHaveLength(200);
      // Newest first: the included ones are a prefix (a contiguous tail of the conversation).
      const firstDropped = turnsTrace.findIndex((t) => !t.included);
      if (firstDropped >= 0) {
        expect(turnsTrace.slice(firstDropped).every((t) => !t.included)).toBe(true);
        expect([TraceReason.DROPPED_LAYER_BUDGET, TraceReason.DROPPED_TOTAL_BUDGET]).toContain(
          turnsTrace[firstDropped]!.reason,
        );
      }
      expect(response.uncompactedMessageCount).toBe(500n);
      expect(response.compactionRecommended).toBe(true);
    }
  });

  it('rejects bad input with precise reasons and hides other users’ sessions', async () => {
    const session = await newSession('cy');
    const cy = await as('cy');
    expect(
      await failure(context.buildContext({ session, userMessage: 'hi', budget: { totalTokens: 5 } }, cy)),
    ).toMatchObject({ code: Code.InvalidArgument, reason: 'BUDGET_TOO_SMALL' });
    expect(
      await failure(
        context.buildContext(
          {
            session,
            userMessage: 'hi',
            budget: {
              totalTokens: 1_000,
              layers: [
                { layer: ContextLayer.RECENT_TURNS, share: 0.8 },
                { layer: ContextLayer.TOOLS, share: 0.5 },
              ],
            },
          },
          cy,
        ),
      ),
    ).toMatchObject({
      code: Code.InvalidArgument,
      reason: 'FIELD_INVALID',
      metadata: { field: 'budget.layers' },
    });
    expect(
      await failure(context.buildContext({ session, userMessage: '  ', budget: { totalTokens: 100 } }, cy)),
    ).toMatchObject({
      code: Code.InvalidArgument,
      reason: 'FIELD_INVALID',
    });
    expect(
      await failure(
        context.buildContext({ session: 'sessions/x', userMessage: 'hi', budget: { totalTokens: 100 } }, cy),
      ),
    ).toMatchObject({
      code: Code.InvalidArgument,
      reason: 'NAME_INVALID',
    });
    expect(
      await failure(
        context.buildContext({ session, userMessage: 'hi', budget: { totalTokens: 100 } }, await as('dan')),
      ),
    ).toMatchObject({
      code: Code.NotFound,
      reason: 'RESOURCE_NOT_FOUND',
    });
    const disabled = await context.buildContext(
      {
        session,
        userMessage: 'hi',
        budget: {
          totalTokens: 1_000,
          layers: [
            { layer: ContextLayer.RETRIEVED_KNOWLEDGE, maxTokens: 0 },
            { layer: ContextLayer.EVERGREEN_FACTS, maxTokens: 0 },
          ],
        },
      },
      cy,
    );
    const knowledge = disabled.layers.find((l) => l.layer === ContextLayer.RETRIEVED_KNOWLEDGE)!;
    expect(knowledge.status).toBe(LayerStatus.DISABLED);
    expect(disabled.knowledgeSearchStats).toBeUndefined();
  });
});

describe('CompactSession and session state', () => {
  const english: [MessageRole, string][] = [
    [MessageRole.USER, 'We need a database for the new billing service.'],
    [MessageRole.ASSISTANT, 'PostgreSQL 16 and MySQL 8 both fit; PostgreSQL has better JSON support.'],
    [MessageRole.USER, 'OK, we decided to use PostgreSQL 16 for the billing service.'],
    [MessageRole.ASSISTANT, 'Great, PostgreSQL 16 it is. I will draft the schema.'],
    [MessageRole.USER, 'Which region should the staging cluster run in?'],
    [MessageRole.ASSISTANT, 'I need to check the latency numbers first and will get back to you.'],
    [MessageRole.USER, 'Also, how many replicas do we need for production?'],
    [MessageRole.ASSISTANT, 'Three replicas across zones give us the availability we want.'],
    [MessageRole.USER, 'Thanks. Let us talk about the invoice format next.'],
    [MessageRole.ASSISTANT, 'Sure, PDF and e-invoice XML are the usual options.'],
  ];
  const chinese: [MessageRole, string][] = [
    [MessageRole.USER, '我们要给新项目选一个前端框架。'],
    [MessageRole.ASSISTANT, 'React 和 Vue 都可以，团队更熟悉 React。'],
    [MessageRole.USER, '那就用 React，我们决定了。'],
    [MessageRole.ASSISTANT, '好的，确定使用 React 18。'],
    [MessageRole.USER, '部署放在哪个云服务商比较好？'],
    [MessageRole.ASSISTANT, '这个我还没确定，回头比较一下价格再告诉你。'],
    [MessageRole.USER, '测试覆盖率要达到多少？'],
    [MessageRole.ASSISTANT, '建议单元测试覆盖率达到百分之八十。'],
    [MessageRole.USER, '好的，下周开始写代码。'],
    [MessageRole.ASSISTANT, '没问题，下周一开始。'],
  ];

  it.each([
    ['English', 'en', english],
    ['Chinese', 'zh', chinese],
  ] as const)(
    'compacts a %s session offline into a summary, key points and open loops',
    async (_label, lang, turns) => {
      const subject = `compact-${lang}`;
      const session = await newSession(subject, lang);
      await append(subject, session, turns);
      const who = await as(subject);
      const below = await context.compactSession({ session }, who);
      expect(below.outcome).toBe(CompactionOutcome.SKIPPED_BELOW_THRESHOLD);

      const compacted = await context.compactSession(
        {
          session,
          force: true,
          policy: { keepRecentTurns: 2, mode: CompactionMode.OFFLINE },
          requestId: `c-${lang}`,
        },
        who,
      );
      expect(compacted.outcome).toBe(CompactionOutcome.COMPACTED);
      expect(compacted.mode).toBe(CompactionMode.OFFLINE);
      expect(compacted.messagesCompacted).toBe(8);
      expect(compacted.summaryMemory).toMatch(/^memories\//);
      const state = compacted.sessionState!;
      expect(state.summary.length).toBeGreaterThan(0);
      expect(state.compactedThroughSequence).toBe(8n);
      expect(state.uncompactedMessageCount).toBe(2n);
      expect(state.keyPoints.length).toBeGreaterThan(0);
      expect(state.openLoops.some((l) => !l.resolved)).toBe(true);
      expect(state.version).toBe(1n);

      // A retry with the same request id returns the same result without compacting again.
      const retried = await context.compactSession(
        {
          session,
          force: true,
          policy: { keepRecentTurns: 2, mode: CompactionMode.OFFLINE },
          requestId: `c-${lang}`,
        },
        who,
      );
      expect(retried.summaryMemory).toBe(compacted.summaryMemory);
      expect(retried.sessionState!.version).toBe(1n);

      const read = await context.getSessionState({ name: `${session}/state` }, who);
      expect(read.sessionState!.summary).toBe(state.summary);

      // The mark is mirrored on ingestion's messages.
      const { messages } = await ingestion.listMessages({ parent: session, includeCompacted: false }, who);
      expect(messages.map((m) => Number(m.sequence))).toEqual([9, 10]);

      // The summary and key points now come through the context; compacted turns do not.
      const built = await context.buildContext(
        { session, userMessage: 'What did we decide?', budget: { totalTokens: 4_000 } },
        who,
      );
      expectConsistent(built, 'What did we decide?');
      expect(built.layers.find((l) => l.layer === ContextLayer.SESSION_SUMMARY)!.itemsIncluded).toBe(1);
      expect(built.layers.find((l) => l.layer === ContextLayer.KEY_POINTS)!.itemsIncluded).toBeGreaterThan(0);
      expect(built.trace.filter((t) => t.kind === TraceItemKind.TURN)).toHaveLength(2);
      expect(built.stateVersion).toBe(1n);

      // The summary memory is the owner's.
      const { memory } = await governance.getMemory({ name: compacted.summaryMemory }, who);
      expect(memory!.type).toBe(MemoryType.SUMMARY);
    },
  );

  it('serializes concurrent compactions of one session', async () => {
    const session = await newSession('erin');
    await append('erin', session, english);
    const who = await as('erin');
    const results = await Promise.all(
      [0, 1, 2].map(() =>
        context.compactSession(
          { session, force: true, policy: { keepRecentTurns: 2, mode: CompactionMode.OFFLINE } },
          who,
        ),
      ),
    );
    const outcomes = results.map((r) => r.outcome).sort();
    expect(outcomes).toEqual([
      CompactionOutcome.COMPACTED,
      CompactionOutcome.SKIPPED_NOTHING_TO_COMPACT,
      CompactionOutcome.SKIPPED_NOTHING_TO_COMPACT,
    ]);
    const { sessionState } = await context.getSessionState({ name: `${session}/state` }, who);
    expect(sessionState!.version).toBe(1n);
    expect(sessionState!.compactedThroughSequence).toBe(8n);
  });

  it('updates the state with an etag, and only the service deletes it', async () => {
    const session = await newSession('fay');
    await append('fay', session, english.slice(0, 2));
    const who = await as('fay');
    const empty = (await context.getSessionState({ name: `${session}/state` }, who)).sessionState!;
    expect(empty.version).toBe(0n);
    const { messages } = await ingestion.listMessages({ parent: session }, who);
    const updated = (
      await context.updateSessionState(
        {
          sessionState: {
            name: `${session}/state`,
            summary: 'Fay is choosing a database.',
            keyPoints: [{ text: 'Use PostgreSQL.', sourceMessages: [messages[0]!.name] }],
          },
          updateMask: { paths: ['summary', 'key_points'] },
        },
        who,
      )
    ).sessionState!;
    expect(updated.version).toBe(1n);
    expect(updated.keyPoints[0]!.id).toMatch(/^[0-9A-Z]{26}$/);
    expect(
      await failure(
        context.updateSessionState(
          {
            sessionState: { name: `${session}/state`, summary: 'x', etag: empty.etag || '"stale"' },
            updateMask: { paths: ['summary'] },
          },
          who,
        ),
      ),
    ).toMatchObject({ code: Code.Aborted, reason: 'ETAG_MISMATCH' });
    expect(
      await failure(
        context.updateSessionState(
          {
            sessionState: { name: `${session}/state` },
            updateMask: { paths: ['compacted_through_sequence'] },
          },
          who,
        ),
      ),
    ).toMatchObject({ code: Code.InvalidArgument, reason: 'UPDATE_MASK_INVALID' });
    expect(
      await failure(
        context.updateSessionState(
          {
            sessionState: {
              name: `${session}/state`,
              keyPoints: [
                {
                  text: 'x',
                  sourceMessages: ['sessions/01ARZ3NDEKTSV4RRFFQ69G5FAV/messages/01ARZ3NDEKTSV4RRFFQ69G5FAV'],
                },
              ],
            },
            updateMask: { paths: ['key_points'] },
          },
          who,
        ),
      ),
    ).toMatchObject({ code: Code.InvalidArgument, reason: 'FIELD_INVALID' });
    expect(await failure(context.deleteSessionState({ name: `${session}/state` }, who))).toMatchObject({
      code: Code.PermissionDenied,
      reason: 'ROLE_REQUIRED',
    });
    const { deleted } = await context.deleteSessionState(
      { name: `${session}/state` },
      await as('ingestion', ['service']),
    );
    expect(deleted).toBe(true);
    expect((await context.getSessionState({ name: `${session}/state` }, who)).sessionState!.version).toBe(0n);
  });
});

describe('Chat without a model', () => {
  it('fails with FAILED_PRECONDITION naming what to configure', async () => {
    const session = await newSession('gus');
    const stream = context.chat(
      { session, userMessage: 'hello', budget: { totalTokens: 1_000 } },
      await as('gus'),
    );
    const error = await failure(
      (async () => {
        for await (const event of stream) expect(event).toBeUndefined();
      })(),
    );
    expect(error).toMatchObject({
      code: Code.FailedPrecondition,
      reason: 'MODEL_NOT_CONFIGURED',
      metadata: { variable: 'ENGRAM_LLM_MODEL' },
    });
  });
});
