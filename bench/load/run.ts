/**
 * Sustained-load benchmark (issues #11 and #19): a bounded load generator against the multi-process
 * stack at a realistic size.
 *
 *   npm run bench:load -- [--items 100000] [--users 1000] [--orgs 10] [--seed-dir /work/bench-seed]
 *     [--only search | --mix search=0.55,context=0.2,append=0.2,ingest=0.05]
 *     [--clients 32] [--duration-s 60] [--rate R [--arrivals poisson|fixed] [--max-outstanding 1024]]
 *     [--max-requests 200000] [--store mysql|sqlite] [--vectors qdrant|embedded] [--warmup-s 5]
 *     [--sample-ms 1000] [--timeout-ms 10000] [--seed-parallel 8] [--drain-timeout-min 240]
 *     [--data ../shared/bench-data] [--log-level info] [--seed 42] [--out bench/out/load.json]
 *     [--profile retrieval,…]   (V8 CPU profiles of those services, in <out dir>/profiles; slows them)
 *     [--service-env KEY=VALUE …]   (extra environment of the four services: a setting under test)
 *     [--qdrant-settle-min 30]   (before the load, wait up to this long for Qdrant's collections to be green)
 *
 * It starts the four service processes itself (bench/load/stack.ts: free loopback ports, MariaDB or
 * SQLite, Qdrant or the embedded index) and seeds --items searchable items over --users users in
 * --orgs orgs through the real APIs (bench/load/seed.ts, content from LoCoMo and MADial-Bench zh by
 * path, bench/load/corpus.ts): per user ≈ 60 % conversation rounds (AppendMessages), 30 % document
 * chunks (IngestDocument), 10 % memories (CreateMemory), plus the memories governance's offline
 * extractors derive from the conversations (no chat model is configured); ORG-scoped documents and
 * memories in every org. Everything is embedded and indexed by retrieval's own indexer; seeding ends
 * when the outbox is drained and `engram_index_dense_pending` (when present) is 0. At 100k items
 * this takes long: with `--seed-dir DIR` the MariaDB database, Qdrant's storage and a manifest
 * (parameters, counts, timings) stay in DIR, and a later run with the same DIR and the same
 * --items/--users/--orgs/--seed/--store/--vectors skips seeding after checking the counts (a run with
 * other parameters refuses). The mixed workload adds to the state (rounds, documents), never removes.
 *
 * Then the load, after a warm-up that is not recorded:
 * - closed loop (default): --clients clients, each on its own HTTP/2 connections, back to back;
 * - open loop (--rate R): R arrivals per second (Poisson gaps by default), each call with its own
 *   deadline, at most --max-outstanding in flight, over --clients connections — for "twice the
 *   sustainable rate"; the report splits admitted (OK) from refused (RESOURCE_EXHAUSTED) calls.
 * Each call is one RPC drawn from the mix (bench/load/workload.ts). The default mixed ratio is
 * Search 55 %, BuildContext 20 %, AppendMessages 20 %, IngestDocument 5 % (a ≈ 3-chunk document,
 * not waiting for the index). Search runs as a seeded user drawn at random, with a query text that
 * never repeats within the run (LoCoMo questions and the user's own turns in English and Chinese
 * phrasings); AppendMessages and BuildContext use one session per client of a seeded user.
 * It stops at the end of --duration-s or after --max-requests calls; a watchdog aborts a run that
 * overstays by a minute. The services are stopped at the end, on Ctrl-C and on errors (a --seed-dir
 * state is kept).
 *
 * It reports per RPC: calls, successful calls per second, latency p50/p95/p99/max (nearest rank,
 * client wall time), errors by gRPC code (and ErrorInfo reason); with --rate the offered rate and
 * admitted/refused latency; the indexer lag sampled every --sample-ms from retrieval's metrics
 * (`engram_index_lag_seconds`, `engram_outbox_oldest_age_seconds`, outbox depth, dense pending:
 * p50/p99/max over the measured window); per process (the four services, Qdrant, MariaDB, the
 * generator) RSS and CPU (whole process and main thread); the server-side means of each RPC; the
 * load average; and the "Done when" checks of issue #19 that apply, with PASS/MISS: search-only
 * (≥ 150 Search/s, p99 ≤ 200 ms, 0 errors, flat memory), mixed (0 errors, lag p99 ≤ 2 s, every
 * RPC's p99), --rate (admitted p99 ≤ 300 ms, refused < 20 ms).
 */
import { setMaxListeners } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { mintToken } from '@engram/runtime';
import { loadCorpus, planUsers, QueryPool, type UserPlan } from './corpus.js';
import {
  admissionReport,
  checkMixed,
  checkOverload,
  checkTarget,
  cpuPercent,
  distribution,
  gaugeValue,
  histogramTotals,
  memoryVerdict,
  onlyMix,
  parseMix,
  positiveInt,
  RPCS,
  seedCountProblems,
  seedParamDifferences,
  summarise,
  table,
  type CallRecord,
  type MemoryVerdict,
  type Mix,
  type SeedParams,
  type TargetLine,
} from './report.js';
import {
  indexState,
  paramsPath,
  readManifest,
  seedJournal,
  seedUsers,
  slotSessions,
  waitDrained,
  writeManifest,
  type Auth,
  type SeedResult,
} from './seed.js';
import {
  cpuTicks,
  machineTicks,
  schedStat,
  repoRoot,
  rssMib,
  SERVICES,
  parseServiceEnv,
  startStack,
  waitQdrantGreen,
  type Service,
  type Stack,
  type StoreKind,
  type VectorKind,
} from './stack.js';
import { closedLoop, connection, openLoop, type SearchTally, type Slot, type Workload } from './workload.js';

