import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  startScriptedOpenAI,
  type RecordedRequest,
  type ScriptedOpenAI,
  type ScriptedReply,
} from '../../../libs/llm/test/scripted-openai.js';
import { explainRun, newSecret, repoRoot, runCommand, startServer, tempDir, tokenFor } from './harness.js';

// The Python SDK (clients/python, distribution engram-client) as a user gets it: its wheel is
// built offline (clients/python/build.sh: code generated from proto/ with Debian's protoc, never
// committed), installed into a fresh virtual environment over Debian's grpcio and protobuf, and
// its pytest suite (clients/python/tests) runs from that environment against this live server.
// The chat model is the scripted OpenAI-compatible server (the one allowed fake); a second server
// without a model answers the tests of what happens without one. Needs
// `bash scripts/ensure-python.sh` (scripts/test.sh runs it); fails, never skips, without it.

const PYTHON = '/usr/bin/python3';
const SETUP =
  "run 'bash scripts/ensure-python.sh' (installs protobuf-compiler, protobuf-compiler-grpc, libprotobuf-dev, python3-grpcio, python3-protobuf, python3-pytest, python3-venv, python3-setuptools and python3-pip)";
/** What the scripted model answers to every chat turn; the Python test expects exactly this. */
const CHAT_REPLY = 'The offsite is in Lisbon, in a venue with a quiet workshop room.';

/** Runs a command to its end (see `runCommand`). */
const run = (file: string, args: string[], env: Record<string, string>, timeoutMs: number, cwd = repoRoot) =>
  runCommand(file, args, { env, timeoutMs, cwd, setup: SETUP });
const explain = explainRun;

const secret = newSecret();
const work = tempDir();
const venv = join(work, 'venv');
let model: ScriptedOpenAI;
let stop: (() => Promise<void>) | undefined;
let stopWithoutModel: (() => Promise<void>) | undefined;
let address: string;
let addressWithoutModel: string;
let wheel: string;

beforeAll(async () => {
  model = await startScriptedOpenAI((request: RecordedRequest): ScriptedReply =>
    request.body.stream === true
      ? { content: CHAT_REPLY }
      : { status: 500, message: 'only streamed chat replies are scripted' },
  );
  const started = await startServer(secret, {
    env: {
      ENGRAM_LLM_BASE_URL: model.baseURL,
      ENGRAM_LLM_MODEL: 'scripted-model',
      ENGRAM_LLM_API_KEY: 'test-key',
      ENGRAM_LLM_MAX_RETRIES: '0',
    },
  });
  stop = started.stop;
  address = `127.0.0.1:${started.server.port}`;
  const withoutModel = await startServer(secret);
  stopWithoutModel = withoutModel.stop;
  addressWithoutModel = `127.0.0.1:${withoutModel.server.port}`;
}, 60_000);

afterAll(async () => {
  await stop?.();
  await stopWithoutModel?.();
  await model.close();
});

