/**
 * The multi-process stack of the sustained-load benchmark: the four service processes (the
 * production topology of README "One process per service"), each started like
 * `npm start -w @engram/<service>` on its own free loopback port with ENGRAM_METRICS_PORT=0 and a
 * shared ENGRAM_JWT_SECRET, over one source of truth (a fresh MariaDB database on the test server
 * of scripts/ensure-mariadb.sh, or one SQLite file in a shared data directory) and one vector index
 * (the pinned Qdrant binary of the test harness, or the embedded index owned by retrieval).
 *
 * Everything it starts is registered for cleanup: `stop()` terminates the services (SIGTERM, then
 * SIGKILL after 15 s), stops Qdrant, drops the database and removes the temporary directory. The
 * service logs go straight to files (no pipe through this process, so logging costs the generator
 * nothing); readiness is the "listening" line in that file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createConnection } from 'mysql2/promise';
import { migrateToLatest, openStore } from '@engram/store';
import { freePorts, startQdrant, type RunningQdrant } from '@engram/testing';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export const SERVICES = ['governance', 'ingestion', 'retrieval', 'context'] as const;
export type Service = (typeof SERVICES)[number];

export type StoreKind = 'mysql' | 'sqlite';
export type VectorKind = 'qdrant' | 'embedded';

export interface StackOptions {
  readonly store: StoreKind;
  readonly vectors: VectorKind;
  readonly logLevel: string;
  /** Where the service log files go. */
  readonly logDir: string;
  readonly readyTimeoutMs?: number;
  /** Services to run under the V8 CPU profiler (`--cpu-prof`, written to `<logDir>/profiles` at exit). */
  readonly profile?: readonly Service[];
  /**
   * Keep the state in this directory across runs (bench:load's `--seed-dir`): the MariaDB database
   * named in `<dir>/database` (created on the first run, never dropped), Qdrant's storage in
   * `<dir>/qdrant` and the services' data directory (SQLite file, embedded index) in `<dir>/data`.
   * Without it everything is fresh and removed at the end.
   */
  readonly persistDir?: string;
  /** Extra environment of every service process (a setting under test, e.g. `ENGRAM_INDEX_DENSE_YIELD_MS`). */
  readonly serviceEnv?: Readonly<Record<string, string>>;
}

export interface RunningService {
  readonly name: Service;
  readonly url: string;
  readonly metricsUrl: string | undefined;
  readonly pid: number;
  readonly logFile: string;
}

export interface Stack {
  readonly services: Readonly<Record<Service, RunningService>>;
  readonly secret: string;
  /** The database description (password masked) or SQLite file. */
  readonly storeTarget: string;
  readonly qdrantUrl: string | undefined;
  /** Qdrant's pid when found (for RSS/CPU sampling). */
  readonly qdrantPid: number | undefined;
  /** The MariaDB server's pid when found. */
  readonly mysqlPid: number | undefined;
  /** Stops everything it started; idempotent. */
  readonly stop: () => Promise<void>;
  /** True when the state came from an earlier run (`persistDir` with a database already named). */
  readonly reused: boolean;
}

function mysqlBaseUrl(): string {
  const fromEnv = process.env['ENGRAM_TEST_MYSQL_URL'];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const file = join(process.env['ENGRAM_TEST_STATE_DIR'] ?? join(homedir(), '.engram-test'), 'mysql-url');
  if (!existsSync(file))
    throw new Error(
      `no MariaDB URL (${file} missing): run \`bash scripts/ensure-mariadb.sh\` or use --store sqlite`,
    );
  return readFileSync(file, 'utf8').trim();
}

/** The pid of a process whose /proc/<pid>/comm is `comm` (first match), or whose cwd is `cwd`. */
function findPid(match: { comm?: string; cwd?: string }): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (match.comm !== undefined && readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === match.comm)
        return Number(entry);
      if (match.cwd !== undefined && readlinkSync(`/proc/${entry}/cwd`) === match.cwd) return Number(entry);
    } catch {
      // gone or not ours
    }
  }
  return undefined;
}

async function terminate(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((r) => {
    child.once('exit', () => {
      r();
    });
  });
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(timer);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The MariaDB database of a run: a fresh one (dropped at the end), or with `persist` the one named
 * in `<persist>/database` (created and named there on the first run, kept).
 */
async function mysqlDatabase(
  persist: string | undefined,
  reused: boolean,
  cleanups: (() => Promise<void> | void)[],
): Promise<{ mysqlUrl: string; storeTarget: string }> {
  const databaseFile = persist === undefined ? undefined : join(persist, 'database');
  const base = new URL(mysqlBaseUrl());
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(base.hostname))
    throw new Error(`the MariaDB URL must be on loopback, not ${base.hostname}`);
  const name = reused
    ? readFileSync(databaseFile!, 'utf8').trim()
    : `engram_test_load_${randomBytes(5).toString('hex')}`;
  if (!/^engram_test_load_[0-9a-f]+$/.test(name)) throw new Error(`${databaseFile}: not a database name`);
  const admin = await createConnection({
    uri: `${base.protocol}//${base.username}:${base.password}@${base.host}/`,
  });
  if (reused) {
    const [rows] = await admin.query('SHOW DATABASES LIKE ?', [name]);
    if ((rows as unknown[]).length === 0) {
      await admin.end();
      throw new Error(`${databaseFile} names database ${name}, which no longer exists: delete ${persist}`);
    }
  } else {
    await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    if (databaseFile !== undefined) writeFileSync(databaseFile, `${name}\n`);
  }
  cleanups.push(async () => {
    if (persist === undefined) await admin.query(`DROP DATABASE \`${name}\``);
    await admin.end();
  });
  const url = new URL(base.href);
  url.pathname = `/${name}`;
  return { mysqlUrl: url.href, storeTarget: `${url.protocol}//***@${url.host}${url.pathname}` };
}

