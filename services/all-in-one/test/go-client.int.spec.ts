import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { explainRun, newSecret, runCommand, startServer, tempDir, tokenFor } from './harness.js';

// A Go client generated from proto/ at test time with Debian's protoc, protoc-gen-go and
// protoc-gen-go-grpc (never committed), built offline against Debian's Go packages (a module-less
// GOPATH, GOPROXY=off) by clients/go/build.sh, runs clients/go/example against the server.
// Needs `bash scripts/ensure-go.sh`; fails, never skips, without it.

const SETUP =
  "run 'bash scripts/ensure-go.sh' (installs golang-go, protoc-gen-go, protoc-gen-go-grpc, golang-google-grpc-dev, golang-google-protobuf-dev, golang-github-golang-protobuf-1-5-dev, golang-google-genproto-dev, protobuf-compiler and libprotobuf-dev)";

/** What must exist for clients/go/build.sh to work offline; the same list as scripts/ensure-go.sh. */
const TOOLCHAIN = [
  '/usr/bin/go',
  '/usr/bin/protoc',
  '/usr/bin/protoc-gen-go',
  '/usr/bin/protoc-gen-go-grpc',
  '/usr/include/google/protobuf/timestamp.proto',
  '/usr/share/gocode/src/google.golang.org/grpc/server.go',
  '/usr/share/gocode/src/google.golang.org/protobuf/proto/proto.go',
  '/usr/share/gocode/src/github.com/golang/protobuf/proto/registry.go',
  '/usr/share/gocode/src/google.golang.org/genproto/googleapis/rpc/errdetails/error_details.pb.go',
];

/** Runs a command to its end (see `runCommand`). */
const run = (file: string, args: string[], env: Record<string, string>, timeoutMs: number) =>
  runCommand(file, args, { env, timeoutMs, setup: SETUP });
const explain = explainRun;

const secret = newSecret();
const out = tempDir();
const example = join(out, 'bin', 'engram-go-example');
let stop: (() => Promise<void>) | undefined;
let address: string;
let token: string;

beforeAll(async () => {
  const started = await startServer(secret);
  stop = started.stop;
  address = `127.0.0.1:${started.server.port}`;
  token = await tokenFor(secret, { subject: 'go-alice', tenantId: 'polyglot' });
}, 60_000);

afterAll(async () => {
  await stop?.();
});

describe('a Go client generated from proto/ and built offline with Debian Go packages', () => {
  it('has the toolchain: go, protoc with the Go plugins, and the Go sources of grpc, protobuf and genproto', () => {
    const missing = TOOLCHAIN.filter((path) => !existsSync(path));
    if (missing.length > 0) throw new Error(`missing ${missing.join(', ')}; ${SETUP}`);
  });

  it('generates, vets, unit-tests (the retry rule against a refusing gRPC server) and builds (clients/go/build.sh)', async () => {
    const result = await run('bash', ['clients/go/build.sh', out], {}, 240_000);
    if (result.code !== 0) throw new Error(`${explain('clients/go/build.sh', result)}\n${SETUP}`);
    expect(result.stdout).toMatch(/^ok\s+engram\.local\/go\/engram\s/m);
    expect(
      existsSync(join(out, 'src/engram.local/go/gen/engram/context/v1/context_service_grpc.pb.go')),
    ).toBe(true);
    // Only proto/engram is generated: the google/* types come from Debian's genproto.
    expect(existsSync(join(out, 'src/google.golang.org'))).toBe(false);
    expect(existsSync(example)).toBe(true);
  }, 300_000);

  it('runs clients/go/example: session, messages, list, search, context and error reasons all check out', async () => {
    const result = await run(
      example,
      [],
      { ENGRAM_ADDR: address, ENGRAM_TOKEN: token, ENGRAM_DEADLINE: '30' },
      120_000,
    );
    if (result.code !== 0) throw new Error(explain('clients/go/example', result));
    const line = result.stdout.split('\n').find((l) => l.startsWith('engram_go: OK '));
    expect(line).toBeDefined();
    // The summary holds names and counts only (no token, no content): worth seeing in CI logs.
    process.stderr.write(`${line!}\n`);
    const summary = JSON.parse(line!.slice('engram_go: OK '.length)) as Record<string, unknown>;
    expect(summary).toMatchObject({
      session: expect.stringMatching(/^sessions\/[0-9A-Z]{26}$/),
      messagesAppended: 3,
      messagesListed: 3,
      listPages: 2,
      searchHits: expect.any(Number),
      searchAttempts: expect.any(Number),
      roundFound: expect.stringMatching(/^sessions\/[0-9A-Z]{26}\/messages\/[0-9A-Za-z]+$/),
      contextMessages: expect.any(Number),
      budgetTokens: 2000,
      errorReasons: { noToken: 'TOKEN_MISSING', missingSession: 'RESOURCE_NOT_FOUND' },
    });
    expect(summary['roundFound']).toMatch(new RegExp(`^${String(summary['session'])}/messages/`));
    expect(summary['searchHits']).toBeGreaterThanOrEqual(1);
    expect(summary['contextMessages']).toBeGreaterThanOrEqual(2);
    expect(summary['contextTokens']).toBeLessThanOrEqual(2000);
    const layers = summary['layers'] as Record<string, number>;
    expect(layers['CONTEXT_LAYER_RECENT_TURNS']).toBeGreaterThan(0);
    expect(layers['CONTEXT_LAYER_USER_MESSAGE']).toBeGreaterThan(0);
  }, 150_000);
});
