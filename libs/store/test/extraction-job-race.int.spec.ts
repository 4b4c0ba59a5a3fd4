import { Code } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { ExtractionJobRepository, inTransaction, newId, type Store } from '../src/index.js';
import { code, dialects, reason, thrown, useStore } from './harness.js';

// Finding 12 of issue 18 (decision 0027): every state transition of a job is a compare-and-set
// on its state and, for a RUNNING job, on the attempt that holds it.
describe.each(dialects)('extraction job transitions on $name', (dialect) => {
  let store: Store;
  let jobs: ExtractionJobRepository;

  useStore(dialect, (opened) => {
    store = opened;
    jobs = new ExtractionJobRepository(opened);
  });

  const running = async (tenantId: string) => {
    const job = await inTransaction(store, (trx) =>
      jobs.create(trx, {
        tenantId,
        ownerId: 'alice',
        memCellId: newId(),
        sessionId: 'S1',
        extractors: ['FACT'],
      }),
    );
    return inTransaction(store, (trx) =>
      jobs.update(trx, tenantId, job.id, {
        state: 'RUNNING',
        attempts: 1,
        expectedState: 'PENDING',
        expectedAttempts: 0,
      }),
    );
  };
  const as = (tenantId: string, id: string, patch: Parameters<ExtractionJobRepository['update']>[3]) =>
    inTransaction(store, (trx) => jobs.update(trx, tenantId, id, patch));

  it("refuses the first runner's success and failure once a second attempt took the job over", async () => {
    const job = await running('r1');
    const taken = await as('r1', job.id, {
      state: 'RUNNING',
      attempts: 2,
      expectedState: 'RUNNING',
      expectedAttempts: 1,
    });
    expect(taken).toMatchObject({ state: 'RUNNING', attempts: 2 });
    for (const state of ['SUCCEEDED', 'FAILED'] as const) {
      const lost = await thrown(() =>
        as('r1', job.id, { state, expectedState: 'RUNNING', expectedAttempts: 1 }),
      );
      expect([code(lost), reason(lost)]).toEqual([Code.Aborted, 'ETAG_MISMATCH']);
    }
    await as('r1', job.id, { state: 'SUCCEEDED', expectedState: 'RUNNING', expectedAttempts: 2 });
    expect(await jobs.get('r1', job.id)).toMatchObject({ state: 'SUCCEEDED', attempts: 2 });
  });

  it("never lets a late failure overwrite SUCCEEDED (the loser's transition expects RUNNING)", async () => {
    const job = await running('r2');
    await as('r2', job.id, { state: 'SUCCEEDED', expectedState: 'RUNNING', expectedAttempts: 1 });
    const late = await thrown(() =>
      as('r2', job.id, { state: 'FAILED', error: { reason: 'INTERNAL' }, expectedState: 'RUNNING' }),
    );
    expect([code(late), reason(late)]).toEqual([Code.Aborted, 'ETAG_MISMATCH']);
    const stored = await jobs.get('r2', job.id);
    expect(stored).toMatchObject({ state: 'SUCCEEDED' });
    expect(stored?.error).toBeUndefined();
  });

  it('lets exactly one of two racing take-overs of one RUNNING attempt win', async () => {
    const job = await running('r3');
    const takeOver = () =>
      as('r3', job.id, { state: 'RUNNING', attempts: 2, expectedState: 'RUNNING', expectedAttempts: 1 });
    const results = await Promise.allSettled([takeOver(), takeOver()]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const losers = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(losers.map((l) => [code(l.reason), reason(l.reason)])).toEqual([[Code.Aborted, 'ETAG_MISMATCH']]);
    expect(await jobs.get('r3', job.id)).toMatchObject({ state: 'RUNNING', attempts: 2 });
  });
});