const { values: args } = parseArgs({
  options: {
    items: { type: 'string', default: '100000' },
    users: { type: 'string', default: '1000' },
    orgs: { type: 'string', default: '10' },
    'seed-dir': { type: 'string' },
    'seed-parallel': { type: 'string', default: '8' },
    'drain-timeout-min': { type: 'string', default: '240' },
    'qdrant-settle-min': { type: 'string', default: '30' },
    'service-env': { type: 'string', multiple: true, default: [] },
    data: { type: 'string', default: '../shared/bench-data' },
    clients: { type: 'string', default: '32' },
    'duration-s': { type: 'string', default: '60' },
    'max-requests': { type: 'string', default: '200000' },
    mix: { type: 'string', default: 'search=0.55,context=0.2,append=0.2,ingest=0.05' },
    only: { type: 'string' },
    rate: { type: 'string' },
    arrivals: { type: 'string', default: 'poisson' },
    'max-outstanding': { type: 'string', default: '1024' },
    out: { type: 'string', default: 'bench/out/load.json' },
    store: { type: 'string', default: 'mysql' },
    vectors: { type: 'string', default: 'qdrant' },
    'warmup-s': { type: 'string', default: '5' },
    'sample-ms': { type: 'string', default: '1000' },
    'timeout-ms': { type: 'string', default: '10000' },
    'log-level': { type: 'string', default: 'info' },
    seed: { type: 'string', default: '42' },
    profile: { type: 'string' },
  },
});

const items = positiveInt('items', args.items, 100_000);
const users = positiveInt('users', args.users, 1000);
const orgs = positiveInt('orgs', args.orgs, 10);
const seedParallel = positiveInt('seed-parallel', args['seed-parallel'], 8);
const drainTimeoutMin = positiveInt('drain-timeout-min', args['drain-timeout-min'], 240);
const qdrantSettleMin = positiveInt('qdrant-settle-min', args['qdrant-settle-min'], 30);
/** Extra environment of the four services (`--service-env KEY=VALUE`, repeated): a setting under test. */
const serviceEnv = parseServiceEnv(args['service-env']);
const clients = positiveInt('clients', args.clients, 32);
const durationS = positiveInt('duration-s', args['duration-s'], 60);
const maxRequests = positiveInt('max-requests', args['max-requests'], 200_000);
const warmupS = args['warmup-s'] === '0' ? 0 : positiveInt('warmup-s', args['warmup-s'], 5);
const sampleMs = positiveInt('sample-ms', args['sample-ms'], 1000);
const timeoutMs = positiveInt('timeout-ms', args['timeout-ms'], 10_000);
const seedValue = positiveInt('seed', args.seed, 42);
const rate = args.rate === undefined ? undefined : positiveInt('rate', args.rate, 1);
const maxOutstanding = positiveInt('max-outstanding', args['max-outstanding'], 1024);
const mix: Mix = args.only !== undefined ? onlyMix(args.only) : parseMix(args.mix);
if (args.store !== 'mysql' && args.store !== 'sqlite') throw new Error('--store must be mysql or sqlite');
if (args.vectors !== 'qdrant' && args.vectors !== 'embedded')
  throw new Error('--vectors must be qdrant or embedded');
if (args.arrivals !== 'poisson' && args.arrivals !== 'fixed')
  throw new Error('--arrivals must be poisson or fixed');
if (clients > 512) throw new Error('--clients: at most 512');
if (durationS > 3600) throw new Error('--duration-s: at most 3600');
if (users > items) throw new Error('--users: at most --items (each user gets at least one item)');
if (orgs > users) throw new Error('--orgs: at most --users');
const arrivals = args.arrivals;
const storeKind: StoreKind = args.store;
const vectorKind: VectorKind = args.vectors;
const outPath = resolve(repoRoot, args.out);
const seedDir = args['seed-dir'] === undefined ? undefined : resolve(args['seed-dir']);
const dataDir = resolve(repoRoot, args.data);
const profile = (args.profile ?? '')
  .split(',')
  .map((x) => x.trim())
  .filter((x) => x !== '');
for (const name of profile)
  if (!(SERVICES as readonly string[]).includes(name))
    throw new Error(`--profile: unknown service "${name}" (expected ${SERVICES.join(', ')})`);
/** What a seeded state depends on; `corpus` is bumped when corpus.ts/seed.ts change what they write. */
const seedParams = { corpus: 1, items, users, orgs, seed: seedValue, store: storeKind, vectors: vectorKind };

const log = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round1 = (x: number) => Math.round(x * 10) / 10;
const loads = () => loadavg().map((x) => Math.round(x * 100) / 100);

// ---- Process sampling ----

