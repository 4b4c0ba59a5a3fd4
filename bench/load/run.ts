/**
 * Sustained-load benchmark (issue #11): a bounded load generator against the multi-process stack.
 *
 *   npm run bench:load -- [--clients 32] [--duration-s 60] [--max-requests 200000]
 *     [--mix search=0.6,append=0.2,context=0.2 | --only search] [--out bench/out/load.json]
 *     [--store mysql|sqlite] [--vectors qdrant|embedded] [--users 8] [--warmup-s 5]
 *     [--sample-ms 1000] [--timeout-ms 10000] [--log-level info] [--seed 42]
 *     [--profile retrieval,…]   (V8 CPU profiles of those services, in <out dir>/profiles; slows them)
 *
 * It starts the four service processes itself (bench/load/stack.ts: free loopback ports, a fresh
 * MariaDB database or a shared SQLite file, Qdrant or the embedded index), seeds a few users
 * (bench/load/seed.ts), then runs N concurrent clients for a fixed time: each client has its own
 * HTTP/2 connection (gRPC), acts as one seeded user, and calls back to back (closed loop) an RPC
 * drawn from the mix — Search (retrieval), AppendMessages of one user/assistant round into its own
 * session (ingestion), BuildContext on that session with a 2,000-token budget (context). Calls of
 * the warm-up are not recorded. It stops by itself: at the end of the duration, or after
 * --max-requests calls, whichever comes first; every call has a deadline (--timeout-ms), and a
 * watchdog aborts the run if it overstays by a minute. The services are stopped at the end, on
 * Ctrl-C and on errors.
 *
 * It reports per RPC: calls, successful calls per second, latency p50/p95/p99/max (nearest rank,
 * successful calls, client wall time), errors by gRPC code (and ErrorInfo reason); per process
 * (the four services, Qdrant, MariaDB, the generator itself): RSS sampled every --sample-ms (before
 * the load, at the start and end of the measured window, peak) and CPU (% of one core, the whole
 * process and its main thread); the server-side mean of each RPC and of query embedding from the
 * services' Prometheus endpoints; the load average; and the issue #11 target (≥ 150 Search/s with
 * 32 clients for 60 s, zero errors, p99 ≤ 200 ms, flat memory) with PASS/MISS and by how much.
 */
import { setMaxListeners } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Code, ConnectError, createClient, type Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { ContextService } from '@engram/contracts/context';
import { ErrorInfoSchema } from '@engram/contracts/grpc';
import { IngestionService, MessageRole } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { mintToken } from '@engram/runtime';
import { seededRandom } from '@engram/testing';
import {
  checkTarget,
  cpuPercent,
  histogramTotals,
  memoryVerdict,
  onlyMix,
  parseMix,
  pickRpc,
  positiveInt,
  summarise,
  table,
  type CallRecord,
  type MemoryVerdict,
  type Mix,
  type Rpc,
} from './report.js';
import { clientSessions, queryText, seed, TOPICS, type Auth } from './seed.js';
import {
  cpuTicks,
  machineTicks,
  schedStat,
  repoRoot,
  rssMib,
  SERVICES,
  startStack,
  type Service,
  type Stack,
  type StoreKind,
  type VectorKind,
} from './stack.js';

const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: '32' },
    'duration-s': { type: 'string', default: '60' },
    'max-requests': { type: 'string', default: '200000' },
    mix: { type: 'string', default: 'search=0.6,append=0.2,context=0.2' },
    only: { type: 'string' },
    out: { type: 'string', default: 'bench/out/load.json' },
    store: { type: 'string', default: 'mysql' },
    vectors: { type: 'string', default: 'qdrant' },
    users: { type: 'string', default: '8' },
    'warmup-s': { type: 'string', default: '5' },
    'sample-ms': { type: 'string', default: '1000' },
    'timeout-ms': { type: 'string', default: '10000' },
    'log-level': { type: 'string', default: 'info' },
    seed: { type: 'string', default: '42' },
    profile: { type: 'string' },
  },
});

