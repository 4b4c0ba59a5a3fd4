import { statSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from '@jest/globals';
import { knownMigrations } from '@engram/store';
import { LOCAL_SECRET_FILE } from '../src/index.js';
import {
  loadProtos,
  serviceConstructor,
  startProcess,
  tempDir,
  unary,
  type EngramProcess,
} from './harness.js';

const protos = loadProtos();
const running: EngramProcess[] = [];

afterEach(() => {
  for (const p of running.splice(0)) if (p.child.exitCode === null) p.child.kill('SIGKILL');
});

function start(env: Record<string, string>): EngramProcess {
  const p = startProcess(env);
  running.push(p);
  return p;
}

describe('the all-in-one process (npm start)', () => {
  it('starts on its embedded defaults with a generated 0600 secret, serves, and exits 0 on SIGTERM', async () => {
    const dataDir = tempDir();
    const p = start({ ENGRAM_PORT: '0', ENGRAM_DATA_DIR: dataDir, ENGRAM_SHUTDOWN_GRACE_MS: '2000' });
    const url = await p.listening;
    expect(statSync(join(dataDir, LOCAL_SECRET_FILE)).mode & 0o777).toBe(0o600);
    expect(p.logs.find((l) => String(l['msg']).includes('listening'))).toMatchObject({
      auth: 'hs256',
      try: expect.stringContaining('buf curl') as unknown,
    });

    const Health = serviceConstructor(protos, 'grpc.health.v1.Health');
    const health = new Health(url.replace('http://', ''), grpc.credentials.createInsecure());
    expect((await unary<{ status: string }>(health, 'Check', { service: '' })).response?.status).toBe(
      'SERVING',
    );

    // A watcher sees the server go NOT_SERVING while it drains, then the process exits cleanly.
    const watch = (
      health as unknown as { Watch: (r: object) => grpc.ClientReadableStream<{ status: string }> }
    ).Watch({
      service: '',
    });
    const statuses: string[] = [];
    const watchEnded = new Promise<void>((resolve) => {
      watch.on('data', (m: { status: string }) => {
        statuses.push(m.status);
        if (statuses.length === 1) p.child.kill('SIGTERM');
      });
      watch.on('error', () => {
        resolve();
      });
      watch.on('end', () => {
        resolve();
      });
    });
    await watchEnded;
    expect(await p.exited).toBe(0);
    expect(statuses).toEqual(['SERVING', 'NOT_SERVING']);
    expect(p.logs.map((l) => l['msg'])).toEqual(
      expect.arrayContaining(['shutting down: draining in-flight calls', 'shutdown complete']),
    );
    health.close();
  });

  it('migrates its embedded database on first start, and reuses database and secret on the next', async () => {
    const dataDir = tempDir();
    const listeningLine = (p: EngramProcess) => p.logs.find((l) => String(l['msg']).includes('listening'));
    const first = start({ ENGRAM_PORT: '0', ENGRAM_DATA_DIR: dataDir });
    await first.listening;
    expect(listeningLine(first)).toMatchObject({
      store: join(dataDir, 'engram.db'),
      migrationsApplied: knownMigrations(),
    });
    const before = statSync(join(dataDir, LOCAL_SECRET_FILE)).mtimeMs;
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const second = start({ ENGRAM_PORT: '0', ENGRAM_DATA_DIR: dataDir });
    await second.listening;
    expect(listeningLine(second)).toMatchObject({ migrationsApplied: [] });
    expect(statSync(join(dataDir, LOCAL_SECRET_FILE)).mtimeMs).toBe(before);
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);
  });

  it('refuses bad configuration at start, naming the variable, with exit code 2', async () => {
    const p = start({ ENGRAM_PORT: 'http', ENGRAM_DATA_DIR: tempDir() });
    expect(await p.exited).toBe(2);
    expect(p.stderr()).toContain('ENGRAM_PORT: expected an integer from 0 to 65535');
  });

  it('warns loudly when started in insecure mode', async () => {
    const p = start({ ENGRAM_PORT: '0', ENGRAM_DATA_DIR: tempDir(), ENGRAM_AUTH_MODE: 'insecure' });
    await p.listening;
    expect(p.logs.find((l) => l['level'] === 40)?.['msg']).toContain('INSECURE MODE');
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });
});