interface Sample {
  /** ms since the generator started. */
  readonly t: number;
  readonly phase: Phase;
  /** process → RSS MiB. */
  readonly rss: Record<string, number>;
  /** process → CPU ticks (whole process), and of its main thread. */
  readonly ticks: Record<string, number>;
  readonly mainTicks: Record<string, number>;
  /** process → main thread's ns on a CPU and ns runnable but waiting for one. */
  readonly mainSched: Record<string, { runNs: number; waitNs: number }>;
  readonly machine: { busy: number; total: number };
}
type Phase = 'seed' | 'idle' | 'warmup' | 'load' | 'drain';

/** Retrieval's index gauges at one sample tick. */
interface LagSample {
  readonly t: number;
  readonly phase: Phase;
  readonly lagS: number | undefined;
  readonly oldestAgeS: number | undefined;
  readonly outboxDepth: number | undefined;
  readonly densePending: number | undefined;
}

const t0 = performance.now();
let phase: Phase = 'seed';
const samples: Sample[] = [];
const lagSamples: LagSample[] = [];

function sample(pids: Record<string, number>): Sample {
  const rss: Record<string, number> = {};
  const ticks: Record<string, number> = {};
  const mainTicks: Record<string, number> = {};
  const mainSched: Record<string, { runNs: number; waitNs: number }> = {};
  for (const [name, pid] of Object.entries(pids)) {
    const r = rssMib(pid);
    if (r !== undefined) rss[name] = round1(r);
    const c = cpuTicks(pid);
    if (c !== undefined) ticks[name] = c;
    const m = cpuTicks(pid, pid);
    if (m !== undefined) mainTicks[name] = m;
    const sched = schedStat(pid, pid);
    if (sched !== undefined) mainSched[name] = sched;
  }
  return {
    t: Math.round(performance.now() - t0),
    phase,
    rss,
    ticks,
    mainTicks,
    mainSched,
    machine: machineTicks(),
  };
}

/** Prometheus text of a service's metrics endpoint ('' when unavailable or slower than `timeoutMs`). */
async function scrape(metricsUrl: string | undefined, timeoutMs = 5_000): Promise<string> {
  if (metricsUrl === undefined) return '';
  const url = metricsUrl.endsWith('/metrics') ? metricsUrl : `${metricsUrl.replace(/\/$/, '')}/metrics`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    return await response.text();
  } catch {
    return '';
  }
}

let lagScrapeInFlight = false;

/** One lag sample; skipped while the previous scrape is still out (a starved retrieval answers slowly). */
async function sampleLag(metricsUrl: string | undefined): Promise<void> {
  if (lagScrapeInFlight) return;
  lagScrapeInFlight = true;
  const at = phase;
  const t = Math.round(performance.now() - t0);
  const text = await scrape(metricsUrl, 30_000).finally(() => {
    lagScrapeInFlight = false;
  });
  if (text === '') return;
  lagSamples.push({
    t,
    phase: at,
    lagS: gaugeValue(text, 'engram_index_lag_seconds'),
    oldestAgeS: gaugeValue(text, 'engram_outbox_oldest_age_seconds'),
    outboxDepth: gaugeValue(text, 'engram_outbox_depth'),
    densePending: gaugeValue(text, 'engram_index_dense_pending'),
  });
}

/** Server-side means between two scrapes: `rpc method` and `embedding` → { count, meanMs }. */
function serverSide(before: string, after: string): Record<string, { count: number; meanMs: number }> {
  const out: Record<string, { count: number; meanMs: number }> = {};
  for (const [metric, key] of [
    ['engram_rpc_duration_seconds', 'rpc'],
    ['engram_embedding_batch_duration_seconds', 'embedding batch'],
  ] as const) {
    const a = histogramTotals(before, metric);
    const b = histogramTotals(after, metric);
    for (const [labels, end] of Object.entries(b)) {
      const start = a[labels] ?? { sum: 0, count: 0 };
      const count = end.count - start.count;
      if (count <= 0) continue;
      const method = /method="([^"]*)"/.exec(labels)?.[1];
      const code = /code="([^"]*)"/.exec(labels)?.[1];
      const outcome = /outcome="([^"]*)"/.exec(labels)?.[1];
      const name =
        key === 'rpc' ? `${method ?? '?'} ${code ?? ''}`.trim() : `embedding batch ${outcome ?? ''}`.trim();
      out[name] = { count, meanMs: round1(((end.sum - start.sum) / count) * 1000) };
    }
  }
  return out;
}

/**
 * The --seed-dir decision before anything starts: reuse (a manifest with the same parameters),
 * resume (an interrupted seed with the same parameters), seed (an empty dir, or none), or refuse
 * (other parameters, or state nobody can account for).
 */
