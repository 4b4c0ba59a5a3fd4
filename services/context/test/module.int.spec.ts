/**
 * The context module behind the runtime's in-process transport (the same authentication and error
 * boundary as the network), over a real database and the real local embedding model, with scripted
 * peers (ingestion, governance, retrieval answer from memory) and, for Chat, the scripted
 * OpenAI-compatible server.
 */
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampNow } from '@bufbuild/protobuf/wkt';
import {
  Code,
  ConnectError,
  createClient,
  createRouterTransport,
  type Client,
  type ServiceImpl,
} from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import {
  CompactionMode,
  CompactionOutcome,
  ContextLayer,
  ContextService,
  LayerStatus,
  type ChatResponse,
} from '@engram/contracts/context';
import { DecisionOutcome, GovernanceService, MemoryType } from '@engram/contracts/governance';
import {
  IngestionService,
  MessageRole,
  MessageSchema,
  SessionSchema,
  SessionStatus,
  type Message,
} from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { LocalEmbedder, resolveModelRoot, type Embedder } from '@engram/embeddings';
import { OpenAIChatModel } from '@engram/llm';
import {
  errors,
  mintToken,
  scopedMetrics,
  toConnectError,
  type ModuleContext,
  type Role,
  type ServiceModule,
} from '@engram/runtime';
import {
  ForgetReceiptRepository,
  SessionRepository,
  SessionStateRepository,
  inTransaction,
  newId,
  type Store,
} from '@engram/store';
import { fakeAwsAccessKeyId, fakeOpenAiProjectKey } from '@engram/testing';
import { replies, startScriptedOpenAI, type ScriptedOpenAI } from '../../../libs/llm/test/scripted-openai.js';
import { failure, moduleTestbed, reasonOf } from '../../../libs/runtime/test/module-testbed.js';
import { dialects } from '../../../libs/store/test/harness.js';
import { DEFAULT_LAYER_SHARES, type ContextSettings } from '../src/config.js';
import { contextModule } from '../src/module.js';
import type { ContextResources } from '../src/resources.js';

const { secret, serviceSecret, logger, credentials, mount } = moduleTestbed('engram-context');
const settings: ContextSettings = {
  layerShares: DEFAULT_LAYER_SHARES,
  compaction: { thresholdTokens: 3_000, keepRecentTurns: 6, summaryMaxTokens: 800 },
  allowedChatModels: ['scripted-model'],
  chatMaxOutputTokens: 1_024,
  redactSecrets: () => true,
};

let embedder: Embedder | undefined;
const localEmbedder = () =>
  (embedder ??= new LocalEmbedder({ modelRoot: resolveModelRoot(process.env['ENGRAM_MODEL_DIR']) }));
afterAll(async () => {
  await embedder?.close();
});

/** What the scripted peers hold and were asked. */
class Peers {
  readonly sessions = new Map<string, { owner: string; messages: Message[]; closed: boolean }>();
  readonly marks: { session: string; through: bigint }[] = [];
  readonly createdMemories: string[] = [];
  readonly deletedMemories: string[] = [];
  facts: { name: string; text: string }[] = [];
  chunks: { name: string; text: string }[] = [];
  retrievalDown = false;
  retrievalOverloaded = false;

  /** One router for the three peer services. */
  readonly transport = createRouterTransport(({ service }) => {
    service(IngestionService, this.ingestion());
    service(GovernanceService, this.governance());
    service(RetrievalService, this.retrieval());
  });

