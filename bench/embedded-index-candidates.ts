/**
 * Measures the candidates for the embedded vector index (issue #4, decision 0006) on one dataset:
 * 100k points with 512-dim normalized vectors, a synthetic BM25-like sparse vector each, and a
 * payload such that ~10k points are visible to the searching principal and 30 match a selective
 * filter. Each candidate is built in one child process and queried in another (so RSS is the
 * serving process only), and every answer is checked against an exact brute-force reference.
 *
 *   node --conditions=@engram/source --import tsx bench/embedded-index-candidates.ts \
 *     [--points 100000] [--dims 512] [--queries 200]
 *     [--candidates typed-array,sqlite-vec,sqlite-vec-partitioned,lancedb]
 *
 * `typed-array` is the adapter itself (`createEmbeddedStore`). `sqlite-vec` (0.1.9) and `lancedb`
 * (0.31.0, with apache-arrow 18.1.0) are not dependencies of the project: install them next to the
 * workspace or in a scratch folder named by `ENGRAM_BENCH_DEPS`, e.g.
 *   mkdir /tmp/cands && cd /tmp/cands && npm init -y && \
 *     npm i --ignore-scripts sqlite-vec@0.1.9 @lancedb/lancedb@0.31.0 apache-arrow@18.1.0
 *   ENGRAM_BENCH_DEPS=/tmp/cands node --conditions=@engram/source --import tsx bench/…
 */

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { seededRandom } from '@engram/testing';
import { createEmbeddedStore, type IndexFilter, type PointPayload } from '@engram/vector-index';

// ---------------------------------------------------------------------------------------------
// The dataset (deterministic: the same seed gives the same points in every process)
// ---------------------------------------------------------------------------------------------

const VOCABULARY = 20_000;
const RARE_SESSION = 'rare';

interface Sparse {
  indices: number[];
  values: number[];
}

interface BenchPoint {
  readonly i: number;
  readonly dense: Float32Array;
  readonly sparse: Sparse;
  readonly payload: PointPayload;
}

function unitVector(random: () => number, dims: number): Float32Array {
  const v = new Float32Array(dims);
  let norm = 0;
  for (let d = 0; d < dims; d += 2) {
    // Box–Muller: two gaussians per pair of uniforms.
    const r = Math.sqrt(-2 * Math.log(random() + 1e-12));
    const theta = 2 * Math.PI * random();
    v[d] = r * Math.cos(theta);
    if (d + 1 < dims) v[d + 1] = r * Math.sin(theta);
  }
  for (let d = 0; d < dims; d++) norm += v[d]! * v[d]!;
  norm = Math.sqrt(norm);
  for (let d = 0; d < dims; d++) v[d]! /= norm;
  return v;
}

/** Zipf-like term draw: low ids are common (like frequent words), high ids rare. */
function sparseVector(random: () => number, terms: number): Sparse {
  const weights = new Map<number, number>();
  while (weights.size < terms) weights.set(Math.floor(VOCABULARY * random() ** 3), 0.2 + random() * 2.3);
  const indices = [...weights.keys()].sort((a, b) => a - b);
  return { indices, values: indices.map((t) => weights.get(t)!) };
}

/**
 * Point i: tenant t0; owner u(i mod 10); every 50th (i mod 50 = 7) is an ORG point of one of five
 * orgs. The principal u0 in org o0 therefore sees 10,000 SELF + 400 ORG points; 30 of its SELF
 * points carry the session `rare`.
 */
function makePoint(i: number, random: () => number, dims: number): BenchPoint {
  const org = i % 50 === 7;
  const j = i / 10;
  const rare = i % 10 === 0 && j % 334 === 5;
  return {
    i,
    dense: unitVector(random, dims),
    sparse: sparseVector(random, 8 + Math.floor(random() * 33)),
    payload: {
      tenantId: 't0',
      kind: (['MEMORY', 'CHUNK', 'ROUND'] as const)[i % 3]!,
      sourceId: String(i),
      scope: org ? 'ORG' : 'SELF',
      ownerId: `u${i % 10}`,
      orgId: org ? `o${Math.floor(i / 50) % 5}` : '',
      status: 'ACTIVE',
      sessionId: rare ? RARE_SESSION : `s${i % 97}`,
      createdAt: 1_700_000_000_000 + i * 1000,
    },
  };
}