function checkSeedDir(): 'reuse' | 'resume' | 'seed' {
  if (seedDir === undefined) return 'seed';
  const refuse = (what: string, differences: string[]) =>
    new Error(
      `--seed-dir ${seedDir} ${what} with other parameters; refusing to use it:\n  ${differences.join('\n  ')}\n` +
        'Run with the parameters it was seeded with, or choose another (or an empty) --seed-dir.',
    );
  const manifest = readManifest(seedDir);
  if (manifest !== undefined) {
    const differences = seedParamDifferences(manifest.params, seedParams);
    if (differences.length > 0) throw refuse('was seeded', differences);
    return 'reuse';
  }
  if (existsSync(paramsPath(seedDir))) {
    const stored = JSON.parse(readFileSync(paramsPath(seedDir), 'utf8')) as SeedParams;
    const differences = seedParamDifferences(stored, seedParams);
    if (differences.length > 0) throw refuse('holds an unfinished seed', differences);
    return 'resume';
  }
  if (['database', 'qdrant', 'data'].some((f) => existsSync(join(seedDir, f))))
    throw new Error(
      `--seed-dir ${seedDir} holds state but neither manifest.json nor params.json: delete it (and the database named in ${join(seedDir, 'database')}) or choose another`,
    );
  return 'seed';
}

let interrupted = false;

