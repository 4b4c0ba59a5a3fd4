import { describe, expect, it } from '@jest/globals';
import {
  DocumentRepository,
  MemoryRepository,
  SessionRepository,
  SessionStateRepository,
  SnapshotConflict,
  inTransaction,
  readSubjectSnapshot,
  writeSubjectSnapshot,
  type RevisionInput,
  type Store,
  type SubjectSnapshot,
} from '../src/index.js';
import { newChunk, newDocument, newMemory, randomHash } from './fixtures.js';
import { countRows, dialects, thrown, useStore } from './harness.js';

const created: RevisionInput = { action: 'CREATE', actorKind: 'USER', actorId: 'u' };

/** The snapshot moved to `tenantId`, every id it defines replaced by another (first character 7). */
function moved(snapshot: SubjectSnapshot, tenantId: string): SubjectSnapshot {
  let text = JSON.stringify(snapshot);
  const ids = new Set<string>();
  for (const list of Object.values(snapshot) as { id?: string }[][])
    for (const r of list) if (r.id) ids.add(r.id);
  for (const id of ids) text = text.replaceAll(id, `7${id.slice(1)}`);
  return JSON.parse(text.replaceAll(/"tenantId":"[^"]*"/g, `"tenantId":"${tenantId}"`)) as SubjectSnapshot;
}

describe.each(dialects)('subject snapshots (export and import) on $name', (dialect) => {
  let store: Store;
  useStore(dialect, (opened) => {
    store = opened;
  });
  const tenant = `port-${String(Date.now())}`;

  async function seed(owner: string) {
    const sessions = new SessionRepository(store);
    const documents = new DocumentRepository(store);
    const memories = new MemoryRepository(store);
    const states = new SessionStateRepository(store);
    return inTransaction(store, async (trx) => {
      const session = await sessions.createSession(trx, {
        tenantId: tenant,
        ownerId: owner,
        externalId: 'ext-1',
      });
      await sessions.appendMessages(trx, tenant, session.id, [
        { role: 'USER', content: 'I moved to Lisbon' },
        { role: 'ASSISTANT', content: 'Nice city' },
      ]);
      await states.save(trx, tenant, session.id, 0, {
        summary: 'moved',
        summaryTokenCount: 1,
        keyPoints: [],
        openLoops: [],
        compactedThroughSequence: 0,
      });
      const document = await documents.createDocument(
        trx,
        newDocument({ tenantId: tenant, ownerId: owner, contentHash: randomHash(), state: 'READY' }),
      );
      await documents.addChunks(trx, tenant, document.id, [newChunk(0), newChunk(1)]);
      await memories.create(trx, newMemory('lives in Lisbon', { tenantId: tenant, ownerId: owner }), created);
      return session;
    });
  }

  it('reads everything one subject owns, and nothing of anyone else', async () => {
    await seed('u1');
    await seed('u2');
    const snapshot = await readSubjectSnapshot(store, tenant, 'u1');
    expect(snapshot.sessions).toHaveLength(1);
    expect(snapshot.messages.map((m) => m.content)).toEqual(['I moved to Lisbon', 'Nice city']);
    expect(snapshot.sessionStates).toHaveLength(1);
    expect(snapshot.documents).toHaveLength(1);
    expect(snapshot.chunks.map((c) => c.ordinal)).toEqual([0, 1]);
    expect(snapshot.memories).toHaveLength(1);
    expect(snapshot.revisions).toHaveLength(1);
    for (const list of Object.values(snapshot) as { ownerId?: string; tenantId: string }[][]) {
      for (const r of list) {
        expect(r.tenantId).toBe(tenant);
        if (r.ownerId !== undefined) expect(r.ownerId).toBe('u1');
      }
    }
  });

  it('writing a snapshot that is already stored changes nothing', async () => {
    const snapshot = await readSubjectSnapshot(store, tenant, 'u1');
    const outbox = await countRows(store, 'outbox', { tenant_id: tenant });
    const counts = await writeSubjectSnapshot(store, tenant, snapshot);
    expect(Object.values(counts.created).every((n) => n === 0)).toBe(true);
    expect(counts.unchanged).toMatchObject({
      sessions: 1,
      messages: 2,
      chunks: 2,
      memories: 1,
      revisions: 1,
    });
    expect(await countRows(store, 'outbox', { tenant_id: tenant })).toBe(outbox);
  });

  it('refuses, writing nothing, a record whose id belongs to another tenant or owner', async () => {
    const snapshot = await readSubjectSnapshot(store, tenant, 'u1');
    const other = `${tenant}-b`;
    const clash = {
      ...moved(snapshot, other),
      memories: snapshot.memories.map((m) => ({ ...m, tenantId: other })),
    };
    const error = await thrown(() => writeSubjectSnapshot(store, other, clash));
    expect(error).toBeInstanceOf(SnapshotConflict);
    expect(error).toMatchObject({ kind: 'memories', field: 'id' });
    expect(await countRows(store, 'sessions', { tenant_id: other })).toBe(0);

    const externalIdTaken = moved(snapshot, tenant);
    const again = await thrown(() => writeSubjectSnapshot(store, tenant, externalIdTaken));
    expect(again).toMatchObject({ kind: 'sessions', field: 'external_id' });
  });

  it('writes a moved snapshot in one transaction with the outbox rows that index it, or only checks it', async () => {
    const snapshot = await readSubjectSnapshot(store, tenant, 'u1');
    const target = `${tenant}-c`;
    const copy = moved(snapshot, target);
    const checked = await writeSubjectSnapshot(store, target, copy, { validateOnly: true });
    expect(checked.created).toMatchObject({ sessions: 1, messages: 2, chunks: 2, memories: 1 });
    expect(await countRows(store, 'messages', { tenant_id: target })).toBe(0);

    const counts = await writeSubjectSnapshot(store, target, copy);
    expect(counts.created).toMatchObject({
      sessions: 1,
      messages: 2,
      memCells: 0,
      sessionStates: 1,
      documents: 1,
      chunks: 2,
      memories: 1,
      revisions: 1,
    });
    // One ROUND (the user message), one MEMORY, two CHUNK upserts.
    expect(await countRows(store, 'outbox', { tenant_id: target })).toBe(4);
    expect(await readSubjectSnapshot(store, target, 'u1')).toEqual(copy);
  });
});
