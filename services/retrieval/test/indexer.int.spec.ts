import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { LocalEmbedder, type Embedder } from '@engram/embeddings';
import { encodeQuery } from '@engram/lexical';
import { createLogger, indexPassMetrics } from '@engram/runtime';
import {
  DocumentRepository,
  ForgetReceiptRepository,
  MemoryRepository,
  countSearchable,
  forgetPayload,
  forgetReceiptName,
  OutboxRepository,
  SessionRepository,
  enqueueOutbox,
  inTransaction,
  type Store,
} from '@engram/store';
import { startQdrant } from '@engram/testing';
import {
  createEmbeddedStore,
  createQdrantStore,
  pointId,
  STAGED_STATUS,
  type VectorIndex,
  type VectorStore,
} from '@engram/vector-index';
import { newDocument, newMemory, randomHash } from '../../../libs/store/test/fixtures.js';
import { dialects } from '../../../libs/store/test/harness.js';
import { LIVE_ALIAS, ensureLiveIndex, indexSpec } from '../src/indexer/collections.js';
import { Indexer } from '../src/indexer/indexer.js';
import { rebuildCollection } from '../src/indexer/rebuild.js';

const logger = createLogger({ service: 'test', level: 'silent' });
const HOUR = 3_600_000;

interface Stack {
  readonly store: Store;
  readonly vectors: VectorStore;
  readonly dispose: () => Promise<void>;
}

