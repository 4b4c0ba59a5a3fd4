/**
 * The multi-process topology of the fault tests: a dedicated MariaDB server and a dedicated Qdrant
 * (each on its own ports and data directory, so stopping them disturbs no other suite) and the
 * four services as separate processes (one `services/<name>/src/main.ts` each), every one of which
 * can be killed with SIGKILL, paused with SIGSTOP/SIGCONT and started again on the same port.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrateToLatest, openStore } from '@engram/store';
import { freePorts, qdrantBinary, qdrantEnv, qdrantReady, qdrantScratchRoot } from '@engram/testing';
import { onLogLines, repoRoot, serviceSecretOf } from '../harness.js';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `check` every `everyMs` until it returns a defined value or `timeoutMs` passes. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  { timeoutMs = 30_000, everyMs = 200 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}` +
          (lastError === undefined
            ? ''
            : `; last error: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)}`),
      );
    }
    await sleep(everyMs);
  }
}

function waitExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) =>
    child.once('exit', () => {
      r();
    }),
  );
}

function tail(text: string, max = 6_000): string {
  return text.length > max ? text.slice(-max) : text;
}

/** A process the test controls: start, SIGKILL, SIGSTOP/SIGCONT, SIGTERM. */
abstract class Controlled {
  protected child: ChildProcess | undefined;
  protected output = '';

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** How the last run ended (`code` or signal name), if it did. */
  get exit(): string | undefined {
    const c = this.child;
    if (c === undefined) return undefined;
    return c.exitCode !== null ? String(c.exitCode) : (c.signalCode ?? undefined);
  }

  isRunning(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The last lines the process wrote (for failure messages). */
  get log(): string {
    return tail(this.output);
  }

  protected keep(child: ChildProcess): void {
    const add = (chunk: Buffer) => {
      this.output = tail(this.output + chunk.toString('utf8'), 200_000);
    };
    child.stdout?.on('data', add);
    child.stderr?.on('data', add);
  }

  /** kill -9: no cleanup, no draining. */
  async kill(): Promise<void> {
    const child = this.child;
    if (child === undefined || !this.isRunning()) return;
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await waitExit(child);
  }

  /** A clean stop (SIGTERM), waiting for the exit. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child === undefined || !this.isRunning()) return;
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    await waitExit(child);
  }

  /** Freezes the process: its sockets stay open and accept connections, nothing answers. */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }
}

/**
 * A MariaDB server of its own (datadir in a temporary directory, its own TCP port and socket),
 * initialised with `mariadb-install-db` and started like scripts/ensure-mariadb.sh starts the
 * shared one (`mariadbd --user=mysql`), with a user and database for the services.
 */
export class DedicatedMariadb extends Controlled {
  readonly dir: string;
  readonly port: number;
  readonly url: string;
  readonly #socket: string;

  private constructor(dir: string, port: number, password: string) {
    super();
    this.dir = dir;
    this.port = port;
    this.#socket = join(dir, 'mysqld.sock');
    this.url = `mysql://engram:${password}@127.0.0.1:${port}/engram_faults`;
  }

  static async create(): Promise<DedicatedMariadb> {
    const mariadbd = existsSync('/usr/sbin/mariadbd') ? '/usr/sbin/mariadbd' : 'mariadbd';
    if (spawnSync(mariadbd, ['--version']).status !== 0) {
      throw new Error(
        'The fault tests need the MariaDB server binaries (mariadbd, mariadb-install-db): run `bash scripts/ensure-mariadb.sh` (npm test runs it).',
      );
    }
    const dir = mkdtempSync(join(tmpdir(), 'engram-faults-mariadb-'));
    const root = process.getuid?.() === 0;
    if (root) chownSync(dir, uidOf('mysql'), gidOf('mysql'));
    const install = spawnSync(
      'mariadb-install-db',
      [
        '--no-defaults',
        `--datadir=${join(dir, 'data')}`,
        ...(root ? ['--user=mysql'] : []),
        '--auth-root-authentication-method=socket',
        '--skip-test-db',
        '--skip-name-resolve',
      ],
      { encoding: 'utf8' },
    );
    if (install.status !== 0) {
      throw new Error(`mariadb-install-db failed: ${install.stderr}\n${install.stdout}`);
    }
    const [port = 0] = await freePorts(1);
    const db = new DedicatedMariadb(dir, port, randomBytes(12).toString('hex'));
    await db.start();
    const password = new URL(db.url).password;
    const sql = spawnSync(
      'mariadb',
      [
        `--socket=${db.#socket}`,
        '-uroot',
        '-e',
        `CREATE DATABASE engram_faults CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
         CREATE USER 'engram'@'127.0.0.1' IDENTIFIED BY '${password}';
         GRANT ALL PRIVILEGES ON engram_faults.* TO 'engram'@'127.0.0.1';`,
      ],
      { encoding: 'utf8' },
    );
    if (sql.status !== 0) throw new Error(`could not create the fault-test database: ${sql.stderr}`);
    const store = openStore({ target: db.url });
    try {
      await migrateToLatest(store.db);
    } finally {
      await store.close();
    }
    return db;
  }

