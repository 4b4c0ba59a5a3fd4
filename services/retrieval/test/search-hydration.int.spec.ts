import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { KyselyPlugin } from 'kysely';
import {
  DocumentRepository,
  MemoryRepository,
  SessionRepository,
  inTransaction,
  type NewMessage,
  type Store,
} from '@engram/store';
import type { PointPayload } from '@engram/vector-index';
import { newDocument, newMemory, randomHash } from '../../../libs/store/test/fixtures.js';
import { dialects } from '../../../libs/store/test/harness.js';
import { EMPTY_FILTER as FILTER } from '../src/search-api.js';
import { Hydrator, type Hydrated, type Hydration, type Merged } from '../src/search-hydration.js';

const ALICE = { subject: 'alice', orgIds: [], platform: false };
const MISSING = '01HZY6Q7V4N8M3K2J1H0G9F8E7';

/** A store whose queries are counted. */
function counted(store: Store): { store: Store; queries: () => number } {
  let n = 0;
  const counter: KyselyPlugin = {
    transformQuery: (args) => {
      n += 1;
      return args.node;
    },
    transformResult: (args) => Promise.resolve(args.result),
  };
  return { store: { ...store, db: store.db.withPlugin(counter) }, queries: () => n };
}

const candidate = (payload: Omit<PointPayload, 'scope' | 'orgId' | 'status' | 'createdAt'>): Merged => ({
  pointId: `${payload.kind}:${payload.sourceId}`,
  payload: { scope: 'SELF', orgId: '', status: 'ACTIVE', createdAt: 1, ...payload },
  dense: 0.5,
  denseRank: 1,
});

const nameOf = (h: Hydration) => (typeof h === 'string' ? h : h.name);