const clients = positiveInt('clients', args.clients, 32);
const durationS = positiveInt('duration-s', args['duration-s'], 60);
const maxRequests = positiveInt('max-requests', args['max-requests'], 200_000);
const users = positiveInt('users', args.users, 8);
const warmupS = args['warmup-s'] === '0' ? 0 : positiveInt('warmup-s', args['warmup-s'], 5);
const sampleMs = positiveInt('sample-ms', args['sample-ms'], 1000);
const timeoutMs = positiveInt('timeout-ms', args['timeout-ms'], 10_000);
const seedValue = positiveInt('seed', args.seed, 42);
const mix: Mix = args.only !== undefined ? onlyMix(args.only) : parseMix(args.mix);
if (args.store !== 'mysql' && args.store !== 'sqlite') throw new Error('--store must be mysql or sqlite');
if (args.vectors !== 'qdrant' && args.vectors !== 'embedded')
  throw new Error('--vectors must be qdrant or embedded');
if (clients > 512) throw new Error('--clients: at most 512');
if (durationS > 3600) throw new Error('--duration-s: at most 3600');
const storeKind: StoreKind = args.store;
const vectorKind: VectorKind = args.vectors;
const outPath = resolve(repoRoot, args.out);
const profile = (args.profile ?? '')
  .split(',')
  .map((x) => x.trim())
  .filter((x) => x !== '');
for (const name of profile)
  if (!(SERVICES as readonly string[]).includes(name))
    throw new Error(`--profile: unknown service "${name}" (expected ${SERVICES.join(', ')})`);

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

const t0 = performance.now();
let phase: Phase = 'seed';
const samples: Sample[] = [];

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

/** Prometheus text of a service's metrics endpoint ('' when unavailable). */
async function scrape(metricsUrl: string | undefined): Promise<string> {
  if (metricsUrl === undefined) return '';
  const url = metricsUrl.endsWith('/metrics') ? metricsUrl : `${metricsUrl.replace(/\/$/, '')}/metrics`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    return await response.text();
  } catch {
    return '';
  }
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

// ---- Clients ----

function outcomeOf(error: unknown): string {
  if (error instanceof ConnectError) {
    const reason = error.findDetails(ErrorInfoSchema)[0]?.reason;
    const code: string = Code[error.code];
    const name = code.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
    return reason !== undefined && reason !== '' ? `${name}/${reason}` : name;
  }
  return `CLIENT_ERROR/${error instanceof Error ? error.name : 'unknown'}`;
}

let interrupted = false;

interface LoadClient {
  readonly index: number;
  readonly transport: Transport;
  readonly auth: Auth;
  readonly session: string;
}

