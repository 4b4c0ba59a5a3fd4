import { Code } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import {
  ExtractionJobRepository,
  inTransaction,
  newId,
  type ExtractionJobRecord,
  type NewExtractionJob,
  type Store,
} from '../src/index.js';
import { code, countRows, dialects, reason, thrown, useStore } from './harness.js';

describe.each(dialects)('ExtractionJobRepository on $name', (dialect) => {
  let store: Store;
  let jobs: ExtractionJobRepository;

  useStore(dialect, (opened) => {
    store = opened;
    jobs = new ExtractionJobRepository(opened);
  });

  const create = (input: Partial<NewExtractionJob> & { tenantId: string }, now?: number) =>
    inTransaction(store, (trx) =>
      jobs.create(
        trx,
        {
          ownerId: 'alice',
          memCellId: newId(),
          sessionId: 'S1',
          extractors: ['EPISODE', 'EVENT', 'FORESIGHT', 'FACT'],
          ...input,
        },
        now,
      ),
    );
  const countJobs = (tenantId: string) => countRows(store, 'extraction_jobs', { tenant_id: tenantId });

  it('creates a PENDING job with defaults and reads it back unchanged', async () => {
    const memCellId = newId();
    const created = await create(
      { tenantId: 'j1', memCellId, extractors: ['FACT'], requestId: 'req-1' },
      1_000,
    );
    expect(created).toMatchObject({
      tenantId: 'j1',
      ownerId: 'alice',
      memCellId,
      state: 'PENDING',
      extractors: ['FACT'],
      attempts: 0,
      result: {},
      usage: {},
      languageCode: '',
      requestId: 'req-1',
      createdAt: 1_000,
      updatedAt: 1_000,
    });
    expect(created.error).toBeUndefined();
    expect(created.completedAt).toBeUndefined();
    expect(created.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(await jobs.get('j1', created.id)).toEqual(created);
    expect(await jobs.get('other', created.id)).toBeUndefined();
  });

  it('records progress, results with Chinese and emoji, usage and completion', async () => {
    const job = await create({ tenantId: 'j2' }, 1_000);
    const running = await inTransaction(store, (trx) =>
      jobs.update(trx, 'j2', job.id, { state: 'RUNNING', attempts: 1, languageCode: 'zh' }, 2_000),
    );
    expect(running).toMatchObject({ state: 'RUNNING', attempts: 1, languageCode: 'zh', updatedAt: 2_000 });
    expect(running.completedAt).toBeUndefined();

    const result = {
      candidates: [{ type: 'FACT', text: '用户喜欢喝龙井茶 🍵 𠀋', confidence: 0.9 }],
      decisionCounts: { created: 1, skipped: 0 },
    };
    const usage = { inputTokens: 1_234, outputTokens: 56 };
    const done = await inTransaction(store, (trx) =>
      jobs.update(trx, 'j2', job.id, { state: 'SUCCEEDED', result, usage }, 3_000),
    );
    expect(done).toMatchObject({ state: 'SUCCEEDED', result, usage, completedAt: 3_000, updatedAt: 3_000 });
    expect(await jobs.get('j2', job.id)).toEqual(done);
  });

  it('sets and clears the error', async () => {
    const job = await create({ tenantId: 'j3' });
    const failed = await inTransaction(store, (trx) =>
      jobs.update(
        trx,
        'j3',
        job.id,
        { state: 'FAILED', error: { reason: 'MODEL_UNAVAILABLE', message: 'timeout' } },
        4_000,
      ),
    );
    expect(failed).toMatchObject({
      error: { reason: 'MODEL_UNAVAILABLE', message: 'timeout' },
      completedAt: 4_000,
    });
    expect((await jobs.get('j3', job.id))?.error).toEqual({
      reason: 'MODEL_UNAVAILABLE',
      message: 'timeout',
    });
    const cleared = await inTransaction(store, (trx) => jobs.update(trx, 'j3', job.id, { error: null }));
    expect(cleared.error).toBeUndefined();
    expect((await jobs.get('j3', job.id))?.error).toBeUndefined();
    expect((await jobs.get('j3', job.id))?.completedAt).toBe(4_000);
  });

  it('starts a job once: of two updates expecting PENDING, exactly one wins', async () => {
    const job = await create({ tenantId: 'j4' });
    const start = () =>
      inTransaction(store, (trx) =>
        jobs.update(trx, 'j4', job.id, { state: 'RUNNING', attempts: 1, expectedState: 'PENDING' }),
      );
    const results = await Promise.allSettled([start(), start()]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const losers = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(losers.map((l) => [code(l.reason), reason(l.reason)])).toEqual([[Code.Aborted, 'ETAG_MISMATCH']]);
    expect(await jobs.get('j4', job.id)).toMatchObject({ state: 'RUNNING', attempts: 1 });
  });

  it('answers NOT_FOUND for a missing job or one of another tenant', async () => {
    const job = await create({ tenantId: 'j5' });
    for (const [tenantId, id] of [
      ['j5', newId()],
      ['other', job.id],
    ] as const) {
      const missing = await thrown(() =>
        inTransaction(store, (trx) => jobs.update(trx, tenantId, id, { attempts: 2 })),
      );
      expect(code(missing)).toBe(Code.NotFound);
    }
    expect((await jobs.get('j5', job.id))?.attempts).toBe(0);
  });

  it('leaves no job when the transaction fails midway', async () => {
    const before = await countJobs('j6');
    const failure = await thrown(() =>
      inTransaction(store, async (trx) => {
        await jobs.create(trx, {
          tenantId: 'j6',
          ownerId: 'alice',
          memCellId: newId(),
          sessionId: 'S1',
          extractors: ['FACT'],
        });
        throw new Error('crash after the write');
      }),
    );
    expect((failure as Error).message).toBe('crash after the write');
    expect(await countJobs('j6')).toBe(before);
  });

  it('lists jobs newest first by MemCell and by state, pages without gaps, and refuses a foreign token', async () => {
    const memCellId = newId();
    const made: ExtractionJobRecord[] = [];
    for (let i = 0; i < 5; i += 1) made.push(await create({ tenantId: 'j7', memCellId }));
    const elsewhere = await create({ tenantId: 'j7' });
    await create({ tenantId: 'j7-other', memCellId });
    await inTransaction(store, (trx) => jobs.update(trx, 'j7', made[1]!.id, { state: 'FAILED' }));

    const seen: string[] = [];
    let token = '';
    do {
      const page = await jobs.listByMemCell('j7', memCellId, { pageSize: 2, pageToken: token });
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((j) => j.id));
      token = page.nextPageToken;
    } while (token !== '');
    expect(seen).toEqual(made.map((j) => j.id).reverse());

    const failed = await jobs.list('j7', { states: ['FAILED'] }, { pageSize: 10 });
    expect(failed.items.map((j) => j.id)).toEqual([made[1]!.id]);
    const all = await jobs.list('j7', {}, { pageSize: 10 });
    expect(all.items.map((j) => j.id)).toEqual([elsewhere.id, ...made.map((j) => j.id).reverse()]);
    const pendingOfCell = await jobs.list('j7', { memCellId, states: ['PENDING'] }, { pageSize: 10 });
    expect(pendingOfCell.items).toHaveLength(4);

    const page1 = await jobs.listByMemCell('j7', memCellId, { pageSize: 2 });
    const misuse = await thrown(() =>
      jobs.list('j7', { memCellId, states: ['PENDING'] }, { pageSize: 2, pageToken: page1.nextPageToken }),
    );
    expect(code(misuse)).toBe(Code.InvalidArgument);
    expect(reason(misuse)).toBe('PAGE_TOKEN_INVALID');
  });

  it('finds the newest unfinished job of a MemCell, and none once all are finished', async () => {
    const memCellId = newId();
    expect(await jobs.findRunning('j8', memCellId)).toBeUndefined();
    const older = await create({ tenantId: 'j8', memCellId });
    const newer = await create({ tenantId: 'j8', memCellId });
    await inTransaction(store, (trx) => jobs.update(trx, 'j8', newer.id, { state: 'RUNNING' }));
    expect((await jobs.findRunning('j8', memCellId))?.id).toBe(newer.id);
    expect(await jobs.findRunning('other', memCellId)).toBeUndefined();
    await inTransaction(store, (trx) => jobs.update(trx, 'j8', newer.id, { state: 'SUCCEEDED' }));
    expect((await jobs.findRunning('j8', memCellId))?.id).toBe(older.id);
    await inTransaction(store, (trx) => jobs.update(trx, 'j8', older.id, { state: 'FAILED' }));
    expect(await jobs.findRunning('j8', memCellId)).toBeUndefined();
  });

  it("purges one owner's jobs and leaves other owners' and other tenants' untouched", async () => {
    await create({ tenantId: 'j9', ownerId: 'victim' });
    await create({ tenantId: 'j9', ownerId: 'victim' });
    const bystander = await create({ tenantId: 'j9', ownerId: 'bystander' });
    const elsewhere = await create({ tenantId: 'j9-other', ownerId: 'victim' });
    expect(await inTransaction(store, (trx) => jobs.purgeOwner(trx, 'j9', 'victim'))).toBe(2);
    expect((await jobs.list('j9', {}, { pageSize: 10 })).items.map((j) => j.id)).toEqual([bystander.id]);
    expect(await jobs.get('j9-other', elsewhere.id)).toEqual(elsewhere);
  });
});
