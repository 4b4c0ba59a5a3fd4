import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { mintToken } from '@engram/runtime';
import { MemoryRepository, inTransaction, openStore, type Store } from '@engram/store';
import { createAllInOneServer, loadConfig } from '../src/index.js';
import { bearer, errorInfo, loadProtos, serviceConstructor, tempDir, unary } from './harness.js';

interface IndexStatus {
  backend: string;
  embeddingModel: string;
  embeddingDimensions: number;
  indexReachable: boolean;
  kinds: { kind: string; sourceRows: string; indexedPoints?: string; drift?: string }[];
  outboxPending: string;
  healthy: boolean;
  problems: string[];
}

const secret = new TextEncoder().encode(randomBytes(32).toString('hex'));
let stop: () => Promise<void>;
let client: grpc.Client;
let store: Store;

beforeAll(async () => {
  const dataDir = tempDir();
  const config = loadConfig({
    ENGRAM_PORT: '0',
    ENGRAM_JWT_SECRET: new TextDecoder().decode(secret),
    ENGRAM_DATA_DIR: dataDir,
    ENGRAM_LOG_LEVEL: 'silent',
  });
  const { server } = await createAllInOneServer(config, { handleSignals: false });
  stop = () => server.shutdown();
  const Retrieval = serviceConstructor(loadProtos(), 'engram.retrieval.v1.RetrievalService');
  client = new Retrieval(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  // A second connection to the same embedded database, standing in for the writing services.
  store = openStore({ target: join(dataDir, 'engram.db') });
}, 60_000);

afterAll(async () => {
  client.close();
  await store.close();
  await stop();
});

const token = (roles: ('admin' | 'platform')[] = []) =>
  mintToken({ subject: 'root', tenantId: 'acme', roles }, { algorithm: 'HS256', secret });

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
      if (status?.outboxPending === '0' && status.kinds[0]?.indexedPoints === '3') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toMatchObject({
      backend: 'INDEX_BACKEND_EMBEDDED',
      embeddingModel: 'BAAI/bge-small-zh-v1.5@q8',
      embeddingDimensions: 512,
      indexReachable: true,
      outboxPending: '0',
      healthy: true,
      problems: [],
    });
    // (proto-loader adds `_field` markers for proto3 optional fields; compare the fields themselves.)
    expect(
      status?.kinds.map(({ kind, sourceRows, indexedPoints, drift }) => ({
        kind,
        sourceRows,
        indexedPoints,
        drift,
      })),
    ).toEqual([
      { kind: 'ITEM_KIND_MEMORY', sourceRows: '3', indexedPoints: '3', drift: '0' },
      { kind: 'ITEM_KIND_CHUNK', sourceRows: '0', indexedPoints: '0', drift: '0' },
      { kind: 'ITEM_KIND_ROUND', sourceRows: '0', indexedPoints: '0', drift: '0' },
    ]);
  });

  it('is scoped to the caller’s tenant', async () => {
    const other = bearer(
      await mintToken(
        { subject: 'root', tenantId: 'globex', roles: ['admin'] },
        { algorithm: 'HS256', secret },
      ),
    );
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