  #session(name: string) {
    const id = name.slice('sessions/'.length);
    const session = this.sessions.get(id);
    if (session === undefined) throw new ConnectError(`${name} was not found`, Code.NotFound);
    return { id, ...session };
  }

  #sessionMessage(id: string) {
    const s = this.#session(`sessions/${id}`);
    return create(SessionSchema, {
      name: `sessions/${id}`,
      owner: s.owner,
      lastSequence: BigInt(s.messages.length),
      status: s.closed ? SessionStatus.CLOSED : SessionStatus.ACTIVE,
    });
  }

  private ingestion(): Partial<ServiceImpl<typeof IngestionService>> {
    return {
      getSession: ({ name }) => ({ session: this.#sessionMessage(this.#session(name).id) }),
      listMessages: ({ parent, fromSequence, toSequence, newestFirst, pageSize }) => {
        const { messages } = this.#session(parent);
        const from = fromSequence ?? 1n;
        const to = toSequence ?? BigInt(messages.length);
        const page = messages.filter((m) => m.sequence >= from && m.sequence <= to);
        return { messages: newestFirst ? page.reverse().slice(0, pageSize) : page, nextPageToken: '' };
      },
      getMessage: ({ name }) => {
        const session = this.#session(name.slice(0, name.indexOf('/messages/')));
        const message = session.messages.find((m) => m.name === name);
        if (message === undefined) throw new ConnectError(`${name} was not found`, Code.NotFound);
        return { message };
      },
      markMessagesCompacted: ({ session, throughSequence }) => {
        this.marks.push({ session, through: throughSequence });
        return {};
      },
      appendMessages: ({ parent, messages, expectedLastSequence }) => {
        const session = this.#session(parent);
        if (expectedLastSequence !== BigInt(session.messages.length)) {
          throw new ConnectError('the session moved', Code.Aborted);
        }
        const stored = messages.map((m) =>
          this.addMessage(session.id, { role: m.role, content: m.content, tokenCount: 10 }),
        );
        return { messages: stored, session: this.#sessionMessage(session.id) };
      },
    };
  }

  private governance(): Partial<ServiceImpl<typeof GovernanceService>> {
    return {
      listMemories: () => ({
        memories: this.facts.map((f) => ({ ...f, type: MemoryType.FACT, evergreen: true, confidence: 0.9 })),
        nextPageToken: '',
      }),
      createMemory: ({ memory }) => {
        const name = `memories/${newId()}`;
        this.createdMemories.push(memory?.text ?? '');
        return { memory: { name }, decision: { outcome: DecisionOutcome.ACCEPTED } };
      },
      deleteMemory: ({ name }) => {
        this.deletedMemories.push(name);
        return {};
      },
    };
  }

  private retrieval(): Partial<ServiceImpl<typeof RetrievalService>> {
    return {
      search: () => {
        if (this.retrievalDown) throw new ConnectError('retrieval is down', Code.Unavailable);
        if (this.retrievalOverloaded) {
          const refused = errors.overloaded('Search is at capacity', 250);
          throw toConnectError(refused, { domain: 'engram.retrieval', requestId: 'r' }).error;
        }
        return {
          results: this.chunks.map((c) => ({
            name: c.name,
            score: 0.9,
            item: { case: 'chunk' as const, value: { name: c.name, text: c.text } },
          })),
        };
      },
    };
  }

  addMessage(sessionId: string, message: MessageInitShape<typeof MessageSchema>): Message {
    const session = this.#session(`sessions/${sessionId}`);
    const stored = create(MessageSchema, {
      ...message,
      name: `sessions/${sessionId}/messages/${newId()}`,
      sequence: BigInt(session.messages.length + 1),
    });
    session.messages.push(stored);
    return stored;
  }
}

/** The module mounted behind the in-process transport, and a client of it. */
async function mounted(
  store: Store,
  peers: Peers,
  chatModel?: OpenAIChatModel,
): Promise<{ client: Client<typeof ContextService>; module: ServiceModule }> {
  const resources: ContextResources = {
    store,
    settings,
    ...(chatModel !== undefined ? { chatModel } : {}),
    embedder: localEmbedder,
    close: () => Promise.resolve(),
  };
  const context: ModuleContext = {
    logger,
    credentials,
    metrics: scopedMetrics(new Registry()),
    transport: () => peers.transport,
  };
  const module = contextModule(resources, context);
  const transport = await mount([module]);
  return { client: createClient(ContextService, transport), module };
}

const as = async (
  subject: string,
  roles?: Role[],
  key = roles?.includes('service') ? serviceSecret : secret,
) => ({
  headers: {
    authorization: `Bearer ${await mintToken({ subject, tenantId: 't1', ...(roles !== undefined ? { roles } : {}) }, { algorithm: 'HS256', secret: key })}`,
  },
});

/** A PENDING forget receipt for `subject` of tenant t1, as governance's ForgetUser records it. */
function pendingReceipt(store: Store, subject: string, requestId: string) {
  return new ForgetReceiptRepository(store).create(store.db, {
    tenantId: 't1',
    subject,
    requestedBy: subject,
    reason: '',
    requestId,
  });
}

/** A session of `owner` in the database (erasure reads ingestion's table) and in the scripted ingestion. */
async function newSession(
  store: Store,
  peers: Peers,
  owner: string,
  turns = 0,
  tokens = 10,
): Promise<string> {
  const record = await inTransaction(store, (trx) =>
    new SessionRepository(store).createSession(trx, { tenantId: 't1', ownerId: owner, externalId: '' }),
  );
  peers.sessions.set(record.id, { owner, messages: [], closed: false });
  for (let i = 0; i < turns; i++) {
    const user = i % 2 === 0;
    peers.addMessage(record.id, {
      role: user ? MessageRole.USER : MessageRole.ASSISTANT,
      content: user
        ? `Question ${i}: should the billing service run on PostgreSQL 16 in the Frankfurt region?`
        : `Answer ${i}: yes, we decided to run billing on PostgreSQL 16 in Frankfurt.`,
      tokenCount: tokens,
    });
  }
  return record.id;
}

describe.each(dialects)('the context module on $name', (dialect) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let peers: Peers;
  let client: Client<typeof ContextService>;

  beforeAll(async () => {
    ({ store, dispose } = await dialect.open());
    peers = new Peers();
    ({ client } = await mounted(store, peers));
  });
  afterAll(async () => {
    await dispose();
  });

  it('BuildContext fills the layers from the session, the facts and the knowledge the peers answer', async () => {
    const id = await newSession(store, peers, 'alice', 2);
    peers.facts = [{ name: `memories/${newId()}`, text: 'Alice prefers answers in German.' }];
    peers.chunks = [
      { name: `documents/${newId()}/chunks/${newId()}`, text: 'Billing runs nightly at 02:00.' },
    ];
    const response = await client.buildContext(
      { session: `sessions/${id}`, userMessage: 'When does billing run?', budget: { totalTokens: 4_000 } },
      await as('alice'),
    );
    const layer = (l: ContextLayer) => response.layers.find((u) => u.layer === l);
    expect(layer(ContextLayer.EVERGREEN_FACTS)?.status).toBe(LayerStatus.OK);
    expect(layer(ContextLayer.RETRIEVED_KNOWLEDGE)?.status).toBe(LayerStatus.OK);
    expect(layer(ContextLayer.RECENT_TURNS)?.itemsIncluded).toBe(2);
    const system = response.messages[0]?.content ?? '';
    expect(system).toContain('Alice prefers answers in German.');
    expect(system).toContain('Billing runs nightly at 02:00.');
    expect(response.messages.at(-1)?.content).toBe('When does billing run?');
    expect([response.lastSequence, response.stateVersion]).toEqual([2n, 0n]);
  });

  it.each([
    {
      when: 'retrieval is down',
      fault: 'retrievalDown' as const,
      detail: 'retrieval unreachable',
      strict: [Code.Unavailable, 'DEPENDENCY_UNAVAILABLE'],
    },
    {
      when: 'retrieval sheds the search (OVERLOADED)',
      fault: 'retrievalOverloaded' as const,
      detail: 'retrieval overloaded',
      strict: [Code.ResourceExhausted, 'OVERLOADED'],
    },
  ])(
    'BuildContext leaves the knowledge layer UNAVAILABLE when $when, and fails when strict',
    async ({ fault, detail, strict }) => {
      const id = await newSession(store, peers, 'alice', 1);
      peers[fault] = true;
      try {
        const request = {
          session: `sessions/${id}`,
          userMessage: 'Anything?',
          budget: { totalTokens: 2_000 },
        };
        const response = await client.buildContext(request, await as('alice'));
        const knowledge = response.layers.find((u) => u.layer === ContextLayer.RETRIEVED_KNOWLEDGE);
        expect([knowledge?.status, knowledge?.detail]).toEqual([LayerStatus.UNAVAILABLE, detail]);
        const failed = await failure(client.buildContext({ ...request, strict: true }, await as('alice')));
        expect([failed.code, reasonOf(failed)]).toEqual(strict);
      } finally {
        peers[fault] = false;
      }
    },
  );

  it('session state: Update writes the masked fields under the etag, Get measures the tail, Delete needs the service role', async () => {
    const id = await newSession(store, peers, 'alice', 3);
    const name = `sessions/${id}/state`;
    const alice = await as('alice');
    const cited = peers.sessions.get(id)?.messages[0]?.name ?? '';
    const { sessionState } = await client.updateSessionState(
      {
        sessionState: {
          name,
          summary: 'Billing moves to PostgreSQL 16.',
          keyPoints: [{ text: 'PG 16', sourceMessages: [cited] }],
        },
        updateMask: { paths: ['summary', 'key_points'] },
      },
      alice,
    );
    expect(sessionState?.version).toBe(1n);
    expect(sessionState?.keyPoints.map((k) => [k.text, k.sourceMessages])).toEqual([['PG 16', [cited]]]);
    const read = await client.getSessionState({ name }, alice);
    expect([read.sessionState?.summary, read.sessionState?.uncompactedMessageCount]).toEqual([
      'Billing moves to PostgreSQL 16.',
      3n,
    ]);

    const stale = await failure(
      client.updateSessionState(
        { sessionState: { name, summary: 'x', etag: '"0"' }, updateMask: { paths: ['summary'] } },
        alice,
      ),
    );
    expect([stale.code, reasonOf(stale)]).toEqual([Code.Aborted, 'ETAG_MISMATCH']);
    const missing = `sessions/${id}/messages/${newId()}`;
    const uncited = await failure(
      client.updateSessionState(
        {
          sessionState: { name, keyPoints: [{ text: 'y', sourceMessages: [missing] }] },
          updateMask: { paths: ['key_points'] },
        },
        alice,
      ),
    );
    expect([uncited.code, reasonOf(uncited), uncited.rawMessage]).toEqual([
      Code.InvalidArgument,
      'FIELD_INVALID',
      expect.stringContaining(`${missing} is not a message of this session`),
    ]);
    const badName = await failure(client.getSessionState({ name: `sessions/${id}` }, alice));
    expect([reasonOf(badName), badName.rawMessage]).toEqual([
      'NAME_INVALID',
      'name must look like sessions/{session}/state',
    ]);

    const denied = await failure(client.deleteSessionState({ name }, alice));
    expect(denied.code).toBe(Code.PermissionDenied);
    expect(
      (await client.deleteSessionState({ name }, await as('engram-governance', ['service']))).deleted,
    ).toBe(true);
    expect((await client.getSessionState({ name }, alice)).sessionState?.version).toBe(0n);
  });

  it('CompactSession folds the oldest turns offline, mirrors the mark, and answers a retry with the first result', async () => {
    const id = await newSession(store, peers, 'alice', 10, 100);
    const alice = await as('alice');
    const request = {
      session: `sessions/${id}`,
      policy: { mode: CompactionMode.OFFLINE, thresholdTokens: 200, keepRecentTurns: 2 },
      requestId: `compact-${id}`,
    };
    const memoriesBefore = peers.createdMemories.length;
    const first = await client.compactSession(request, alice);
    expect([first.outcome, first.messagesCompacted, first.mode]).toEqual([
      CompactionOutcome.COMPACTED,
      8,
      CompactionMode.OFFLINE,
    ]);
    expect(first.summaryMemory).toMatch(/^memories\//);
    expect(first.sessionState?.compactedThroughSequence).toBe(8n);
    expect(first.sessionState?.uncompactedMessageCount).toBe(2n);
    expect(peers.marks).toContainEqual({ session: `sessions/${id}`, through: 8n });
    expect(peers.createdMemories.length).toBe(memoriesBefore + 1);

    const retry = await client.compactSession(request, alice);
    expect([retry.outcome, retry.messagesCompacted, retry.summaryMemory]).toEqual([
      first.outcome,
      first.messagesCompacted,
      first.summaryMemory,
    ]);
    expect(peers.createdMemories.length).toBe(memoriesBefore + 1);

    const below = await client.compactSession(
      { session: `sessions/${id}`, policy: { mode: CompactionMode.OFFLINE, thresholdTokens: 1_000 } },
      alice,
    );
    expect(below.outcome).toBe(CompactionOutcome.SKIPPED_BELOW_THRESHOLD);
  });

  it('CompactSession in MODEL mode, and Chat, answer MODEL_NOT_CONFIGURED without a chat model', async () => {
    const id = await newSession(store, peers, 'alice', 1);
    const alice = await as('alice');
    const compaction = await failure(
      client.compactSession({ session: `sessions/${id}`, policy: { mode: CompactionMode.MODEL } }, alice),
    );
    expect([compaction.code, reasonOf(compaction)]).toEqual([
      Code.FailedPrecondition,
      'MODEL_NOT_CONFIGURED',
    ]);
    const chat = await failure(
      (async () => {
        for await (const _ of client.chat(
          { session: `sessions/${id}`, userMessage: 'hi', budget: { totalTokens: 2_000 } },
          alice,
        )) {
          // The first event is never sent.
        }
      })(),
    );
    expect([chat.code, reasonOf(chat)]).toEqual([Code.FailedPrecondition, 'MODEL_NOT_CONFIGURED']);
  });

  it('EraseSubject deletes the subject’s session states, and a retry answers the same count', async () => {
    const alice = await as('alice');
    const carol = await as('carol');
    const [c1, c2, d1] = [
      await newSession(store, peers, 'carol', 1),
      await newSession(store, peers, 'carol', 1),
      await newSession(store, peers, 'dave', 1),
    ];
    const write = async (id: string, caller: Awaited<ReturnType<typeof as>>) =>
      client.updateSessionState(
        { sessionState: { name: `sessions/${id}/state`, summary: 's' }, updateMask: { paths: ['summary'] } },
        caller,
      );
    await write(c1, carol);
    await write(c2, carol);
    await write(d1, await as('dave'));
    const governance = await as('engram-governance', ['service']);
    const receipt = await pendingReceipt(store, 'carol', `forget-${c1}`);
    const request = {
      subject: 'carol',
      forgetReceipt: `forgetReceipts/${receipt.id}`,
      cutoffTime: timestampNow(),
      requestId: `erase-${c1}`,
    };
    expect((await client.eraseSubject(request, governance)).sessionStates).toBe(2n);
    expect((await client.eraseSubject(request, governance)).sessionStates).toBe(2n);
    const states = new SessionStateRepository(store);
    expect((await states.get('t1', c1)).version).toBe(0);
    expect((await states.get('t1', d1)).version).toBe(1);

    const bad = await failure(client.eraseSubject({ ...request, forgetReceipt: 'receipts/1' }, governance));
    expect([reasonOf(bad), bad.rawMessage]).toEqual([
      'NAME_INVALID',
      'forget_receipt must look like forgetReceipts/{forget_receipt}',
    ]);
    expect((await failure(client.eraseSubject(request, alice))).code).toBe(Code.PermissionDenied);
  });

  it('EraseSubject needs a live forget receipt for the tenant and subject (finding 5)', async () => {
    const governance = await as('engram-governance', ['service']);
    const d1 = await newSession(store, peers, 'dave', 1);
    await client.updateSessionState(
      { sessionState: { name: `sessions/${d1}/state`, summary: 's' }, updateMask: { paths: ['summary'] } },
      await as('dave'),
    );
    const forCarol = await pendingReceipt(store, 'carol', `forget-carol-${d1}`);
    const done = await pendingReceipt(store, 'dave', `forget-dave-${d1}`);
    await new ForgetReceiptRepository(store).update(done, { state: 'COMPLETED', step: 'DONE' });
    const erase = (forgetReceipt: string) =>
      failure(
        client.eraseSubject(
          {
            subject: 'dave',
            forgetReceipt,
            cutoffTime: timestampNow(),
            requestId: `erase-${forgetReceipt.slice(-8)}`,
          },
          governance,
        ),
      );
    // No such receipt, a receipt for another subject, a completed receipt.
    for (const name of [
      `forgetReceipts/${newId()}`,
      `forgetReceipts/${forCarol.id}`,
      `forgetReceipts/${done.id}`,
    ]) {
      const refused = await erase(name);
      expect([refused.code, reasonOf(refused)]).toEqual([
        Code.FailedPrecondition,
        'FORGET_RECEIPT_NOT_PENDING',
      ]);
    }
    expect((await new SessionStateRepository(store).get('t1', d1)).version).toBe(1);
    // A user-key token claiming the service role is refused outright.
    const forged = await as('engram-governance', ['service'], secret);
    const refused = await failure(
      client.eraseSubject(
        {
          subject: 'carol',
          forgetReceipt: `forgetReceipts/${forCarol.id}`,
          cutoffTime: timestampNow(),
          requestId: 'erase-forged',
        },
        forged,
      ),
    );
    expect([refused.code, reasonOf(refused)]).toEqual([Code.Unauthenticated, 'TOKEN_SERVICE_KEY_REQUIRED']);
  });

  describe('with a chat model', () => {
    let model: ScriptedOpenAI;
    let release: () => void = () => undefined;

    beforeAll(async () => {
      const compactionAnswered = new Promise<void>((resolve) => {
        release = resolve;
      });
      const first = replies({ content: 'Billing runs at 02:00.', promptTokens: 50, completionTokens: 7 });
      model = await startScriptedOpenAI(async (request, index) => {
        if (index === 0) return first(request, 0);
        // The automatic compaction's model call waits until the test lets it answer.
        await compactionAnswered;
        return {
          content: JSON.stringify({
            summary: 'The team runs billing on PostgreSQL 16 in Frankfurt.',
            key_points: [],
            open_loops: [],
            resolved_open_loop_ids: [],
          }),
        };
      });
    });
    afterAll(async () => {
      release();
      await model.close();
    });

    it('Chat streams the answer, appends the turn, and the module’s stop waits for the compaction it started', async () => {
      const chatModel = new OpenAIChatModel({
        baseURL: model.baseURL,
        apiKey: 'test-key',
        model: 'scripted-model',
        initialBackoffMs: 1,
      });
      const chatting = await mounted(store, peers, chatModel);
      const id = await newSession(store, peers, 'alice', 6, 100);
      const events: ChatResponse['event'][] = [];
      for await (const response of chatting.client.chat(
        {
          session: `sessions/${id}`,
          userMessage: 'When does billing run?',
          budget: { totalTokens: 4_000 },
          compaction: { thresholdTokens: 200, keepRecentTurns: 2 },
          requestId: `chat-${id}`,
        },
        await as('alice'),
      )) {
        events.push(response.event);
      }
      expect([events[0]?.case, events.at(-1)?.case]).toEqual(['context', 'done']);
      const deltas = events.flatMap((e) => (e.case === 'delta' ? [e.value.text] : []));
      expect(deltas.join('')).toBe('Billing runs at 02:00.');
      const done = events.at(-1);
      if (done?.case !== 'done') throw new Error('no done event');
      expect(done.value.text).toBe('Billing runs at 02:00.');
      expect(done.value.compactionStarted).toBe(true);
      expect(
        peers.sessions
          .get(id)
          ?.messages.slice(-2)
          .map((m) => [m.role, m.content]),
      ).toEqual([
        [MessageRole.USER, 'When does billing run?'],
        [MessageRole.ASSISTANT, 'Billing runs at 02:00.'],
      ]);

      const states = new SessionStateRepository(store);
      let stopped = false;
      const stopping = chatting.module.stop?.().then(() => {
        stopped = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(stopped).toBe(false);
      expect((await states.get('t1', id)).compactedThroughSequence).toBe(0);
      release();
      await stopping;
      const state = await states.get('t1', id);
      expect(state.compactedThroughSequence).toBeGreaterThan(0);
      expect(state.summary).toBe('The team runs billing on PostgreSQL 16 in Frankfurt.');
    });
  });

  describe('secrets in what context stores', () => {
    const openAi = fakeOpenAiProjectKey(21);
    const aws = fakeAwsAccessKeyId(22);
    const urlWithPassword = 'https://deploy:Hunter2-Blue-Sky@git.example.com/ops';
    const planted = [openAi, aws, 'Hunter2-Blue-Sky'];
    let model: ScriptedOpenAI;
    let chatting: Client<typeof ContextService>;

    /** Every planted secret is absent from `values`. */
    const expectClean = (values: readonly string[]) => {
      for (const value of values) for (const p of planted) expect(value).not.toContain(p);
    };
    const json = (value: unknown) =>
      JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
    const stateRow = (id: string) =>
      store.db
        .selectFrom('session_states')
        .select(['summary', 'key_points_json', 'open_loops_json'])
        .where('session_id', '=', id)
        .executeTakeFirstOrThrow();

    beforeAll(async () => {
      model = await startScriptedOpenAI((request) =>
        request.body.stream === true
          ? { content: `Use ${openAi} for the deploy, and AWS key ${aws}.` }
          : {
              content: JSON.stringify({
                summary: `Billing moves to PostgreSQL 16; the deploy key is ${openAi}.`,
                key_points: [{ text: `The AWS key is ${aws}.`, source_message_ids: [] }],
                open_loops: [{ text: `Rotate the mirror ${urlWithPassword}`, source_message_ids: [] }],
                resolved_open_loop_ids: [],
              }),
            },
      );
      const chatModel = new OpenAIChatModel({
        baseURL: model.baseURL,
        apiKey: 'test-key',
        model: 'scripted-model',
        initialBackoffMs: 1,
      });
      ({ client: chatting } = await mounted(store, peers, chatModel));
    });
    afterAll(async () => {
      await model.close();
    });

    it('UpdateSessionState stores and answers the summary, key points and open loops redacted', async () => {
      const id = await newSession(store, peers, 'alice', 1);
      const name = `sessions/${id}/state`;
      const alice = await as('alice');
      const { sessionState } = await chatting.updateSessionState(
        {
          sessionState: {
            name,
            summary: `Deploys use ${openAi} from now on.`,
            keyPoints: [{ text: `AWS key ${aws} is for billing` }],
            openLoops: [{ text: `Move the mirror ${urlWithPassword}` }],
          },
          updateMask: { paths: ['summary', 'key_points', 'open_loops'] },
        },
        alice,
      );
      expect([
        sessionState?.summary,
        sessionState?.keyPoints.map((k) => k.text),
        sessionState?.openLoops.map((l) => l.text),
      ]).toEqual([
        'Deploys use [redacted:api_key] from now on.',
        ['AWS key [redacted:api_key] is for billing'],
        ['Move the mirror https://deploy:[redacted:password]@git.example.com/ops'],
      ]);
      const read = await chatting.getSessionState({ name }, alice);
      const row = await stateRow(id);
      expectClean([
        row.summary,
        row.key_points_json,
        row.open_loops_json,
        json([read.sessionState?.summary, read.sessionState?.keyPoints, read.sessionState?.openLoops]),
      ]);
      expect(row.summary).toBe('Deploys use [redacted:api_key] from now on.');
    });

    it('a MODEL compaction stores the state and the summary memory the model returns redacted', async () => {
      const id = await newSession(store, peers, 'alice', 8, 100);
      const memoriesBefore = peers.createdMemories.length;
      const response = await chatting.compactSession(
        {
          session: `sessions/${id}`,
          policy: { mode: CompactionMode.MODEL, thresholdTokens: 200, keepRecentTurns: 2 },
        },
        await as('alice'),
      );
      expect(response.outcome).toBe(CompactionOutcome.COMPACTED);
      const row = await stateRow(id);
      expectClean([
        row.summary,
        row.key_points_json,
        row.open_loops_json,
        ...peers.createdMemories.slice(memoriesBefore),
        json([response.sessionState?.summary, response.sessionState?.keyPoints]),
      ]);
      expect(row.summary).toBe('Billing moves to PostgreSQL 16; the deploy key is [redacted:api_key].');
      expect(response.sessionState?.keyPoints.map((k) => k.text)).toEqual([
        'The AWS key is [redacted:api_key].',
      ]);
    });

    it('the Chat replay record holds the reply, the user message and the system prompt redacted', async () => {
      const id = await newSession(store, peers, 'alice', 2);
      const alice = await as('alice');
      const request = {
        session: `sessions/${id}`,
        systemPrompt: `You deploy with ${aws}.`,
        userMessage: `Is ${openAi} still valid?`,
        budget: { totalTokens: 4_000 },
        includeContextMessages: true,
        autoCompact: false,
        requestId: `chat-secrets-${id}`,
      };
      const drain = async () => {
        const events: ChatResponse['event'][] = [];
        for await (const response of chatting.chat(request, alice)) events.push(response.event);
        return events;
      };
      await drain();
      const rows = await store.db
        .selectFrom('request_ids')
        .select(['result_json'])
        .where('request_id', '=', request.requestId)
        .execute();
      expect(rows).toHaveLength(1);
      const recorded = rows[0]?.result_json ?? '';
      expectClean([recorded]);
      expect(recorded).toContain('Use [redacted:api_key] for the deploy, and AWS key [redacted:api_key].');
      expect(recorded).toContain('Is [redacted:api_key] still valid?');
      expect(recorded).toContain('You deploy with [redacted:api_key].');

      const replayed = await drain();
      expectClean([json(replayed)]);
      const context = replayed[0];
      if (context?.case !== 'context') throw new Error('no context event');
      expect(context.value.replayed).toBe(true);
      expect(context.value.assembly?.messages.at(-1)?.content).toBe('Is [redacted:api_key] still valid?');
      const done = replayed.at(-1);
      if (done?.case !== 'done') throw new Error('no done event');
      expect(done.value.text).toBe('Use [redacted:api_key] for the deploy, and AWS key [redacted:api_key].');
    });
  });
});
