import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createLogger } from '@engram/runtime';
import { MemoryRepository, inTransaction, type Store } from '@engram/store';
import { dialects } from '../../../libs/store/test/harness.js';
import { ExpirySweeper } from '../src/expiry.js';

describe.each(dialects)('the expiry sweeper on $name', (dialect) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let memories: MemoryRepository;

  beforeAll(async () => {
    ({ store, dispose } = await dialect.open());
    memories = new MemoryRepository(store);
  });
  afterAll(async () => {
    await dispose();
  });

  const remember = (text: string, expiresAt?: number) =>
    inTransaction(store, (trx) =>
      memories.create(
        trx,
        {
          tenantId: 'x1',
          ownerId: 'alice',
          orgId: '',
          scope: 'SELF',
          type: 'FACT',
          namespace: 'goal',
          key: text,
          value: { goal: text },
          text,
          evergreen: false,
          sourceKind: 'EXPLICIT_USER_STATEMENT',
          confidence: 0.9,
          evidence: { messageIds: [], chunkIds: [] },
          languageCode: 'en',
          metadata: {},
          ...(expiresAt !== undefined ? { expiresAt } : {}),
        },
        { action: 'CREATE', actorKind: 'USER', actorId: 'alice' },
        1_000,
      ),
    );

  it('expires what is due, with a revision and an outbox row, and nothing else', async () => {
    const due = await remember('run a marathon', 5_000);
    const later = await remember('learn Portuguese', 50_000);
    const forever = await remember('stay curious');
    const outboxBefore = await store.db
      .selectFrom('outbox')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    const sweeper = new ExpirySweeper({ store, logger: createLogger({ service: 'test', level: 'silent' }) });
    expect(await sweeper.sweep(10_000)).toBe(1);
    expect((await memories.get('x1', due.id))?.status).toBe('EXPIRED');
    expect((await memories.get('x1', later.id))?.status).toBe('ACTIVE');
    expect((await memories.get('x1', forever.id))?.status).toBe('ACTIVE');
    const revisions = await memories.listRevisions('x1', due.id, { pageSize: 10 });
    expect(revisions.items.map((r) => r.action)).toContain('EXPIRE');
    const outboxAfter = await store.db
      .selectFrom('outbox')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(outboxAfter.n).toBe(outboxBefore.n + 1);
    // Nothing left to do.
    expect(await sweeper.sweep(10_000)).toBe(0);
  });
});
