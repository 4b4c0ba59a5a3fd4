import { Code } from '@connectrpc/connect';
import { beforeAll, describe, expect, it } from '@jest/globals';
import {
  MemoryRepository,
  inTransaction,
  viewerOf,
  type MemoryRecord,
  type MemoryStatus,
  type NewMemory,
  type RevisionInput,
  type Store,
  type Viewer,
} from '../src/index.js';
import { code, dialects, thrown, useStore } from './harness.js';

const created: RevisionInput = { action: 'CREATE', actorKind: 'USER', actorId: 'carol' };

function memory(overrides: Partial<NewMemory>): NewMemory {
  return {
    tenantId: 'vis',
    ownerId: 'carol',
    orgId: 'acme',
    scope: 'ORG',
    type: 'FACT',
    namespace: 'team',
    key: 'k',
    value: { v: 1 },
    text: 'The deploy window is Friday.',
    evergreen: false,
    sourceKind: 'EXPLICIT_USER_STATEMENT',
    confidence: 0.9,
    evidence: { messageIds: [], chunkIds: [] },
    languageCode: 'en',
    metadata: {},
    ...overrides,
  };
}

describe.each(dialects)('memory visibility by status on $name', (dialect) => {
  let store: Store;
  let memories: MemoryRepository;
  const byStatus = new Map<MemoryStatus | 'DUE', MemoryRecord>();
  let selfQuarantined: MemoryRecord;
  let selfDeleted: MemoryRecord;
  let otherTenantQuarantined: MemoryRecord;

  useStore(dialect, (opened) => {
    store = opened;
    memories = new MemoryRepository(opened);
  });

  beforeAll(async () => {
    const make = (o: Partial<NewMemory>) =>
      inTransaction(store, (trx) => memories.create(trx, memory(o), created, 1_000));
    for (const status of ['ACTIVE', 'QUARANTINED', 'DELETED', 'SUPERSEDED', 'EXPIRED'] as const) {
      byStatus.set(status, await make({ key: status, status }));
    }
    // ACTIVE but past its expiry: EXPIRED for every purpose, before the sweeper records it.
    byStatus.set('DUE', await make({ key: 'due', expiresAt: 2_000 }));
    selfQuarantined = await make({ key: 'sq', scope: 'SELF', orgId: '', status: 'QUARANTINED' });
    selfDeleted = await make({ key: 'sd', scope: 'SELF', orgId: '', status: 'DELETED' });
    otherTenantQuarantined = await make({ tenantId: 'vis-other', key: 'ot', status: 'QUARANTINED' });
  });

  const member: Viewer = { tenantId: 'vis', subject: 'dave', orgIds: ['acme'], platform: false };
  const owner: Viewer = { tenantId: 'vis', subject: 'carol', orgIds: ['acme'], platform: false };
  const reviewer = viewerOf({ tenantId: 'vis', subject: 'root', orgIds: [], roles: ['admin'] });
  const ALL: MemoryStatus[] = ['ACTIVE', 'QUARANTINED', 'DELETED', 'SUPERSEDED', 'EXPIRED'];
  const listed = async (viewer: Viewer) =>
    (await memories.list(viewer, { statuses: ALL, now: 10_000 }, { pageSize: 100 })).items
      .map((m) => m.key)
      .sort();

  it('shows the org only the ACTIVE ORG memory, never its non-ACTIVE ones (Get and List)', async () => {
    expect(await listed(member)).toEqual(['ACTIVE']);
    for (const [status, m] of byStatus) {
      if (status === 'ACTIVE') {
        await expect(memories.getVisible(member, m.id, 10_000)).resolves.toMatchObject({ id: m.id });
      } else {
        expect(code(await thrown(() => memories.getVisible(member, m.id, 10_000)))).toBe(Code.NotFound);
      }
    }
  });

  it('shows the owner every status of their own memories', async () => {
    expect(await listed(owner)).toEqual(
      ['ACTIVE', 'DELETED', 'EXPIRED', 'QUARANTINED', 'SUPERSEDED', 'due', 'sd', 'sq'].sort(),
    );
    await expect(memories.getVisible(owner, selfDeleted.id, 10_000)).resolves.toMatchObject({
      status: 'DELETED',
    });
  });

  it("shows a reviewer (admin) the tenant's QUARANTINED memories, whatever the scope, and nothing else of others", async () => {
    expect(reviewer.reviewer).toBe(true);
    expect(await listed(reviewer)).toEqual(['QUARANTINED', 'sq']);
    const queue = await memories.list(reviewer, { statuses: ['QUARANTINED'] }, { pageSize: 100 });
    expect(queue.items.map((m) => m.id).sort()).toEqual(
      [byStatus.get('QUARANTINED')!.id, selfQuarantined.id].sort(),
    );
    await expect(memories.getVisible(reviewer, selfQuarantined.id)).resolves.toMatchObject({
      id: selfQuarantined.id,
    });
    for (const hidden of [selfDeleted, otherTenantQuarantined, byStatus.get('ACTIVE')!]) {
      expect(code(await thrown(() => memories.getVisible(reviewer, hidden.id)))).toBe(Code.NotFound);
    }
  });

  it('filters a batch of ids by the same rule (extraction-job views)', async () => {
    const ids = [...byStatus.values(), selfQuarantined, selfDeleted].map((m) => m.id);
    const forMember = await memories.getManyVisible(member, ids, 10_000);
    expect([...forMember.values()].map((m) => m.key)).toEqual(['ACTIVE']);
    const forReviewer = await memories.getManyVisible(reviewer, ids, 10_000);
    expect([...forReviewer.values()].map((m) => m.key).sort()).toEqual(['QUARANTINED', 'sq']);
  });
});