  /** Starts mariadbd on the same port and datadir; resolves when it answers a ping. */
  async start(): Promise<void> {
    if (this.isRunning()) return;
    const root = process.getuid?.() === 0;
    const child = spawn(
      existsSync('/usr/sbin/mariadbd') ? '/usr/sbin/mariadbd' : 'mariadbd',
      [
        '--no-defaults',
        `--datadir=${join(this.dir, 'data')}`,
        `--port=${this.port}`,
        '--bind-address=127.0.0.1',
        `--socket=${this.#socket}`,
        `--pid-file=${join(this.dir, 'mysqld.pid')}`,
        ...(root ? ['--user=mysql'] : []),
        '--skip-log-bin',
        '--skip-name-resolve',
        '--innodb-buffer-pool-size=64M',
        '--max-connections=500',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    this.keep(child);
    const deadline = Date.now() + 30_000;
    while (
      spawnSync('mariadb-admin', [`--socket=${this.#socket}`, '-uroot', 'ping'], { stdio: 'ignore' })
        .status !== 0
    ) {
      if (!this.isRunning()) throw new Error(`mariadbd exited at start:\n${this.log}`);
      if (Date.now() > deadline) throw new Error(`mariadbd did not answer within 30 s:\n${this.log}`);
      await sleep(100);
    }
  }

  async dispose(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function uidOf(user: string): number {
  return Number(spawnSync('id', ['-u', user], { encoding: 'utf8' }).stdout.trim());
}
function gidOf(user: string): number {
  return Number(spawnSync('id', ['-g', user], { encoding: 'utf8' }).stdout.trim());
}

/**
 * A Qdrant of its own: the pinned binary from node_modules with the settings of `startQdrant`
 * (@engram/testing), and storage that survives a restart on the same ports.
 */
export class DedicatedQdrant extends Controlled {
  readonly dir: string;
  readonly httpPort: number;
  readonly grpcPort: number;

  private constructor(dir: string, httpPort: number, grpcPort: number) {
    super();
    this.dir = dir;
    this.httpPort = httpPort;
    this.grpcPort = grpcPort;
  }

  get url(): string {
    return `http://127.0.0.1:${this.httpPort}`;
  }

  static async create(): Promise<DedicatedQdrant> {
    const [httpPort = 0, grpcPort = 0] = await freePorts(2);
    const q = new DedicatedQdrant(
      mkdtempSync(join(qdrantScratchRoot(), 'engram-faults-qdrant-')),
      httpPort,
      grpcPort,
    );
    await q.start();
    return q;
  }

  async start(): Promise<void> {
    if (this.isRunning()) return;
    const binary = qdrantBinary();
    if (!existsSync(binary)) {
      throw new Error(
        `Qdrant binary not found at ${binary}: run \`npm ci\` on linux x64, or set ENGRAM_TEST_QDRANT_BIN.`,
      );
    }
    mkdirSync(this.dir, { recursive: true });
    const child = spawn(binary, [], {
      cwd: this.dir,
      env: { PATH: process.env['PATH'] ?? '', ...qdrantEnv(this.dir, this.httpPort, this.grpcPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.keep(child);
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (!this.isRunning()) throw new Error(`Qdrant exited at start:\n${this.log}`);
      if (await qdrantReady(this.url)) return;
      if (Date.now() > deadline) throw new Error(`Qdrant was not ready within 30 s:\n${this.log}`);
      await sleep(100);
    }
  }

  async dispose(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export type ServiceName = 'governance' | 'ingestion' | 'retrieval' | 'context';

/** A service process that exited without being asked to, and what it wrote last. */
export interface Crash {
  readonly service: ServiceName;
  readonly exit: string;
  readonly log: string;
}

/** One service as its own process (`npm start -w @engram/<name>`), restartable on its port. */
export class ServiceProcess extends Controlled {
  readonly name: ServiceName;
  readonly port: number;
  readonly #env: () => Record<string, string>;
  /** Log lines (parsed JSON) of the current run. */
  logs: Record<string, unknown>[] = [];
  starts = 0;
  /** Exits nobody asked for; each was followed by a restart (like a supervisor would). */
  readonly crashes: Crash[] = [];
  #expectExit = false;
  #ready: Promise<void> | undefined;

  constructor(name: ServiceName, port: number, env: () => Record<string, string>) {
    super();
    this.name = name;
    this.port = port;
    this.#env = env;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts the process; resolves once it logged that it listens. */
  start(): Promise<void> {
    if (this.isRunning() && this.#ready !== undefined) return this.#ready;
    this.#ready = this.#start();
    return this.#ready;
  }

  async #start(): Promise<void> {
    this.starts += 1;
    this.logs = [];
    const child = spawn(
      process.execPath,
      ['--conditions=@engram/source', '--import', 'tsx', `services/${this.name}/src/main.ts`],
      {
        cwd: repoRoot,
        env: { PATH: process.env['PATH'] ?? '', ...this.#env(), ENGRAM_PORT: String(this.port) },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    this.child = child;
    this.keep(child);
    this.#expectExit = false;
    child.once('exit', (code, signal) => {
      if (this.#expectExit || this.child !== child) return;
      this.crashes.push({ service: this.name, exit: String(code ?? signal), log: this.log });
      // Restart it, as a supervisor (systemd, Kubernetes) would; the test decides what a crash means.
      setTimeout(() => {
        if (this.child === child) this.start().catch(() => undefined);
      }, 200);
    });
    const logs = this.logs;
    const listening = new Promise<void>((resolve, reject) => {
      onLogLines(child.stdout, (entry) => {
        logs.push(entry);
        if (String(entry['msg']).includes('listening')) resolve();
      });
      child.once('exit', (code, signal) => {
        reject(new Error(`${this.name} exited (${String(code ?? signal)}) before listening:\n${this.log}`));
      });
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new Error(`${this.name} did not listen within 90 s:\n${this.log}`));
      }, 90_000);
    });
    try {
      await Promise.race([listening, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  override async kill(): Promise<void> {
    this.#expectExit = true;
    await super.kill();
  }

  override async stop(): Promise<void> {
    this.#expectExit = true;
    await super.stop();
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.start();
  }
}

/** The four services on free ports over one MariaDB and one Qdrant, with a shared secret. */
export class Cluster {
  readonly secret = randomBytes(32).toString('hex');
  readonly services: Record<ServiceName, ServiceProcess>;
  readonly dataDir = mkdtempSync(join(tmpdir(), 'engram-faults-'));

  private constructor(
    readonly mariadb: DedicatedMariadb,
    readonly qdrant: DedicatedQdrant,
    ports: number[],
    extraEnv: Partial<Record<ServiceName, Record<string, string>>>,
  ) {
    const [governance = 0, ingestion = 0, retrieval = 0, context = 0] = ports;
    const url = (port: number) => `http://127.0.0.1:${port}`;
    const common = () => ({
      MYSQL_URL: this.mariadb.url,
      QDRANT_URL: this.qdrant.url,
      ENGRAM_JWT_SECRET: this.secret,
      ENGRAM_SERVICE_JWT_SECRET: serviceSecretOf(this.secret),
      ENGRAM_METRICS_PORT: '0',
      ENGRAM_DATA_DIR: this.dataDir,
      ENGRAM_LOG_LEVEL: 'info',
      ENGRAM_SHUTDOWN_GRACE_MS: '1000',
      ENGRAM_GOVERNANCE_URL: url(governance),
      ENGRAM_INGESTION_URL: url(ingestion),
      ENGRAM_RETRIEVAL_URL: url(retrieval),
      ENGRAM_CONTEXT_URL: url(context),
    });
    const make = (name: ServiceName, port: number) =>
      new ServiceProcess(name, port, () => ({ ...common(), ...(extraEnv[name] ?? {}) }));
    this.services = {
      governance: make('governance', governance),
      ingestion: make('ingestion', ingestion),
      retrieval: make('retrieval', retrieval),
      context: make('context', context),
    };
  }

  static async start(extraEnv: Partial<Record<ServiceName, Record<string, string>>> = {}): Promise<Cluster> {
    const [mariadb, qdrant] = await Promise.all([DedicatedMariadb.create(), DedicatedQdrant.create()]);
    const cluster = new Cluster(mariadb, qdrant, await freePorts(4), extraEnv);
    try {
      // Retrieval first: it creates the collection; then the others (two at a time on 2 cores).
      await cluster.services.retrieval.start();
      await Promise.all([cluster.services.governance.start(), cluster.services.ingestion.start()]);
      await cluster.services.context.start();
    } catch (error) {
      await cluster.dispose();
      throw error;
    }
    return cluster;
  }

  async dispose(): Promise<void> {
    await Promise.all(Object.values(this.services).map((s) => s.kill()));
    await Promise.all([this.mariadb.dispose(), this.qdrant.dispose()]);
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  /** Everything the processes wrote, for a failure message. */
  logs(): string {
    return Object.values(this.services)
      .map((s) => `--- ${s.name}\n${s.log}`)
      .join('\n');
  }
}
