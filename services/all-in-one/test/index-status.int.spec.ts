import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MemoryRepository, inTransaction, openStore, type Store } from '@engram/store';
import {
  bearer,
  errorInfo,
  grpcClient,
  loadProtos,
  newSecret,
  startServer,
  tokenFor,
  unary,
} from './harness.js';

interface IndexStatus {
  backend: string;
  embeddingModel: string;
  embeddingDimensions: number;
  indexReachable: boolean;
  kinds: {
    kind: string;
    sourceRows: string;
    indexedPoints?: string;
    drift?: string;
    densePendingPoints?: string;
  }[];
  outboxPending: string;
  healthy: boolean;
  problems: string[];
}

const secret = newSecret();
let stop: () => Promise<void>;
let client: grpc.Client;
let store: Store;

beforeAll(async () => {
  const started = await startServer(secret);
  stop = started.stop;
  client = grpcClient(
    loadProtos(),
    'engram.retrieval.v1.RetrievalService',
    `127.0.0.1:${started.server.port}`,
  );
  // A second connection to the same embedded database, standing in for the writing services.
  store = openStore({ target: join(started.dataDir, 'engram.db') });
}, 60_000);

afterAll(async () => {
  client.close();
  await store.close();
  await stop();
});

const token = (roles: ('admin' | 'platform')[] = []) =>
  tokenFor(secret, { subject: 'root', tenantId: 'acme', roles });