/** Starts the stack; on any failure, stops what was started and rethrows. */
export async function startStack(options: StackOptions): Promise<Stack> {
  const cleanups: (() => Promise<void> | void)[] = [];
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      for (const cleanup of cleanups.reverse()) {
        try {
          await cleanup();
        } catch (error) {
          process.stderr.write(`cleanup failed: ${error instanceof Error ? error.message : String(error)}\n`);
        }
      }
    })());
  try {
    const persist = options.persistDir;
    const reused =
      persist !== undefined &&
      existsSync(join(persist, options.store === 'mysql' ? 'database' : join('data', 'engram.db')));
    let dataDir: string;
    if (persist === undefined) {
      dataDir = mkdtempSync(join(tmpdir(), 'engram-load-'));
      const fresh = dataDir;
      cleanups.push(() => {
        rmSync(fresh, { recursive: true, force: true });
      });
    } else {
      dataDir = join(persist, 'data');
      mkdirSync(dataDir, { recursive: true });
    }
    const secret = randomBytes(32).toString('hex');

    // ---- Source of truth: a fresh database, migrated here (standalone services do not migrate). ----
    let mysqlUrl: string | undefined;
    let storeTarget: string;
    let mysqlPid: number | undefined;
    if (options.store === 'mysql') {
      ({ mysqlUrl, storeTarget } = await mysqlDatabase(persist, reused, cleanups));
      mysqlPid = findPid({ comm: 'mariadbd' }) ?? findPid({ comm: 'mysqld' });
    } else {
      storeTarget = join(dataDir, 'engram.db');
    }
    const store = openStore({ target: mysqlUrl ?? join(dataDir, 'engram.db') });
    try {
      await migrateToLatest(store.db);
    } finally {
      await store.close();
    }

    // ---- Vector index ----
    let qdrant: RunningQdrant | undefined;
    let qdrantPid: number | undefined;
    if (options.vectors === 'qdrant') {
      qdrant = await startQdrant({
        readyTimeoutMs: 60_000,
        ...(persist !== undefined ? { dir: join(persist, 'qdrant') } : {}),
      });
      const q = qdrant;
      cleanups.push(() => q.stop());
      qdrantPid = findPid({ cwd: qdrant.dir });
    }

    // ---- The four services ----
    const ports = await freePorts(SERVICES.length);
    const port = Object.fromEntries(SERVICES.map((s, i) => [s, ports[i]!])) as Record<Service, number>;
    const url = (s: Service) => `http://127.0.0.1:${port[s]}`;
    const common: Record<string, string> = {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? tmpdir(),
      ENGRAM_HOST: '127.0.0.1',
      ENGRAM_METRICS_PORT: '0',
      ENGRAM_JWT_SECRET: secret,
      // The key of the services' background calls: never the user-facing one (decision 0024).
      ENGRAM_SERVICE_JWT_SECRET: `${secret}:service`,
      ENGRAM_DATA_DIR: dataDir,
      ENGRAM_LOG_LEVEL: options.logLevel,
      ...(mysqlUrl !== undefined ? { MYSQL_URL: mysqlUrl } : {}),
      ...options.serviceEnv,
    };
    const own: Record<Service, Record<string, string>> = {
      governance: { ENGRAM_INGESTION_URL: url('ingestion'), ENGRAM_CONTEXT_URL: url('context') },
      ingestion: { ENGRAM_GOVERNANCE_URL: url('governance') },
      retrieval: qdrant !== undefined ? { QDRANT_URL: qdrant.url } : {},
      context: {
        ENGRAM_INGESTION_URL: url('ingestion'),
        ENGRAM_GOVERNANCE_URL: url('governance'),
        ENGRAM_RETRIEVAL_URL: url('retrieval'),
      },
    };
    const started = SERVICES.map((name) => {
      const logFile = join(options.logDir, `load-${name}.log`);
      const fd = openSync(logFile, 'w');
      const child = spawn(
        process.execPath,
        [
          ...(options.profile?.includes(name) === true
            ? ['--cpu-prof', `--cpu-prof-dir=${join(options.logDir, 'profiles')}`]
            : []),
          '--conditions=@engram/source',
          '--import',
          'tsx',
          `services/${name}/src/main.ts`,
        ],
        {
          cwd: repoRoot,
          env: { ...common, ENGRAM_PORT: String(port[name]), ...own[name] },
          stdio: ['ignore', fd, fd],
        },
      );
      closeSync(fd);
      cleanups.push(() => terminate(child, 15_000));
      return { name, child, logFile };
    });

    // Readiness: the "listening" line in each log file.
    const deadline = Date.now() + (options.readyTimeoutMs ?? 120_000);
    const services = {} as Record<Service, RunningService>;
    for (const { name, child, logFile } of started) {
      for (;;) {
        if (child.exitCode !== null || child.signalCode !== null) {
          throw new Error(
            `${name} exited (${child.exitCode ?? child.signalCode}) before listening:\n${readFileSync(logFile, 'utf8').slice(-4000)}`,
          );
        }
        const line = readFileSync(logFile, 'utf8')
          .split('\n')
          .find((l) => l.includes('listening on'));
        if (line !== undefined) {
          const entry = JSON.parse(line) as { url: string; metrics?: string };
          services[name] = {
            name,
            url: entry.url,
            metricsUrl: entry.metrics,
            pid: child.pid!,
            logFile,
          };
          break;
        }
        if (Date.now() > deadline)
          throw new Error(`${name} not listening within the timeout; see ${logFile}`);
        await sleep(200);
      }
    }
    return {
      services,
      secret,
      storeTarget,
      qdrantUrl: qdrant?.url,
      qdrantPid,
      mysqlPid,
      stop,
      reused,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** RSS (VmRSS) of a process in MiB, or undefined when it is gone. */
export function rssMib(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? undefined : Number(match[1]) / 1024;
  } catch {
    return undefined;
  }
}

/** utime + stime of a process (or one of its threads with `tid`), in clock ticks. */
export function cpuTicks(pid: number, tid?: number): number | undefined {
  try {
    const path = tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`;
    const stat = readFileSync(path, 'utf8');
    // Fields after the command (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime (14th), stime (15th)
  } catch {
    return undefined;
  }
}

/**
 * Scheduler statistics of a thread (/proc/<pid>/task/<tid>/schedstat): ns on a CPU and ns waiting
 * on a run queue (runnable but not running: CPU starvation).
 */
export function schedStat(pid: number, tid: number): { runNs: number; waitNs: number } | undefined {
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').trim().split(/\s+/);
    return { runNs: Number(run), waitNs: Number(wait) };
  } catch {
    return undefined;
  }
}

/** Busy and total ticks of the whole machine (/proc/stat, all CPUs). */
export function machineTicks(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const values = line.trim().split(/\s+/).slice(1).map(Number);
  const total = values.reduce((a, b) => a + b, 0);
  const idle = (values[3] ?? 0) + (values[4] ?? 0);
  return { busy: total - idle, total };
}

/** `--service-env KEY=VALUE` (repeated) as an environment; a malformed entry is a usage error. */
export function parseServiceEnv(entries: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of entries) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(entry);
    if (match === null) throw new Error(`--service-env: expected KEY=VALUE, got "${entry}"`);
    env[match[1]!] = match[2]!;
  }
  return env;
}

/** A Qdrant collection's state as GET /collections/{name} reports it. */
interface CollectionState {
  readonly name: string;
  readonly status: string;
  readonly optimizer: string;
  readonly segments: number | undefined;
}

async function qdrantJson(url: string): Promise<unknown> {
  const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return ((await response.json()) as { result: unknown }).result;
}

/**
 * Waits until every collection of the Qdrant at `url` is `green`: a seed that has just written its
 * last vectors leaves the optimizer building segments and HNSW graphs for minutes, on the same two
 * cores the load would measure. Returns the collections' last state and how long it waited;
 * gives up (and says so) after `timeoutMs`.
 */
export async function waitQdrantGreen(
  url: string,
  timeoutMs: number,
  log: (line: string) => void,
): Promise<{ readonly waitedMs: number; readonly green: boolean; readonly collections: CollectionState[] }> {
  const started = performance.now();
  let lastLog = started;
  for (;;) {
    const listed = (await qdrantJson(`${url}/collections`)) as { collections: { name: string }[] };
    const collections: CollectionState[] = [];
    for (const { name } of listed.collections) {
      const info = (await qdrantJson(`${url}/collections/${encodeURIComponent(name)}`)) as {
        status: string;
        optimizer_status: unknown;
        segments_count?: number;
      };
      collections.push({
        name,
        status: info.status,
        optimizer:
          typeof info.optimizer_status === 'string'
            ? info.optimizer_status
            : JSON.stringify(info.optimizer_status),
        segments: info.segments_count,
      });
    }
    const waitedMs = Math.round(performance.now() - started);
    const green = collections.every((c) => c.status === 'green');
    if (green || waitedMs >= timeoutMs) return { waitedMs, green, collections };
    if (performance.now() - lastLog >= 30_000 || lastLog === started) {
      lastLog = performance.now();
      log(
        `  waiting for Qdrant's optimizer: ${collections.map((c) => `${c.status} (${c.segments ?? '?'} segments)`).join(', ')} (${Math.round(waitedMs / 1000)} s)`,
      );
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
}
