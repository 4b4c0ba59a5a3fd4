/**
 * How a Search's index round trips cost against a real Qdrant, by request shape and transport
 * (decision 0044):
 *
 *   npm run bench:qdrant-transport [-- --points 10000 --users 100 --calls 300 --rounds 2
 *     --out bench/out/qdrant-transport.json]
 *
 * One collection of `--points` random unit vectors of 896 dimensions (the bilingual embedder's
 * width) with sparse terms, spread evenly over `--users` owners and the three kinds. Each call is
 * what one Search asks for (three kinds, `limit` 40 = top-k 10 × candidate multiple 4):
 *
 * - `rest-hits`: the previous Search: the dense queries return their hits' vectors
 *   (`with_vector: [dense]`), then one `POST /points` reads the lexical-only candidates' dense and
 *   sparse vectors with their payloads.
 * - `rest-vectors`: the batch asks for no vectors, then one `POST /points` reads the dense vectors
 *   of the merged candidates alone (the best 40 of each signal), without payloads.
 * - `rest-matrix`: the batch asks for no vectors, then `similarities` asks Qdrant's
 *   distance-matrix API for the merged candidates' pairwise scores (no vector crosses).
 * - `rest-union`: the current Search: `rest-matrix` with one dense and one sparse query over the
 *   union of the kinds' filters (`anyOf`) instead of one per kind.
 * - `grpc-hits`: `rest-hits`' batch over Qdrant's gRPC API with `@qdrant/js-client-grpc`
 *   (protobuf-es over connect-node, no compression), each hit's vector decoded to a Float32Array.
 *
 * Per call: the client process's CPU time (what retrieval's event loop pays), Qdrant's CPU time
 * (from /proc), and the wall time's p50/p95. The shapes take turns by rounds on the same server,
 * once the collection is green (its optimizer done).
 */
import { mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { create } from '@bufbuild/protobuf';
import * as Q from '@qdrant/js-client-grpc';
import { percentile, startQdrant } from '@engram/testing';
import {
  createQdrantStore,
  pointId,
  toQdrantFilter,
  type IndexFilter,
  type ItemKind,
  type Point,
  type ScoredPoint,
  type SearchQuery,
} from '@engram/vector-index';
import { gitCommit, loadAverage, machine } from './lib/machine.js';
import { waitQdrantGreen } from './load/stack.js';

const { values: args } = parseArgs({
  options: {
    points: { type: 'string', default: '10000' },
    users: { type: 'string', default: '100' },
    calls: { type: 'string', default: '300' },
    rounds: { type: 'string', default: '2' },
    out: { type: 'string', default: 'bench/out/qdrant-transport.json' },
  },
});
const count = (name: string, value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: a positive integer`);
  return n;
};
const POINTS = count('points', args.points);
const USERS = count('users', args.users);
const CALLS = count('calls', args.calls);
const ROUNDS = count('rounds', args.rounds);
const DIMS = 896;
const LIMIT = 40;
const KINDS: ItemKind[] = ['MEMORY', 'CHUNK', 'ROUND'];
const COLLECTION = 'transport';

let seed = 42;
const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
const unit = (): number[] => {
  const v = Array.from({ length: DIMS }, () => random() - 0.5);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
};
const termsOf = (i: number) => ({ indices: [i % 500, 500 + (i % 37)], values: [1, 0.5] });

const qdrant = await startQdrant();
const store = createQdrantStore({ url: qdrant.url });
const index = store.index(COLLECTION);
await index.ensureCollection({ model: 'bench', dimensions: DIMS });
for (let i = 0; i < POINTS; i += 256) {
  const batch: Point[] = [];
  for (let j = i; j < Math.min(POINTS, i + 256); j++) {
    const kind = KINDS[j % 3]!;
    batch.push({
      id: pointId(kind, `s${j}`),
      dense: unit(),
      sparse: termsOf(j),
      payload: {
        tenantId: 't',
        kind,
        sourceId: `s${j}`,
        scope: 'SELF',
        ownerId: `u${j % USERS}`,
        orgId: '',
        status: 'ACTIVE',
        createdAt: 1_700_000_000_000 + j,
      },
    });
  }
  await index.upsert(batch);
}

// Measure the collection as it serves, not while its optimizer builds the HNSW graph.
const settled = await waitQdrantGreen(qdrant.url, 600_000, (line) => {
  console.log(line);
});
console.log(`collection green after ${(settled.waitedMs / 1000).toFixed(1)} s`);

const filtersOf = (user: number): IndexFilter[] =>
  KINDS.map((kind) => ({
    tenantId: 't',
    kinds: [kind],
    statuses: ['ACTIVE'],
    visibleTo: { subject: `u${user}`, orgIds: [], platform: false },
  }));
const queriesOf = (user: number): SearchQuery[] => {
  const dense = unit();
  const sparse = termsOf(user * 7);
  const filters = filtersOf(user);
  return [
    ...filters.map((filter) => ({ dense, filter, limit: LIMIT })),
    ...filters.map((filter) => ({ sparse, filter, limit: LIMIT })),
  ];
};
/** The best `LIMIT` of each signal merged, as Search merges them (search.ts `indexCandidates`). */
const merged = (answers: readonly ScoredPoint[][]): string[] => {
  const best = (lists: readonly ScoredPoint[][]) =>
    lists
      .flat()
      .sort((a, b) => b.score - a.score)
      .slice(0, LIMIT);
  return [...new Set([...best(answers.slice(0, 3)), ...best(answers.slice(3))].map((p) => p.id))];
};

// The previous request shape, sent the way QdrantHttp sends it (one write, keep-alive, identity).
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
const rest = (path: string, body: unknown): Promise<unknown> =>
  new Promise((resolve, reject) => {
    const payload = Buffer.from(JSON.stringify(body));
    const req = http.request(`${qdrant.url}${path}`, {
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json',
        'content-length': payload.length,
        'accept-encoding': 'identity',
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { result: unknown }).result);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });

interface RestHit {
  id: string;
  score: number;
  payload: Record<string, unknown>;
  vector?: { dense?: number[] };
}
async function restHits(user: number): Promise<number> {
  const queries = queriesOf(user);
  const searches = queries.map((q) => ({
    ...('dense' in q ? { query: q.dense, using: 'dense' } : { query: q.sparse, using: 'sparse' }),
    filter: toQdrantFilter(q.filter as IndexFilter),
    limit: q.limit,
    with_payload: true,
    with_vector: 'dense' in q ? ['dense'] : false,
  }));
  const answers = (await rest(`/collections/${COLLECTION}/points/query/batch`, { searches })) as {
    points: RestHit[];
  }[];
  const vectors = new Map<string, Float32Array>();
  const lists = answers.map((a) =>
    a.points.map((p) => {
      if (p.vector?.dense !== undefined) vectors.set(p.id, Float32Array.from(p.vector.dense));
      return { id: p.id, score: p.score, payload: p.payload } as unknown as ScoredPoint;
    }),
  );
  const missing = merged(lists).filter((id) => !vectors.has(id));
  if (missing.length > 0) {
    const records = (await rest(`/collections/${COLLECTION}/points`, {
      ids: missing,
      with_payload: true,
      with_vector: ['dense', 'sparse'],
    })) as RestHit[];
    for (const r of records)
      if (r.vector?.dense !== undefined) vectors.set(r.id, Float32Array.from(r.vector.dense));
  }
  return vectors.size;
}

async function restVectors(user: number): Promise<number> {
  const answers = await index.searchBatch(queriesOf(user));
  const records = (await rest(`/collections/${COLLECTION}/points`, {
    ids: merged(answers),
    with_payload: false,
    with_vector: ['dense'],
  })) as RestHit[];
  let vectors = 0;
  for (const r of records)
    if (r.vector?.dense !== undefined && Float32Array.from(r.vector.dense).length === DIMS) vectors++;
  return vectors;
}

/** One query per kind and signal, then the adapter's `similarities` (Qdrant's distance-matrix API). */
async function restMatrix(user: number): Promise<number> {
  const answers = await index.searchBatch(queriesOf(user));
  return (await index.similarities(merged(answers))).size;
}

/** The current Search: one dense and one sparse query over the union of the kinds' filters, then the matrix. */
async function restUnion(user: number): Promise<number> {
  const [dense, , , sparse] = queriesOf(user);
  const filter = { anyOf: filtersOf(user) };
  const answers = await index.searchBatch([
    { ...dense!, filter },
    { ...sparse!, filter },
  ] as SearchQuery[]);
  return (await index.similarities([...new Set(answers.flatMap((a) => a.map((p) => p.id)))])).size;
}

const grpc = new Q.QdrantClient({
  url: `http://127.0.0.1:${qdrant.grpcPort}`,
  compression: false,
  checkCompatibility: false,
}).api('points');
const keyword = (key: string, value: string) =>
  create(Q.ConditionSchema, {
    conditionOneOf: {
      case: 'field',
      value: create(Q.FieldConditionSchema, {
        key,
        match: create(Q.MatchSchema, { matchValue: { case: 'keyword', value } }),
      }),
    },
  });
const nested = (filter: Q.Filter) =>
  create(Q.ConditionSchema, { conditionOneOf: { case: 'filter', value: filter } });
const grpcFilter = (kind: string, user: number) =>
  create(Q.FilterSchema, {
    must: [
      keyword('tenantId', 't'),
      keyword('kind', kind),
      keyword('status', 'ACTIVE'),
      nested(
        create(Q.FilterSchema, {
          should: [
            nested(
              create(Q.FilterSchema, { must: [keyword('scope', 'SELF'), keyword('ownerId', `u${user}`)] }),
            ),
          ],
        }),
      ),
    ],
  });
