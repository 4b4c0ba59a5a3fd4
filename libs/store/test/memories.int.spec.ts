import { Code } from '@connectrpc/connect';
import { beforeAll, describe, expect, it } from '@jest/globals';
import type { EngramError } from '@engram/errors';
import {
  MemoryRepository,
  inTransaction,
  type MemoryRecord,
  type NewMemory,
  type RevisionInput,
  type Store,
  type Viewer,
} from '../src/index.js';
import { code, countRows, dialects, thrown, useStore } from './harness.js';

const created: RevisionInput = { action: 'CREATE', actorKind: 'USER', actorId: 'alice' };

function memory(overrides: Partial<NewMemory> = {}): NewMemory {
  return {
    tenantId: 't1',
    ownerId: 'alice',
    orgId: '',
    scope: 'SELF',
    type: 'FACT',
    namespace: 'user_preference',
    key: 'answer_style',
    value: { style: 'concise' },
    text: 'Alice prefers concise answers.',
    evergreen: false,
    sourceKind: 'EXPLICIT_USER_STATEMENT',
    confidence: 0.95,
    evidence: { messageIds: ['01JD7Z5Q2G8V6K3M9T1R4X0B2C'], chunkIds: [] },
    languageCode: 'en',
    metadata: {},
    ...overrides,
  };
}

