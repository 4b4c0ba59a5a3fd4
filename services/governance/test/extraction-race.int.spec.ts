import type { Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MessageRole, type IngestionService } from '@engram/contracts/ingestion';
import { createLogger } from '@engram/runtime';
import { ExtractionJobRepository, inTransaction, newId, type Store } from '@engram/store';
import { dialects } from '../../../libs/store/test/harness.js';
import type { Candidate } from '../src/domain/candidate.js';
import { DEFAULT_POLICY } from '../src/domain/rules/policy.js';
import { ExtractionRunner, type ExtractorOutput, type JobCaller } from '../src/extraction.js';

// Finding 12 of issue 18 (decision 0027): two governance replicas run one job (a retried
// hand-off took it over while the first was still running). Exactly one attempt ends it, its
// memories are written once, and the loser never overwrites the winner's outcome.

const TENANT = 'race';
const MESSAGE = newId();
const ingestion = {
  getMemCell: async () => ({ memCell: { firstSequence: 1n, lastSequence: 1n } }),
  getSession: async () => ({ session: { owner: 'alice', languageCode: 'en', timeZone: 'UTC' } }),
  listMessages: async () => ({
    messages: [
      {
        name: `sessions/S1/messages/${MESSAGE}`,
        sequence: 1n,
        role: MessageRole.USER,
        content: 'My goal for the next 30 days is to solve 200 problems.',
        participantName: '',
      },
    ],
    nextPageToken: '',
  }),
} as unknown as Client<typeof IngestionService>;

const goal: Candidate = {
  type: 'FACT',
  namespace: 'goal',
  key: 'current_goal',
  value: { goal: 'solve 200 problems' },
  text: 'Alice wants to solve 200 problems in the next 30 days.',
  sourceKind: 'EXPLICIT_USER_STATEMENT',
  confidence: 0.9,
  evidence: { messageIds: [MESSAGE] },
};

const caller: JobCaller = {
  principal: { subject: 'alice', tenantId: TENANT, orgIds: [], roles: [] },
  headers: new Headers(),
};

/** An extractor that answers when `release` is called: with the goal, or by failing. */
function gated() {
  let release: (outcome: 'succeed' | 'fail') => void = () => undefined;
  const gate = new Promise<'succeed' | 'fail'>((resolve) => (release = resolve));
  const run = async (): Promise<ExtractorOutput> => {
    if ((await gate) === 'fail') throw new Error('model unavailable');
    return { candidates: [goal] };
  };
  return {
    run,
    release: (o: 'succeed' | 'fail') => {
      release(o);
    },
  };
}

describe.each(dialects)('two extraction runners racing on one job on $name', (dialect) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let jobs: ExtractionJobRepository;

  beforeAll(async () => {
    ({ store, dispose } = await dialect.open());
    jobs = new ExtractionJobRepository(store);
  });
  afterAll(async () => {
    await dispose();
  });

  // Lease 0: every RUNNING job counts as abandoned, so the second runner takes over a live one
  // (a stalled process, or a lease that lapsed): safety must not depend on the lease.
  const runner = (runExtractor: () => Promise<ExtractorOutput>, leaseMs = 0) =>
    new ExtractionRunner({
      leaseMs,
      store,
      logger: createLogger({ service: 'test', level: 'silent' }),
      ingestion,
      policies: () => DEFAULT_POLICY,
      runExtractor,
      model: '',
    });

  async function until<T>(what: string, read: () => Promise<T | undefined>): Promise<T> {
    for (let i = 0; i < 200; i += 1) {
      const value = await read();
      if (value !== undefined) return value;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  it.each([
    ['fails after the second attempt succeeded', 'fail', 'after'],
    ['succeeds after the second attempt succeeded', 'succeed', 'after'],
    ['succeeds while the second attempt is still running', 'succeed', 'before'],
  ] as const)('the first runner %s: one outcome, the take-over’s, one memory', async (_, outcome, when) => {
    const ownerId = `alice-${newId()}`;
    const job = await inTransaction(store, (trx) =>
      jobs.create(trx, {
        tenantId: TENANT,
        ownerId,
        memCellId: newId(),
        sessionId: 'S1',
        extractors: ['FACT'],
        result: { sessionId: 'S1', requestedBy: 'ingestion', dryRun: false, reextract: false },
      }),
    );
    const first = gated();
    const second = gated();
    const a = runner(first.run).run(job, caller);
    const taken = await until('the first attempt', async () => {
      const j = await jobs.get(TENANT, job.id);
      return j?.state === 'RUNNING' ? j : undefined;
    });
    const b = runner(second.run).run(taken, caller);
    await until('the take-over', async () =>
      (await jobs.get(TENANT, job.id))?.attempts === 2 ? true : undefined,
    );
    if (when === 'after') {
      second.release('succeed');
      expect(await b).toMatchObject({ state: 'SUCCEEDED', attempts: 2 });
      first.release(outcome);
      await a;
    } else {
      first.release(outcome);
      await a;
      second.release('succeed');
      await b;
    }
    const stored = await jobs.get(TENANT, job.id);
    expect(stored).toMatchObject({ state: 'SUCCEEDED', attempts: 2 });
    expect(stored?.error).toBeUndefined();
    const written = await store.db
      .selectFrom('memories')
      .select('id')
      .where('tenant_id', '=', TENANT)
      .where('owner_id', '=', ownerId)
      .execute();
    expect(written).toHaveLength(1);
  });

  it('leaves a job RUNNING under a live lease to its runner', async () => {
    const job = await inTransaction(store, (trx) =>
      jobs.create(trx, {
        tenantId: TENANT,
        ownerId: 'carol',
        memCellId: newId(),
        sessionId: 'S1',
        extractors: ['FACT'],
        result: { sessionId: 'S1', requestedBy: 'carol', dryRun: false, reextract: false },
      }),
    );
    const first = gated();
    const holder = runner(first.run, 60_000);
    const a = holder.run(job, caller);
    const taken = await until('the first attempt', async () => {
      const j = await jobs.get(TENANT, job.id);
      return j?.state === 'RUNNING' ? j : undefined;
    });
    const other = runner(async () => {
      throw new Error('must not run');
    }, 60_000);
    expect(other.mayTakeOver(taken)).toBe(false);
    expect(holder.mayTakeOver(taken)).toBe(false);
    expect(other.mayTakeOver(taken, taken.updatedAt + 60_000)).toBe(true);
    expect(await other.run(taken, caller)).toMatchObject({ state: 'RUNNING', attempts: 1 });
    first.release('succeed');
    expect(await a).toMatchObject({ state: 'SUCCEEDED', attempts: 1 });
  });

  it('does not start a job another runner has ended', async () => {
    const job = await inTransaction(store, (trx) =>
      jobs.create(trx, {
        tenantId: TENANT,
        ownerId: 'bob',
        memCellId: newId(),
        sessionId: 'S1',
        extractors: ['FACT'],
        result: { sessionId: 'S1', requestedBy: 'bob', dryRun: false, reextract: false },
      }),
    );
    const done = await runner(async () => ({ candidates: [] })).run(job, caller);
    expect(done).toMatchObject({ state: 'SUCCEEDED', attempts: 1 });
    // A replica that read the job while it was still PENDING.
    const late = await runner(async () => {
      throw new Error('must not run');
    }).run(job, caller);
    expect(late).toMatchObject({ state: 'SUCCEEDED', attempts: 1 });
  });
});