function* dataset(points: number, dims: number): Generator<BenchPoint> {
  const random = seededRandom(42);
  for (let i = 0; i < points; i++) yield makePoint(i, random, dims);
}

interface Queries {
  readonly dense: Float32Array[];
  readonly sparse: Sparse[];
}

function queries(count: number, dims: number): Queries {
  const random = seededRandom(7);
  const dense: Float32Array[] = [];
  const sparse: Sparse[] = [];
  for (let q = 0; q < count; q++) {
    dense.push(unitVector(random, dims));
    const s = sparseVector(random, 4);
    sparse.push({ indices: s.indices, values: s.indices.map(() => 1) });
  }
  return { dense, sparse };
}

/** The principal of every query, and the selective variant. */
const VISIBLE: IndexFilter = {
  tenantId: 't0',
  visibleTo: { subject: 'u0', orgIds: ['o0'], platform: false },
};
const SELECTIVE: IndexFilter = { ...VISIBLE, sessionIds: [RARE_SESSION] };

function visible(p: PointPayload, selective: boolean): boolean {
  if (selective && p.sessionId !== RARE_SESSION) return false;
  return (p.scope === 'SELF' && p.ownerId === 'u0') || (p.scope === 'ORG' && p.orgId === 'o0');
}

// ---------------------------------------------------------------------------------------------
// Candidates
// ---------------------------------------------------------------------------------------------

type Which = 'visible' | 'selective';

interface Handle {
  /** Point numbers (i) of the top `k`, best first. */
  dense(q: Float32Array, which: Which, k: number): Promise<number[]>;
  sparse(q: Sparse, which: Which, k: number): Promise<number[]>;
  close(): Promise<void>;
}

interface Candidate {
  build(dir: string, points: number, dims: number): Promise<void>;
  open(dir: string, dims: number): Promise<Handle>;
}

const BATCH = 1000;

