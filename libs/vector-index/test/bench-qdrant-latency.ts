/**
 * Dense-query latency against the real Qdrant binary: `@qdrant/js-client-rest` 1.18 (fetch/undici)
 * versus the adapter's own transport (node:http, one write per request, uncompressed answers,
 * keep-alive, TCP_NODELAY), plus node:http variants that isolate the cause: the request's headers
 * and body in two writes, and compressed answers (what fetch asks for by default).
 *
 *   node --conditions=@engram/source --import tsx libs/vector-index/test/bench-qdrant-latency.ts [points] [queries]
 *
 * Defaults: 10,000 points of 512 dimensions, 200 measured queries per client (after 20 warm-ups),
 * the clients interleaved in rounds of 20 so that background load hits them alike.
 */
import http from 'node:http';
import { QdrantClient } from '@qdrant/js-client-rest';
import { startQdrant } from '@engram/testing';
import { createQdrantStore, pointId, type Point } from '../src/index.js';
import { QdrantHttp } from '../src/qdrant-http.js';

const POINTS = Number(process.argv[2] ?? 10_000);
const QUERIES = Number(process.argv[3] ?? 200);
const DIMS = 512;
const COLLECTION = 'latency';

function randomUnit(): number[] {
  const v = Array.from({ length: DIMS }, () => Math.random() * 2 - 1);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

function percentile(sortedMs: readonly number[], p: number): number {
  return sortedMs[Math.min(sortedMs.length - 1, Math.floor(p * sortedMs.length))] ?? Number.NaN;
}

const qdrant = await startQdrant();
try {
  const store = createQdrantStore({ url: qdrant.url });
  const index = store.index(COLLECTION);
  await index.ensureCollection({ model: 'bench', dimensions: DIMS });
  const points: Point[] = [];
  for (let i = 0; i < POINTS; i++) {
    points.push({
      id: pointId('MEMORY', `m${i}`),
      dense: randomUnit(),
      sparse: { indices: [i % 1000, 1000 + (i % 37)], values: [1, 0.5] },
      payload: {
        tenantId: 't1',
        kind: 'MEMORY',
        sourceId: `m${i}`,
        scope: i % 3 === 0 ? 'ORG' : 'SELF',
        ownerId: `u${i % 20}`,
        orgId: i % 3 === 0 ? 'o1' : '',
        status: 'ACTIVE',
        createdAt: 1_700_000_000_000 + i,
      },
    });
  }
  const loadStart = performance.now();
  await index.upsert(points);
  // Let the optimizer build the HNSW index before measuring.
  for (;;) {
    const info = (await (await fetch(`${qdrant.url}/collections/${COLLECTION}`)).json()) as {
      result: { status: string; optimizer_status: unknown };
    };
    if (info.result.status === 'green') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  console.log(
    `loaded ${POINTS} points × ${DIMS} dims in ${((performance.now() - loadStart) / 1000).toFixed(1)} s`,
  );

  const filter = { tenantId: 't1' };
  const query = randomUnit();
  const qdrantFilter = { must: [{ key: 'tenantId', match: { value: 't1' } }] };
  const body = {
    query,
    using: 'dense',
    filter: qdrantFilter,
    limit: 10,
    with_payload: true,
    with_vector: false,
  };

  const client = new QdrantClient({ url: qdrant.url, checkCompatibility: false });
  const identityClient = new QdrantClient({
    url: qdrant.url,
    checkCompatibility: false,
    headers: { 'accept-encoding': 'identity' },
  });
  const raw = new QdrantHttp({ url: qdrant.url });
  const agent = new http.Agent({ keepAlive: true, noDelay: true });
  /** node:http with the given Accept-Encoding, the body in the same write as the headers or not. */
  const nodeHttp = (acceptEncoding: string, split: boolean) => () =>
    new Promise<void>((resolve, reject) => {
      const payload = Buffer.from(JSON.stringify(body));
      const req = http.request(
        `${qdrant.url}/collections/${COLLECTION}/points/query`,
        {
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': payload.length,
            'accept-encoding': acceptEncoding,
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            resolve();
          });
        },
      );
      req.on('error', reject);
      if (split) req.flushHeaders(); // headers now, body in a second write
      req.end(payload);
    });

  const clients: Record<string, () => Promise<unknown>> = {
    'js-client-rest 1.18 query()': () => client.query(COLLECTION, body),
    'js-client-rest 1.18, accept-encoding identity': () => identityClient.query(COLLECTION, body),
    'adapter searchDense (QdrantHttp)': () => index.searchDense(query, filter, 10),
    'QdrantHttp raw POST': () => raw.call('POST', `/collections/${COLLECTION}/points/query`, body),
    'node:http identity, headers/body split': nodeHttp('identity', true),
    'node:http one write, gzip/deflate answer': nodeHttp('gzip, deflate', false),
    'node:http one write, br answer': nodeHttp('br', false),
  };
  const times = new Map<string, number[]>(Object.keys(clients).map((k) => [k, []]));
  for (const run of Object.values(clients)) for (let i = 0; i < 20; i++) await run();
  for (let round = 0; round < QUERIES / 20; round++) {
    for (const [name, run] of Object.entries(clients)) {
      for (let i = 0; i < 20; i++) {
        const start = performance.now();
        await run();
        times.get(name)?.push(performance.now() - start);
      }
    }
  }
  console.log(`${QUERIES} dense queries each (limit 10, tenant filter, payload returned):`);
  for (const [name, list] of times) {
    const sortedMs = [...list].sort((a, b) => a - b);
    console.log(
      `  ${name.padEnd(46)} p50 ${percentile(sortedMs, 0.5).toFixed(2)} ms   p99 ${percentile(sortedMs, 0.99).toFixed(2)} ms`,
    );
  }
  raw.close();
  agent.destroy();
  await store.close();
} finally {
  await qdrant.stop();
}
