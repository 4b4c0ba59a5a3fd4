import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  DocumentRepository,
  SessionRepository,
  enqueueOutbox,
  inTransaction,
  type NewDocument,
  type NewMessage,
  type Store,
} from '../src/index.js';
import { newChunk, newDocument, randomHash } from './fixtures.js';
import { dialects } from './harness.js';

const document = (tenantId: string, state: NewDocument['state']): NewDocument =>
  newDocument({
    tenantId,
    mimeType: 'text/plain',
    sourceUri: '',
    contentHash: randomHash(),
    sizeBytes: 10,
    charCount: 10,
    state,
  });

const chunk = (ordinal: number) => newChunk(ordinal);

const message = (role: NewMessage['role'], content: string): NewMessage => ({ role, content, tokenCount: 1 });

const MISSING = '01HZY6Q7V4N8M3K2J1H0G9F8E7';

describe.each(dialects)('batched reads on $name', (dialect) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let documents: DocumentRepository;
  let sessions: SessionRepository;

  beforeAll(async () => {
    ({ store, dispose } = await dialect.open());
    documents = new DocumentRepository(store);
    sessions = new SessionRepository(store);
  });
  afterAll(async () => {
    await dispose();
  });

  const addDocument = (tenantId: string, state: NewDocument['state'], chunks: number) =>
    inTransaction(store, async (trx) => {
      const created = await documents.createDocument(trx, document(tenantId, state));
      const records = await documents.addChunks(
        trx,
        tenantId,
        created.id,
        Array.from({ length: chunks }, (_, i) => chunk(i)),
      );
      return { document: created, chunks: records };
    });
  const addSession = (tenantId: string, messages: NewMessage[]) =>
    inTransaction(store, async (trx) => {
      const session = await sessions.createSession(trx, { tenantId, ownerId: 'alice' });
      return { session, messages: await sessions.appendMessages(trx, tenantId, session.id, messages) };
    });

  it('reads documents and chunks by id in the order asked, without missing ids or another tenant’s rows', async () => {
    const a = await addDocument('t1', 'READY', 2);
    const b = await addDocument('t1', 'INGESTING', 1);
    const foreign = await addDocument('t2', 'READY', 1);

    const found = await documents.getMany('t1', [b.document.id, MISSING, foreign.document.id, a.document.id]);
    expect([...found.keys()]).toEqual([b.document.id, a.document.id]);
    expect(found.get(a.document.id)).toEqual(await documents.get('t1', a.document.id));

    const ids = [
      a.chunks[1]!.id,
      foreign.chunks[0]!.id,
      b.chunks[0]!.id,
      MISSING,
      a.chunks[0]!.id,
      a.chunks[1]!.id,
    ];
    const chunks = await documents.getChunks('t1', ids);
    expect([...chunks.keys()]).toEqual([a.chunks[1]!.id, b.chunks[0]!.id, a.chunks[0]!.id]);
    expect(chunks.get(a.chunks[0]!.id)).toEqual(
      await documents.getChunk('t1', a.document.id, a.chunks[0]!.id),
    );
    expect(await documents.getChunks('t1', [])).toEqual(new Map());
  });

  it('counts searchable chunks of one or several documents', async () => {
    const ready = await addDocument('t3', 'READY', 3);
    const ingesting = await addDocument('t3', 'INGESTING', 2);
    const foreign = await addDocument('t4', 'READY', 1);
    // The indexer has processed the first chunk's outbox row only.
    await store.db
      .updateTable('outbox')
      .set({ processed_at: Date.now() })
      .where('aggregate_kind', '=', 'CHUNK')
      .where('aggregate_id', '=', ready.chunks[0]!.id)
      .execute();

    const counts = await documents.indexedChunkCounts('t3', [
      ingesting.document.id,
      foreign.document.id,
      MISSING,
      ready.document.id,
    ]);
    expect([...counts.entries()]).toEqual([
      [ingesting.document.id, 0],
      [ready.document.id, 1],
    ]);
    expect(await documents.indexedChunkCount('t3', ready.document.id)).toBe(1);
    expect(await documents.indexedChunkCount('t3', MISSING)).toBe(0);
    // READY, but its READY row not yet processed: its staged chunks are not searchable yet.
    await inTransaction(store, (trx) =>
      enqueueOutbox(trx, [
        { tenantId: 't3', aggregate: 'DOCUMENT', aggregateId: ready.document.id, operation: 'UPSERT' },
      ]),
    );
    expect(await documents.indexedChunkCount('t3', ready.document.id)).toBe(0);
    await store.db
      .updateTable('outbox')
      .set({ processed_at: Date.now() })
      .where('aggregate_kind', '=', 'DOCUMENT')
      .where('aggregate_id', '=', ready.document.id)
      .execute();
    expect(await documents.indexedChunkCount('t3', ready.document.id)).toBe(1);
  });

  it('reads sessions and messages by id in the order asked, without missing ids or another tenant’s rows', async () => {
    const first = await addSession('t5', [message('USER', 'hello'), message('ASSISTANT', 'hi')]);
    const second = await addSession('t5', [message('USER', 'again')]);
    const foreign = await addSession('t6', [message('USER', 'elsewhere')]);

    const found = await sessions.getMany('t5', [
      second.session.id,
      foreign.session.id,
      MISSING,
      first.session.id,
    ]);
    expect([...found.keys()]).toEqual([second.session.id, first.session.id]);
    expect(found.get(first.session.id)).toEqual(await sessions.get('t5', first.session.id));

    const messages = await sessions.getMessages('t5', [
      first.messages[1]!.id,
      foreign.messages[0]!.id,
      MISSING,
      second.messages[0]!.id,
      first.messages[0]!.id,
    ]);
    expect([...messages.keys()]).toEqual([
      first.messages[1]!.id,
      second.messages[0]!.id,
      first.messages[0]!.id,
    ]);
    expect(messages.get(first.messages[1]!.id)).toEqual(
      await sessions.getMessage('t5', first.session.id, first.messages[1]!.id),
    );
  });

  it('reads message windows in the order asked, overlapping ones included, within the tenant only', async () => {
    const long = await addSession(
      't7',
      Array.from({ length: 8 }, (_, i) => message(i % 2 === 0 ? 'USER' : 'ASSISTANT', `m${i + 1}`)),
    );
    const short = await addSession('t7', [message('USER', 'only')]);
    const foreign = await addSession('t8', [message('USER', 'x'), message('ASSISTANT', 'y')]);
    const sequences = (ms: readonly { sequence: number }[]) => ms.map((m) => m.sequence);

    const windows = await sessions.messageWindows('t7', [
      { sessionId: long.session.id, fromSequence: 4, toSequence: 6 },
      { sessionId: foreign.session.id, fromSequence: 1, toSequence: 50 },
      { sessionId: short.session.id, fromSequence: 2, toSequence: 51 },
      { sessionId: long.session.id, fromSequence: 2, toSequence: 5 },
      { sessionId: long.session.id, fromSequence: 7, toSequence: 56 },
    ]);
    expect(windows.map(sequences)).toEqual([[4, 5, 6], [], [], [2, 3, 4, 5], [7, 8]]);
    // The same messages as a page of the session read from the window's first sequence.
    const page = await sessions.listMessages('t7', long.session.id, { fromSequence: 7 }, { pageSize: 50 });
    expect(windows[4]).toEqual(page.items);
    expect(await sessions.messageWindows('t7', [])).toEqual([]);
  });
});