function* batches(points: number, dims: number): Generator<BenchPoint[]> {
  let batch: BenchPoint[] = [];
  for (const p of dataset(points, dims)) {
    batch.push(p);
    if (batch.length === BATCH) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

const typedArray: Candidate = {
  async build(dir, points, dims) {
    const store = createEmbeddedStore({ path: dir });
    const index = store.index('bench');
    await index.ensureCollection({ model: 'bench', dimensions: dims });
    for (const batch of batches(points, dims)) {
      await index.upsert(
        batch.map((p) => ({ id: `p${p.i}`, dense: p.dense, sparse: p.sparse, payload: p.payload })),
      );
    }
    await store.close();
  },
  open(dir) {
    const store = createEmbeddedStore({ path: dir });
    const index = store.index('bench');
    const filter = (which: Which) => (which === 'visible' ? VISIBLE : SELECTIVE);
    return Promise.resolve({
      dense: async (q, which, k) =>
        (await index.searchDense(q, filter(which), k)).map((s) => Number(s.payload.sourceId)),
      sparse: async (q, which, k) =>
        (await index.searchSparse(q, filter(which), k)).map((s) => Number(s.payload.sourceId)),
      close: () => store.close(),
    });
  },
};

/** Candidates outside the project's dependencies resolve from ENGRAM_BENCH_DEPS or the workspace. */
const requireOptional = createRequire(
  join(process.env['ENGRAM_BENCH_DEPS'] ?? process.cwd(), 'package.json'),
);
const requireWorkspace = createRequire(import.meta.url);

interface SqliteStatement {
  run(...params: unknown[]): unknown;
  /** Rows as arrays: every statement here is in raw mode. */
  all(...params: unknown[]): unknown[][];
  raw(toggle?: boolean): SqliteStatement;
}
interface SqliteDatabase {
  exec(sql: string): void;
  pragma(sql: string): unknown;
  prepare(sql: string): SqliteStatement;
  transaction(fn: () => void): () => void;
  close(): void;
}
type SqliteConstructor = new (path: string) => SqliteDatabase;

function sqliteVecDatabase(file: string): SqliteDatabase {
  const Database = requireWorkspace('better-sqlite3') as SqliteConstructor;
  const sqliteVec = requireOptional('sqlite-vec') as { load(db: unknown): void };
  const db = new Database(file);
  sqliteVec.load(db);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  return db;
}

/** Visibility as one key, because vec0 pushes down `IN` on a metadata column but not an OR. */
function visKey(p: PointPayload): string {
  return p.scope === 'SELF' ? `S:${p.ownerId}` : p.scope === 'ORG' ? `O:${p.orgId}` : 'P';
}
const VISIBLE_KEYS = ['S:u0', 'O:o0'];

function idf(n: number, df: number): number {
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}

/**
 * sqlite-vec: a vec0 table (cosine) with metadata columns, and a postings table for the sparse
 * side (FTS5's own BM25 cannot take Qdrant-style weights and IDF). `partitioned`: the partition
 * key is tenant + visibility key, and a search runs one KNN per visible partition and merges them;
 * otherwise the partition key is the tenant and visibility is an `IN` on a metadata column.
 */
function sqliteVecCandidate(partitioned: boolean): Candidate {
  const partitionOf = (p: PointPayload) => (partitioned ? `${p.tenantId}|${visKey(p)}` : p.tenantId);
  const visibleIn = `(${VISIBLE_KEYS.map((k) => `'${k}'`).join(', ')})`;
  return {
    build(dir, points, dims) {
      const db = sqliteVecDatabase(join(dir, 'vec.sqlite'));
      db.exec(`
        CREATE VIRTUAL TABLE vec USING vec0(
          pid integer primary key, emb float[${dims}] distance_metric=cosine,
          part text partition key, vis text, sess text, kind text, status text, created integer);
        CREATE TABLE points (pid INTEGER PRIMARY KEY, tenant TEXT, vis TEXT, sess TEXT, kind TEXT, status TEXT, created INTEGER);
        CREATE TABLE postings (term INTEGER, pid INTEGER, w REAL, PRIMARY KEY (term, pid)) WITHOUT ROWID;
        CREATE TABLE df (term INTEGER PRIMARY KEY, n INTEGER);`);
      const vec = db.prepare(
        'INSERT INTO vec (pid, emb, part, vis, sess, kind, status, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      );
      const row = db.prepare('INSERT INTO points VALUES (?, ?, ?, ?, ?, ?, ?)');
      const posting = db.prepare('INSERT INTO postings VALUES (?, ?, ?)');
      for (const batch of batches(points, dims)) {
        db.transaction(() => {
          for (const p of batch) {
            const q = p.payload;
            const meta = [visKey(q), q.sessionId, q.kind, q.status, BigInt(q.createdAt)];
            vec.run(BigInt(p.i), p.dense, partitionOf(q), ...meta);
            row.run(p.i, q.tenantId, ...meta);
            p.sparse.indices.forEach((t, k) => posting.run(t, p.i, p.sparse.values[k]));
          }
        })();
      }
      db.exec('INSERT INTO df SELECT term, count(*) FROM postings GROUP BY term');
      db.close();
      return Promise.resolve();
    },
    open(dir) {
      const db = sqliteVecDatabase(join(dir, 'vec.sqlite'));
      const n = Number(db.prepare('SELECT count(*) FROM points').raw().all()[0]?.[0]);
      const dfOf = db.prepare('SELECT n FROM df WHERE term = ?').raw();
      const knn = (selective: boolean) =>
        db
          .prepare(
            `SELECT pid, distance FROM vec WHERE emb MATCH ? AND k = ? AND ` +
              (partitioned ? 'part = ?' : `part = 't0' AND vis IN ${visibleIn}`) +
              (selective ? ` AND sess = '${RARE_SESSION}'` : ''),
          )
          .raw();
      const knnVisible = knn(false);
      const knnSelective = knn(true);
      const sparseSql = (selective: boolean) =>
        db
          .prepare(
            `WITH q(term, qw) AS (SELECT value ->> 0, value ->> 1 FROM json_each(?))
             SELECT s.pid, sum(q.qw * s.w) AS score FROM q JOIN postings s ON s.term = q.term
             JOIN points p ON p.pid = s.pid
             WHERE p.tenant = 't0' AND p.vis IN ${visibleIn}` +
              (selective ? ` AND p.sess = '${RARE_SESSION}'` : '') +
              ` GROUP BY s.pid ORDER BY score DESC LIMIT ?`,
          )
          .raw();
      const sparseVisible = sparseSql(false);
      const sparseSelective = sparseSql(true);
      const handle: Handle = {
        dense: (q, which, k) => {
          const stmt = which === 'visible' ? knnVisible : knnSelective;
          if (!partitioned) return Promise.resolve(stmt.all(q, k).map((r) => Number(r[0])));
          // One KNN per visible partition, merged by distance.
          const rows = VISIBLE_KEYS.flatMap((key) => stmt.all(q, k, `t0|${key}`));
          rows.sort((a, b) => Number(a[1]) - Number(b[1]));
          return Promise.resolve(rows.slice(0, k).map((r) => Number(r[0])));
        },
        sparse: (q, which, k) => {
          const weighted = q.indices.map((t, j) => {
            const df = dfOf.all(t)[0]?.[0];
            return [t, (q.values[j] ?? 0) * idf(n, typeof df === 'number' ? df : 0)];
          });
          const stmt = which === 'visible' ? sparseVisible : sparseSelective;
          return Promise.resolve(stmt.all(JSON.stringify(weighted), k).map((r) => Number(r[0])));
        },
        close: () => {
          db.close();
          return Promise.resolve();
        },
      };
      return Promise.resolve(handle);
    },
  };
}

interface ArrowColumn {
  get(i: number): unknown;
  toArray(): ArrayLike<number>;
}
interface ArrowTable {
  numRows: number;
  getChild(name: string): ArrowColumn | null;
}
interface LanceQuery {
  where(predicate: string): LanceQuery;
  select(columns: string[]): LanceQuery;
  limit(k: number): LanceQuery;
  distanceType(type: string): LanceQuery;
  toArrow(): Promise<ArrowTable>;
}
interface LanceTable {
  add(rows: Record<string, unknown>[]): Promise<unknown>;
  createIndex(column: string, options?: Record<string, unknown>): Promise<void>;
  optimize(): Promise<unknown>;
  vectorSearch(v: number[]): LanceQuery;
  query(): LanceQuery;
  countRows(): Promise<number>;
}
interface LanceConnection {
  createTable(name: string, rows: Record<string, unknown>[]): Promise<LanceTable>;
  openTable(name: string): Promise<LanceTable>;
  close(): void;
}
interface LanceModule {
  connect: (uri: string) => Promise<LanceConnection>;
  Index: { bitmap: () => unknown; btree: () => unknown };
}

function lance(): LanceModule {
  return requireOptional('@lancedb/lancedb') as LanceModule;
}

const LANCE_VISIBLE = `tenant = 't0' AND vis IN (${VISIBLE_KEYS.map((k) => `'${k}'`).join(', ')})`;

const lancedb: Candidate = {
  async build(dir, points, dims) {
    const { connect, Index } = lance();
    const db = await connect(dir);
    let vec: LanceTable | undefined;
    let postings: LanceTable | undefined;
    for (const batch of batches(points, dims)) {
      const rows = batch.map((p) => ({
        pid: p.i,
        vector: Array.from(p.dense),
        tenant: p.payload.tenantId,
        vis: visKey(p.payload),
        sess: p.payload.sessionId,
        kind: p.payload.kind,
        status: p.payload.status,
        created: p.payload.createdAt,
      }));
      const post = batch.flatMap((p) =>
        p.sparse.indices.map((t, k) => ({ term: t, pid: p.i, w: p.sparse.values[k]! })),
      );
      if (vec === undefined || postings === undefined) {
        vec = await db.createTable('points', rows);
        postings = await db.createTable('postings', post);
      } else {
        await vec.add(rows);
        await postings.add(post);
      }
    }
    await vec!.optimize();
    await postings!.optimize();
    for (const column of ['tenant', 'vis', 'sess'])
      await vec!.createIndex(column, { config: Index.bitmap() });
    await postings!.createIndex('term', { config: Index.btree() });
    db.close();
  },
  async open(dir) {
    const db = await lance().connect(dir);
    const vec = await db.openTable('points');
    const postings = await db.openTable('postings');
    const n = await vec.countRows();
    const where = (which: Which) =>
      which === 'visible' ? LANCE_VISIBLE : `${LANCE_VISIBLE} AND sess = '${RARE_SESSION}'`;
    return {
      dense: async (q, which, k) => {
        const t = await vec
          .vectorSearch(Array.from(q))
          .distanceType('cosine')
          .where(where(which))
          .select(['pid'])
          .limit(k)
          .toArrow();
        return Array.from(t.getChild('pid')!.toArray(), Number);
      },
      // Lance has no weighted sparse vectors: postings in a table with a B-tree on the term, the
      // visible set from the points table, and the IDF-weighted sum in JS.
      sparse: async (q, which, k) => {
        const [hits, allowed] = await Promise.all([
          postings
            .query()
            .where(`term IN (${q.indices.join(', ')})`)
            .select(['term', 'pid', 'w'])
            .toArrow(),
          vec.query().where(where(which)).select(['pid']).limit(1_000_000).toArrow(),
        ]);
        const visibleSet = new Set(Array.from(allowed.getChild('pid')!.toArray(), Number));
        const terms = hits.getChild('term')!.toArray();
        const pids = hits.getChild('pid')!.toArray();
        const ws = hits.getChild('w')!.toArray();
        const df = new Map<number, number>();
        for (let r = 0; r < hits.numRows; r++) df.set(terms[r]!, (df.get(terms[r]!) ?? 0) + 1);
        const scores = new Map<number, number>();
        for (let r = 0; r < hits.numRows; r++) {
          const pid = pids[r]!;
          if (!visibleSet.has(pid)) continue;
          const qw = q.values[q.indices.indexOf(terms[r]!)]! * idf(n, df.get(terms[r]!)!);
          scores.set(pid, (scores.get(pid) ?? 0) + qw * ws[r]!);
        }
        return [...scores.entries()]
          .sort((a, b) => b[1] - a[1])
          .slice(0, k)
          .map(([pid]) => pid);
      },
      close: () => {
        db.close();
        return Promise.resolve();
      },
    };
  },
};

const CANDIDATES: Record<string, Candidate> = {
  'typed-array': typedArray,
  'sqlite-vec': sqliteVecCandidate(false),
  'sqlite-vec-partitioned': sqliteVecCandidate(true),
  lancedb,
};

// ---------------------------------------------------------------------------------------------
// Brute-force reference (the parent process) and agreement
// ---------------------------------------------------------------------------------------------

interface Reference {
  dense: Record<Which, number[][]>;
  sparse: Record<Which, number[][]>;
}

const CHECKED = 20;
const K = 10;

function topK(scores: Map<number, number>, k: number): number[] {
  return [...scores.entries()]
    .sort((a, b) => b[1] - a[1] || a[0] - b[0])
    .slice(0, k)
    .map(([i]) => i);
}

function reference(points: number, dims: number, qs: Queries): Reference {
  const df = new Map<number, number>();
  const dense: Record<Which, Map<number, number>[]> = { visible: [], selective: [] };
  const sparse: Record<Which, Map<number, number>[]> = { visible: [], selective: [] };
  const kept: BenchPoint[] = [];
  for (let q = 0; q < CHECKED; q++) {
    for (const which of ['visible', 'selective'] as const) {
      dense[which].push(new Map());
      sparse[which].push(new Map());
    }
  }
  for (const p of dataset(points, dims)) {
    for (const t of p.sparse.indices) df.set(t, (df.get(t) ?? 0) + 1);
    if (!visible(p.payload, false)) continue;
    kept.push(p);
    for (let q = 0; q < CHECKED; q++) {
      let dot = 0;
      const v = qs.dense[q]!;
      for (let d = 0; d < dims; d++) dot += v[d]! * p.dense[d]!;
      dense.visible[q]!.set(p.i, dot);
      if (visible(p.payload, true)) dense.selective[q]!.set(p.i, dot);
    }
  }
  for (const p of kept) {
    for (let q = 0; q < CHECKED; q++) {
      const s = qs.sparse[q]!;
      const shared = s.indices.flatMap((t, j) => {
        const at = p.sparse.indices.indexOf(t);
        return at < 0 ? [] : [s.values[j]! * idf(points, df.get(t)!) * p.sparse.values[at]!];
      });
      if (shared.length === 0) continue;
      const score = shared.reduce((a, b) => a + b, 0);
      sparse.visible[q]!.set(p.i, score);
      if (visible(p.payload, true)) sparse.selective[q]!.set(p.i, score);
    }
  }
  const cut = (m: Record<Which, Map<number, number>[]>) => ({
    visible: m.visible.map((s) => topK(s, K)),
    selective: m.selective.map((s) => topK(s, K)),
  });
  return { dense: cut(dense), sparse: cut(sparse) };
}

/** Fraction of reference top-k ids the candidate returned (recall@k averaged over checked queries). */
function recall(expected: number[][], actual: number[][]): number {
  let hit = 0;
  let total = 0;
  expected.forEach((e, q) => {
    const got = new Set(actual[q]);
    total += e.length;
    hit += e.filter((i) => got.has(i)).length;
  });
  return total === 0 ? 1 : hit / total;
}

// ---------------------------------------------------------------------------------------------
// Child processes: build, then serve
// ---------------------------------------------------------------------------------------------

interface BuildResult {
  ok: true;
  insertSeconds: number;
  peakRssMiB: number;
}
interface ServeResult {
  ok: true;
  openMs: number;
  dense: Latency;
  selective: Latency;
  sparse: Latency;
  sparseSelective: Latency;
  rssMiB: number;
  peakRssMiB: number;
  answers: { dense: Record<Which, number[][]>; sparse: Record<Which, number[][]> };
}
interface Failure {
  ok: false;
  error: string;
}
interface Latency {
  p50: number;
  p99: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function time(count: number, run: (q: number) => Promise<unknown>): Promise<Latency> {
  for (let q = 0; q < Math.min(10, count); q++) await run(q);
  const ms: number[] = [];
  for (let q = 0; q < count; q++) {
    const start = performance.now();
    await run(q);
    ms.push(performance.now() - start);
  }
  ms.sort((a, b) => a - b);
  return { p50: percentile(ms, 50), p99: percentile(ms, 99) };
}

const mib = (bytes: number) => Math.round(bytes / 2 ** 20);

async function child(
  mode: 'build' | 'serve',
  name: string,
  dir: string,
  points: number,
  dims: number,
  count: number,
) {
  const candidate = CANDIDATES[name]!;
  if (mode === 'build') {
    const start = performance.now();
    await candidate.build(dir, points, dims);
    const result: BuildResult = {
      ok: true,
      insertSeconds: (performance.now() - start) / 1000,
      peakRssMiB: mib(process.resourceUsage().maxRSS * 1024),
    };
    return result;
  }
  const qs = queries(count, dims);
  const start = performance.now();
  const handle = await candidate.open(dir, dims);
  await handle.dense(qs.dense[0]!, 'visible', K);
  const openMs = performance.now() - start;
  const answers: ServeResult['answers'] = {
    dense: { visible: [], selective: [] },
    sparse: { visible: [], selective: [] },
  };
  for (let q = 0; q < CHECKED; q++) {
    for (const which of ['visible', 'selective'] as const) {
      answers.dense[which].push(await handle.dense(qs.dense[q]!, which, K));
      answers.sparse[which].push(await handle.sparse(qs.sparse[q]!, which, K));
    }
  }
  const result: ServeResult = {
    ok: true,
    openMs,
    dense: await time(count, (q) => handle.dense(qs.dense[q]!, 'visible', K)),
    selective: await time(count, (q) => handle.dense(qs.dense[q]!, 'selective', K)),
    sparse: await time(count, (q) => handle.sparse(qs.sparse[q]!, 'visible', K)),
    sparseSelective: await time(count, (q) => handle.sparse(qs.sparse[q]!, 'selective', K)),
    rssMiB: mib(process.memoryUsage().rss),
    peakRssMiB: mib(process.resourceUsage().maxRSS * 1024),
    answers,
  };
  await handle.close();
  return result;
}

function runChild(args: string[]): Promise<BuildResult | ServeResult | Failure> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    proc.on('close', (code, signal) => {
      const line = out.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(line) as BuildResult | ServeResult | Failure);
      } catch {
        resolve({ ok: false, error: `exited ${code ?? signal}: ${out.slice(-500)}` });
      }
    });
  });
}

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '–');
const lat = (l: Latency) => `${fmt(l.p50)} / ${fmt(l.p99)}`;