describe('the Python SDK engram-client', () => {
  it('has the toolchain: /usr/bin/python3 with grpcio, protobuf, pytest, venv, setuptools and pip; protoc and the gRPC plugin', async () => {
    if (!existsSync(PYTHON)) throw new Error(`${PYTHON} does not exist; ${SETUP}`);
    const modules = await run(
      PYTHON,
      ['-c', 'import grpc, google.protobuf, pytest, venv, setuptools, pip'],
      {},
      30_000,
    );
    if (modules.code !== 0) throw new Error(`${PYTHON} lacks a module; ${SETUP}\n${modules.stderr}`);
    for (const tool of [
      '/usr/bin/protoc',
      '/usr/bin/grpc_python_plugin',
      '/usr/include/google/protobuf/timestamp.proto',
    ]) {
      if (!existsSync(tool)) throw new Error(`${tool} is missing; ${SETUP}`);
    }
  });

  it('builds a wheel offline (clients/python/build.sh) with the generated code and without grpc/health', async () => {
    const result = await run('bash', ['clients/python/build.sh', join(work, 'dist')], {}, 120_000);
    if (result.code !== 0) throw new Error(`${explain('clients/python/build.sh', result)}\n${SETUP}`);
    wheel = result.stdout.trim().split('\n').pop() ?? '';
    expect(wheel).toMatch(/engram_client-0\.1\.0-py3-none-any\.whl$/);
    const listing = await run(
      PYTHON,
      ['-c', 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))', wheel],
      {},
      30_000,
    );
    const files = listing.stdout.split('\n');
    for (const module of [
      'engram_client/__init__.py',
      'engram_client/py.typed',
      'engram/ingestion/v1/ingestion_service_pb2_grpc.py',
      'engram/governance/v1/memory_pb2.pyi',
      'google/rpc/error_details_pb2.py',
    ]) {
      expect(files).toContain(module);
    }
    // A generated top-level `grpc` would shadow grpcio; a google/__init__.py would hide protobuf's.
    expect(files.filter((f) => f.startsWith('grpc/') || f === 'google/__init__.py')).toEqual([]);
  }, 150_000);

  it('installs the wheel into a fresh virtual environment over Debian grpcio and protobuf', async () => {
    const created = await run(PYTHON, ['-m', 'venv', '--system-site-packages', venv], {}, 60_000);
    if (created.code !== 0) throw new Error(`${explain('python3 -m venv', created)}\n${SETUP}`);
    const installed = await run(
      join(venv, 'bin/python'),
      ['-m', 'pip', 'install', '--no-deps', '--no-index', '--disable-pip-version-check', wheel],
      {},
      120_000,
    );
    if (installed.code !== 0) throw new Error(explain('pip install', installed));
    const imported = await run(
      join(venv, 'bin/python'),
      [
        '-c',
        'import engram_client, google.protobuf, google.rpc.status_pb2 as s; print(engram_client.__version__, engram_client.__file__)',
      ],
      {},
      30_000,
      work,
    );
    if (imported.code !== 0) throw new Error(explain('import engram_client', imported));
    expect(imported.stdout).toContain(`0.1.0 ${venv}/`);
  }, 180_000);

  it('passes its pytest suite against this server: sessions, memories, search, context, documents, errors, chat, retries', async () => {
    const [token, tokenOther] = await Promise.all([
      tokenFor(secret, { subject: 'py-alice', tenantId: 'polyglot' }),
      tokenFor(secret, { subject: 'py-bob', tenantId: 'polyglot' }),
    ]);
    const result = await run(
      join(venv, 'bin/python'),
      ['-m', 'pytest', '-p', 'no:cacheprovider', '-q', '-rA', 'clients/python/tests'],
      {
        ENGRAM_ADDR: address,
        ENGRAM_TOKEN: token,
        ENGRAM_TOKEN_OTHER: tokenOther,
        ENGRAM_CHAT_REPLY: CHAT_REPLY,
        ENGRAM_ADDR_NO_MODEL: addressWithoutModel,
        PYTHONDONTWRITEBYTECODE: '1',
      },
      240_000,
    );
    if (result.code !== 0) throw new Error(explain('pytest clients/python/tests', result));
    const summary = /^(?:=+ )?(\d+ \w+.*?) in [\d.]+s(?: =+)?$/m.exec(result.stdout)?.[1] ?? '';
    expect(summary).toMatch(/^\d+ passed$/); // no failed, error, skipped or xfailed
    expect(Number(/^(\d+) passed$/.exec(summary)?.[1])).toBeGreaterThanOrEqual(43);
    // The tests that ran from the installed wheel, not from the source tree.
    expect(result.stdout).toContain('PASSED clients/python/tests/test_server.py::TestChat::');
    expect(result.stdout).toContain(
      'PASSED clients/python/tests/test_retry.py::TestRetriesAgainstARealServer::',
    );
  }, 300_000);

  it('runs clients/python/examples/quickstart.py from the environment: every step of the tour succeeds', async () => {
    const token = await tokenFor(secret, { subject: 'py-carol', tenantId: 'polyglot' });
    const result = await run(
      join(venv, 'bin/python'),
      ['-B', 'clients/python/examples/quickstart.py'],
      { ENGRAM_ADDR: address, ENGRAM_TOKEN: token },
      120_000,
    );
    if (result.code !== 0) throw new Error(explain('quickstart.py', result));
    expect(result.stdout).toMatch(/^session sessions\/[0-9A-Z]{26}: 3 messages$/m);
    expect(result.stdout).toMatch(/^memory memories\/\S+: DECISION_OUTCOME_ACCEPTED$/m);
    expect(result.stdout).toMatch(/^ {2}ingest: INGEST_PHASE_RECEIVING, /m);
    expect(result.stdout).toMatch(/^document documents\/\S+: [1-9]\d* chunks$/m);
    expect(result.stdout).toMatch(/^ {2}hit documents\/\S+\/chunks\/\S+ score /m);
    expect(result.stdout.trimEnd().split('\n').pop()).toBe('quickstart: OK');
  }, 150_000);
});
