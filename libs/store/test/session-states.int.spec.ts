import { Code } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import {
  SessionRepository,
  SessionStateRepository,
  inTransaction,
  type SessionRecord,
  type SessionStateInput,
  type Store,
} from '../src/index.js';
import { code, countRows, dialects, reason, thrown, useStore } from './harness.js';

const state = (overrides: Partial<SessionStateInput> = {}): SessionStateInput => ({
  summary: '',
  summaryTokenCount: 0,
  keyPoints: [],
  openLoops: [],
  compactedThroughSequence: 0,
  ...overrides,
});

describe.each(dialects)('SessionStateRepository on $name', (dialect) => {
  let store: Store;
  let sessions: SessionRepository;
  let states: SessionStateRepository;

  useStore(dialect, (opened) => {
    store = opened;
    sessions = new SessionRepository(opened);
    states = new SessionStateRepository(opened);
  });

  const newSession = (tenantId = 't1'): Promise<SessionRecord> =>
    inTransaction(store, (trx) => sessions.createSession(trx, { tenantId, ownerId: 'alice' }));
  const save = (session: SessionRecord, expectedVersion: number, input: SessionStateInput, now?: number) =>
    inTransaction(store, (trx) =>
      states.save(trx, session.tenantId, session.id, expectedVersion, input, now),
    );
  const rows = (sessionId: string) => countRows(store, 'session_states', { session_id: sessionId });

  it('reads the empty state, version 0, for a session never written', async () => {
    const session = await newSession();
    expect(await states.get('t1', session.id)).toEqual({
      sessionId: session.id,
      tenantId: 't1',
      summary: '',
      summaryTokenCount: 0,
      keyPoints: [],
      openLoops: [],
      compactedThroughSequence: 0,
      markAcknowledgedThrough: 0,
      version: 0,
    });
    expect(await rows(session.id)).toBe(0);
  });

  it('creates the state at version 1 and round-trips summary, key points and open loops in Chinese and emoji', async () => {
    const session = await newSession();
    const input = state({
      summary: '用户在计划去上海的旅行 🚄，预算 5000 元 𠀋。',
      summaryTokenCount: 42,
      keyPoints: [
        {
          id: '01JD7Z5Q2G8V6K3M9T1R4X0B2C',
          text: '决定坐高铁 🚄',
          sourceMessageIds: ['01JD7Z5Q2G8V6K3M9T1R4X0B2D', '01JD7Z5Q2G8V6K3M9T1R4X0B2E'],
          origin: 'COMPACTION',
          createdAt: 1_000,
        },
      ],
      openLoops: [
        { id: '01JD7Z5Q2G8V6K3M9T1R4X0B2F', text: '住哪家酒店？🏨', sourceMessageIds: [], createdAt: 1_100 },
        {
          id: '01JD7Z5Q2G8V6K3M9T1R4X0B2G',
          text: '几号出发？',
          sourceMessageIds: ['01JD7Z5Q2G8V6K3M9T1R4X0B2D'],
          origin: 'CLIENT',
          createdAt: 1_200,
          resolved: true,
          resolvedAt: 1_300,
        },
      ],
      compactedThroughSequence: 12,
      summaryMemoryId: '01JD7Z5Q2G8V6K3M9T1R4X0B2H',
    });
    const saved = await save(session, 0, input, 5_000);
    expect(saved).toEqual({
      ...input,
      sessionId: session.id,
      tenantId: 't1',
      lastCompactedAt: undefined,
      markAcknowledgedThrough: 0,
      updatedAt: 5_000,
      version: 1,
    });
    expect(await states.get('t1', session.id)).toEqual(saved);
  });

  it('records the mark ingestion acknowledged without a new version, and keeps it across saves', async () => {
    const session = await newSession();
    await save(session, 0, state({ compactedThroughSequence: 8, lastCompactedAt: 4_000 }), 5_000);
    await states.acknowledgeMark('t1', session.id, 8);
    await states.acknowledgeMark('t1', session.id, 3); // never backwards
    const read = await states.get('t1', session.id);
    expect(read).toMatchObject({ version: 1, markAcknowledgedThrough: 8, lastCompactedAt: 4_000 });
    const next = await save(session, 1, state({ compactedThroughSequence: 12 }), 6_000);
    expect(next.markAcknowledgedThrough).toBe(8);
    expect((await states.get('t1', session.id)).markAcknowledgedThrough).toBe(8);
  });

  it('stores the largest summary: 16,000 code points of 4-byte characters', async () => {
    const session = await newSession();
    const summary = '🧠𠀋'.repeat(8_000);
    await save(session, 0, state({ summary }));
    expect((await states.get('t1', session.id)).summary).toBe(summary);
  });

  it('updates only from the current version: a stale or premature version fails with ABORTED and writes nothing', async () => {
    const session = await newSession();
    const premature = await thrown(() => save(session, 3, state({ summary: 'never' })));
    expect(code(premature)).toBe(Code.Aborted);
    expect(reason(premature)).toBe('ETAG_MISMATCH');
    expect(await rows(session.id)).toBe(0);

    await save(session, 0, state({ summary: 'v1' }));
    const v2 = await save(session, 1, state({ summary: 'v2', compactedThroughSequence: 4 }), 9_000);
    expect(v2).toMatchObject({ summary: 'v2', version: 2, updatedAt: 9_000, compactedThroughSequence: 4 });

    const stale = await thrown(() =>
      save(session, 1, state({ summary: 'lost update', compactedThroughSequence: 4 })),
    );
    expect(code(stale)).toBe(Code.Aborted);
    expect(reason(stale)).toBe('ETAG_MISMATCH');
    const again = await thrown(() => save(session, 0, state({ summary: 'second first write' })));
    expect(code(again)).toBe(Code.Aborted);
    expect(await states.get('t1', session.id)).toEqual(v2);
  });

  it('lets exactly one of two first writers (expected version 0) win', async () => {
    const session = await newSession();
    const results = await Promise.allSettled([
      save(session, 0, state({ summary: 'first' })),
      save(session, 0, state({ summary: 'second' })),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const losers = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(losers.map((l) => [code(l.reason), reason(l.reason)])).toEqual([[Code.Aborted, 'ETAG_MISMATCH']]);
    const stored = await states.get('t1', session.id);
    expect(stored.version).toBe(1);
    expect(['first', 'second']).toContain(stored.summary);
  });

  it('lets exactly one of two writers of the same version win', async () => {
    const session = await newSession();
    await save(session, 0, state({ summary: 'v1' }));
    const results = await Promise.allSettled([
      save(session, 1, state({ summary: 'first' })),
      save(session, 1, state({ summary: 'second' })),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const losers = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(losers.map((l) => code(l.reason))).toEqual([Code.Aborted]);
    const stored = await states.get('t1', session.id);
    expect(stored.version).toBe(2);
    expect(['first', 'second']).toContain(stored.summary);
  });

  it('never moves the compaction mark backwards (FAILED_PRECONDITION)', async () => {
    const session = await newSession();
    await save(session, 0, state({ compactedThroughSequence: 10 }));
    const backwards = await thrown(() => save(session, 1, state({ compactedThroughSequence: 9 })));
    expect(code(backwards)).toBe(Code.FailedPrecondition);
    expect(reason(backwards)).toBe('STATE_CONFLICT');
    expect(await states.get('t1', session.id)).toMatchObject({ compactedThroughSequence: 10, version: 1 });
  });

  it('answers NOT_FOUND for a session that does not exist in the tenant, and hides states across tenants', async () => {
    const session = await newSession('t2');
    const foreign = await thrown(() =>
      inTransaction(store, (trx) => states.save(trx, 'other', session.id, 0, state())),
    );
    expect(code(foreign)).toBe(Code.NotFound);
    const missing = await thrown(() =>
      inTransaction(store, (trx) => states.save(trx, 't2', '01JD7Z5Q2G8V6K3M9T1R4X0B2C', 0, state())),
    );
    expect(code(missing)).toBe(Code.NotFound);
    await save(session, 0, state({ summary: 'mine' }));
    expect((await states.get('other', session.id)).version).toBe(0);
    expect(await inTransaction(store, (trx) => states.delete(trx, 'other', session.id))).toBe(false);
    expect((await states.get('t2', session.id)).summary).toBe('mine');
  });

  it('leaves no state when the transaction fails midway', async () => {
    const session = await newSession();
    const failure = await thrown(() =>
      inTransaction(store, async (trx) => {
        await states.save(trx, 't1', session.id, 0, state({ summary: 'doomed' }));
        throw new Error('crash after the write');
      }),
    );
    expect((failure as Error).message).toBe('crash after the write');
    expect(await rows(session.id)).toBe(0);
  });

  it('reads as empty again after delete, and is deleted with its session', async () => {
    const session = await newSession();
    await save(session, 0, state({ summary: 'x' }));
    expect(await inTransaction(store, (trx) => states.delete(trx, 't1', session.id))).toBe(true);
    expect(await states.get('t1', session.id)).toMatchObject({ summary: '', version: 0 });
    expect(await inTransaction(store, (trx) => states.delete(trx, 't1', session.id))).toBe(false);

    await save(session, 0, state({ summary: 'y' }));
    await inTransaction(store, (trx) => sessions.deleteSession(trx, 't1', session.id));
    expect(await rows(session.id)).toBe(0);
  });
});