async function main() {
  const { values } = parseArgs({
    options: {
      points: { type: 'string', default: '100000' },
      dims: { type: 'string', default: '512' },
      queries: { type: 'string', default: '200' },
      candidates: { type: 'string', default: 'typed-array,sqlite-vec,sqlite-vec-partitioned,lancedb' },
      child: { type: 'string' },
      dir: { type: 'string' },
      candidate: { type: 'string' },
    },
  });
  const points = Number(values.points);
  const dims = Number(values.dims);
  const count = Number(values.queries);
  if (values.child === 'build' || values.child === 'serve') {
    try {
      const result = await child(values.child, values.candidate!, values.dir!, points, dims, count);
      process.stdout.write(`\n${JSON.stringify(result)}\n`);
    } catch (error) {
      process.stdout.write(`\n${JSON.stringify({ ok: false, error: String(error) } satisfies Failure)}\n`);
    }
    return;
  }
  const names = values.candidates.split(',');
  const root = mkdtempSync(join(tmpdir(), 'engram-bench-'));
  const qs = queries(count, dims);
  console.log(`# Embedded vector index candidates: ${points} points, ${dims} dims, ${count} queries, k=${K}`);
  console.log(`# node ${process.version}; computing the brute-force reference…`);
  const ref = reference(points, dims, qs);
  const rows: string[] = [];
  for (const name of names) {
    if (CANDIDATES[name] === undefined) throw new Error(`unknown candidate ${name}`);
    const dir = join(root, name);
    mkdirSync(dir);
    const common = ['--points', values.points, '--dims', values.dims, '--queries', values.queries];
    const args = [...common, '--candidate', name, '--dir', dir];
    console.log(`# ${name}: building…`);
    const built = await runChild([...args, '--child', 'build']);
    if (!built.ok) {
      rows.push(`| ${name} | failed: ${built.error.replace(/\s+/g, ' ').slice(0, 200)} |||||||||`);
      continue;
    }
    console.log(`# ${name}: serving…`);
    const served = await runChild([...args, '--child', 'serve']);
    if (!served.ok || !('openMs' in served)) {
      rows.push(`| ${name} | failed: ${served.ok ? '?' : served.error.slice(0, 200)} |||||||||`);
      continue;
    }
    const b = built as BuildResult;
    const r = [
      recall(ref.dense.visible, served.answers.dense.visible),
      recall(ref.dense.selective, served.answers.dense.selective),
      recall(ref.sparse.visible, served.answers.sparse.visible),
      recall(ref.sparse.selective, served.answers.sparse.selective),
    ];
    rows.push(
      `| ${name} | ${fmt(b.insertSeconds)} s | ${lat(served.dense)} | ${lat(served.selective)} | ` +
        `${lat(served.sparse)} | ${lat(served.sparseSelective)} | ${served.rssMiB} (${served.peakRssMiB}) | ` +
        `${fmt(served.openMs, 0)} | ${r.map((x) => fmt(x, 2)).join(' / ')} |`,
    );
  }
  console.log('');
  console.log(
    '| candidate | insert 100k | dense 10k-visible p50/p99 ms | dense 30-visible p50/p99 ms | ' +
      'sparse 10k-visible p50/p99 ms | sparse 30-visible p50/p99 ms | RSS MiB (peak) | open ms | recall@10 dense/sel/sparse/sel |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
  rmSync(root, { recursive: true, force: true });
}

await main();