describe('GetIndexStatus through gRPC on the embedded defaults', () => {
  it('requires the admin role', async () => {
    const { error } = await unary(client, 'GetIndexStatus', {}, { metadata: bearer(await token()) });
    expect(error?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(error && errorInfo(error)).toMatchObject({ reason: 'ROLE_REQUIRED', metadata: { role: 'admin' } });
  });

  it('shows memories written to the source of truth reaching the index, with zero drift', async () => {
    const memories = new MemoryRepository(store);
    for (const text of ['喜欢喝绿茶', 'prefers window seats', '每周三下午开周会']) {
      await inTransaction(store, (trx) =>
        memories.create(
          trx,
          {
            tenantId: 'acme',
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
            languageCode: '',
            metadata: {},
          },
          { action: 'CREATE', actorKind: 'USER', actorId: 'alice' },
        ),
      );
    }
    const metadata = bearer(await token(['admin']));
    let status: IndexStatus | undefined;
    // The indexer runs in the background; poll (bounded) until the outbox is drained.
    for (let attempt = 0; attempt < 200; attempt += 1) {
      const { response, error } = await unary<{ indexStatus: IndexStatus }>(
        client,
        'GetIndexStatus',
        {},
        { metadata },
      );
      expect(error).toBeUndefined();
      status = response?.indexStatus;
      // Lexical-first (decision 0032): written at once, dense vectors a moment later.
      if (
        status?.outboxPending === '0' &&
        status.kinds[0]?.indexedPoints === '3' &&
        status.kinds[0].densePendingPoints === '0'
      )
        break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toMatchObject({
      backend: 'INDEX_BACKEND_EMBEDDED',
      // The default bilingual space (decision 0021).
      embeddingModel: 'bilingual(BAAI/bge-small-zh-v1.5@q8+sentence-transformers/all-MiniLM-L6-v2@q8)',
      embeddingDimensions: 896,
      indexReachable: true,
      outboxPending: '0',
      healthy: true,
      problems: [],
    });
    // (proto-loader adds `_field` markers for proto3 optional fields; compare the fields themselves.)
    expect(
      status?.kinds.map(({ kind, sourceRows, indexedPoints, drift, densePendingPoints }) => ({
        kind,
        sourceRows,
        indexedPoints,
        drift,
        densePendingPoints,
      })),
    ).toEqual([
      { kind: 'ITEM_KIND_MEMORY', sourceRows: '3', indexedPoints: '3', drift: '0', densePendingPoints: '0' },
      { kind: 'ITEM_KIND_CHUNK', sourceRows: '0', indexedPoints: '0', drift: '0', densePendingPoints: '0' },
      { kind: 'ITEM_KIND_ROUND', sourceRows: '0', indexedPoints: '0', drift: '0', densePendingPoints: '0' },
    ]);
  });

  it('is scoped to the caller’s tenant', async () => {
    const other = bearer(await tokenFor(secret, { subject: 'root', tenantId: 'globex', roles: ['admin'] }));
    const { response } = await unary<{ indexStatus: IndexStatus }>(
      client,
      'GetIndexStatus',
      {},
      { metadata: other },
    );
    expect(response?.indexStatus.kinds[0]).toMatchObject({
      kind: 'ITEM_KIND_MEMORY',
      sourceRows: '0',
      indexedPoints: '0',
    });
  });
});

interface ReindexJob {
  name: string;
  state: string;
  mode: string;
  kinds: string[];
  rowsScanned: string;
  pointsUpserted: string;
  pointsDeleted: string;
  rowsUnchanged: string;
  errorCount: string;
}

describe('Reindex jobs through gRPC', () => {
  const admin = async () => bearer(await token(['admin']));

  async function finished(name: string): Promise<ReindexJob> {
    for (let attempt = 0; attempt < 300; attempt += 1) {
      const { response, error } = await unary<{ reindexJob: ReindexJob }>(
        client,
        'GetReindexJob',
        { name },
        { metadata: await admin() },
      );
      expect(error).toBeUndefined();
      const job = response!.reindexJob;
      if (!['REINDEX_JOB_STATE_PENDING', 'REINDEX_JOB_STATE_RUNNING'].includes(job.state)) return job;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`reindex job ${name} did not finish`);
  }

  async function status(): Promise<IndexStatus> {
    const { response } = await unary<{ indexStatus: IndexStatus }>(
      client,
      'GetIndexStatus',
      {},
      { metadata: await admin() },
    );
    return response!.indexStatus;
  }

  it('rebuilds the tenant’s points in FULL mode, and a retry with the same request id returns the same job', async () => {
    const request = { mode: 'REINDEX_MODE_FULL', kinds: ['ITEM_KIND_MEMORY'], requestId: 'full-1' };
    const { response, error } = await unary<{ reindexJob: ReindexJob }>(client, 'Reindex', request, {
      metadata: await admin(),
    });
    expect(error).toBeUndefined();
    expect(response?.reindexJob.name).toMatch(/^reindexJobs\/[0-9A-Z]{26}$/);
    const job = await finished(response!.reindexJob.name);
    expect(job).toMatchObject({
      state: 'REINDEX_JOB_STATE_SUCCEEDED',
      mode: 'REINDEX_MODE_FULL',
      kinds: ['ITEM_KIND_MEMORY'],
    });
    expect(Number(job.pointsUpserted)).toBe(3);
    expect(Number(job.rowsScanned)).toBe(3);

    const retry = await unary<{ reindexJob: ReindexJob }>(client, 'Reindex', request, {
      metadata: await admin(),
    });
    expect(retry.response?.reindexJob.name).toBe(job.name);
    const reused = await unary(
      client,
      'Reindex',
      { ...request, mode: 'REINDEX_MODE_MISSING_ONLY' },
      { metadata: await admin() },
    );
    expect(reused.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(reused.error && errorInfo(reused.error)?.reason).toBe('REQUEST_ID_REUSED');
  });

  it('repairs drift in MISSING_ONLY mode: indexes rows the index lacks and deletes points whose row is gone', async () => {
    // Drift made behind the indexer's back: one row gone without an outbox row, one row added without one.
    const gone = await store.db
      .selectFrom('memories')
      .select(['id'])
      .where('tenant_id', '=', 'acme')
      .orderBy('id')
      .executeTakeFirstOrThrow();
    await store.db.deleteFrom('memory_revisions').where('memory_id', '=', gone.id).execute();
    await store.db.deleteFrom('memories').where('id', '=', gone.id).execute();
    const template = await store.db
      .selectFrom('memories')
      .selectAll()
      .where('tenant_id', '=', 'acme')
      .executeTakeFirstOrThrow();
    await store.db
      .insertInto('memories')
      .values({
        ...template,
        id: '01JD7Z5Q2G8V6K3M9T1R4X0B2C',
        mkey: 'added-behind-the-back',
        text: '喜欢爬山',
        content_hash: 'f'.repeat(64),
      })
      .execute();
    const drifted = await status();
    expect(drifted.kinds[0]).toMatchObject({ sourceRows: '3', indexedPoints: '3', drift: '0' }); // counts hide it…

    const { response } = await unary<{ reindexJob: ReindexJob }>(
      client,
      'Reindex',
      { mode: 'REINDEX_MODE_MISSING_ONLY', kinds: ['ITEM_KIND_MEMORY'], requestId: 'repair-1' },
      { metadata: await admin() },
    );
    const job = await finished(response!.reindexJob.name);
    // …but the repair finds both: one point written, one deleted, the other two left alone.
    expect(job).toMatchObject({
      state: 'REINDEX_JOB_STATE_SUCCEEDED',
      pointsUpserted: '1',
      pointsDeleted: '1',
      rowsUnchanged: '2',
    });
    expect((await status()).kinds[0]).toMatchObject({ sourceRows: '3', indexedPoints: '3', drift: '0' });
  });

  it('refuses to cancel a finished job, and lists the tenant’s jobs newest first', async () => {
    const { response } = await unary<{ reindexJobs: ReindexJob[]; nextPageToken: string }>(
      client,
      'ListReindexJobs',
      { pageSize: 1 },
      { metadata: await admin() },
    );
    expect(response?.reindexJobs).toHaveLength(1);
    expect(response?.reindexJobs[0]?.mode).toBe('REINDEX_MODE_MISSING_ONLY');
    expect(response?.nextPageToken).not.toBe('');
    const cancel = await unary(
      client,
      'CancelReindexJob',
      { name: response!.reindexJobs[0]!.name },
      { metadata: await admin() },
    );
    expect(cancel.error?.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(cancel.error && errorInfo(cancel.error)?.reason).toBe('STATE_CONFLICT');
  });

  it('answers precise errors for bad input and missing roles', async () => {
    const noMode = await unary(client, 'Reindex', { requestId: 'x' }, { metadata: await admin() });
    expect(noMode.error && errorInfo(noMode.error)).toMatchObject({
      reason: 'FIELD_REQUIRED',
      metadata: { field: 'mode' },
    });
    const badName = await unary(client, 'GetReindexJob', { name: 'jobs/1' }, { metadata: await admin() });
    expect(badName.error && errorInfo(badName.error)?.reason).toBe('NAME_INVALID');
    const missing = await unary(
      client,
      'GetReindexJob',
      { name: 'reindexJobs/01JD7Z5Q2G8V6K3M9T1R4X0B2D' },
      { metadata: await admin() },
    );
    expect(missing.error?.code).toBe(grpc.status.NOT_FOUND);
    const user = await unary(
      client,
      'Reindex',
      { mode: 'REINDEX_MODE_FULL', requestId: 'u' },
      { metadata: bearer(await token()) },
    );
    expect(user.error?.code).toBe(grpc.status.PERMISSION_DENIED);
  });
});