describe.each(dialects)('Search hydration on $name', (dialect) => {
  let store: Store;
  let dispose: () => Promise<void>;
  const tenantId = 't1';
  let ids: {
    alice: string;
    bob: string;
    foreign: string;
    ready: { document: string; chunks: string[] };
    ingesting: { document: string; chunk: string };
    session: string;
    messages: string[];
    bobSession: string;
    bobMessage: string;
  };

  beforeAll(async () => {
    ({ store, dispose } = await dialect.open());
    const memories = new MemoryRepository(store);
    const documents = new DocumentRepository(store);
    const sessions = new SessionRepository(store);
    const memory = (tenant: string, ownerId: string, text: string) =>
      inTransaction(store, (trx) =>
        memories.create(
          trx,
          newMemory(text, { tenantId: tenant, ownerId, type: 'EPISODE', namespace: '', key: '' }),
          { action: 'CREATE', actorKind: 'USER', actorId: ownerId },
        ),
      );
    const document = (state: 'READY' | 'INGESTING', texts: string[]) =>
      inTransaction(store, async (trx) => {
        const created = await documents.createDocument(
          trx,
          newDocument({
            tenantId,
            displayName: 'notes',
            mimeType: 'text/plain',
            sourceUri: '',
            contentHash: randomHash(),
            sizeBytes: 10,
            charCount: 10,
            state,
          }),
        );
        const chunks = await documents.addChunks(
          trx,
          tenantId,
          created.id,
          texts.map((text, ordinal) => ({
            ordinal,
            kind: 'TEXT' as const,
            text,
            startOffset: 0,
            endOffset: text.length,
            overlapPrefixChars: 0,
            headerPrefixChars: 0,
            tokenCount: 3,
            headingPath: [],
          })),
        );
        return { document: created.id, chunks: chunks.map((c) => c.id) };
      });
    const conversation = (ownerId: string, messages: NewMessage[]) =>
      inTransaction(store, async (trx) => {
        const session = await sessions.createSession(trx, { tenantId, ownerId });
        const appended = await sessions.appendMessages(trx, tenantId, session.id, messages);
        return { session: session.id, messages: appended.map((m) => m.id) };
      });
    const ready = await document('READY', ['the first paragraph', 'the second paragraph']);
    const ingesting = await document('INGESTING', ['not ready yet']);
    const talk = await conversation('alice', [
      { role: 'USER', content: 'Where is the lighthouse?' },
      { role: 'ASSISTANT', content: 'On the northern cape.' },
      { role: 'USER', content: 'And the harbour?' },
      { role: 'TOOL', content: 'lookup' },
      { role: 'ASSISTANT', content: 'Below it, to the east.' },
    ]);
    const bobTalk = await conversation('bob', [{ role: 'USER', content: 'private to bob' }]);
    ids = {
      alice: (await memory(tenantId, 'alice', 'Alice repaired the lamp')).id,
      bob: (await memory(tenantId, 'bob', 'Bob painted the door')).id,
      foreign: (await memory('t2', 'alice', 'another tenant')).id,
      ready,
      ingesting: { document: ingesting.document, chunk: ingesting.chunks[0]! },
      session: talk.session,
      messages: talk.messages,
      bobSession: bobTalk.session,
      bobMessage: bobTalk.messages[0]!,
    };
  });
  afterAll(async () => {
    await dispose();
  });

  const hydrate = (s: Store, candidates: readonly Merged[], filter = FILTER) =>
    new Hydrator(s, tenantId, ALICE, filter, Date.now()).hydrate(candidates);

  it('re-reads every kind in a few batched queries, in candidate order, dropping what drifted', async () => {
    const { ready, ingesting, session, messages } = ids;
    const candidates = [
      candidate({ tenantId, kind: 'ROUND', sourceId: messages[2]!, sessionId: session, ownerId: 'alice' }),
      candidate({ tenantId, kind: 'MEMORY', sourceId: ids.alice, ownerId: 'alice' }),
      candidate({ tenantId, kind: 'MEMORY', sourceId: ids.bob, ownerId: 'alice' }),
      candidate({ tenantId, kind: 'MEMORY', sourceId: ids.foreign, ownerId: 'alice' }),
      candidate({ tenantId: 't2', kind: 'MEMORY', sourceId: ids.foreign, ownerId: 'alice' }),
      candidate({ tenantId, kind: 'MEMORY', sourceId: MISSING, ownerId: 'alice' }),
      candidate({
        tenantId,
        kind: 'CHUNK',
        sourceId: ready.chunks[1]!,
        documentId: ready.document,
        ownerId: 'alice',
      }),
      // A chunk named under another document than its own, and a chunk of a document not READY.
      candidate({
        tenantId,
        kind: 'CHUNK',
        sourceId: ready.chunks[0]!,
        documentId: ingesting.document,
        ownerId: 'alice',
      }),
      candidate({
        tenantId,
        kind: 'CHUNK',
        sourceId: ingesting.chunk,
        documentId: ingesting.document,
        ownerId: 'alice',
      }),
      candidate({ tenantId, kind: 'ROUND', sourceId: messages[0]!, sessionId: session, ownerId: 'alice' }),
      // An assistant message is no round; bob's session is not alice's; a message of another session.
      candidate({ tenantId, kind: 'ROUND', sourceId: messages[1]!, sessionId: session, ownerId: 'alice' }),
      candidate({
        tenantId,
        kind: 'ROUND',
        sourceId: ids.bobMessage,
        sessionId: ids.bobSession,
        ownerId: 'alice',
      }),
      candidate({ tenantId, kind: 'ROUND', sourceId: ids.bobMessage, sessionId: session, ownerId: 'alice' }),
    ];
    const { store: counting, queries } = counted(store);
    const hydrated = await hydrate(counting, candidates);
    // memories, documents, indexed counts, chunks, sessions, messages, then the rounds' replies.
    expect(queries()).toBe(7);
    expect(hydrated.map(nameOf)).toEqual([
      `sessions/${session}/messages/${messages[2]!}`,
      `memories/${ids.alice}`,
      'drift',
      'drift',
      'drift',
      'drift',
      `documents/${ready.document}/chunks/${ready.chunks[1]!}`,
      'drift',
      'drift',
      `sessions/${session}/messages/${messages[0]!}`,
      'drift',
      'drift',
      'drift',
    ]);
    const [late, , , , , , chunk, , , early] = hydrated as Hydrated[];
    expect(early!.text).toBe('Where is the lighthouse?\n\nOn the northern cape.');
    // The reply is the first assistant message with content after the user's, past tool output.
    expect(late!.text).toBe('And the harbour?\n\nBelow it, to the east.');
    expect(chunk!.result.document).toMatchObject({
      name: `documents/${ready.document}`,
      indexedChunkCount: 0,
    });
  });

  it('tells filtered candidates from drifted ones, and reads nothing for no candidates', async () => {
    const round = candidate({
      tenantId,
      kind: 'ROUND',
      sourceId: ids.messages[0]!,
      sessionId: ids.session,
      ownerId: 'alice',
    });
    const other = { ...FILTER, sessionIds: [ids.bobSession] };
    expect(await hydrate(store, [round], other)).toEqual(['filtered']);
    const { store: counting, queries } = counted(store);
    expect(await hydrate(counting, [])).toEqual([]);
    expect(queries()).toBe(0);
  });
});
