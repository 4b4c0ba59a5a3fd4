import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { newSecret, repoRoot, startServer, tempDir, tokenFor } from './harness.js';

// The polyglot proof: a Python client generated from proto/ at test time with Debian's protoc and
// gRPC Python plugin (never committed) runs clients/python/engram_smoke.py against the server.
// Needs `bash scripts/ensure-python.sh` (scripts/test.sh runs it); fails, never skips, without it.

const PYTHON = '/usr/bin/python3';
const SETUP =
  "run 'bash scripts/ensure-python.sh' (installs protobuf-compiler, protobuf-compiler-grpc, libprotobuf-dev, python3-grpcio and python3-protobuf)";

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end and resolves with its exit code and output (never rejects on exit codes). */
function run(file: string, args: string[], env: Record<string, string>, timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { cwd: repoRoot, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env }, timeout: timeoutMs },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code === 'string') {
          reject(new Error(`could not run ${file}: ${error.message}. ${SETUP}`));
          return;
        }
        resolve({
          code: error === null ? 0 : typeof error.code === 'number' ? error.code : null,
          stdout,
          stderr,
        });
      },
    );
  });
}

function explain(what: string, result: Run): string {
  return `${what} exited with ${String(result.code)}\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`;
}

const secret = newSecret();
const generated = tempDir();
let stop: (() => Promise<void>) | undefined;
let address: string;
let token: string;

beforeAll(async () => {
  const started = await startServer(secret);
  stop = started.stop;
  address = `127.0.0.1:${started.server.port}`;
  token = await tokenFor(secret, { subject: 'py-alice', tenantId: 'polyglot' });
}, 60_000);

afterAll(async () => {
  await stop?.();
});

describe('a Python client generated from proto/ with Debian protoc', () => {
  it('has the toolchain: /usr/bin/python3 with grpcio and protobuf, protoc and the gRPC Python plugin', async () => {
    if (!existsSync(PYTHON)) throw new Error(`${PYTHON} does not exist; ${SETUP}`);
    const modules = await run(PYTHON, ['-c', 'import grpc, google.protobuf'], {}, 30_000);
    if (modules.code !== 0)
      throw new Error(`${PYTHON} cannot import grpc and google.protobuf; ${SETUP}\n${modules.stderr}`);
    for (const tool of [
      '/usr/bin/protoc',
      '/usr/bin/grpc_python_plugin',
      '/usr/include/google/protobuf/timestamp.proto',
    ]) {
      if (!existsSync(tool)) throw new Error(`${tool} is missing; ${SETUP}`);
    }
  });

  it('generates the client into a temporary directory (clients/python/generate.sh)', async () => {
    const result = await run('bash', ['clients/python/generate.sh', generated], {}, 60_000);
    if (result.code !== 0) throw new Error(`${explain('clients/python/generate.sh', result)}\n${SETUP}`);
    for (const module of [
      'engram/ingestion/v1/ingestion_service_pb2_grpc.py',
      'engram/retrieval/v1/retrieval_service_pb2_grpc.py',
      'engram/context/v1/context_service_pb2_grpc.py',
      'engram/governance/v1/governance_service_pb2_grpc.py',
      'google/rpc/error_details_pb2.py',
    ]) {
      expect(existsSync(join(generated, module))).toBe(true);
    }
    // grpc/health is left out on purpose: a generated top-level `grpc` package shadows grpcio.
    expect(existsSync(join(generated, 'grpc'))).toBe(false);
  });

  it('passes clients/python/test_engram_smoke.py: the retry policy, and retries against a refusing gRPC server', async () => {
    const result = await run(
      PYTHON,
      ['-B', '-m', 'unittest', '-v', 'clients/python/test_engram_smoke.py'],
      { PYTHONPATH: `${generated}:${join(repoRoot, 'clients/python')}` },
      60_000,
    );
    if (result.code !== 0) throw new Error(explain('clients/python/test_engram_smoke.py', result));
    expect(result.stderr).toMatch(/Ran \d+ tests/);
    expect(result.stderr).toMatch(/\nOK\s*$/);
  });

  it('runs clients/python/engram_smoke.py: session, messages, document, search and context all check out', async () => {
    const result = await run(
      PYTHON,
      ['clients/python/engram_smoke.py'],
      { ENGRAM_ADDR: address, ENGRAM_TOKEN: token, ENGRAM_DEADLINE: '30', PYTHONPATH: generated },
      90_000,
    );
    if (result.code !== 0) throw new Error(explain('clients/python/engram_smoke.py', result));
    const line = result.stdout.split('\n').find((l) => l.startsWith('engram_smoke: OK '));
    expect(line).toBeDefined();
    const summary = JSON.parse(line!.slice('engram_smoke: OK '.length)) as Record<string, unknown>;
    expect(summary).toMatchObject({
      session: expect.stringMatching(/^sessions\/[0-9A-Z]{26}$/),
      messagesAppended: 3,
      document: expect.stringMatching(/^documents\/[0-9A-Z]{26}$/),
      searchHits: expect.any(Number),
      contextMessages: expect.any(Number),
      budgetTokens: 2000,
    });
    expect(summary['searchHits']).toBeGreaterThanOrEqual(1);
    // The script itself checks the contents: the recent turns, the ingested chunk, the user message last.
    expect(summary['contextMessages']).toBeGreaterThanOrEqual(2);
    expect(summary['contextTokens']).toBeLessThanOrEqual(2000);
    expect(summary['layers']).toMatchObject({
      CONTEXT_LAYER_RECENT_TURNS: expect.any(Number),
      CONTEXT_LAYER_RETRIEVED_KNOWLEDGE: expect.any(Number),
      CONTEXT_LAYER_USER_MESSAGE: expect.any(Number),
    });
    const layers = summary['layers'] as Record<string, number>;
    expect(layers['CONTEXT_LAYER_RECENT_TURNS']).toBeGreaterThan(0);
    expect(layers['CONTEXT_LAYER_RETRIEVED_KNOWLEDGE']).toBeGreaterThan(0);
  }, 120_000);
});
