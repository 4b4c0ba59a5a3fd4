import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startQdrant, type RunningQdrant } from '@engram/testing';
import { createQdrantStore, pointId, type Point, type VectorStore } from '../src/index.js';
import { basePayload, vectorIndexContract } from './contract.js';

// One Qdrant for this file, started before any suite opens a store.
let qdrant: RunningQdrant | undefined;
const running = (): RunningQdrant => {
  if (qdrant === undefined) throw new Error('Qdrant did not start (see the beforeAll failure)');
  return qdrant;
};

beforeAll(async () => {
  qdrant = await startQdrant();
}, 30_000);

afterAll(async () => {
  await qdrant?.stop();
}, 30_000);

vectorIndexContract('qdrant', async () => {
  const store = createQdrantStore({ url: running().url });
  return { store, dispose: () => store.close() };
});

/** Raw REST access, to look at what the adapter created. */
async function rest<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${running().url}${path}`, {
    method,
    ...(body !== undefined
      ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }
      : {}),
  });
  const json = (await response.json()) as { result: T };
  return json.result;
}

function unitPoint(sourceId: string, dims: number, seed: number): Point {
  const dense = Array.from({ length: dims }, (_, i) => Math.sin(seed * 31 + i * 7) + 1.5);
  return {
    id: pointId('MEMORY', sourceId),
    dense,
    sparse: { indices: [seed % 50, 100 + (seed % 7)], values: [1, 0.5] },
    payload: basePayload(sourceId, { createdAt: 1_700_000_000_000 + seed }),
  };
}

describe('Qdrant adapter', () => {
  let store: VectorStore;
  beforeAll(() => {
    store = createQdrantStore({ url: running().url });
  });
  afterAll(async () => {
    await store.close();
  });

  it('creates named dense (cosine) and sparse (IDF) vectors, the model metadata and every payload index', async () => {
    const index = store.index('layout');
    await index.ensureCollection({ model: 'BAAI/bge-small-zh-v1.5@q8', dimensions: 512 });
    const info = await rest<{
      config: { params: Record<string, unknown>; metadata: unknown };
      payload_schema: Record<string, { data_type: string; params?: Record<string, unknown> }>;
    }>('GET', '/collections/layout');
    expect(info.config.params['vectors']).toEqual({ dense: { size: 512, distance: 'Cosine' } });
    expect(info.config.params['sparse_vectors']).toEqual({ sparse: { modifier: 'idf' } });
    expect(info.config.metadata).toEqual({ engram: { model: 'BAAI/bge-small-zh-v1.5@q8', dimensions: 512 } });
    const schema = info.payload_schema;
    expect(schema['tenantId']).toMatchObject({ data_type: 'keyword', params: { is_tenant: true } });
    for (const field of [
      'kind',
      'scope',
      'ownerId',
      'orgId',
      'status',
      'memoryType',
      'namespace',
      'sessionId',
      'documentId',
      'sourceId',
    ]) {
      expect(schema[field]?.data_type).toBe('keyword');
    }
    expect(schema['evergreen']?.data_type).toBe('bool');
    for (const field of ['occurredAt', 'createdAt', 'expiresAt', 'densePendingSince']) {
      expect(schema[field]).toMatchObject({ data_type: 'integer', params: { range: true } });
    }
  });

  it('recreates payload indexes missing from an interrupted creation', async () => {
    const index = store.index('repair');
    await index.ensureCollection({ model: 'm', dimensions: 4 });
    await rest('DELETE', '/collections/repair/index/namespace?wait=true');
    await index.ensureCollection({ model: 'm', dimensions: 4 });
    const info = await rest<{ payload_schema: Record<string, unknown> }>('GET', '/collections/repair');
    expect(Object.keys(info.payload_schema)).toContain('namespace');
  });

  it('refuses a collection that was not created by Engram', async () => {
    await rest('PUT', '/collections/foreign', { vectors: { dense: { size: 4, distance: 'Cosine' } } });
    const index = store.index('foreign');
    expect(await index.spec()).toBeUndefined();
    await expect(index.ensureCollection({ model: 'm', dimensions: 4 })).rejects.toMatchObject({
      code: Code.FailedPrecondition,
      reason: 'STATE_CONFLICT',
    });
  });

  it('upserts in batches: a large write arrives in several requests, all points kept', async () => {
    const seen: string[] = [];
    const proxy = await startProxy(running().url, (req) => {
      seen.push(`${req.method} ${req.url?.split('?')[0]}`);
      return 'forward';
    });
    const batched = createQdrantStore({ url: proxy.url, upsertBatchSize: 100 });
    try {
      const index = batched.index('batches');
      await index.ensureCollection({ model: 'm', dimensions: 4 });
      seen.length = 0;
      await index.upsert(Array.from({ length: 250 }, (_, i) => unitPoint(`b${i}`, 4, i)));
      expect(seen.filter((s) => s === 'PUT /collections/batches/points')).toHaveLength(3);
      expect(await index.count()).toBe(250);
    } finally {
      await batched.close();
      await proxy.close();
    }
  });

  it('waits for writes by default, not when asked, and searches exactly when configured', async () => {
    const seen: Array<{ url: string; body: string }> = [];
    const proxy = await startProxy(running().url, (req, body) => {
      seen.push({ url: req.url ?? '', body });
      return 'forward';
    });
    const exact = createQdrantStore({ url: proxy.url, exact: true });
    try {
      const index = exact.index('wait-exact');
      await index.ensureCollection({ model: 'm', dimensions: 4 });
      seen.length = 0;
      await index.upsert([unitPoint('w1', 4, 1)]);
      await index.upsert([unitPoint('w2', 4, 2)], { wait: false });
      await index.delete([pointId('MEMORY', 'w2')]);
      await index.searchDense(unitPoint('q', 4, 3).dense!, { tenantId: 't1' }, 3);
      expect(seen.map((s) => s.url)).toEqual([
        '/collections/wait-exact/points?wait=true',
        '/collections/wait-exact/points?wait=false',
        '/collections/wait-exact/points/delete?wait=true',
        '/collections/wait-exact/points/query',
      ]);
      expect(JSON.parse(seen[3]!.body)).toMatchObject({ using: 'dense', limit: 3, params: { exact: true } });
    } finally {
      await exact.close();
      await proxy.close();
    }
  });

  it('sends a batch of searches in one request, lexical-first points without a named dense vector', async () => {
    const seen: Array<{ url: string; body: string }> = [];
    const proxy = await startProxy(running().url, (req, body) => {
      seen.push({ url: req.url ?? '', body });
      return 'forward';
    });
    const batched = createQdrantStore({ url: proxy.url });
    try {
      const index = batched.index('batch-wire');
      await index.ensureCollection({ model: 'm', dimensions: 4 });
      const lexical: Point = {
        id: pointId('MEMORY', 'lex'),
        sparse: { indices: [999], values: [1] },
        payload: basePayload('lex', { densePendingSince: 1_700_000_000_123 }),
      };
      seen.length = 0;
      await index.upsert([unitPoint('full', 4, 1), lexical]);
      const written = (JSON.parse(seen[0]!.body) as { points: Array<{ id: string; vector: object }> }).points;
      expect(Object.keys(written.find((p) => p.id === lexical.id)!.vector)).toEqual(['sparse']);
      expect(Object.keys(written.find((p) => p.id !== lexical.id)!.vector).sort()).toEqual([
        'dense',
        'sparse',
      ]);

      seen.length = 0;
      const answers = await index.searchBatch([
        { dense: unitPoint('q', 4, 3).dense!, filter: { tenantId: 't1' }, limit: 3 },
        { sparse: { indices: [999], values: [1] }, filter: { tenantId: 't1' }, limit: 3 },
        { dense: unitPoint('q', 4, 3).dense!, filter: { tenantId: 't1' }, limit: 0 },
      ]);
      expect(seen.map((s) => s.url)).toEqual(['/collections/batch-wire/points/query/batch']);
      const { searches } = JSON.parse(seen[0]!.body) as { searches: Array<Record<string, unknown>> };
      expect(searches).toHaveLength(2);
      expect(searches[0]).toMatchObject({ using: 'dense', limit: 3, with_vector: false });
      expect(searches[1]).toMatchObject({ using: 'sparse', limit: 3, with_vector: false });
      expect(answers.map((a) => a.map((h) => h.id))).toEqual([[pointId('MEMORY', 'full')], [lexical.id], []]);

      // The ranking's similarities: one distance-matrix request over the asked points, no vectors.
      await index.upsert([unitPoint('other', 4, 2)]);
      seen.length = 0;
      const asked = [pointId('MEMORY', 'full'), pointId('MEMORY', 'other'), lexical.id];
      const sims = await index.similarities(asked);
      expect(seen.map((s) => s.url)).toEqual(['/collections/batch-wire/points/search/matrix/offsets']);
      expect(JSON.parse(seen[0]!.body)).toEqual({
        filter: { must: [{ has_id: asked }] },
        sample: 3,
        limit: 2,
        using: 'dense',
      });
      expect(sims.size).toBe(2);
      expect(sims.has(lexical.id)).toBe(false);
    } finally {
      await batched.close();
      await proxy.close();
    }
  });

  it('adds the densePendingSince index to a collection created before it existed', async () => {
    const index = store.index('pending-index');
    await index.ensureCollection({ model: 'm', dimensions: 4 });
    await rest('DELETE', '/collections/pending-index/index/densePendingSince?wait=true');
    await index.ensureCollection({ model: 'm', dimensions: 4 });
    await index.upsert([
      {
        id: pointId('MEMORY', 'a'),
        sparse: { indices: [1], values: [1] },
        payload: basePayload('a', { densePendingSince: 5 }),
      },
    ]);
    expect((await index.pendingDense(5)).map((p) => p.id)).toEqual([pointId('MEMORY', 'a')]);
  });

  it('retries transient failures (503, 429, reset connections) of idempotent requests', async () => {
    let calls = 0;
    const proxy = await startProxy(running().url, () => {
      calls++;
      // Every request fails twice before it gets through, in three different ways.
      if (calls % 3 === 1) return 503;
      if (calls % 3 === 2) return calls % 2 === 0 ? 429 : 'reset';
      return 'forward';
    });
    const flaky = createQdrantStore({ url: proxy.url, backoffMs: 1, maxAttempts: 3 });
    try {
      const index = flaky.index('flaky');
      await index.ensureCollection({ model: 'm', dimensions: 4 });
      const points = Array.from({ length: 5 }, (_, i) => unitPoint(`f${i}`, 4, i));
      await index.upsert(points);
      expect(await index.count()).toBe(5);
      const hits = await index.searchDense(points[0]!.dense!, { tenantId: 't1' }, 1);
      expect(hits[0]?.id).toBe(points[0]!.id);
    } finally {
      await flaky.close();
      await proxy.close();
    }
  });

  it('reports UNAVAILABLE (qdrant) when the server cannot be reached', async () => {
    const closed = await startProxy(running().url, () => 'forward');
    const url = closed.url;
    await closed.close(); // nothing listens there any more
    const gone = createQdrantStore({ url, backoffMs: 1, maxAttempts: 2 });
    try {
      await expect(gone.index('any').count()).rejects.toMatchObject({
        code: Code.Unavailable,
        reason: 'DEPENDENCY_UNAVAILABLE',
        metadata: { dependency: 'qdrant' },
      });
      await expect(gone.listCollections()).rejects.toMatchObject({ code: Code.Unavailable });
    } finally {
      await gone.close();
    }
  });

  it('reports UNAVAILABLE when retries run out on 5xx answers', async () => {
    const proxy = await startProxy(running().url, () => 502);
    const broken = createQdrantStore({ url: proxy.url, backoffMs: 1, maxAttempts: 2 });
    try {
      await expect(broken.index('any').count()).rejects.toMatchObject({ code: Code.Unavailable });
    } finally {
      await broken.close();
      await proxy.close();
    }
  });

  it('reports NOT_FOUND for operations on a missing collection', async () => {
    await expect(store.index('missing').count()).rejects.toMatchObject({ code: Code.NotFound });
    await expect(store.index('missing').upsert([unitPoint('x', 4, 1)])).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });
});

/**
 * A tiny HTTP proxy in front of Qdrant that can answer with an error status or reset the
 * connection instead of forwarding: failure injection against the real server.
 */
async function startProxy(
  target: string,
  decide: (req: http.IncomingMessage, body: string) => 'forward' | 'reset' | number,
): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const decision = decide(req, Buffer.concat(chunks).toString('utf8'));
      if (decision === 'reset') {
        req.socket.destroy();
        return;
      }
      if (typeof decision === 'number') {
        res.writeHead(decision, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: { error: `injected ${decision}` }, time: 0 }));
        return;
      }
      const body = Buffer.concat(chunks);
      const upstream = http.request(
        `${target}${req.url ?? '/'}`,
        { method: req.method, headers: { ...req.headers, host: new URL(target).host } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => {
          r();
        });
      }),
  };
}