// eslint-disable-next-line max-lines-per-function -- a benchmark script read top to bottom: its phases run in the order they are reported and share the run's state.
async function main(): Promise<void> {
  const loadAtStart = loads();
  log(
    `bench:load — ${clients} clients, ${durationS} s (+${warmupS} s warm-up), ≤ ${maxRequests} requests, mix ${JSON.stringify(mix)}, ` +
      `store ${storeKind}, vectors ${vectorKind}; load average ${loadAtStart.join(' / ')}`,
  );
  mkdirSync(dirname(outPath), { recursive: true });
  const startedAt = new Date().toISOString();
  const stackStart = performance.now();
  log('starting the four services…');
  let stack: Stack | undefined;
  const abort = new AbortController();
  setMaxListeners(4 * clients + 10, abort.signal); // every in-flight call listens to it
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
  try {
    stack = await startStack({
      store: storeKind,
      vectors: vectorKind,
      logLevel: args['log-level'],
      logDir: dirname(outPath),
      profile: profile as Service[],
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
    sampler = setInterval(() => samples.push(sample(pids)), sampleMs);
    samples.push(sample(pids));

    const key = { algorithm: 'HS256' as const, secret: new TextEncoder().encode(s.secret) };
    const tokens = new Map<string, Auth>();
    const as = async (subject: string, roles: ('admin' | 'service')[] = []): Promise<Auth> => {
      const k = `${subject}|${roles.join(',')}`;
      let auth = tokens.get(k);
      if (auth === undefined) {
        const token = await mintToken({ subject, tenantId: 'bench', roles }, key, { expiresIn: '2h' });
        auth = { headers: { authorization: `Bearer ${token}` } };
        tokens.set(k, auth);
      }
      return auth;
    };
    const transportTo = (url: string) => createGrpcTransport({ baseUrl: url });

    // ---- Seed ----
    log(`seeding ${users} users (a document and a flushed 12-turn conversation each)…`);
    // (--store sqlite seeds one user at a time: parallel writers from several processes fail fast.)
    const seeded = await seed(
      {
        ingestion: transportTo(s.services.ingestion.url),
        retrieval: transportTo(s.services.retrieval.url),
        governance: transportTo(s.services.governance.url),
      },
      as,
      users,
      storeKind === 'sqlite' ? 1 : 2, // several SQLite writers at once: "database is locked"
      log,
    );
    log(
      `  seeded in ${Math.round(seeded.ms / 1000)} s: ${seeded.documents} documents, ${seeded.messages} messages, ` +
        `${seeded.memories} memories; index ${JSON.stringify(seeded.index)}; retries ${JSON.stringify(seeded.retries)}`,
    );
    const userOf = (c: number) => c % users;
    const sessions = await clientSessions(
      transportTo(s.services.ingestion.url),
      as,
      clients,
      userOf,
      seeded.retries,
    );
    if (Object.keys(seeded.retries).length > 0)
      log(`  seed retries (after the client sessions): ${JSON.stringify(seeded.retries)}`);
    phase = 'idle';
    await sleep(Math.max(2 * sampleMs, 2000)); // an idle sample or two after seeding
    const loadBeforeRun = loads();

    // ---- Load ----
    const loadClients: LoadClient[] = [];
    for (let c = 0; c < clients; c++) {
      loadClients.push({
        index: c,
        // One HTTP/2 connection per client and service (connect-node opens one per transport).
        transport: transportTo(s.services.retrieval.url),
        auth: await as(`load-u${userOf(c)}`),
        session: sessions[c]!,
      });
    }
    const ingestionTransports = loadClients.map(() => transportTo(s.services.ingestion.url));
    const contextTransports = loadClients.map(() => transportTo(s.services.context.url));

    const records: CallRecord[] = [];
    /** Search responses of the measured window: candidates and the server's own elapsed time. */
    const searchStats = { n: 0, merged: 0, dense: 0, lexical: 0, results: 0, elapsedMs: 0 };
    /** ok completions per second of the measured window, per RPC. */
    const perSecond: Record<string, number[]> = {};
    let issued = 0;
    let warmupCalls = 0;
    const warmupEnd = performance.now() + warmupS * 1000;
    const loadEnd = warmupEnd + durationS * 1000;
    let measuredStart = warmupEnd;
    let lastCompletion = warmupEnd;
    const before: Record<string, string> = {};

    watchdog = setTimeout(
      () => {
        log('watchdog: the run overstayed its duration by 60 s; aborting');
        abort.abort(new Error('watchdog'));
      },
      (warmupS + durationS + 60) * 1000,
    );

    const aborted = () => abort.signal.aborted;
    const runClient = async (client: LoadClient) => {
      const random = seededRandom(seedValue * 1000 + client.index);
      const retrieval = createClient(RetrievalService, client.transport);
      const ingestion = createClient(IngestionService, ingestionTransports[client.index]!);
      const context = createClient(ContextService, contextTransports[client.index]!);
      let turn = 0;
      for (;;) {
        const now = performance.now();
        if (abort.signal.aborted || now >= loadEnd) return;
        const measured = now >= warmupEnd;
        if (measured && issued >= maxRequests) return;
        const rpc: Rpc = pickRpc(mix, random());
        const query = queryText(Math.floor(random() * 1_000_000));
        const options = { ...client.auth, timeoutMs, signal: abort.signal };
        if (measured) issued++;
        else warmupCalls++;
        const start = performance.now();
        let outcome = 'OK';
        try {
          if (rpc === 'search') {
            const response = await retrieval.search({ query, topK: 10 }, options);
            if (measured && response.stats !== undefined) {
              const st = response.stats;
              searchStats.n++;
              searchStats.merged += st.mergedCandidates;
              searchStats.dense += st.denseCandidates;
              searchStats.lexical += st.lexicalCandidates;
              searchStats.results += response.results.length;
              searchStats.elapsedMs +=
                Number(st.elapsed?.seconds ?? 0n) * 1000 + (st.elapsed?.nanos ?? 0) / 1e6;
            }
          } else if (rpc === 'append') {
            const topic = TOPICS[(client.index + turn) % 12]!;
            turn++;
            await ingestion.appendMessages(
              {
                parent: client.session,
                messages: [
                  {
                    role: MessageRole.USER,
                    content: `Turn ${turn} of client ${client.index}: ${query}? Also, ${topic}.`,
                  },
                  { role: MessageRole.ASSISTANT, content: `Here is what I have on ${topic}, turn ${turn}.` },
                ],
              },
              options,
            );
          } else {
            await context.buildContext(
              { session: client.session, userMessage: query, model: 'gpt-4o', budget: { totalTokens: 2000 } },
              options,
            );
          }
        } catch (error) {
          if (aborted()) return; // the signal may have fired during the call
          outcome = outcomeOf(error);
        }
        const end = performance.now();
        if (measured) {
          records.push({ rpc, ms: end - start, outcome });
          lastCompletion = Math.max(lastCompletion, end);
          if (outcome === 'OK') {
            const second = Math.floor((end - measuredStart) / 1000);
            const series = (perSecond[rpc] ??= []);
            while (series.length <= second) series.push(0);
            series[second]!++;
          }
        }
      }
    };

    log(
      `load: ${clients} clients, warm-up ${warmupS} s, then ${durationS} s measured (load average ${loadBeforeRun.join(' / ')})…`,
    );
    phase = 'warmup';
    const running = loadClients.map(runClient);
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
    await Promise.all(running);
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
    const target = mix.search !== undefined ? checkTarget(report, stackMemory) : [];

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
    const perSearch = (x: number) => round1(x / Math.max(1, searchStats.n));
    const searchSummary =
      searchStats.n === 0
        ? undefined
        : {
            responses: searchStats.n,
            meanDenseCandidates: perSearch(searchStats.dense),
            meanLexicalCandidates: perSearch(searchStats.lexical),
            meanMergedCandidates: perSearch(searchStats.merged),
            meanResults: perSearch(searchStats.results),
            meanServerElapsedMs: perSearch(searchStats.elapsedMs),
          };
    if (searchSummary !== undefined)
      log(
        `  Search responses: ${searchSummary.meanDenseCandidates} dense + ${searchSummary.meanLexicalCandidates} lexical → ` +
          `${searchSummary.meanMergedCandidates} merged candidates (each re-read from the store), ${searchSummary.meanResults} results, ` +
          `server elapsed ${searchSummary.meanServerElapsedMs} ms (means)`,
      );
    if (target.length > 0) {
      log('');
      log(`target (issue #11; meaningful with --only search --clients 32 --duration-s 60):`);
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
        clients,
        durationS,
        warmupS,
        maxRequests,
        mix,
        store: storeKind,
        vectors: vectorKind,
        users,
        timeoutMs,
        seed: seedValue,
      },
      stack: {
        services: Object.fromEntries(
          SERVICES.map((n) => [n, { url: s.services[n].url, pid: s.services[n].pid }]),
        ),
        store: s.storeTarget,
        vectors: s.qdrantUrl ?? 'embedded',
      },
      seed: seeded,
      windowMs: Math.round(windowMs),
      warmupCalls,
      maxRequestsReached: issued >= maxRequests,
      report,
      perSecond: rates,
      processes,
      machineCpuPercent: machineCpu,
      serverSide: server,
      search: searchSummary,
      target: target.length > 0 ? { lines: target, pass: target.every((l) => l.pass) } : undefined,
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
