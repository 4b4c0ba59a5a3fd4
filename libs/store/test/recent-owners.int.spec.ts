import { describe, expect, it } from '@jest/globals';
import {
  MemoryRepository,
  SessionRepository,
  inTransaction,
  recentOwners,
  type RevisionInput,
  type Store,
} from '../src/index.js';
import { newMemory } from './fixtures.js';
import { dialects, useStore } from './harness.js';

const created: RevisionInput = { action: 'CREATE', actorKind: 'USER', actorId: 'x' };

describe.each(dialects)('recentOwners on $name', (dialect) => {
  let store: Store;
  useStore(dialect, (opened) => {
    store = opened;
  });

  it("lists a tenant's owners of sessions and memories, newest activity first, at most `limit`", async () => {
    const tenantId = `recent-${String(Date.now())}`;
    const sessions = new SessionRepository(store);
    const memories = new MemoryRepository(store);
    await inTransaction(store, async (trx) => {
      await sessions.createSession(trx, { tenantId, ownerId: 'old-session' }, 1_000);
      await memories.create(trx, newMemory('a', { tenantId, ownerId: 'memory-only' }), created, 3_000);
      await sessions.createSession(trx, { tenantId, ownerId: 'both' }, 2_000);
      await memories.create(trx, newMemory('b', { tenantId, ownerId: 'both' }), created, 4_000);
      // Another tenant's users are never listed.
      await sessions.createSession(trx, { tenantId: `${tenantId}-other`, ownerId: 'stranger' }, 9_000);
    });
    expect(await recentOwners(store, tenantId)).toEqual([
      { ownerId: 'both', lastActiveAt: 4_000 },
      { ownerId: 'memory-only', lastActiveAt: 3_000 },
      { ownerId: 'old-session', lastActiveAt: 1_000 },
    ]);
    expect((await recentOwners(store, tenantId, 2)).map((o) => o.ownerId)).toEqual(['both', 'memory-only']);
    expect(await recentOwners(store, `${tenantId}-none`)).toEqual([]);
  });
});