const stacks: { name: string; open: () => Promise<Stack> }[] = [
  {
    name: 'SQLite + embedded index',
    open: async () => {
      const sqlite = dialects.find((d) => d.name === 'sqlite')!;
      const { store, dispose } = await sqlite.open();
      const dir = mkdtempSync(join(tmpdir(), 'engram-vectors-'));
      const vectors = createEmbeddedStore({ path: dir });
      return {
        store,
        vectors,
        dispose: async () => {
          await vectors.close();
          await dispose();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 'MariaDB + Qdrant',
    open: async () => {
      const mariadb = dialects.find((d) => d.name === 'mariadb')!;
      const { store, dispose } = await mariadb.open();
      const qdrant = await startQdrant();
      const vectors = createQdrantStore({ url: qdrant.url });
      return {
        store,
        vectors,
        dispose: async () => {
          await vectors.close();
          await qdrant.stop();
          await dispose();
        },
      };
    },
  },
];

let embedder: Embedder;
beforeAll(() => {
  embedder = new LocalEmbedder();
});
afterAll(async () => {
  await embedder.close();
});

describe.each(stacks)('the indexer on $name', ({ open }) => {
  let stack: Stack;
  let index: VectorIndex;
  let memories: MemoryRepository;
  let documents: DocumentRepository;
  let sessions: SessionRepository;
  const tenantId = 't1';

  beforeAll(async () => {
    stack = await open();
    index = (await ensureLiveIndex(stack.vectors, indexSpec(embedder))).index;
    memories = new MemoryRepository(stack.store);
    documents = new DocumentRepository(stack.store);
    sessions = new SessionRepository(stack.store);
  }, 60_000);
  afterAll(async () => {
    await stack.dispose();
  });

  const indexer = (overrides: Partial<ConstructorParameters<typeof Indexer>[0]> = {}) =>
    new Indexer({ store: stack.store, embedder, index, logger, ...overrides });

  const addMemory = (text: string, ownerId = 'alice') =>
    inTransaction(stack.store, (trx) =>
      memories.create(
        trx,
        newMemory(text, { tenantId, ownerId, key: `k-${text.length}-${Math.random()}`, languageCode: 'zh' }),
        { action: 'CREATE', actorKind: 'USER', actorId: ownerId },
      ),
    );

  const addDocument = (texts: string[]) =>
    inTransaction(stack.store, async (trx) => {
      const document = await documents.createDocument(
        trx,
        newDocument({
          tenantId,
          displayName: 'notes',
          mimeType: 'text/plain',
          sourceUri: '',
          contentHash: randomHash(),
          sizeBytes: 10,
          charCount: 10,
          state: 'READY',
        }),
      );
      const chunks = await documents.addChunks(
        trx,
        tenantId,
        document.id,
        texts.map((text, ordinal) => ({
          ordinal,
          kind: 'TEXT',
          text,
          startOffset: 0,
          endOffset: text.length,
          overlapPrefixChars: 0,
          headerPrefixChars: 0,
          tokenCount: 10,
          headingPath: [],
        })),
      );
      return { document, chunks };
    });

  /** A document still INGESTING with `count` chunks of `text` (numbered), as a stream writes it. */
  const addStreamed = (count: number, text = 'section of the streamed manual') =>
    inTransaction(stack.store, async (trx) => {
      const document = await documents.createDocument(
        trx,
        newDocument({ tenantId, displayName: 'streamed', state: 'INGESTING', contentHash: randomHash() }),
      );
      await documents.addChunks(
        trx,
        tenantId,
        document.id,
        Array.from({ length: count }, (_, ordinal) => ({
          ordinal,
          kind: 'TEXT' as const,
          text: `${text} ${ordinal}`,
          startOffset: 0,
          endOffset: 10,
          overlapPrefixChars: 0,
          headerPrefixChars: 0,
          tokenCount: 5,
          headingPath: [],
        })),
      );
      return document;
    });

  const addSession = () =>
    inTransaction(stack.store, (trx) =>
      sessions.createSession(trx, {
        tenantId,
        ownerId: 'alice',
        displayName: '',
        languageCode: 'zh',
        timeZone: 'UTC',
        metadata: {},
      }),
    );

  const append = (sessionId: string, messages: { role: 'USER' | 'ASSISTANT'; content: string }[]) =>
    inTransaction(stack.store, (trx) =>
      sessions.appendMessages(
        trx,
        tenantId,
        sessionId,
        messages.map((m) => ({
          ...m,
          participantName: '',
          toolCallId: '',
          toolCalls: [],
          tokenCount: 5,
          metadata: {},
        })),
      ),
    );

  const query = async (text: string) => {
    const { vectors } = await embedder.embed([text], 'query');
    return vectors[0]!;
  };

  it('indexes memories, chunks of READY documents and conversation rounds, searchable by dense and lexical signals', async () => {
    const memory = await addMemory('用户喜欢简洁的回答，不要长篇大论');
    const { chunks } = await addDocument([
      'Qdrant stores dense and sparse vectors side by side.',
      '发票需要在月底之前提交给财务部门。',
    ]);
    const session = await addSession();
    const [user] = await append(session.id, [
      { role: 'USER', content: '我下周要去东京出差' },
      { role: 'ASSISTANT', content: '好的，祝你旅途顺利！' },
    ]);
    const pass = await indexer().drain();
    expect(pass.failed).toBe(0);
    expect(await index.count({ tenantId })).toBe(4);

    const filter = { tenantId, visibleTo: { subject: 'alice', orgIds: [], platform: false } };
    const dense = await index.searchDense(await query('回答要简短'), filter, 1);
    expect(dense[0]?.payload).toMatchObject({
      kind: 'MEMORY',
      sourceId: memory.id,
      status: 'ACTIVE',
      memoryType: 'FACT',
    });
    const lexical = await index.searchSparse(encodeQuery('月底 发票'), filter, 1);
    expect(lexical[0]?.payload).toMatchObject({ kind: 'CHUNK', sourceId: chunks[1]!.id });
    const round = await index.fetch([pointId('ROUND', user!.id)]);
    expect(round[0]?.payload).toMatchObject({
      kind: 'ROUND',
      sessionId: session.id,
      ownerId: 'alice',
      scope: 'SELF',
    });
    // Never visible to another user.
    expect(
      await index.searchDense(
        await query('回答要简短'),
        { tenantId, visibleTo: { subject: 'bob', orgIds: [], platform: false } },
        10,
      ),
    ).toEqual([]);
  });

  it('stages a streamed document’s chunks while it is INGESTING, activates them at READY in one request, and embeds each once', async () => {
    let embedded = 0;
    const counting: Embedder = {
      model: embedder.model,
      dimensions: embedder.dimensions,
      embed: (texts, kind, options) => {
        embedded += texts.length;
        return embedder.embed(texts, kind, options);
      },
      close: () => Promise.resolve(),
    };
    const points = async (documentId: string) => {
      const page = await index.scroll(
        { tenantId, kinds: ['CHUNK'], documentIds: [documentId] },
        { limit: 1000 },
      );
      return page.points.length;
    };
    const ready = (id: string) => inTransaction(stack.store, (trx) => documents.markReady(trx, tenantId, id));

    const staged = (documentId: string) =>
      index.count({ tenantId, kinds: ['CHUNK'], documentIds: [documentId], statuses: [STAGED_STATUS] });
    const searchable = async (documentId: string) =>
      (await index.searchSparse(encodeQuery('streamed manual'), active(documentId), 1000)).length;
    const active = (documentId: string) => ({
      tenantId,
      kinds: ['CHUNK' as const],
      documentIds: [documentId],
      statuses: ['ACTIVE'],
    });

    // Chunk rows indexed while INGESTING: staged points, found by no search and not embedded.
    const early = await addStreamed(70);
    await indexer({ embedder: counting }).drain();
    expect(await points(early.id)).toBe(70);
    expect(await staged(early.id)).toBe(70);
    expect(await searchable(early.id)).toBe(0);
    expect(embedded).toBe(0);
    expect(await index.countPendingDense({ tenantId, kinds: ['CHUNK'] })).toBe(0);
    expect(await documents.indexedChunkCount(tenantId, early.id)).toBe(0);
    // READY: until its row is processed, nothing is searchable and nothing is counted as such.
    await ready(early.id);
    expect(await documents.indexedChunkCount(tenantId, early.id)).toBe(0);
    expect(await documents.indexedChunkCounts(tenantId, [early.id])).toEqual(new Map([[early.id, 0]]));
    // The READY row activates the 70 staged points in one request; then they are embedded once.
    const writer = indexer({ embedder: counting });
    const pass = await writer.runOnce(Date.now(), 'conversational');
    expect(pass).toEqual({ leased: 1, processed: 1, failed: 0 });
    expect(await staged(early.id)).toBe(0);
    expect(await searchable(early.id)).toBe(70);
    expect(await documents.indexedChunkCount(tenantId, early.id)).toBe(70);
    expect(await documents.indexedChunkCounts(tenantId, [early.id])).toEqual(new Map([[early.id, 70]]));
    await writer.drain();
    expect(embedded).toBe(70);

    // READY before the indexer saw the chunk rows: they index the chunks as searchable at once,
    // and the document row finds every chunk accounted for and writes nothing.
    embedded = 0;
    const late = await addStreamed(40);
    await ready(late.id);
    await indexer({ embedder: counting }).drain();
    expect(await points(late.id)).toBe(40);
    expect(await searchable(late.id)).toBe(40);
    expect(embedded).toBe(40);
  });

  it('settles staged chunks whose document became READY or FAILED while they were being written', async () => {
    const count = (documentId: string, status: string) =>
      index.count({ tenantId, kinds: ['CHUNK'], documentIds: [documentId], statuses: [status] });
    /** An index whose chunk writes land only after `meanwhile` ran (once). */
    const late = (meanwhile: () => Promise<void>): VectorIndex => {
      let ran = false;
      return new Proxy(index, {
        get(target, prop, receiver) {
          if (prop === 'upsert') {
            const upsert: VectorIndex['upsert'] = async (written, options) => {
              if (!ran && written.some((p) => p.payload.status === STAGED_STATUS)) {
                ran = true;
                await meanwhile();
              }
              return target.upsert(written, options);
            };
            return upsert;
          }
          const value: unknown = Reflect.get(target, prop, receiver);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
    };

    // The READY row is processed (by the other loop) after the chunk rows read INGESTING and
    // before their points land: the chunk pass activates them itself.
    const readied = await addStreamed(6, 'race section about canals');
    const raced = indexer({
      index: late(async () => {
        await inTransaction(stack.store, (trx) => documents.markReady(trx, tenantId, readied.id));
        expect((await indexer().runOnce(Date.now(), 'conversational')).processed).toBe(1);
      }),
    });
    expect((await raced.runOnce(Date.now(), 'bulk')).processed).toBe(6);
    expect(await count(readied.id, STAGED_STATUS)).toBe(0);
    expect(await count(readied.id, 'ACTIVE')).toBe(6);

    // The same with a document that FAILED: the staged points are removed.
    const failed = await addStreamed(4, 'race section about canals');
    const dropped = indexer({
      index: late(async () => {
        await inTransaction(stack.store, (trx) =>
          documents.markFailed(trx, tenantId, failed.id, undefined, 'INTERNAL'),
        );
        await indexer().runOnce(Date.now(), 'conversational');
      }),
    });
    await dropped.runOnce(Date.now(), 'bulk');
    expect(await index.count({ tenantId, kinds: ['CHUNK'], documentIds: [failed.id] })).toBe(0);
    await indexer().drain();
    expect(await index.count({ tenantId, kinds: ['CHUNK'], documentIds: [failed.id] })).toBe(0);
  });

  it('a READY row indexes the chunks that have neither a point nor a pending row (a lost row)', async () => {
    const { document, chunks } = await addDocument(['丢失一：运河', '丢失二：船闸', '丢失三：码头']);
    const outbox = new OutboxRepository(stack.store);
    // The chunk rows are gone (as if parked and pruned): only the READY row is left.
    const rows = await outbox.lease(100, 60_000, Date.now(), 'bulk');
    await outbox.complete(rows.map((r) => r.id));
    await inTransaction(stack.store, (trx) =>
      enqueueOutbox(trx, [
        { tenantId, aggregate: 'DOCUMENT', aggregateId: document.id, operation: 'UPSERT' },
      ]),
    );
    expect(await index.count({ tenantId, documentIds: [document.id] })).toBe(0);
    await indexer().drain();
    const ids = chunks.map((c) => pointId('CHUNK', c.id));
    expect((await index.fetch(ids)).map((p) => p.payload.status)).toEqual(ids.map(() => 'ACTIVE'));
  });

  it('removes a point when its source stops being searchable', async () => {
    const memory = await addMemory('我最喜欢的颜色是蓝色');
    await indexer().drain();
    expect(await index.fetch([pointId('MEMORY', memory.id)])).toHaveLength(1);
    await inTransaction(stack.store, (trx) =>
      memories.update(
        trx,
        tenantId,
        memory.id,
        1,
        { status: 'DELETED' },
        { action: 'DELETE', actorKind: 'USER', actorId: 'alice' },
      ),
    );
    await indexer().drain();
    expect(await index.fetch([pointId('MEMORY', memory.id)])).toEqual([]);

    const session = await addSession();
    const [user] = await append(session.id, [{ role: 'USER', content: '记得提醒我喝水' }]);
    await indexer().drain();
    expect(await index.fetch([pointId('ROUND', user!.id)])).toHaveLength(1);
    await inTransaction(stack.store, (trx) => sessions.deleteSession(trx, tenantId, session.id));
    await indexer().drain();
    expect(await index.fetch([pointId('ROUND', user!.id)])).toEqual([]);
  });

  it("removes a batch's points whose sources are gone in one index request", async () => {
    const texts = ['批量删除一：红茶', '批量删除二：绿茶', '批量删除三：白茶'];
    const added = [];
    for (const text of texts) added.push(await addMemory(text));
    await indexer().drain();
    const ids = added.map((m) => pointId('MEMORY', m.id));
    expect(await index.fetch(ids)).toHaveLength(3);
    for (const memory of added) {
      await inTransaction(stack.store, (trx) =>
        memories.update(
          trx,
          tenantId,
          memory.id,
          1,
          { status: 'DELETED' },
          { action: 'DELETE', actorKind: 'USER', actorId: 'alice' },
        ),
      );
    }
    const deletions: (readonly string[])[] = [];
    const counting = new Proxy(index, {
      get(target, prop, receiver) {
        if (prop === 'delete') {
          const remove: VectorIndex['delete'] = (pointIds, options) => {
            deletions.push(pointIds);
            return target.delete(pointIds, options);
          };
          return remove;
        }
        const value: unknown = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    await indexer({ index: counting }).runOnce();
    expect(deletions).toHaveLength(1);
    expect([...deletions[0]!].sort()).toEqual([...ids].sort());
    expect(await index.fetch(ids)).toEqual([]);
  });

  it('replaces a question-only round when the reply arrives', async () => {
    const session = await addSession();
    const [user] = await append(session.id, [{ role: 'USER', content: 'What is the capital of France?' }]);
    await indexer().drain();
    const before = await index.fetch([pointId('ROUND', user!.id)], { withVectors: true });
    await append(session.id, [{ role: 'ASSISTANT', content: 'Paris is the capital of France.' }]);
    await indexer().drain();
    const after = await index.fetch([pointId('ROUND', user!.id)], { withVectors: true });
    expect(after).toHaveLength(1);
    expect(Array.from(after[0]!.dense!)).not.toEqual(Array.from(before[0]!.dense!));
    expect(after[0]!.sparse.indices.length).toBeGreaterThan(before[0]!.sparse.indices.length);
  });

  it('leaves the index equal to the source after a crash mid-batch (no loss, no duplicates)', async () => {
    const created = [];
    for (let i = 0; i < 6; i += 1)
      created.push(await addMemory(`崩溃测试记忆 ${i}：我喜欢第${i}种水果`, 'carol'));
    // A first indexer leases the batch, writes some points, and dies before marking anything done.
    const outbox = new OutboxRepository(stack.store);
    const leased = await outbox.lease(100, 1_000);
    expect(leased.length).toBeGreaterThanOrEqual(6);
    const { vectors } = await embedder.embed([created[0]!.text], 'document');
    await index.upsert([
      {
        id: pointId('MEMORY', created[0]!.id),
        dense: vectors[0]!,
        sparse: { indices: [1], values: [1] },
        payload: {
          tenantId,
          kind: 'MEMORY',
          sourceId: created[0]!.id,
          scope: 'SELF',
          ownerId: 'carol',
          orgId: '',
          status: 'ACTIVE',
          createdAt: 1,
        },
      },
    ]);
    // After the lease runs out, a restarted indexer replays the whole batch.
    const restarted = await indexer().drain();
    expect(restarted.leased).toBe(0); // still leased
    const later = Date.now() + 2_000;
    const replay = indexer();
    let total = 0;
    for (let pass = await replay.runOnce(later); pass.leased > 0; pass = await replay.runOnce(later))
      total += pass.processed;
    expect(total).toBeGreaterThanOrEqual(6);
    expect(await index.count({ tenantId, ownerIds: ['carol'] })).toBe(6);
    const points = await index.fetch(created.map((m) => pointId('MEMORY', m.id)));
    expect(points.map((p) => p.payload.sourceId).sort()).toEqual(created.map((m) => m.id).sort());
    expect((await outbox.backlog(later)).pending).toBe(0);
  });

  it('parks a poison row after repeated failures without blocking the rows behind it', async () => {
    const poison = await addMemory('☠ this text always fails to embed', 'dave');
    const healthy = await addMemory('a perfectly normal memory', 'dave');
    const flaky: Embedder = {
      model: embedder.model,
      dimensions: embedder.dimensions,
      embed: (texts, kind, options) =>
        texts.some((t) => t.startsWith('☠'))
          ? Promise.reject(new Error('model crashed on this text'))
          : embedder.embed(texts, kind, options),
      close: () => Promise.resolve(),
    };
    // The outbox loop embeds only with lexical-first off (the dense stage's refusals: below).
    const worker = indexer({ embedder: flaky, maxAttempts: 3, lexicalFirst: false });
    let now = Date.now();
    for (let i = 0; i < 5; i += 1, now += HOUR) await worker.runOnce(now);
    expect(await index.fetch([pointId('MEMORY', healthy.id)])).toHaveLength(1);
    expect(await index.fetch([pointId('MEMORY', poison.id)])).toEqual([]);
    const outbox = new OutboxRepository(stack.store);
    expect(await outbox.parked(10)).toEqual([
      expect.objectContaining({
        aggregateId: poison.id,
        attempts: 3,
        lastError: expect.stringContaining('model crashed') as unknown,
      }),
    ]);
    expect((await outbox.backlog(now)).pending).toBe(0);
  });

  it('leaves no point of a forgotten subject when an UPSERT planned before the erasure lands after its DELETE (two indexers)', async () => {
    const receipts = new ForgetReceiptRepository(stack.store);
    const subject = 'erin';
    await addMemory('erin 下周三去杭州出差', subject);
    // Indexer A leases the memory's UPSERT, reads the memory, and is held while it embeds.
    let reached!: () => void;
    const embedding = new Promise<void>((resolve) => (reached = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held: Embedder = {
      model: embedder.model,
      dimensions: embedder.dimensions,
      embed: async (texts, kind, options) => {
        reached();
        await gate;
        return embedder.embed(texts, kind, options);
      },
      close: () => Promise.resolve(),
    };
    // The outbox loop embeds only with lexical-first off (the dense stage's race: below).
    const a = indexer({ embedder: held, lexicalFirst: false });
    const aPass = a.runOnce();
    await embedding;

    // ForgetUser: the memory is purged with a DELETE row tagged with the receipt, and indexer B
    // applies it at once (there is no point yet to delete).
    const receipt = await inTransaction(stack.store, async (trx) => {
      const created = await receipts.create(trx, {
        tenantId,
        subject,
        requestedBy: 'admin',
        reason: '',
        requestId: 'race-1',
      });
      await memories.purgeOwner(trx, tenantId, subject, {
        createdAtOrBefore: created.createdAt,
        erasedBy: forgetReceiptName(created.id),
        payload: forgetPayload(created.id),
      });
      return created;
    });
    const b = indexer();
    await b.drain();
    const mark = await receipts.outboxMark();
    // The erasure's own rows are done, but A's UPSERT (planned before the erasure) is still in
    // flight: the receipt must not complete yet.
    expect(await receipts.indexProgress(receipt, mark)).toMatchObject({ pending: 0, unsettled: 1 });

    release();
    await aPass;
    // The race: A's stale point landed after the DELETE.
    expect(await index.count({ tenantId, ownerIds: [subject] })).toBe(1);
    expect(await receipts.indexProgress(receipt, mark)).toMatchObject({ pending: 0, unsettled: 0 });

    // The forget's last step: a subject-wide purge, after everything else.
    const purgeMark = await inTransaction(stack.store, (trx) => receipts.enqueueSubjectPurge(trx, receipt));
    expect(purgeMark).toBeGreaterThan(mark);
    expect((await receipts.indexProgress(receipt, purgeMark)).pending).toBe(1);
    await a.drain();
    expect((await receipts.indexProgress(receipt, purgeMark)).pending).toBe(0);
    expect(await index.count({ tenantId, ownerIds: [subject] })).toBe(0);
  });

  describe('lexical-first (decision 0032)', () => {
    const ids = (points: readonly { id: string }[]) => points.map((p) => p.id);
    // Each case starts with nothing pending from the others.
    beforeEach(async () => {
      await indexer().drain();
    });
    /** The real embedder, with `before` run ahead of every document embedding call. */
    const withHook = (before: (texts: readonly string[]) => Promise<void>): Embedder =>
      new Proxy(embedder, {
        get(target, prop, receiver) {
          if (prop === 'embed') {
            const embed: Embedder['embed'] = async (texts, kind, options) => {
              if (kind === 'document') await before(texts);
              return target.embed(texts, kind, options);
            };
            return embed;
          }
          const value: unknown = Reflect.get(target, prop, receiver);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });

    it('makes a new item lexically searchable in the outbox pass, and dense-searchable after the dense stage', async () => {
      const memory = await addMemory('闪电测试：我最喜欢的乐器是手风琴');
      const id = pointId('MEMORY', memory.id);
      const filter = { tenantId, kinds: ['MEMORY' as const] };
      const writer = indexer();
      await writer.runOnce();
      const [pending] = await index.fetch([id], { withVectors: true });
      expect(pending?.dense).toBeUndefined();
      expect(pending?.payload.densePendingSince).toBeGreaterThan(0);
      expect(ids(await index.searchSparse(encodeQuery('手风琴'), filter, 5))).toContain(id);
      expect(ids(await index.searchDense(await query('手风琴'), filter, 100))).not.toContain(id);
      expect(await index.countPendingDense()).toBe(1);

      const pass = await writer.runDenseOnce();
      expect(pass).toEqual({ pending: 1, embedded: 1, superseded: 0, failed: 0 });
      const [done] = await index.fetch([id], { withVectors: true });
      expect(done?.dense).toHaveLength(indexSpec(embedder).dimensions);
      expect(done?.payload.densePendingSince).toBeUndefined();
      expect(ids(await index.searchDense(await query('手风琴'), filter, 100))).toContain(id);
      expect(ids(await index.searchSparse(encodeQuery('手风琴'), filter, 5))).toContain(id);
      expect(await index.countPendingDense()).toBe(0);
    });

    it('embeds no document chunk while an outbox loop has a backlog: the lexical batches get the cores first', async () => {
      const texts = Array.from({ length: 7 }, (_, i) => `积压测试第${i}段：关于第${i}座灯塔的笔记`);
      const { chunks } = await addDocument(texts);
      const chunkIds = chunks.map((c) => pointId('CHUNK', c.id));
      let lexicalAtFirstEmbedding: number | undefined;
      const writer = indexer({
        batchSize: 2,
        idleMs: 10,
        denseYieldMaxMs: 600_000,
        embedder: withHook(async () => {
          lexicalAtFirstEmbedding ??= (await index.fetch(chunkIds)).length;
        }),
      });
      writer.bulkWorker.start();
      writer.denseWorker.start();
      try {
        while (
          (await index.countPendingDense()) > 0 ||
          (await index.fetch(chunkIds)).length < chunkIds.length
        ) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      } finally {
        await writer.bulkWorker.stop();
        await writer.denseWorker.stop();
      }
      // Four passes of two rows each: the dense stage started only after the last one.
      expect(lexicalAtFirstEmbedding).toBe(chunkIds.length);
      const done = await index.fetch(chunkIds, { withVectors: true });
      expect(done.every((p) => p.dense !== undefined)).toBe(true);
    });

    it('times each stage of its passes, per loop (engram_index_pass_stage_seconds)', async () => {
      await addDocument(['计时测试：第一段', '计时测试：第二段']);
      await addMemory('计时测试：我喜欢桥');
      const metrics = indexPassMetrics();
      const observed = async () =>
        (await metrics.duration.get()).values.filter((v) => v.metricName?.endsWith('_count'));
      const before = await observed();
      const writer = indexer({ metrics });
      await writer.runOnce(Date.now(), 'bulk');
      await writer.runOnce(Date.now(), 'conversational');
      await writer.runDenseOnce();
      const after = await observed();
      const grew = (loop: string, stage: string) => {
        const count = (values: typeof before) =>
          values.find((v) => v.labels['loop'] === loop && v.labels['stage'] === stage)?.value ?? 0;
        return count(after) - count(before);
      };
      for (const stage of ['lease', 'plan', 'tokenize', 'write', 'complete']) {
        expect(grew('bulk', stage)).toBe(1);
        expect(grew('conversational', stage)).toBe(1);
      }
      for (const stage of ['select', 'plan', 'embed', 'write']) expect(grew('dense', stage)).toBe(1);
    });

    it('leases bulkBatchSize rows per bulk pass and batchSize per conversational pass', async () => {
      const { chunks } = await addDocument(
        Array.from({ length: 9 }, (_, i) => `古井测试第${i}段：村口的古井`),
      );
      const session = await addSession();
      for (let i = 0; i < 3; i++) {
        await append(session.id, [
          { role: 'USER', content: `古井测试第${i}问` },
          { role: 'ASSISTANT', content: '好的' },
        ]);
      }
      const writer = indexer({ batchSize: 2, bulkBatchSize: 4 });
      expect((await writer.runOnce(Date.now(), 'conversational')).leased).toBe(2);
      const bulk: number[] = [];
      for (let leased = -1; leased !== 0;) {
        leased = (await writer.runOnce(Date.now(), 'bulk')).leased;
        bulk.push(leased);
      }
      expect(bulk).toEqual([4, 4, 1, 0]);
      const filter = { tenantId, kinds: ['CHUNK' as const] };
      const found = ids(await index.searchSparse(encodeQuery('古井'), filter, 100));
      expect(found).toEqual(expect.arrayContaining(chunks.map((c) => pointId('CHUNK', c.id))));
    });

    it('embeds rounds, but no document chunk, while the bulk loop has a backlog', async () => {
      const texts = Array.from({ length: 7 }, (_, i) => `让路测试第${i}段：关于第${i}条运河的笔记`);
      const { chunks } = await addDocument(texts);
      const chunkIds = chunks.map((c) => pointId('CHUNK', c.id));
      const session = await addSession();
      const [user] = await append(session.id, [
        { role: 'USER', content: '我明天去看运河' },
        { role: 'ASSISTANT', content: '记得带伞' },
      ]);
      const roundId = pointId('ROUND', user!.id);
      const writer = indexer({ batchSize: 2, idleMs: 10, denseYieldMaxMs: 600_000 });
      await writer.runOnce(Date.now(), 'conversational');
      // A full bulk batch: more is waiting, so the dense stage holds chunks back.
      expect((await writer.runOnce(Date.now(), 'bulk')).leased).toBe(2);
      writer.denseWorker.start();
      try {
        while ((await index.fetch([roundId], { withVectors: true }))[0]?.dense === undefined) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const written = await index.fetch(chunkIds, { withVectors: true });
        expect(written.length).toBeGreaterThan(0);
        expect(written.every((p) => p.dense === undefined)).toBe(true);
        // The backlog drained (a partial batch): the chunks get their vectors too.
        while ((await writer.runOnce(Date.now(), 'bulk')).leased > 0);
        while ((await index.countPendingDense()) > 0) await new Promise((resolve) => setTimeout(resolve, 20));
      } finally {
        await writer.denseWorker.stop();
      }
      const done = await index.fetch(chunkIds, { withVectors: true });
      expect(done).toHaveLength(chunkIds.length);
      expect(done.every((p) => p.dense !== undefined)).toBe(true);
    });

    it('embeds rounds and memories before older document chunks', async () => {
      const { chunks } = await addDocument([
        '第一段：关于火山的笔记',
        '第二段：关于冰川的笔记',
        '第三段：关于沙漠的笔记',
      ]);
      const writer = indexer({ denseBatchSize: 1 });
      await writer.drainOutbox();
      // The round is written (lexically) after the chunks…
      const session = await addSession();
      const [user] = await append(session.id, [
        { role: 'USER', content: '我下周要去看极光' },
        { role: 'ASSISTANT', content: '记得带厚衣服' },
      ]);
      await writer.drainOutbox();
      const chunkIds = chunks.map((c) => pointId('CHUNK', c.id));
      expect(await index.countPendingDense()).toBe(chunkIds.length + 1);
      expect((await index.pendingDense(10)).map((p) => p.payload.kind)).toEqual([
        'CHUNK',
        'CHUNK',
        'CHUNK',
        'ROUND',
      ]);
      // …and gets its dense vector first.

      expect((await writer.runDenseOnce()).embedded).toBe(1);
      const [round] = await index.fetch([pointId('ROUND', user!.id)], { withVectors: true });
      expect(round?.dense).toBeDefined();
      const stillPending = await index.fetch(chunkIds, { withVectors: true });
      expect(stillPending.every((p) => p.dense === undefined)).toBe(true);

      expect(await writer.drainDense()).toBe(chunkIds.length);
      expect(await index.countPendingDense()).toBe(0);
    });

    it('never overwrites a point that a newer write replaced while its old text was being embedded', async () => {
      const session = await addSession();
      const [user] = await append(session.id, [
        { role: 'USER', content: 'Which city hosts the Louvre museum?' },
      ]);
      const id = pointId('ROUND', user!.id);
      await indexer().drainOutbox();
      let raced = false;
      // While the dense stage embeds the question-only round, the reply arrives and is indexed.
      const racing = indexer({
        embedder: withHook(async () => {
          if (raced) return;
          raced = true;
          await append(session.id, [{ role: 'ASSISTANT', content: 'The Louvre is in Paris.' }]);
          await indexer().drainOutbox();
        }),
      });
      expect(await racing.runDenseOnce()).toEqual({ pending: 1, embedded: 0, superseded: 1, failed: 0 });
      const [replaced] = await index.fetch([id], { withVectors: true });
      expect(replaced?.dense).toBeUndefined();
      expect(
        ids(await index.searchSparse(encodeQuery('Paris'), { tenantId, kinds: ['ROUND'] }, 5)),
      ).toContain(id);

      expect(await racing.drainDense()).toBe(1);
      const [done] = await index.fetch([id], { withVectors: true });
      expect(done?.dense).toBeDefined();
      expect(
        ids(await index.searchDense(await query('Louvre Paris'), { tenantId, kinds: ['ROUND'] }, 5)),
      ).toContain(id);
    });

    it('moves a text the model refuses to the back of the queue without holding up the others', async () => {
      const good = await addMemory('我喜欢在雨天读小说');
      const poison = await addMemory('这条记忆会被模型拒绝 POISON-TEXT');
      await indexer().drainOutbox();
      const [before] = await index.fetch([pointId('MEMORY', poison.id)]);
      const refusing = indexer({
        embedder: withHook((texts) =>
          texts.some((t) => t.includes('POISON-TEXT'))
            ? Promise.reject(new Error('the model refused the text'))
            : Promise.resolve(),
        ),
      });
      expect(await refusing.runDenseOnce()).toEqual({ pending: 2, embedded: 1, superseded: 0, failed: 1 });
      const [kept, moved] = await index.fetch([pointId('MEMORY', good.id), pointId('MEMORY', poison.id)], {
        withVectors: true,
      });
      expect(kept?.dense).toBeDefined();
      expect(moved?.dense).toBeUndefined();
      expect(moved!.payload.densePendingSince!).toBeGreaterThan(before!.payload.densePendingSince!);
      // The real model takes it.
      expect(await indexer().drainDense()).toBe(1);
    });

    it('never brings back a point that a forget deleted while its text was being embedded', async () => {
      const receipts = new ForgetReceiptRepository(stack.store);
      const subject = 'frank';
      const memory = await addMemory('frank 每周五去游泳', subject);
      await indexer().drainOutbox();
      const held = indexer({
        embedder: withHook(async () => {
          // The forget lands while the dense stage embeds: the memory is purged and its DELETE applied.
          await inTransaction(stack.store, async (trx) => {
            const created = await receipts.create(trx, {
              tenantId,
              subject,
              requestedBy: 'admin',
              reason: '',
              requestId: 'race-dense',
            });
            await memories.purgeOwner(trx, tenantId, subject, {
              createdAtOrBefore: created.createdAt,
              erasedBy: forgetReceiptName(created.id),
              payload: forgetPayload(created.id),
            });
          });
          await indexer().drainOutbox();
        }),
      });
      expect(await held.runDenseOnce()).toMatchObject({ pending: 1, embedded: 0, superseded: 1 });
      expect(await index.fetch([pointId('MEMORY', memory.id)])).toEqual([]);
      expect(await index.count({ tenantId, ownerIds: [subject] })).toBe(0);
    });

    it('embeds before it writes when lexical-first is off', async () => {
      const memory = await addMemory('关掉词法优先时立刻写入向量');
      await indexer({ lexicalFirst: false }).runOnce();
      const [point] = await index.fetch([pointId('MEMORY', memory.id)], { withVectors: true });
      expect(point?.dense).toHaveLength(indexSpec(embedder).dimensions);
      expect(point?.payload.densePendingSince).toBeUndefined();
    });
  });

  it('rebuilds the index from the source of truth alone, swaps the alias, and keeps changes made meanwhile', async () => {
    await indexer().drain();
    const before = await stack.vectors.aliasTarget(LIVE_ALIAS);
    // Simulate a damaged index: points are lost, the source of truth still has the rows.
    const victim = await addMemory('一条在索引里丢失的记忆');
    await indexer().drain();
    await index.delete([pointId('MEMORY', victim.id)]);
    let during: string | undefined;
    const report = await rebuildCollection(
      { store: stack.store, vectors: stack.vectors, embedder, logger },
      {
        batchSize: 4,
        onProgress: async (p) => {
          if (p.phase === 'scan' && during === undefined)
            during = (await addMemory('重建期间写入的新记忆')).id;
        },
      },
    );
    expect(report.failures).toBe(0);
    expect(report.previous).toBe(before);
    const after = await stack.vectors.aliasTarget(LIVE_ALIAS);
    expect(after).toBe(report.collection);
    expect(after).not.toBe(before);
    expect(await stack.vectors.listCollections()).not.toContain(before);

    const live = stack.vectors.index(LIVE_ALIAS);
    const source = await countSearchable(stack.store, tenantId);
    expect(await live.count({ tenantId, kinds: ['MEMORY'] })).toBe(source.memories);
    expect(await live.count({ tenantId, kinds: ['CHUNK'] })).toBe(source.chunks);
    expect(await live.count({ tenantId, kinds: ['ROUND'] })).toBe(source.rounds);
    expect(await live.fetch([pointId('MEMORY', victim.id), pointId('MEMORY', during!)])).toHaveLength(2);
  });
});