describe.each(dialects)('MemoryRepository on $name', (dialect) => {
  let store: Store;
  let memories: MemoryRepository;

  useStore(dialect, (opened) => {
    store = opened;
    memories = new MemoryRepository(opened);
  });

  it('round-trips every field, including Chinese, emoji and 4-byte characters', async () => {
    const text = '用户喜欢简洁的回答 😀🧠 𠀋𡈽 — and English.';
    const input = memory({
      text,
      value: { style: '简洁', emoji: '🧠', nested: [1, 2.5, true, null] },
      metadata: { source: '微信' },
      occurredAt: 1_700_000_000_123,
      expiresAt: 1_900_000_000_456,
      validFrom: 1_700_000_000_000,
      validUntil: 1_800_000_000_000,
    });
    const stored = await inTransaction(store, (trx) => memories.create(trx, input, created));
    const read = await memories.get('t1', stored.id);
    expect(read).toEqual(stored);
    expect(read?.text).toBe(text);
    expect(read?.value).toEqual({ style: '简洁', emoji: '🧠', nested: [1, 2.5, true, null] });
    expect(read?.occurredAt).toBe(1_700_000_000_123);
    expect(read?.version).toBe(1);
    expect(read?.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
  });

  it('stores the largest allowed text (8,000 code points of 4-byte characters)', async () => {
    const text = '😀'.repeat(8_000);
    const stored = await inTransaction(store, (trx) =>
      memories.create(trx, memory({ text, key: 'big' }), created),
    );
    expect((await memories.get('t1', stored.id))?.text).toBe(text);
  });

  it('writes the CREATE revision and the outbox row in the same transaction as the memory', async () => {
    const [outboxBefore, revisionsBefore] = [
      await countRows(store, 'outbox'),
      await countRows(store, 'memory_revisions'),
    ];
    const stored = await inTransaction(store, (trx) =>
      memories.create(trx, memory({ key: 'k-outbox' }), created),
    );
    expect(await countRows(store, 'outbox')).toBe(outboxBefore + 1);
    expect(await countRows(store, 'memory_revisions')).toBe(revisionsBefore + 1);
    const row = await store.db
      .selectFrom('outbox')
      .selectAll()
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      aggregate_kind: 'MEMORY',
      aggregate_id: stored.id,
      operation: 'UPSERT',
      tenant_id: 't1',
    });
    const revisions = await memories.listRevisions('t1', stored.id, { pageSize: 10 });
    expect(revisions.items).toHaveLength(1);
    expect(revisions.items[0]).toMatchObject({
      action: 'CREATE',
      version: 1,
      actorId: 'alice',
      after: stored,
    });
  });

  it('leaves no memory, no revision and no outbox row when the transaction fails midway', async () => {
    const counts = async () => [
      await countRows(store, 'memories'),
      await countRows(store, 'memory_revisions'),
      await countRows(store, 'outbox'),
    ];
    const before = await counts();
    const failure = await thrown(() =>
      inTransaction(store, async (trx) => {
        await memories.create(trx, memory({ key: 'doomed' }), created);
        throw new Error('crash after the write');
      }),
    );
    expect((failure as Error).message).toBe('crash after the write');
    expect(await counts()).toEqual(before);
  });

  it('updates with optimistic concurrency: a stale version fails with ABORTED and writes nothing', async () => {
    const stored = await inTransaction(store, (trx) => memories.create(trx, memory({ key: 'occ' }), created));
    const updated = await inTransaction(store, (trx) =>
      memories.update(
        trx,
        't1',
        stored.id,
        1,
        { text: 'Alice wants very short answers.' },
        { action: 'UPDATE', actorKind: 'USER', actorId: 'alice' },
      ),
    );
    expect(updated.version).toBe(2);
    expect(updated.contentHash).not.toBe(stored.contentHash);
    const outbox = await countRows(store, 'outbox');
    const stale = await thrown(() =>
      inTransaction(store, (trx) =>
        memories.update(
          trx,
          't1',
          stored.id,
          1,
          { text: 'lost update' },
          { action: 'UPDATE', actorKind: 'USER', actorId: 'alice' },
        ),
      ),
    );
    expect(code(stale)).toBe(Code.Aborted);
    expect((stale as EngramError).reason).toBe('ETAG_MISMATCH');
    expect((await memories.get('t1', stored.id))?.text).toBe('Alice wants very short answers.');
    expect(await countRows(store, 'outbox')).toBe(outbox);
    const revisions = await memories.listRevisions('t1', stored.id, { pageSize: 10 });
    expect(revisions.items.map((r) => [r.action, r.version, r.changedPaths])).toEqual([
      ['CREATE', 1, []],
      ['UPDATE', 2, ['text']],
    ]);
  });

  it('lets exactly one of two concurrent writers of the same version win', async () => {
    const stored = await inTransaction(store, (trx) =>
      memories.create(trx, memory({ key: 'race' }), created),
    );
    const write = (text: string) =>
      inTransaction(store, (trx) =>
        memories.update(
          trx,
          't1',
          stored.id,
          1,
          { text },
          { action: 'UPDATE', actorKind: 'USER', actorId: 'alice' },
        ),
      );
    const results = await Promise.allSettled([write('first writer'), write('second writer')]);
    const winners = results.filter((r) => r.status === 'fulfilled');
    const losers = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(winners).toHaveLength(1);
    expect(losers).toHaveLength(1);
    expect(code(losers[0]?.reason)).toBe(Code.Aborted);
    const final = await memories.get('t1', stored.id);
    expect(final?.version).toBe(2);
    expect(['first writer', 'second writer']).toContain(final?.text);
  });

  it('marks a non-ACTIVE status change for removal from the index', async () => {
    const stored = await inTransaction(store, (trx) =>
      memories.create(trx, memory({ key: 'to-delete' }), created),
    );
    await inTransaction(store, (trx) =>
      memories.update(
        trx,
        't1',
        stored.id,
        1,
        { status: 'DELETED', statusReason: 'user asked' },
        { action: 'DELETE', actorKind: 'USER', actorId: 'alice' },
      ),
    );
    const row = await store.db
      .selectFrom('outbox')
      .selectAll()
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ aggregate_id: stored.id, operation: 'DELETE' });
  });

  it('answers NOT_FOUND for a missing memory on update', async () => {
    const missing = await thrown(() =>
      inTransaction(store, (trx) =>
        memories.update(
          trx,
          't1',
          '01JD7Z5Q2G8V6K3M9T1R4X0B2C',
          1,
          { text: 'x' },
          { action: 'UPDATE', actorKind: 'USER', actorId: 'alice' },
        ),
      ),
    );
    expect(code(missing)).toBe(Code.NotFound);
  });

  describe('visibility and listing', () => {
    let own: MemoryRecord;
    let orgShared: MemoryRecord;
    let otherOrg: MemoryRecord;
    let bobs: MemoryRecord;
    let platform: MemoryRecord;
    let otherTenant: MemoryRecord;

    beforeAll(async () => {
      const make = (o: Partial<NewMemory>) =>
        inTransaction(store, (trx) => memories.create(trx, memory({ tenantId: 't2', ...o }), created));
      own = await make({ ownerId: 'alice', key: 'own' });
      orgShared = await make({ ownerId: 'carol', scope: 'ORG', orgId: 'acme', key: 'org' });
      otherOrg = await make({ ownerId: 'carol', scope: 'ORG', orgId: 'globex', key: 'globex' });
      bobs = await make({ ownerId: 'bob', key: 'bob' });
      platform = await make({ ownerId: 'ops', scope: 'PLATFORM', key: 'platform' });
      otherTenant = await make({ tenantId: 't3', ownerId: 'alice', key: 'other-tenant' });
    });

    const viewer: Viewer = { tenantId: 't2', subject: 'alice', orgIds: ['acme'], platform: false };

    it("returns the caller's SELF items and ORG items of the caller's orgs only", async () => {
      const page = await memories.list(viewer, {}, { pageSize: 50 });
      expect(page.items.map((m) => m.id).sort()).toEqual([own.id, orgShared.id].sort());
      expect(page.nextPageToken).toBe('');
    });

    it('shows PLATFORM items only to the platform role, and never another tenant', async () => {
      const page = await memories.list({ ...viewer, platform: true }, {}, { pageSize: 50 });
      expect(page.items.map((m) => m.id)).toContain(platform.id);
      expect(page.items.map((m) => m.id)).not.toContain(otherTenant.id);
    });

    it('treats an invisible memory exactly like a missing one', async () => {
      for (const hidden of [bobs, otherOrg, platform, otherTenant]) {
        expect(code(await thrown(() => memories.getVisible(viewer, hidden.id)))).toBe(Code.NotFound);
      }
      await expect(memories.getVisible(viewer, orgShared.id)).resolves.toMatchObject({ id: orgShared.id });
    });

    it('pages newest first without gaps or repeats, and refuses a token from another query', async () => {
      const extra = [];
      for (let i = 0; i < 5; i += 1) {
        extra.push(
          await inTransaction(store, (trx) =>
            memories.create(trx, memory({ tenantId: 't2', key: `page-${i}` }), created),
          ),
        );
      }
      const seen: string[] = [];
      let token = '';
      // Each page is read at its own instant, as the service does (its filter carries `now`).
      let now = Date.now();
      do {
        now += 1_000;
        const page = await memories.list(viewer, { now }, { pageSize: 2, pageToken: token });
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.items.map((m) => m.id));
        token = page.nextPageToken;
      } while (token !== '');
      expect(seen).toHaveLength(7);
      expect(new Set(seen).size).toBe(7);
      expect(seen).toEqual([...seen].sort().reverse());

      const first = await memories.list(viewer, {}, { pageSize: 2 });
      const misuse = await thrown(() =>
        memories.list(viewer, { types: ['EPISODE'] }, { pageSize: 2, pageToken: first.nextPageToken }),
      );
      expect(code(misuse)).toBe(Code.InvalidArgument);
      expect((misuse as EngramError).reason).toBe('PAGE_TOKEN_INVALID');
      expect(code(await thrown(() => memories.list(viewer, {}, { pageSize: 2, pageToken: 'garbage' })))).toBe(
        Code.InvalidArgument,
      );
    });

    it('finds the active fact by namespace/key and by content hash', async () => {
      const found = await memories.findActiveByKey(store.db, {
        tenantId: 't2',
        ownerId: 'alice',
        scope: 'SELF',
        orgId: '',
        namespace: 'user_preference',
        key: 'own',
      });
      expect(found?.id).toBe(own.id);
      const same = await memories.findByContentHash(store.db, 't2', 'alice', own.contentHash);
      expect(same.map((m) => m.id)).toEqual([own.id]);
    });
  });
});
