import { timestampMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient, createRouterTransport } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ContextService, type EraseSubjectRequest as ContextEraseRequest } from '@engram/contracts/context';
import { IngestionService, type EraseSubjectRequest } from '@engram/contracts/ingestion';
import { createLogger, createServiceCredentials } from '@engram/runtime';
import {
  ForgetReceiptRepository,
  MemoryRepository,
  OutboxRepository,
  addForgetCounts,
  forgetPayload,
  inTransaction,
  type ForgetReceiptRecord,
  type Store,
} from '@engram/store';
import { dialects } from '../../../libs/store/test/harness.js';
import { ForgetWorker, type ForgetWorkerSettings } from '../src/forget.js';

const logger = createLogger({ service: 'test', level: 'silent' });
const credentials = createServiceCredentials(
  { algorithm: 'HS256', secret: new Uint8Array(32).fill(7) },
  { subject: 'engram-governance' },
);
const fast: Partial<ForgetWorkerSettings> = {
  baseDelayMs: 20,
  maxDelayMs: 50,
  pollMs: 50,
  indexPollMs: 20,
  leaseMs: 5_000,
};

type EraseHandler<R> = (request: R, signal: AbortSignal) => Promise<Record<string, bigint>>;

/** Ingestion and context as the worker sees them: clients over an in-memory router. */
function peers(handlers: {
  context: EraseHandler<ContextEraseRequest>;
  ingestion: EraseHandler<EraseSubjectRequest>;
}) {
  const calls: { service: string; request: object; authorization: string | null }[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(ContextService, {
      async eraseSubject(request, ctx) {
        calls.push({ service: 'context', request, authorization: ctx.requestHeader.get('authorization') });
        return handlers.context(request, ctx.signal);
      },
    });
    service(IngestionService, {
      async eraseSubject(request, ctx) {
        calls.push({ service: 'ingestion', request, authorization: ctx.requestHeader.get('authorization') });
        return handlers.ingestion(request, ctx.signal);
      },
    });
  });
  return {
    calls,
    context: createClient(ContextService, transport),
    ingestion: createClient(IngestionService, transport),
  };
}

