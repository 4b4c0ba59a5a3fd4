import { Code } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { EngramError } from '@engram/errors';
import { ReindexJobRepository, failStaleReindexJobs, inTransaction, type Store } from '../src/index.js';
import { dialects, thrown, useStore } from './harness.js';

const spec = { creator: 'root', embeddingModel: 'm', embeddingDimensions: 4 };

describe.each(dialects)('ReindexJobRepository on $name', (dialect) => {
  let store: Store;
  let jobs: ReindexJobRepository;

  useStore(dialect, (opened) => {
    store = opened;
    jobs = new ReindexJobRepository(opened);
  });

  it('refuses a second active job of the tenant over the same kinds, naming the first', async () => {
    const first = await inTransaction(store, (trx) =>
      jobs.create(trx, { ...spec, tenantId: 't1', kinds: ['MEMORY', 'ROUND'], mode: 'FULL' }),
    );
    const clash = await thrown(() =>
      inTransaction(store, (trx) =>
        jobs.create(trx, { ...spec, tenantId: 't1', kinds: ['ROUND'], mode: 'MISSING_ONLY' }),
      ),
    );
    expect(clash).toBeInstanceOf(EngramError);
    expect((clash as EngramError).code).toBe(Code.FailedPrecondition);
    expect((clash as EngramError).metadata).toEqual({ name: `reindexJobs/${first.id}`, state: 'PENDING' });
    // Other kinds, or another tenant, are fine.
    await inTransaction(store, (trx) =>
      jobs.create(trx, { ...spec, tenantId: 't1', kinds: ['CHUNK'], mode: 'FULL' }),
    );
    await inTransaction(store, (trx) =>
      jobs.create(trx, { ...spec, tenantId: 't2', kinds: ['ROUND'], mode: 'FULL' }),
    );
  });

  it('never revives a terminal job with a late progress update', async () => {
    const job = await inTransaction(store, (trx) =>
      jobs.create(trx, { ...spec, tenantId: 't3', kinds: ['MEMORY'], mode: 'FULL' }),
    );
    await jobs.update('t3', job.id, { state: 'RUNNING', rowsScanned: 5 });
    await jobs.update('t3', job.id, { state: 'CANCELLED', completedAt: 1 });
    const late = await jobs.update('t3', job.id, { state: 'RUNNING', rowsScanned: 10 });
    expect(late).toMatchObject({ state: 'CANCELLED', rowsScanned: 5 });
  });

  it('marks jobs without progress FAILED, leaving fresh ones alone', async () => {
    const old = await inTransaction(store, (trx) =>
      jobs.create(trx, { ...spec, tenantId: 't4', kinds: ['MEMORY'], mode: 'FULL' }, 1_000),
    );
    const fresh = await inTransaction(store, (trx) =>
      jobs.create(trx, { ...spec, tenantId: 't4', kinds: ['CHUNK'], mode: 'FULL' }),
    );
    expect(await failStaleReindexJobs(store, 2_000)).toBeGreaterThanOrEqual(1);
    expect(await jobs.get('t4', old.id)).toMatchObject({ state: 'FAILED', error: { reason: 'INTERNAL' } });
    expect((await jobs.get('t4', fresh.id))?.state).toBe('PENDING');
  });

  it('lists a tenant’s jobs newest first, filtered by state', async () => {
    const all = await jobs.list('t1', {}, { pageSize: 10 });
    expect(all.items.map((j) => j.id)).toEqual([...all.items.map((j) => j.id)].sort().reverse());
    expect(all.items.every((j) => j.tenantId === 't1')).toBe(true);
    const first = await jobs.list('t1', { states: ['PENDING'] }, { pageSize: 1 });
    expect(first.items).toHaveLength(1);
    const second = await jobs.list(
      't1',
      { states: ['PENDING'] },
      { pageSize: 1, pageToken: first.nextPageToken },
    );
    expect(second.items[0]?.id).not.toBe(first.items[0]?.id);
  });
});