// eslint-disable-next-line max-lines-per-function -- a benchmark script read top to bottom: its phases run in the order they are reported and share the run's state.
async function main(): Promise<void> {
  const loadAtStart = loads();
  const mode =
    rate === undefined
      ? `closed loop, ${clients} clients`
      : `open loop, ${rate}/s ${arrivals} over ${clients} connections (≤ ${maxOutstanding} outstanding)`;
  log(
    `bench:load — ${items} items / ${users} users / ${orgs} orgs; ${mode}, ${durationS} s (+${warmupS} s warm-up), ≤ ${maxRequests} requests, ` +
      `mix ${JSON.stringify(mix)}, store ${storeKind}, vectors ${vectorKind}${seedDir !== undefined ? `, seed dir ${seedDir}` : ''}; load average ${loadAtStart.join(' / ')}`,
  );
  const seedMode = checkSeedDir();
  const corpus = loadCorpus(dataDir);
  const plans = planUsers({ items, users, orgs, corpus });
  mkdirSync(dirname(outPath), { recursive: true });
  if (seedDir !== undefined) {
    mkdirSync(seedDir, { recursive: true });
    if (seedMode === 'seed') writeFileSync(paramsPath(seedDir), `${JSON.stringify(seedParams, null, 2)}\n`);
  }
  const startedAt = new Date().toISOString();
  const stackStart = performance.now();
  log('starting the four services…');
  let stack: Stack | undefined;
  const abort = new AbortController();
  setMaxListeners(4 * Math.max(clients, maxOutstanding) + 10, abort.signal); // every in-flight call listens to it
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    log(`\n${signal}: stopping the load and the services…`);
    abort.abort(new Error(signal));
    // Still starting: startStack cleans up after itself once it returns; main then stops it.
    if (stack !== undefined) void stack.stop().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let sampler: NodeJS.Timeout | undefined;
  let watchdog: NodeJS.Timeout | undefined;
  let qdrantSettle: Awaited<ReturnType<typeof waitQdrantGreen>> | undefined;
  try {
    stack = await startStack({
      store: storeKind,
      vectors: vectorKind,
      logLevel: args['log-level'],
      logDir: dirname(outPath),
      profile: profile as Service[],
      serviceEnv,
      ...(seedDir !== undefined ? { persistDir: seedDir } : {}),
    });
    if (interrupted) return;
    const s = stack;
    log(
      `  up in ${Math.round((performance.now() - stackStart) / 1000)} s: ${SERVICES.map((n) => `${n} ${s.services[n].url} (pid ${s.services[n].pid})`).join(', ')}; ` +
        `store ${s.storeTarget}; vectors ${s.qdrantUrl ?? 'embedded (retrieval)'}`,
    );
    const pids: Record<string, number> = {
      ...Object.fromEntries(SERVICES.map((n) => [n, s.services[n].pid])),
      generator: process.pid,
      ...(s.qdrantPid !== undefined ? { qdrant: s.qdrantPid } : {}),
      ...(s.mysqlPid !== undefined ? { mariadb: s.mysqlPid } : {}),
    };
    const retrievalMetrics = s.services.retrieval.metricsUrl;
    sampler = setInterval(() => {
      samples.push(sample(pids));
      void sampleLag(retrievalMetrics);
    }, sampleMs);
    samples.push(sample(pids));

    const key = { algorithm: 'HS256' as const, secret: new TextEncoder().encode(s.secret) };
    const mint = (subject: string, claims: { roles?: ('admin' | 'service')[]; orgIds?: string[] }) =>
      mintToken({ subject, tenantId: 'bench', ...claims }, key, { expiresIn: '12h' }).then((token): Auth => ({
        headers: { authorization: `Bearer ${token}` },
      }));
    const tokens = await Promise.all(plans.map((p) => mint(p.subject, { orgIds: [p.org] })));
    const authOf = (plan: UserPlan) => tokens[plan.index]!;
    const admin = await mint('load-admin', { roles: ['admin'] });
    const transportTo = (url: string) => createGrpcTransport({ baseUrl: url });
    const retrievalTransport = transportTo(s.services.retrieval.url);

    // ---- Seed, or reuse ----
    let seeded: SeedResult;
    let reused = false;
    if (seedMode === 'reuse') {
      if (!s.reused) throw new Error(`${seedDir}: a manifest but no stored database or index`);
      const manifest = readManifest(seedDir!)!;
      log(
        `reusing the seed in ${seedDir} (${manifest.seed.items} items, seeded ${manifest.createdAt}); checking the counts…`,
      );
      await waitDrained(retrievalTransport, admin, () => scrape(retrievalMetrics, 60_000), {
        timeoutMs: drainTimeoutMin * 60_000,
        log,
      });
      const now = (await indexState(retrievalTransport, admin)).counts;
      const recorded = Object.fromEntries(Object.entries(manifest.seed.counts).map(([k, c]) => [k, c.rows]));
      const problems = seedCountProblems(recorded, now);
      if (problems.length > 0)
        throw new Error(`the state in ${seedDir} does not match its manifest:\n  ${problems.join('\n  ')}`);
      log(
        `  counts ok: ${Object.entries(now)
          .map(([k, c]) => `${k} ${c.rows}/${c.points ?? '?'}`)
          .join(', ')}`,
      );
      seeded = manifest.seed;
      reused = true;
    } else {
      log(
        `seeding ${items} items over ${users} users (${plans[0]!.rounds} rounds, ≈ ${plans[0]!.chunks} chunks, ${plans[0]!.memories} memories each + extracted ones), ${seedParallel} users at a time…`,
      );
      seeded = await seedUsers(
        {
          ingestion: transportTo(s.services.ingestion.url),
          retrieval: retrievalTransport,
          governance: transportTo(s.services.governance.url),
        },
        corpus,
        plans,
        {
          authOf,
          admin,
          parallel: storeKind === 'sqlite' ? 1 : seedParallel, // several SQLite writers at once: "database is locked"
          scrapeRetrieval: () => scrape(retrievalMetrics, 60_000),
          drainTimeoutMs: drainTimeoutMin * 60_000,
          log,
          ...(seedDir !== undefined ? { journal: seedJournal(seedDir) } : {}),
        },
      );
      if (seedDir !== undefined)
        writeManifest(seedDir, {
          version: 1,
          params: seedParams,
          createdAt: new Date().toISOString(),
          seed: seeded,
          store: s.storeTarget,
          vectors: s.qdrantUrl === undefined ? 'embedded' : 'qdrant',
        });
    }
    log(
      `  ${reused ? 'seeded earlier' : 'seeded'} in ${Math.round(seeded.ms / 1000)} s (writes ${Math.round(seeded.writeMs / 1000)} s): ${seeded.items} searchable items ` +
        `(${Object.entries(seeded.counts)
          .map(([k, c]) => `${k} ${c.rows}`)
          .join(', ')}), ${seeded.itemsPerSecond} items/s; ` +
        `${seeded.messages} messages, ${seeded.documents} documents, ${seeded.createdMemories} memories created; retries ${JSON.stringify(seeded.retries)}`,
    );
    if (seeded.items < items)
      log(
        `  note: ${seeded.items} items, fewer than the ${items} asked (the chunk count per document is an estimate)`,
      );
    const slotPlans = Array.from({ length: clients }, (_, c) => plans[(c * 37) % plans.length]!);
    const slotRetries: Record<string, number> = {};
    const sessionNames = await slotSessions(
      transportTo(s.services.ingestion.url),
      slotPlans,
      authOf,
      slotRetries,
    );
    const slots: Slot[] = slotPlans.map((plan, c) => ({
      plan,
      auth: authOf(plan),
      session: sessionNames[c]!,
      appended: 0,
    }));
    if (s.qdrantUrl !== undefined) {
      qdrantSettle = await waitQdrantGreen(s.qdrantUrl, qdrantSettleMin * 60_000, log);
      log(
        `Qdrant: ${qdrantSettle.green ? 'green' : 'NOT green (measuring anyway)'} after ${Math.round(qdrantSettle.waitedMs / 1000)} s ` +
          `(${qdrantSettle.collections.map((c) => `${c.status}, ${c.segments ?? '?'} segments`).join('; ')})`,
      );
    }
    phase = 'idle';
    await sleep(Math.max(2 * sampleMs, 2000)); // an idle sample or two after seeding
    const loadBeforeRun = loads();

    // ---- Load ----
    const connections = Array.from({ length: clients }, () =>
      connection({
        retrieval: transportTo(s.services.retrieval.url),
        ingestion: transportTo(s.services.ingestion.url),
        context: transportTo(s.services.context.url),
      }),
    );
    const records: CallRecord[] = [];
    const searchTally: SearchTally = { responses: 0, results: 0, serverElapsedMs: 0, candidates: {} };
    /** ok completions per second of the measured window, per RPC. */
    const perSecond: Record<string, number[]> = {};
    const warmupEnd = performance.now() + warmupS * 1000;
    const loadEnd = warmupEnd + durationS * 1000;
    let measuredStart = warmupEnd;
    let lastCompletion = warmupEnd;
    const before: Record<string, string> = {};
    const pool = new QueryPool(corpus);
    const workload: Workload = {
      mix,
      timeoutMs,
      signal: abort.signal,
      corpus,
      plans,
      authOf,
      pool,
      slots,
      connections,
      seed: seedValue,
      searchTally,
      warmupEnd,
      loadEnd,
      maxRequests,
      record: (record, end) => {
        records.push(record);
        lastCompletion = Math.max(lastCompletion, end);
        if (record.outcome === 'OK') {
          const second = Math.floor((end - measuredStart) / 1000);
          const series = (perSecond[record.rpc] ??= []);
          while (series.length <= second) series.push(0);
          series[second]!++;
        }
      },
    };
    watchdog = setTimeout(
      () => {
        log('watchdog: the run overstayed its duration by 60 s; aborting');
        abort.abort(new Error('watchdog'));
      },
      (warmupS + durationS + 60) * 1000,
    );

    log(
      `load: ${mode}, warm-up ${warmupS} s, then ${durationS} s measured (load average ${loadBeforeRun.join(' / ')})…`,
    );
    phase = 'warmup';
    const running =
      rate === undefined
        ? closedLoop(workload, clients).then((r) => ({ ...r, shed: 0 }))
        : openLoop(workload, { rate, arrivals, maxOutstanding });
    await sleep(Math.max(0, warmupEnd - performance.now()));
    // The measured window starts here: scrape the server-side counters and mark the samples.
    measuredStart = performance.now();
    phase = 'load';
    samples.push(sample(pids));
    await Promise.all(
      SERVICES.map(async (n) => {
        before[n] = await scrape(s.services[n].metricsUrl);
      }),
    );
    const progress = setInterval(() => {
      const elapsed = (performance.now() - measuredStart) / 1000;
      const ok = records.filter((r) => r.outcome === 'OK').length;
      log(
        `  ${Math.round(elapsed)} s: ${records.length} calls, ${ok} ok, ${records.length - ok} errors, ${round1(ok / elapsed)} ok/s`,
      );
    }, 10_000);
    const { issued, warmupCalls, shed } = await running;
    clearInterval(progress);
    const windowMs = lastCompletion - measuredStart;
    samples.push(sample(pids));
    phase = 'drain';
    const after: Record<string, string> = {};
    await Promise.all(
      SERVICES.map(async (n) => {
        after[n] = await scrape(s.services[n].metricsUrl);
      }),
    );
    clearTimeout(watchdog);
    const loadAfterRun = loads();
    await sleep(Math.max(2 * sampleMs, 2000)); // idle samples after the load
    clearInterval(sampler);
    samples.push(sample(pids));

    // ---- Report ----
    const report = summarise(records, windowMs);
    const loadSamples = samples.filter((x) => x.phase === 'load');
    const idleSamples = samples.filter((x) => x.phase === 'idle');
    const drainSamples = samples.filter((x) => x.phase === 'drain');
    const names = Object.keys(pids);
    const memory: Record<string, MemoryVerdict | undefined> = {};
    const processes: Record<string, unknown> = {};
    const first = loadSamples[0]!;
    const last = loadSamples.at(-1)!;
    const seconds = (last.t - first.t) / 1000;
    for (const name of names) {
      const series = loadSamples.map((x) => x.rss[name]).filter((x): x is number => x !== undefined);
      memory[name] = memoryVerdict(series);
      const tick = (x: Sample, k: 'ticks' | 'mainTicks') => x[k][name];
      const cpu =
        tick(first, 'ticks') !== undefined && tick(last, 'ticks') !== undefined
          ? cpuPercent(tick(first, 'ticks')!, tick(last, 'ticks')!, seconds)
          : NaN;
      const mainCpu =
        tick(first, 'mainTicks') !== undefined && tick(last, 'mainTicks') !== undefined
          ? cpuPercent(tick(first, 'mainTicks')!, tick(last, 'mainTicks')!, seconds)
          : NaN;
      // Busiest 5-sample stretch of the main thread (saturation shows as ~100 %).
      let peakMain = NaN;
      for (let i = 5; i < loadSamples.length; i++) {
        const a = loadSamples[i - 5]!.mainTicks[name];
        const b = loadSamples[i]!.mainTicks[name];
        if (a === undefined || b === undefined) continue;
        const v = cpuPercent(a, b, (loadSamples[i]!.t - loadSamples[i - 5]!.t) / 1000);
        if (!(v <= peakMain)) peakMain = v;
      }
      const sa = first.mainSched[name];
      const sb = last.mainSched[name];
      const mainRunQueueWaitPercent =
        sa !== undefined && sb !== undefined ? round1(((sb.waitNs - sa.waitNs) / 1e9 / seconds) * 100) : NaN;
      processes[name] = {
        pid: pids[name],
        mainRunQueueWaitPercent,
        rssIdleBeforeMib: idleSamples.at(-1)?.rss[name],
        rssMib: memory[name],
        rssAfterMib: drainSamples.at(-1)?.rss[name],
        cpuPercent: cpu,
        mainThreadCpuPercent: mainCpu,
        mainThreadPeak5sCpuPercent: peakMain,
      };
    }
    const machineCpu = round1(
      ((last.machine.busy - first.machine.busy) / Math.max(1, last.machine.total - first.machine.total)) *
        100 *
        cpus().length,
    );
    const server: Record<string, unknown> = {};
    for (const n of SERVICES) server[n] = serverSide(before[n] ?? '', after[n] ?? '');
    const rates = Object.fromEntries(
      Object.entries(perSecond).map(([rpc, series]) => {
        const full = series.slice(0, Math.floor(windowMs / 1000)); // whole seconds only
        const sorted = [...full].sort((a, b) => a - b);
        return [
          rpc,
          {
            min: sorted[0] ?? 0,
            median: sorted[Math.floor(sorted.length / 2)] ?? 0,
            max: sorted.at(-1) ?? 0,
            series,
          },
        ];
      }),
    );
    // Flat memory is asked of the stack: the four services and Qdrant (not the generator, nor the
    // machine-wide MariaDB server that other work shares).
    const stackMemory = Object.fromEntries(
      Object.entries(memory).filter(([name]) => name !== 'generator' && name !== 'mariadb'),
    );
    const lagWindow = lagSamples.filter((x) => x.phase === 'load');
    const lag = {
      indexLagS: distribution(lagWindow.map((x) => x.lagS ?? NaN)),
      outboxOldestAgeS: distribution(lagWindow.map((x) => x.oldestAgeS ?? NaN)),
      outboxDepth: distribution(lagWindow.map((x) => x.outboxDepth ?? NaN)),
      densePending: distribution(lagWindow.map((x) => x.densePending ?? NaN)),
    };
    const admission = rate === undefined ? undefined : admissionReport(records, windowMs);
    const mixRpcs = RPCS.filter((r) => (mix[r] ?? 0) > 0);
    const searchOnly = mixRpcs.length === 1 && mixRpcs[0] === 'search';
    let targetName: string;
    let target: TargetLine[];
    if (admission !== undefined) {
      targetName = `issue #19, twice the sustainable rate (meaningful with --rate at 2× the closed-loop rate)`;
      target = checkOverload(admission);
    } else if (searchOnly) {
      targetName = 'issue #19 search-only (meaningful with --only search --clients 32 at 100k items)';
      target = checkTarget(report, stackMemory);
    } else {
      targetName = 'issue #19 mixed workload at its sustainable rate';
      target = checkMixed(report, lag.indexLagS, mixRpcs);
    }

    // ---- Print ----
    log('');
    log(
      `measured window ${round1(windowMs / 1000)} s, ${records.length} calls (${warmupCalls} warm-up calls not counted); ` +
        `load average ${loadBeforeRun.join(' / ')} before, ${loadAfterRun.join(' / ')} after; machine CPU ${machineCpu} % of ${cpus().length * 100} %`,
    );
    log('');
    log(
      table(
        ['rpc', 'calls', 'ok', 'errors', 'ok/s', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'mean ms'],
        Object.entries(report).map(([rpc, r]) => [
          rpc,
          String(r.calls),
          String(r.ok),
          String(r.errors),
          String(r.okPerSecond),
          String(r.latencyMs.p50),
          String(r.latencyMs.p95),
          String(r.latencyMs.p99),
          String(r.latencyMs.max),
          String(r.latencyMs.mean),
        ]),
      ),
    );
    const errors = report['all']?.errorsByCode ?? {};
    log('');
    log(`errors by code: ${Object.keys(errors).length === 0 ? 'none' : JSON.stringify(errors)}`);
    if (admission !== undefined) {
      log('');
      log(
        table(
          [
            'rpc',
            'offered',
            'offered/s',
            'admitted',
            'adm/s',
            'adm p50',
            'adm p95',
            'adm p99',
            'adm max',
            'refused',
            'ref p50',
            'ref p99',
            'ref max',
            'other',
          ],
          Object.entries(admission).map(([rpc, a]) => [
            rpc,
            ...[a.offered, a.offeredPerSecond, a.admitted.n, a.admitted.perSecond]
              .concat([a.admitted.p50, a.admitted.p95, a.admitted.p99, a.admitted.max])
              .concat([a.refused.n, a.refused.p50, a.refused.p99, a.refused.max])
              .map(String),
            JSON.stringify(a.otherErrors),
          ]),
        ),
      );
      log(`(ms; refused = RESOURCE_EXHAUSTED; ${shed} arrivals not sent: over --max-outstanding)`);
    }
    log(
      `indexer over the window (${lagWindow.length} samples): lag p50 ${lag.indexLagS.p50} / p99 ${lag.indexLagS.p99} / max ${lag.indexLagS.max} s; ` +
        `oldest outbox row p50 ${lag.outboxOldestAgeS.p50} / p99 ${lag.outboxOldestAgeS.p99} / max ${lag.outboxOldestAgeS.max} s; ` +
        `outbox depth p50 ${lag.outboxDepth.p50} / max ${lag.outboxDepth.max}` +
        (lag.densePending.n > 0
          ? `; dense pending p50 ${lag.densePending.p50} / max ${lag.densePending.max}`
          : ''),
    );
    log(`query texts: ${pool.size} distinct, none repeated (${pool.collisions} re-draws)`);
    for (const [rpc, r] of Object.entries(rates))
      log(`${rpc} ok/s per second: min ${r.min}, median ${r.median}, max ${r.max}`);
    log('');
    log(
      table(
        [
          'process',
          'RSS idle',
          'first',
          'last',
          'start',
          'end',
          'peak',
          'growth',
          'flat',
          'CPU %',
          'main thr %',
          'main peak 5 s',
          'main runq wait %',
        ],
        names.map((name) => {
          const p = processes[name] as {
            rssIdleBeforeMib?: number;
            rssMib?: MemoryVerdict;
            cpuPercent: number;
            mainThreadCpuPercent: number;
            mainThreadPeak5sCpuPercent: number;
            mainRunQueueWaitPercent: number;
          };
          const m = p.rssMib;
          return [
            name,
            String(p.rssIdleBeforeMib ?? '–'),
            String(m?.firstMib ?? '–'),
            String(m?.lastMib ?? '–'),
            String(m?.startMib ?? '–'),
            String(m?.endMib ?? '–'),
            String(m?.peakMib ?? '–'),
            m === undefined ? '–' : `${m.growthMib >= 0 ? '+' : ''}${m.growthMib}`,
            m === undefined ? '–' : m.flat ? 'yes' : 'NO',
            String(p.cpuPercent),
            String(p.mainThreadCpuPercent),
            String(p.mainThreadPeak5sCpuPercent),
            String(p.mainRunQueueWaitPercent),
          ];
        }),
      ),
    );
    log(
      `(RSS in MiB; CPU in % of one core over the measured window, ${cpus().length} cores = ${cpus().length * 100} %; ` +
        'start/end: medians of the first/last quarter of the window; ' +
        'main runq wait: share of the window the main thread was runnable but waiting for a CPU)',
    );
    log('');
    log('server-side means over the measured window (Prometheus histograms):');
    for (const n of SERVICES) {
      const entries = Object.entries(server[n] as Record<string, { count: number; meanMs: number }>);
      if (entries.length > 0)
        log(`  ${n}: ${entries.map(([k, v]) => `${k} ×${v.count} ${v.meanMs} ms`).join('; ')}`);
    }
    const perSearch = (x: number) => round1(x / Math.max(1, searchTally.responses));
    const searchSummary =
      searchTally.responses === 0
        ? undefined
        : {
            responses: searchTally.responses,
            meanCandidates: Object.fromEntries(
              Object.entries(searchTally.candidates).map(([k, v]) => [k, perSearch(v)]),
            ),
            meanResults: perSearch(searchTally.results),
            meanServerElapsedMs: perSearch(searchTally.serverElapsedMs),
          };
    if (searchSummary !== undefined)
      log(
        `  Search responses (means): ${Object.entries(searchSummary.meanCandidates)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}; ` +
          `${searchSummary.meanResults} results, server elapsed ${searchSummary.meanServerElapsedMs} ms`,
      );
    if (target.length > 0) {
      log('');
      log(`target (${targetName}):`);
      for (const line of target)
        log(
          `  ${line.pass ? 'PASS' : 'MISS'}  ${line.what}: ${line.measured} (target ${line.target}; ${line.margin})`,
        );
      log(`  overall: ${target.every((l) => l.pass) ? 'PASS' : 'MISS'}`);
    }

    const result = {
      startedAt,
      command: `npm run bench:load -- ${process.argv.slice(2).join(' ')}`.trim(),
      machine: {
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model,
        memoryGib: round1(totalmem() / 2 ** 30),
        os: `${platform()} ${release()}`,
        node: process.version,
      },
      loadAverage: { atStart: loadAtStart, beforeRun: loadBeforeRun, afterRun: loadAfterRun },
      options: {
        items,
        users,
        orgs,
        seedDir,
        rate,
        arrivals: rate === undefined ? undefined : arrivals,
        maxOutstanding: rate === undefined ? undefined : maxOutstanding,
        clients,
        durationS,
        warmupS,
        maxRequests,
        mix,
        store: storeKind,
        vectors: vectorKind,
        timeoutMs,
        seed: seedValue,
        serviceEnv,
      },
      stack: {
        services: Object.fromEntries(
          SERVICES.map((n) => [n, { url: s.services[n].url, pid: s.services[n].pid }]),
        ),
        store: s.storeTarget,
        vectors: s.qdrantUrl ?? 'embedded',
        qdrantSettle,
      },
      seed: { ...seeded, reused },
      queries: { distinct: pool.size, redraws: pool.collisions },
      windowMs: Math.round(windowMs),
      warmupCalls,
      maxRequestsReached: issued >= maxRequests,
      shedByGenerator: shed,
      report,
      admission,
      indexer: { ...lag, samples: lagSamples },
      perSecond: rates,
      processes,
      machineCpuPercent: machineCpu,
      serverSide: server,
      search: searchSummary,
      target:
        target.length > 0
          ? { name: targetName, lines: target, pass: target.every((l) => l.pass) }
          : undefined,
      samples,
    };
    writeFileSync(outPath, `${JSON.stringify(result, null, 2)}\n`);
    log(`\nwrote ${outPath} (service logs beside it: load-<service>.log)`);
  } finally {
    if (sampler !== undefined) clearInterval(sampler);
    if (watchdog !== undefined) clearTimeout(watchdog);
    log('stopping the services…');
    await stack?.stop(); // idempotent
  }
}

main().then(
  () => process.exit(interrupted ? 130 : 0),
  (error: unknown) => {
    process.stderr.write(
      `bench:load failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