const erasedByIngestion = () =>
  Promise.resolve({ documents: 1n, chunks: 3n, sessions: 1n, messages: 4n, memCells: 1n });

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe.each(dialects)('the forget worker on $name', (dialect) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let receipts: ForgetReceiptRepository;
  let memories: MemoryRepository;

  beforeAll(async () => {
    ({ store, dispose } = await dialect.open());
    receipts = new ForgetReceiptRepository(store);
    memories = new MemoryRepository(store);
  });
  afterAll(async () => {
    await dispose();
  });

  /** What ForgetUser commits: the receipt, with governance's erasure (two memories) tagged by it. */
  const forget = (tenantId: string) =>
    inTransaction(store, async (trx) => {
      for (const text of ['likes green tea', 'lives in Lisbon']) {
        await memories.create(
          trx,
          {
            tenantId,
            ownerId: 'alice',
            orgId: '',
            scope: 'SELF',
            type: 'FACT',
            namespace: 'profile',
            key: text,
            text,
            evergreen: false,
            sourceKind: 'EXPLICIT_USER_STATEMENT',
            confidence: 0.9,
            evidence: { messageIds: [], chunkIds: [] },
            languageCode: 'en',
            metadata: {},
          },
          { action: 'CREATE', actorKind: 'USER', actorId: 'alice' },
        );
      }
      const receipt = await receipts.create(trx, {
        tenantId,
        subject: 'alice',
        requestedBy: 'alice',
        reason: '',
        requestId: '',
      });
      const purged = await memories.purgeOwner(trx, tenantId, 'alice', {
        createdAtOrBefore: receipt.createdAt,
        erasedBy: `forgetReceipts/${receipt.id}`,
        payload: forgetPayload(receipt.id),
      });
      return receipts.update(receipt, { counts: addForgetCounts(receipt.counts, purged) }, Date.now(), trx);
    });

  /** Stands in for retrieval's indexer: marks the tenant's outbox rows processed. */
  const indexTenant = async (tenantId: string) => {
    const outbox = new OutboxRepository(store);
    const leased = (await outbox.lease(1_000, 60_000)).filter((e) => e.tenantId === tenantId);
    await outbox.complete(leased.map((e) => e.id));
    return leased;
  };

  it('retries a failing step with backoff, shows the failure, waits for the indexer, then completes', async () => {
    const receipt = (await forget('w1'))!;
    let contextCalls = 0;
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const { calls, context, ingestion } = peers({
      context: async () => {
        contextCalls += 1;
        if (contextCalls === 2) await gate;
        if (contextCalls <= 2) throw new ConnectError('context is down', Code.Unavailable);
        return { sessionStates: 2n };
      },
      ingestion: erasedByIngestion,
    });
    const forgetWorker = new ForgetWorker({ store, logger, context, ingestion, credentials, settings: fast });
    forgetWorker.worker.start();
    try {
      const failed = await until(
        () => receipts.get('w1', receipt.id),
        (r) => r?.attempts === 1,
        'the first failure',
      );
      expect(failed).toMatchObject({
        state: 'PENDING',
        step: 'CONTEXT',
        lastErrorReason: 'DEPENDENCY_UNAVAILABLE',
      });
      expect(failed?.lastError).toContain('context is down');
      openGate();

      const waiting = await until(
        () => receipts.get('w1', receipt.id),
        (r) => r?.step === 'INDEX',
        'the index step',
      );
      expect(waiting).toMatchObject({ state: 'PENDING', lastErrorReason: '', attempts: 0 });
      expect(waiting?.counts).toMatchObject({
        memories: 2,
        sessionStates: 2,
        documents: 1,
        chunks: 3,
        sessions: 1,
        messages: 4,
        memCells: 1,
      });
      // It stays PENDING while the indexer has not applied the deletions.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await receipts.get('w1', receipt.id))?.state).toBe('PENDING');

      const leased = await indexTenant('w1');
      // Then a subject-wide purge of the index, after everything else; still PENDING until the
      // indexer has applied it.
      await until(
        () => receipts.get('w1', receipt.id),
        (r) => r?.step === 'PURGE',
        'the purge step',
      );
      expect(leased.some((e) => e.aggregate === 'SUBJECT')).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await receipts.get('w1', receipt.id))?.state).toBe('PENDING');
      const purge = await indexTenant('w1');
      expect(purge).toEqual([
        expect.objectContaining({
          aggregate: 'SUBJECT',
          aggregateId: receipt.id,
          operation: 'DELETE',
          payload: forgetPayload(receipt.id),
        }),
      ]);
      const done = await until(
        () => receipts.get('w1', receipt.id),
        (r) => r?.state === 'COMPLETED',
        'completion',
      );
      expect(done).toMatchObject({ step: 'DONE', lastErrorReason: '', counts: { vectorPoints: 2 } });
      expect(done?.completedAt).toBeDefined();
    } finally {
      await forgetWorker.worker.stop();
    }
    // Context first (its states would go with ingestion's sessions), three attempts; ingestion once.
    expect(calls.map((c) => c.service)).toEqual(['context', 'context', 'context', 'ingestion']);
    for (const call of calls) {
      expect(call.authorization).toMatch(/^Bearer /);
      expect(call.request).toMatchObject({
        subject: 'alice',
        forgetReceipt: `forgetReceipts/${receipt.id}`,
        requestId: `forget-${receipt.id}`,
      });
      expect(timestampMs((call.request as EraseSubjectRequest).cutoffTime!)).toBe(receipt.createdAt);
    }
  });

  it('resumes a receipt left PENDING by a stopped worker once its lease runs out', async () => {
    const receipt = (await forget('w2'))!;
    let called!: () => void;
    const reached = new Promise<void>((resolve) => (called = resolve));
    const stuck = peers({
      // Hangs until the worker cancels the call.
      context: (_request, signal) =>
        new Promise((_resolve, reject) => {
          called();
          signal.addEventListener('abort', () => {
            reject(new ConnectError('cancelled', Code.Canceled));
          });
        }),
      ingestion: erasedByIngestion,
    });
    const first = new ForgetWorker({
      store,
      logger,
      context: stuck.context,
      ingestion: stuck.ingestion,
      credentials,
      settings: { ...fast, leaseMs: 300 },
    });
    first.worker.start();
    await reached;
    await first.worker.stop();
    const left: ForgetReceiptRecord | undefined = await receipts.get('w2', receipt.id);
    expect(left).toMatchObject({ state: 'PENDING', step: 'CONTEXT', attempts: 0 });

    const working = peers({
      context: () => Promise.resolve({ sessionStates: 0n }),
      ingestion: erasedByIngestion,
    });
    const second = new ForgetWorker({
      store,
      logger,
      context: working.context,
      ingestion: working.ingestion,
      credentials,
      settings: fast,
    });
    second.worker.start();
    try {
      await until(
        () => receipts.get('w2', receipt.id),
        (r) => r?.step === 'INDEX',
        'the resumed erasure',
      );
      await indexTenant('w2');
      await until(
        () => receipts.get('w2', receipt.id),
        (r) => r?.step === 'PURGE',
        'the purge step',
      );
      await indexTenant('w2');
      const done = await until(
        () => receipts.get('w2', receipt.id),
        (r) => r?.state === 'COMPLETED',
        'completion',
      );
      expect(done?.counts).toMatchObject({ memories: 2, documents: 1, vectorPoints: 2 });
    } finally {
      await second.worker.stop();
    }
    expect(working.calls.map((c) => c.service)).toEqual(['context', 'ingestion']);
  });
});