async function grpcHits(user: number): Promise<number> {
  const dense = unit();
  const sparse = termsOf(user * 7);
  const payload = create(Q.WithPayloadSelectorSchema, { selectorOptions: { case: 'enable', value: true } });
  const withDense = create(Q.WithVectorsSelectorSchema, {
    selectorOptions: { case: 'include', value: create(Q.VectorsSelectorSchema, { names: ['dense'] }) },
  });
  const query = (input: Q.VectorInput, using: string, kind: string, vectors: boolean) =>
    create(Q.QueryPointsSchema, {
      collectionName: COLLECTION,
      using,
      query: create(Q.QuerySchema, { variant: { case: 'nearest', value: input } }),
      filter: grpcFilter(kind, user),
      limit: BigInt(LIMIT),
      withPayload: payload,
      ...(vectors ? { withVectors: withDense } : {}),
    });
  const denseInput = create(Q.VectorInputSchema, {
    variant: { case: 'dense', value: create(Q.DenseVectorSchema, { data: dense }) },
  });
  const sparseInput = create(Q.VectorInputSchema, {
    variant: { case: 'sparse', value: create(Q.SparseVectorSchema, sparse) },
  });
  const response = await grpc.queryBatch({
    collectionName: COLLECTION,
    queryPoints: [
      ...KINDS.map((k) => query(denseInput, 'dense', k, true)),
      ...KINDS.map((k) => query(sparseInput, 'sparse', k, false)),
    ],
  });
  let vectors = 0;
  for (const batch of response.result) {
    for (const point of batch.result) {
      const options = point.vectors?.vectorsOptions;
      if (options?.case !== 'vectors') continue;
      const out = options.value.vectors['dense'];
      if (out === undefined) continue;
      // Qdrant 1.16 still answers in the deprecated flat `data` field, not the `dense` case.
      // eslint-disable-next-line @typescript-eslint/no-deprecated -- what this server version sends
      const data = out.vector.case === 'dense' ? out.vector.value.data : out.data;
      if (Float32Array.from(data).length === DIMS) vectors++;
    }
  }
  return vectors;
}

/** Qdrant's CPU time in ms (utime + stime of the process whose cwd is its storage directory). */
const qdrantPid = (() => {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (readlinkSync(`/proc/${pid}/cwd`) === qdrant.dir) return pid;
    } catch {
      // a process that ended or is not ours
    }
  }
  throw new Error('the Qdrant process was not found');
})();
const ticksMs = 1000 / 100; // USER_HZ
const qdrantCpuMs = () => {
  const fields = readFileSync(`/proc/${qdrantPid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * ticksMs;
};

const SHAPES = {
  'rest-hits': restHits,
  'rest-vectors': restVectors,
  'rest-matrix': restMatrix,
  'rest-union': restUnion,
  'grpc-hits': grpcHits,
} as const;
type Shape = keyof typeof SHAPES;
const samples = new Map<
  Shape,
  { wall: number[]; cpu: number; qdrant: number; vectors: number; calls: number }
>();
for (const shape of Object.keys(SHAPES) as Shape[]) {
  for (let i = 0; i < 20; i++) await SHAPES[shape](i % USERS); // warm-up
  samples.set(shape, { wall: [], cpu: 0, qdrant: 0, vectors: 0, calls: 0 });
}
for (let round = 0; round < ROUNDS; round++) {
  for (const shape of Object.keys(SHAPES) as Shape[]) {
    const s = samples.get(shape)!;
    const cpu0 = process.cpuUsage();
    const q0 = qdrantCpuMs();
    for (let i = 0; i < CALLS; i++) {
      const started = performance.now();
      s.vectors += await SHAPES[shape]((round * CALLS + i) % USERS);
      s.wall.push(performance.now() - started);
    }
    const cpu = process.cpuUsage(cpu0);
    s.cpu += (cpu.user + cpu.system) / 1000;
    s.qdrant += qdrantCpuMs() - q0;
    s.calls += CALLS;
  }
}
await store.close();
await qdrant.stop();

const results = [...samples].map(([shape, s]) => {
  const wall = [...s.wall].sort((a, b) => a - b);
  return {
    shape,
    calls: s.calls,
    vectorsPerCall: s.vectors / s.calls,
    clientCpuMsPerCall: s.cpu / s.calls,
    qdrantCpuMsPerCall: s.qdrant / s.calls,
    wallP50Ms: percentile(wall, 50),
    wallP95Ms: percentile(wall, 95),
  };
});
console.log(`${POINTS} points of ${DIMS} dimensions, ${USERS} users, ${ROUNDS} × ${CALLS} calls per shape`);
console.log('shape        points/call   client CPU ms  Qdrant CPU ms  wall p50  wall p95');
for (const r of results) {
  console.log(
    `${r.shape.padEnd(12)} ${r.vectorsPerCall.toFixed(1).padStart(12)} ${r.clientCpuMsPerCall.toFixed(2).padStart(14)} ${r.qdrantCpuMsPerCall.toFixed(2).padStart(14)} ${r.wallP50Ms.toFixed(2).padStart(9)} ${r.wallP95Ms.toFixed(2).padStart(9)}`,
  );
}
mkdirSync(dirname(args.out), { recursive: true });
writeFileSync(
  args.out,
  JSON.stringify(
    {
      commit: gitCommit(),
      machine: machine(),
      loadAverage: loadAverage(),
      points: POINTS,
      users: USERS,
      results,
    },
    null,
    2,
  ),
);
console.log(`wrote ${args.out}`);
