import { Code } from '@connectrpc/connect';
import { beforeAll, describe, expect, it } from '@jest/globals';
import {
  DocumentRepository,
  inTransaction,
  type DocumentRecord,
  type NewChunk,
  type NewDocument,
  type Store,
  type Viewer,
} from '../src/index.js';
import { newChunk, newDocument } from './fixtures.js';
import { code, countRows, dialects, reason, thrown, useStore } from './harness.js';

const document = newDocument;
const chunk = newChunk;

/** Outbox rows about these aggregates, oldest first, as [kind, id, operation, payload]. */
async function outboxFor(store: Store, ids: readonly string[]): Promise<[string, string, string, unknown][]> {
  if (ids.length === 0) return [];
  const rows = await store.db
    .selectFrom('outbox')
    .selectAll()
    .where('aggregate_id', 'in', [...ids])
    .orderBy('id')
    .execute();
  return rows.map((r) => [r.aggregate_kind, r.aggregate_id, r.operation, JSON.parse(r.payload_json)]);
}

describe.each(dialects)('DocumentRepository on $name', (dialect) => {
  let store: Store;
  let documents: DocumentRepository;

  const create = (input: NewDocument, chunks: readonly NewChunk[] = []) =>
    inTransaction(store, async (trx) => {
      const created = await documents.createDocument(trx, input);
      await documents.addChunks(trx, input.tenantId, created.id, chunks);
      return created;
    });

  useStore(dialect, (opened) => {
    store = opened;
    documents = new DocumentRepository(opened);
  });

  it('round-trips a document and its chunks, including Chinese, emoji and 4-byte characters', async () => {
    const text = '员工手册：请假流程 😀🧠 𠀋𡈽 — and English.';
    const large = '汉字😀𠀋'.repeat(5_000);
    expect(Array.from(large)).toHaveLength(20_000); // code points, not UTF-16 units
    const input = document({
      displayName: '员工手册 📘',
      sourceUri: 'https://例子.测试/手册.md',
      metadata: { 项目: '阿波罗', emoji: '🚀' },
    });
    const { stored, chunks } = await inTransaction(store, async (trx) => {
      const created = await documents.createDocument(trx, input, 1_700_000_000_123);
      const written = await documents.addChunks(
        trx,
        't1',
        created.id,
        [
          chunk(0, { text, headingPath: ['手册', '请假 🏖️'], tokenCount: 17 }),
          chunk(1, { kind: 'TABLE', text: large, headerPrefixChars: 12, overlapPrefixChars: 0 }),
          chunk(2, { kind: 'CODE', text: '```ts\nconst 𠀋 = 1;\n```' }),
        ],
        1_700_000_000_456,
      );
      return { stored: created, chunks: written };
    });

    expect(stored).toMatchObject({ state: 'INGESTING', chunkCount: 0, version: 1, failureReason: '' });
    expect(stored.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    const read = await documents.get('t1', stored.id);
    expect(read).toEqual({
      ...stored,
      chunkCount: 3,
      updatedAt: 1_700_000_000_456,
      version: 2,
    });
    expect(read?.metadata).toEqual({ 项目: '阿波罗', emoji: '🚀' });
    expect(read?.createdAt).toBe(1_700_000_000_123);

    const listed = await documents.listChunks('t1', stored.id, { pageSize: 10 });
    expect(listed.items).toEqual(chunks);
    expect(listed.items.map((c) => c.kind)).toEqual(['TEXT', 'TABLE', 'CODE']);
    expect(listed.items[0]?.headingPath).toEqual(['手册', '请假 🏖️']);
    expect(listed.items[1]?.text).toBe(large);
    expect(await documents.getChunk('t1', stored.id, chunks[1]!.id)).toEqual(chunks[1]);
  });

  it('writes one CHUNK UPSERT outbox row per chunk in the same transaction as the chunks', async () => {
    const before = await countRows(store, 'outbox');
    const { doc, chunks } = await inTransaction(store, async (trx) => {
      const created = await documents.createDocument(trx, document({ tenantId: 't-outbox' }));
      const written = await documents.addChunks(trx, 't-outbox', created.id, [chunk(0), chunk(1), chunk(2)]);
      return { doc: created, chunks: written };
    });
    expect(await countRows(store, 'outbox')).toBe(before + 3);
    expect(await outboxFor(store, [doc.id, ...chunks.map((c) => c.id)])).toEqual(
      chunks.map((c) => ['CHUNK', c.id, 'UPSERT', { documentId: doc.id }]),
    );
    const tenants = await store.db
      .selectFrom('outbox')
      .select('tenant_id')
      .where(
        'aggregate_id',
        'in',
        chunks.map((c) => c.id),
      )
      .execute();
    expect(tenants.map((r) => r.tenant_id)).toEqual(['t-outbox', 't-outbox', 't-outbox']);
  });

  it('leaves no document, no chunk and no outbox row when the transaction fails after addChunks', async () => {
    const counts = async () => [
      await countRows(store, 'documents'),
      await countRows(store, 'chunks'),
      await countRows(store, 'outbox'),
    ];
    const before = await counts();
    const failure = await thrown(() =>
      inTransaction(store, async (trx) => {
        const created = await documents.createDocument(trx, document({ tenantId: 't-rollback' }));
        await documents.addChunks(trx, 't-rollback', created.id, [chunk(0), chunk(1)]);
        throw new Error('crash after the write');
      }),
    );
    expect((failure as Error).message).toBe('crash after the write');
    expect(await counts()).toEqual(before);
  });

  it('writes and deletes a document of 1,201 chunks, more than one statement holds', async () => {
    const outbox = await countRows(store, 'outbox');
    const doc = await create(
      document({ tenantId: 't-many' }),
      Array.from({ length: 1_201 }, (_, i) => chunk(i, { text: `第${i}段 😀` })),
    );
    expect(await documents.get('t-many', doc.id)).toMatchObject({ chunkCount: 1_201 });
    expect(await countRows(store, 'outbox')).toBe(outbox + 1_201);
    const last = await documents.listChunks('t-many', doc.id, { pageSize: 10 }, { fromOrdinal: 1_195 });
    expect(last.items.map((c) => c.text)).toEqual(
      [1195, 1196, 1197, 1198, 1199, 1200].map((i) => `第${i}段 😀`),
    );

    const counts = await inTransaction(store, (trx) => documents.deleteDocument(trx, 't-many', doc.id));
    expect(counts).toEqual({ documents: 1, chunks: 1_201 });
    expect(await countRows(store, 'outbox')).toBe(outbox + 1_201 + 1_202);
  });

  it('refuses a chunk ordinal already taken with ALREADY_EXISTS and writes none of the batch', async () => {
    const doc = await create(document({ tenantId: 't-dup' }), [chunk(0), chunk(1)]);
    const outbox = await countRows(store, 'outbox');
    const duplicate = await thrown(() =>
      inTransaction(store, (trx) => documents.addChunks(trx, 't-dup', doc.id, [chunk(2), chunk(1)])),
    );
    expect(code(duplicate)).toBe(Code.AlreadyExists);
    expect(await countRows(store, 'outbox')).toBe(outbox);
    expect(
      (await documents.listChunks('t-dup', doc.id, { pageSize: 10 })).items.map((c) => c.ordinal),
    ).toEqual([0, 1]);
    expect(await documents.get('t-dup', doc.id)).toMatchObject({ chunkCount: 2, version: 2 });
  });

  it('answers NOT_FOUND when adding chunks to a missing document or to one of another tenant', async () => {
    const doc = await create(document({ tenantId: 't-owner' }));
    const otherTenant = await thrown(() =>
      inTransaction(store, (trx) => documents.addChunks(trx, 't-intruder', doc.id, [chunk(0)])),
    );
    expect(code(otherTenant)).toBe(Code.NotFound);
    const missing = await thrown(() =>
      inTransaction(store, (trx) =>
        documents.addChunks(trx, 't-owner', '01JD7Z5Q2G8V6K3M9T1R4X0B2C', [chunk(0)]),
      ),
    );
    expect(code(missing)).toBe(Code.NotFound);
    expect(await documents.get('t-owner', doc.id)).toMatchObject({ chunkCount: 0, version: 1 });
  });

  describe('state changes', () => {
    it('marks an INGESTING document READY with a new version and a DOCUMENT UPSERT outbox row', async () => {
      const doc = await create(document({ tenantId: 't-state' }), [chunk(0)]);
      const ready = await inTransaction(store, (trx) =>
        documents.markReady(trx, 't-state', doc.id, 2, 1_800_000_000_000),
      );
      expect(ready).toMatchObject({
        state: 'READY',
        version: 3,
        chunkCount: 1,
        updatedAt: 1_800_000_000_000,
      });
      expect(await documents.get('t-state', doc.id)).toEqual(ready);
      expect((await outboxFor(store, [doc.id])).at(-1)).toEqual(['DOCUMENT', doc.id, 'UPSERT', {}]);
      const again = await thrown(() =>
        inTransaction(store, (trx) => documents.markReady(trx, 't-state', doc.id)),
      );
      expect(code(again)).toBe(Code.FailedPrecondition);
      expect(reason(again)).toBe('STATE_CONFLICT');
    });

    it('refuses a stale version with ABORTED ETAG_MISMATCH and changes nothing', async () => {
      const doc = await create(document({ tenantId: 't-state' }), [chunk(0)]);
      const outbox = await countRows(store, 'outbox');
      const stale = await thrown(() =>
        inTransaction(store, (trx) => documents.markReady(trx, 't-state', doc.id, 1)),
      );
      expect(code(stale)).toBe(Code.Aborted);
      expect(reason(stale)).toBe('ETAG_MISMATCH');
      const staleFailure = await thrown(() =>
        inTransaction(store, (trx) => documents.markFailed(trx, 't-state', doc.id, 1, 'INTERNAL')),
      );
      expect(code(staleFailure)).toBe(Code.Aborted);
      expect(await documents.get('t-state', doc.id)).toMatchObject({
        state: 'INGESTING',
        version: 2,
        chunkCount: 1,
      });
      expect(await countRows(store, 'outbox')).toBe(outbox);
    });

    it('lets exactly one of two concurrent writers of the same version win', async () => {
      const doc = await create(document({ tenantId: 't-state' }), [chunk(0)]);
      const results = await Promise.allSettled([
        inTransaction(store, (trx) => documents.markReady(trx, 't-state', doc.id, 2)),
        inTransaction(store, (trx) => documents.markFailed(trx, 't-state', doc.id, 2, 'CANCELLED')),
      ]);
      const losers = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect(losers).toHaveLength(1);
      expect(code(losers[0]?.reason)).toBe(Code.Aborted);
      expect((await documents.get('t-state', doc.id))?.version).toBe(3);
    });

    it('marks a document FAILED: its chunks are removed with CHUNK DELETE rows, the record stays', async () => {
      const doc = await create(document({ tenantId: 't-state' }), [chunk(0), chunk(1)]);
      const chunks = (await documents.listChunks('t-state', doc.id, { pageSize: 10 })).items;
      const failed = await inTransaction(store, (trx) =>
        documents.markFailed(trx, 't-state', doc.id, undefined, 'INTERNAL', Date.now(), 'the parser crashed'),
      );
      expect(failed).toMatchObject({
        state: 'FAILED',
        failureReason: 'INTERNAL',
        failureMessage: 'the parser crashed',
        chunkCount: 0,
        version: 3,
      });
      expect(await documents.get('t-state', doc.id)).toEqual(failed);
      expect((await documents.listChunks('t-state', doc.id, { pageSize: 10 })).items).toEqual([]);
      const outbox = await outboxFor(store, [doc.id, ...chunks.map((c) => c.id)]);
      expect(outbox.filter(([, , op]) => op === 'DELETE')).toEqual(
        chunks.map((c) => ['CHUNK', c.id, 'DELETE', { documentId: doc.id }]),
      );
      expect(outbox.at(-1)).toEqual(['DOCUMENT', doc.id, 'UPSERT', {}]);
      const more = await thrown(() =>
        inTransaction(store, (trx) => documents.addChunks(trx, 't-state', doc.id, [chunk(0)])),
      );
      expect(code(more)).toBe(Code.FailedPrecondition);
    });
  });

  describe('deduplication', () => {
    const identity = {
      tenantId: 't-dedupe',
      ownerId: 'alice',
      scope: 'SELF' as const,
      orgId: '',
      mimeType: 'text/plain',
      contentHash: 'b'.repeat(64),
    };

    it('finds the READY document with the same owner, scope, org, media type and content hash', async () => {
      expect(await documents.findByContentHash(store.db, identity)).toBeUndefined();
      const failed = await create(document({ ...identity, state: 'INGESTING' }));
      await inTransaction(store, (trx) =>
        documents.markFailed(trx, 't-dedupe', failed.id, undefined, 'INTERNAL'),
      );
      expect(await documents.findByContentHash(store.db, identity)).toBeUndefined();

      const ingesting = await create(document({ ...identity, state: 'INGESTING' }));
      expect((await documents.findByContentHash(store.db, identity))?.id).toBe(ingesting.id);
      const ready = await create(document({ ...identity, state: 'READY' }));
      const found = await inTransaction(store, (trx) => documents.findByContentHash(trx, identity));
      expect(found).toEqual(ready);

      for (const other of [
        { mimeType: 'text/markdown' },
        { ownerId: 'bob' },
        { scope: 'ORG' as const, orgId: 'acme' },
        { tenantId: 't-other' },
        { contentHash: 'c'.repeat(64) },
      ]) {
        expect(await documents.findByContentHash(store.db, { ...identity, ...other })).toBeUndefined();
      }
    });
  });

  describe('visibility and listing', () => {
    let own: DocumentRecord;
    let ownReady: DocumentRecord;
    let orgShared: DocumentRecord;
    let otherOrg: DocumentRecord;
    let bobs: DocumentRecord;
    let platform: DocumentRecord;
    let otherTenant: DocumentRecord;

    beforeAll(async () => {
      const make = (o: Partial<NewDocument>, now: number) =>
        inTransaction(store, (trx) => documents.createDocument(trx, document({ tenantId: 't2', ...o }), now));
      own = await make({ ownerId: 'alice' }, 1_000);
      ownReady = await make({ ownerId: 'alice', state: 'READY', mimeType: 'text/plain' }, 2_000);
      orgShared = await make({ ownerId: 'carol', scope: 'ORG', orgId: 'acme' }, 3_000);
      otherOrg = await make({ ownerId: 'carol', scope: 'ORG', orgId: 'globex' }, 4_000);
      bobs = await make({ ownerId: 'bob' }, 5_000);
      platform = await make({ ownerId: 'ops', scope: 'PLATFORM' }, 6_000);
      otherTenant = await make({ tenantId: 't3', ownerId: 'alice' }, 7_000);
    });

    const viewer: Viewer = { tenantId: 't2', subject: 'alice', orgIds: ['acme'], platform: false };
    const ids = (docs: readonly DocumentRecord[]) => docs.map((d) => d.id);

    it("lists the caller's SELF documents and ORG documents of the caller's orgs only, newest first", async () => {
      const page = await documents.list(viewer, {}, { pageSize: 50 });
      expect(ids(page.items)).toEqual([orgShared.id, ownReady.id, own.id]);
      expect(page.nextPageToken).toBe('');
      const carol = await documents.list(
        { tenantId: 't2', subject: 'carol', orgIds: [], platform: false },
        {},
        { pageSize: 50 },
      );
      expect(ids(carol.items)).not.toContain(orgShared.id);
    });

    it('shows PLATFORM documents only to the platform role, and never another tenant', async () => {
      const page = await documents.list({ ...viewer, platform: true }, {}, { pageSize: 50 });
      expect(ids(page.items)).toContain(platform.id);
      expect(ids(page.items)).not.toContain(otherTenant.id);
      await expect(documents.getVisible({ ...viewer, platform: true }, platform.id)).resolves.toEqual(
        platform,
      );
    });

    it('treats an invisible document exactly like a missing one', async () => {
      for (const hidden of [bobs, otherOrg, platform, otherTenant]) {
        const error = await thrown(() => documents.getVisible(viewer, hidden.id));
        expect(code(error)).toBe(Code.NotFound);
        expect(reason(error)).toBe('RESOURCE_NOT_FOUND');
      }
      await expect(documents.getVisible(viewer, orgShared.id)).resolves.toEqual(orgShared);
      await expect(documents.getVisible(viewer, own.id)).resolves.toEqual(own);
    });

    it('filters by scope, media type, state, owner, org and creation time', async () => {
      const list = async (filter: Parameters<DocumentRepository['list']>[1]) =>
        ids((await documents.list({ ...viewer, platform: true }, filter, { pageSize: 50 })).items);
      expect(await list({ scopes: ['ORG'] })).toEqual([orgShared.id]);
      expect(await list({ scopes: ['SELF', 'PLATFORM'] })).toEqual([platform.id, ownReady.id, own.id]);
      expect(await list({ mimeTypes: ['text/plain'] })).toEqual([ownReady.id]);
      expect(await list({ states: ['READY'] })).toEqual([ownReady.id]);
      expect(await list({ states: ['FAILED'] })).toEqual([]);
      expect(await list({ ownerId: 'alice' })).toEqual([ownReady.id, own.id]);
      expect(await list({ orgId: 'acme' })).toEqual([orgShared.id]);
      expect(await list({ createdFrom: 2_000, createdBefore: 6_000 })).toEqual([orgShared.id, ownReady.id]);
    });

    it('pages newest first without gaps or repeats, and refuses a token from another query', async () => {
      for (let i = 0; i < 5; i += 1) {
        await create(document({ tenantId: 't2', ownerId: 'alice', displayName: `page-${i}` }));
      }
      const seen: string[] = [];
      let token = '';
      let pages = 0;
      do {
        const page = await documents.list(viewer, {}, { pageSize: 2, pageToken: token });
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...ids(page.items));
        token = page.nextPageToken;
        pages += 1;
      } while (token !== '');
      expect(pages).toBe(4);
      expect(seen).toHaveLength(8);
      expect(new Set(seen).size).toBe(8);
      expect(seen).toEqual([...seen].sort().reverse());

      const first = await documents.list(viewer, {}, { pageSize: 2 });
      const misuse = await thrown(() =>
        documents.list(viewer, { states: ['READY'] }, { pageSize: 2, pageToken: first.nextPageToken }),
      );
      expect(code(misuse)).toBe(Code.InvalidArgument);
      expect(reason(misuse)).toBe('PAGE_TOKEN_INVALID');
      const otherViewer = await thrown(() =>
        documents.list({ ...viewer, subject: 'bob' }, {}, { pageSize: 2, pageToken: first.nextPageToken }),
      );
      expect(reason(otherViewer)).toBe('PAGE_TOKEN_INVALID');
    });
  });

  describe('chunks', () => {
    it('pages chunks by ordinal without gaps or repeats, with ordinal and kind filters', async () => {
      const doc = await create(
        document({ tenantId: 't-chunks' }),
        Array.from({ length: 7 }, (_, i) => chunk(i, { kind: i % 3 === 2 ? 'CODE' : 'TEXT' })),
      );
      const seen: number[] = [];
      let token = '';
      do {
        const page = await documents.listChunks('t-chunks', doc.id, { pageSize: 3, pageToken: token });
        seen.push(...page.items.map((c) => c.ordinal));
        token = page.nextPageToken;
      } while (token !== '');
      expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6]);

      const ranged = await documents.listChunks(
        't-chunks',
        doc.id,
        { pageSize: 10 },
        { fromOrdinal: 2, toOrdinal: 5 },
      );
      expect(ranged.items.map((c) => c.ordinal)).toEqual([2, 3, 4, 5]);
      const code_ = await documents.listChunks('t-chunks', doc.id, { pageSize: 10 }, { kinds: ['CODE'] });
      expect(code_.items.map((c) => c.ordinal)).toEqual([2, 5]);

      const first = await documents.listChunks('t-chunks', doc.id, { pageSize: 3 });
      const misuse = await thrown(() =>
        documents.listChunks(
          't-chunks',
          doc.id,
          { pageSize: 3, pageToken: first.nextPageToken },
          { kinds: ['CODE'] },
        ),
      );
      expect(reason(misuse)).toBe('PAGE_TOKEN_INVALID');
    });

    it('finds a chunk only under its own document and tenant', async () => {
      const a = await create(document({ tenantId: 't-chunks' }), [chunk(0)]);
      const b = await create(document({ tenantId: 't-chunks' }), [chunk(0)]);
      const [onlyChunk] = (await documents.listChunks('t-chunks', a.id, { pageSize: 1 })).items;
      expect(onlyChunk).toBeDefined();
      expect(await documents.getChunk('t-chunks', a.id, onlyChunk!.id)).toEqual(onlyChunk);
      expect(await documents.getChunk('t-chunks', b.id, onlyChunk!.id)).toBeUndefined();
      expect(await documents.getChunk('t-elsewhere', a.id, onlyChunk!.id)).toBeUndefined();
      expect((await documents.listChunks('t-elsewhere', a.id, { pageSize: 10 })).items).toEqual([]);
    });
  });

  describe('deletion', () => {
    it('deletes a document and its chunks with CHUNK and DOCUMENT DELETE outbox rows', async () => {
      const doc = await create(document({ tenantId: 't-delete' }), [chunk(0), chunk(1), chunk(2)]);
      const keep = await create(document({ tenantId: 't-delete' }), [chunk(0)]);
      const chunks = (await documents.listChunks('t-delete', doc.id, { pageSize: 10 })).items;
      const outboxBefore = await countRows(store, 'outbox');
      const chunksBefore = await countRows(store, 'chunks');

      const counts = await inTransaction(store, (trx) =>
        documents.deleteDocument(trx, 't-delete', doc.id, 2),
      );

      expect(counts).toEqual({ documents: 1, chunks: 3 });
      expect(await documents.get('t-delete', doc.id)).toBeUndefined();
      expect(await countRows(store, 'chunks')).toBe(chunksBefore - 3);
      expect(await countRows(store, 'outbox')).toBe(outboxBefore + 4);
      const deletes = (await outboxFor(store, [doc.id, ...chunks.map((c) => c.id)])).filter(
        ([, , op]) => op === 'DELETE',
      );
      expect(deletes).toEqual([
        ...chunks.map((c) => ['CHUNK', c.id, 'DELETE', { documentId: doc.id }]),
        ['DOCUMENT', doc.id, 'DELETE', {}],
      ]);
      expect(await documents.get('t-delete', keep.id)).toMatchObject({ chunkCount: 1 });
      expect((await documents.listChunks('t-delete', keep.id, { pageSize: 10 })).items).toHaveLength(1);
    });

    it('refuses a stale version with ABORTED and a missing document with NOT_FOUND, deleting nothing', async () => {
      const doc = await create(document({ tenantId: 't-delete' }), [chunk(0)]);
      const outbox = await countRows(store, 'outbox');
      const stale = await thrown(() =>
        inTransaction(store, (trx) => documents.deleteDocument(trx, 't-delete', doc.id, 1)),
      );
      expect(code(stale)).toBe(Code.Aborted);
      expect(reason(stale)).toBe('ETAG_MISMATCH');
      const missing = await thrown(() =>
        inTransaction(store, (trx) => documents.deleteDocument(trx, 't-elsewhere', doc.id)),
      );
      expect(code(missing)).toBe(Code.NotFound);
      expect(await documents.get('t-delete', doc.id)).toMatchObject({ chunkCount: 1 });
      expect(await countRows(store, 'outbox')).toBe(outbox);
    });

    it("purges only that owner's documents and chunks in that tenant, with outbox DELETE rows", async () => {
      const mine = [
        await create(document({ tenantId: 't-purge', ownerId: 'alice' }), [chunk(0), chunk(1)]),
        await create(document({ tenantId: 't-purge', ownerId: 'alice', scope: 'ORG', orgId: 'acme' }), [
          chunk(0),
        ]),
        await create(document({ tenantId: 't-purge', ownerId: 'alice' })),
      ];
      const bobs = await create(document({ tenantId: 't-purge', ownerId: 'bob' }), [chunk(0)]);
      const elsewhere = await create(document({ tenantId: 't-purge-2', ownerId: 'alice' }), [chunk(0)]);
      const chunkIds: string[] = [];
      for (const d of mine) {
        chunkIds.push(
          ...(await documents.listChunks('t-purge', d.id, { pageSize: 10 })).items.map((c) => c.id),
        );
      }
      expect(chunkIds).toHaveLength(3);

      const counts = await inTransaction(store, (trx) => documents.purgeOwner(trx, 't-purge', 'alice'));

      expect(counts).toEqual({ documents: 3, chunks: 3 });
      for (const d of mine) expect(await documents.get('t-purge', d.id)).toBeUndefined();
      expect(await documents.get('t-purge', bobs.id)).toMatchObject({ chunkCount: 1 });
      expect(await documents.get('t-purge-2', elsewhere.id)).toMatchObject({ chunkCount: 1 });
      expect((await documents.listChunks('t-purge', bobs.id, { pageSize: 10 })).items).toHaveLength(1);
      expect((await documents.listChunks('t-purge-2', elsewhere.id, { pageSize: 10 })).items).toHaveLength(1);
      const deletes = (await outboxFor(store, [...mine.map((d) => d.id), ...chunkIds])).filter(
        ([, , op]) => op === 'DELETE',
      );
      expect(
        deletes
          .filter(([kind]) => kind === 'CHUNK')
          .map(([, id]) => id)
          .sort(),
      ).toEqual([...chunkIds].sort());
      expect(
        deletes
          .filter(([kind]) => kind === 'DOCUMENT')
          .map(([, id]) => id)
          .sort(),
      ).toEqual(mine.map((d) => d.id).sort());
      expect((await outboxFor(store, [bobs.id, elsewhere.id])).filter(([, , op]) => op === 'DELETE')).toEqual(
        [],
      );
      expect(await documents.purgeOwner(store.db, 't-purge', 'alice')).toEqual({ documents: 0, chunks: 0 });
    });
  });
});
