import { execFile } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { RetrievalService } from '@engram/contracts/retrieval';
import { ProcessAdmission, admitted, registration, type EngramServer } from '@engram/runtime';
import { serveOnLoopback } from '../../../libs/runtime/test/module-testbed.js';

// The CLI against a real server whose Search is behind a process admission gate of one slot and
// no queue: while the test holds that slot, the CLI's Search is refused OVERLOADED with a
// RetryInfo, and the CLI retries after the delay (real gRPC over a socket, the CLI a child process).

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
let gate: ProcessAdmission;
let search: ReturnType<typeof gated>;
let arrivals = 0;
/** Resolvers waiting for the server to have seen a number of Search calls. */
let arrivalWaiters: { count: number; resolve: () => void }[] = [];
let hold: Promise<void> | undefined;
let releaseHold: (() => void) | undefined;
let server: EngramServer;
let token: string;

function gated(admission: ProcessAdmission) {
  return admitted(admission, async () => {
    await hold;
    return { results: [], stats: { degraded: true } };
  });
}

/** A new gate per test: without execution history, a refusal's retry delay is the bound, 150 ms. */
function freshGate(): void {
  gate = new ProcessAdmission(
    { maxConcurrent: 1, maxQueue: 0, maxQueueWaitMs: 150 },
    { method: `${RetrievalService.typeName}/Search` },
  );
  search = gated(gate);
  arrivals = 0;
}

beforeAll(async () => {
  ({ server, token } = await serveOnLoopback([
    registration(RetrievalService, {
      search: (request, context) => {
        arrivals += 1;
        arrivalWaiters = arrivalWaiters.filter((w) => (w.count <= arrivals ? (w.resolve(), false) : true));
        return search(request, context);
      },
    }),
  ]));
});
afterEach(() => {
  releaseHold?.();
});
afterAll(async () => {
  await server.shutdown();
});

/** Takes the gate's only slot with a call of the test's own, until `releaseHold`. */
async function holdTheSlot(): Promise<{ held: Promise<unknown> }> {
  hold = new Promise<void>((resolveHold) => (releaseHold = resolveHold));
  const client = createClient(RetrievalService, createGrpcTransport({ baseUrl: server.url }));
  const held = client.search({ query: 'held' }, { headers: { authorization: `Bearer ${token}` } });
  await arrived(1);
  // Wrapped: an async function returning the promise itself would wait for it.
  return { held };
}

/** Resolves once the server has seen `count` Search calls (they are admitted or refused at once). */
function arrived(count: number): Promise<void> {
  if (arrivals >= count) return Promise.resolve();
  return new Promise((resolveArrival) => arrivalWaiters.push({ count, resolve: resolveArrival }));
}

function cli(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    execFile(
      process.execPath,
      ['--conditions=@engram/source', '--import', 'tsx', 'apps/cli/src/main.ts', ...args],
      {
        cwd: repoRoot,
        env: { PATH: process.env['PATH'] ?? '', ENGRAM_ADDR: server.url, ENGRAM_TOKEN: token },
        timeout: 30_000,
      },
      (error, stdout, stderr) => {
        resolveRun({
          code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1,
          stdout,
          stderr,
        });
      },
    );
  });
}

describe('the engram CLI against an overloaded server', () => {
  it('retries a Search refused OVERLOADED after the RetryInfo delay and succeeds', async () => {
    freshGate();
    const { held } = await holdTheSlot();
    const run = cli(['--json', 'search', 'lisbon offsite']);
    // The CLI's first attempt arrives and is refused at once (the slot is taken, no queue).
    await arrived(2);
    releaseHold?.();
    await held;
    const result = await run;
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ stats: { degraded: true } });
    // The held call, the refused attempt, and at least one retry.
    expect(arrivals).toBeGreaterThanOrEqual(3);
  });

  it('gives up after its attempts and reports OVERLOADED when the server stays overloaded', async () => {
    freshGate();
    const { held } = await holdTheSlot();
    const result = await cli(['--json', 'search', 'lisbon offsite']);
    releaseHold?.();
    await held;
    expect(result.code).toBe(1);
    const error = (JSON.parse(result.stdout) as { error: { reason: string; code: string } }).error;
    expect(error).toMatchObject({ code: 'RESOURCE_EXHAUSTED', reason: 'OVERLOADED' });
    // The held call and four attempts of the CLI (DEFAULT_RETRY_POLICY.maxAttempts).
    expect(arrivals).toBe(1 + 4);
  });
});
