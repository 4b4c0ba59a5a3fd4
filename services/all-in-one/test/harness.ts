import { execFile, spawn, type ChildProcessByStdio } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { fromBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { ConnectError, createClient, type Client, type Code, type Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ContextService } from '@engram/contracts/context';
import { GovernanceService } from '@engram/contracts/governance';
import { ErrorInfoSchema, StatusSchema, type ErrorInfo } from '@engram/contracts/grpc';
import { IngestionService } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { errorInfoOf, mintToken, type EngramServer, type TokenClaims } from '@engram/runtime';
import { migrateToLatest, openStore } from '@engram/store';
import { createAllInOneServer, loadConfig } from '../src/index.js';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const protoRoot = join(repoRoot, 'proto');

/** A plain @grpc/grpc-js view of the contracts, loaded from the .proto files (no generated code). */
export function loadProtos(): grpc.GrpcObject {
  const definition = protoLoader.loadSync(
    [
      'engram/governance/v1/governance_service.proto',
      'engram/ingestion/v1/ingestion_service.proto',
      'engram/retrieval/v1/retrieval_service.proto',
      'engram/context/v1/context_service.proto',
      'grpc/health/v1/health.proto',
      'grpc/reflection/v1/reflection.proto',
    ],
    { includeDirs: [protoRoot], longs: String, enums: String, defaults: true, oneofs: true },
  );
  return grpc.loadPackageDefinition(definition);
}

/** A grpc-js client of `fullName` (e.g. `engram.ingestion.v1.IngestionService`) on `address` (host:port), without TLS. */
export function grpcClient(protos: grpc.GrpcObject, fullName: string, address: string): grpc.Client {
  return new (serviceConstructor(protos, fullName))(address, grpc.credentials.createInsecure());
}

type Constructor = new (address: string, credentials: grpc.ChannelCredentials) => grpc.Client;

/** A client constructor by its full service name, e.g. `grpc.health.v1.Health`. */
export function serviceConstructor(protos: grpc.GrpcObject, fullName: string): Constructor {
  let node: unknown = protos;
  for (const part of fullName.split('.')) node = (node as Record<string, unknown>)[part];
  if (typeof node !== 'function') throw new Error(`no service ${fullName} in the loaded protos`);
  return node as Constructor;
}

/** Calls a unary method of a grpc-js client and resolves with the response or the ServiceError. */
export function unary<T>(
  client: grpc.Client,
  method: string,
  request: object,
  options: { metadata?: grpc.Metadata; deadlineMs?: number } = {},
): Promise<{ response?: T; error?: grpc.ServiceError }> {
  const fn = (client as unknown as Record<string, (...args: unknown[]) => void>)[method];
  if (fn === undefined) throw new Error(`no method ${method}`);
  const callOptions: grpc.CallOptions =
    options.deadlineMs === undefined ? {} : { deadline: Date.now() + options.deadlineMs };
  return new Promise((resolvePromise) => {
    fn.call(
      client,
      request,
      options.metadata ?? new grpc.Metadata(),
      callOptions,
      (error: grpc.ServiceError | null, response: T) => {
        resolvePromise(error === null ? { response } : { error });
      },
    );
  });
}

/** The google.rpc.ErrorInfo carried in `grpc-status-details-bin`, if any. */
export function errorInfo(error: grpc.ServiceError): ErrorInfo | undefined {
  const [details] = error.metadata.get('grpc-status-details-bin');
  if (details === undefined) return undefined;
  const status = fromBinary(StatusSchema, details as Buffer);
  for (const detail of status.details) {
    const info = anyUnpack(detail, ErrorInfoSchema);
    if (info !== undefined) return info;
  }
  return undefined;
}

export function bearer(token: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${token}`);
  return metadata;
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'engram-test-'));
}

/** A fresh data directory whose embedded database is at the latest schema (services started on their own do not migrate). */
export async function migratedDataDir(): Promise<string> {
  const dataDir = tempDir();
  const store = openStore({ target: join(dataDir, 'engram.db') });
  await migrateToLatest(store.db);
  await store.close();
  return dataDir;
}

/** A fresh random HS256 secret (hex), for ENGRAM_JWT_SECRET. */
export function newSecret(): string {
  return randomBytes(32).toString('hex');
}

/**
 * The service secret of a test deployment whose user-facing secret is `secret` (the servers'
 * ENGRAM_SERVICE_JWT_SECRET): distinct from it, as the server requires (decision 0024).
 */
export function serviceSecretOf(secret: string): string {
  return `${secret}:service`;
}

/**
 * A bearer token for `claims`, signed with the HS256 `secret` (the server's ENGRAM_JWT_SECRET),
 * or, for `service`-role claims, with its service secret ({@link serviceSecretOf}).
 */
export function tokenFor(secret: string, claims: TokenClaims): Promise<string> {
  const key = claims.roles?.includes('service') === true ? serviceSecretOf(secret) : secret;
  return mintToken(claims, { algorithm: 'HS256', secret: new TextEncoder().encode(key) });
}

/** Connect call options carrying a bearer token for `claims`. */
export async function authorized(
  secret: string,
  claims: TokenClaims,
): Promise<{ headers: { authorization: string } }> {
  return { headers: { authorization: `Bearer ${await tokenFor(secret, claims)}` } };
}

/** `as(subject, { orgIds, roles })`: call options for `subject` of tenant `tenantId`, signed with `secret`. */
export function callerOf(secret: string, tenantId = 'acme') {
  return (subject: string, options: Pick<TokenClaims, 'orgIds' | 'roles'> = {}) =>
    authorized(secret, { subject, tenantId, ...options });
}

/**
 * Bearer tokens minted once per principal (orgs and roles in any order), for the suites that make
 * thousands of calls as a few hundred principals.
 */
export class TokenCache {
  readonly #secret: string;
  readonly #tokens = new Map<string, Promise<string>>();

  constructor(secret: string) {
    this.#secret = secret;
  }

  /** The `authorization` header for `claims`. */
  async headers(claims: TokenClaims): Promise<{ authorization: string }> {
    const id = JSON.stringify([
      claims.tenantId,
      claims.subject,
      [...(claims.orgIds ?? [])].sort(),
      [...(claims.roles ?? [])].sort(),
    ]);
    let token = this.#tokens.get(id);
    if (token === undefined) {
      token = tokenFor(this.#secret, {
        subject: claims.subject,
        tenantId: claims.tenantId,
        orgIds: [...(claims.orgIds ?? [])],
        roles: [...(claims.roles ?? [])],
      });
      this.#tokens.set(id, token);
    }
    return { authorization: `Bearer ${await token}` };
  }
}

/** The four services' clients over one HTTP/2 connection. */
export interface EngramClients {
  readonly governance: Client<typeof GovernanceService>;
  readonly ingestion: Client<typeof IngestionService>;
  readonly retrieval: Client<typeof RetrievalService>;
  readonly context: Client<typeof ContextService>;
}

/** Connect clients of the four services over `transport`. */
export function engramClients(transport: Transport): EngramClients {
  return {
    governance: createClient(GovernanceService, transport),
    ingestion: createClient(IngestionService, transport),
    retrieval: createClient(RetrievalService, transport),
    context: createClient(ContextService, transport),
  };
}

/** An in-process all-in-one server, its data directory and its clients. */
export interface TestServer extends EngramClients {
  readonly server: EngramServer;
  readonly dataDir: string;
  /** gRPC over HTTP/2 to the server, shared by the clients. */
  readonly transport: Transport;
  /** `server.shutdown()`. */
  readonly stop: () => Promise<void>;
}

/**
 * The all-in-one on its embedded defaults (SQLite, embedded index) in this process: port 0, HS256
 * `secret`, logs off, a fresh data directory unless `dataDir` is given; `env` adds or overrides
 * settings.
 */
export async function startServer(
  secret: string,
  { dataDir = tempDir(), env = {} }: { dataDir?: string; env?: Record<string, string> } = {},
): Promise<TestServer> {
  const { server } = await createAllInOneServer(
    loadConfig({
      ENGRAM_PORT: '0',
      ENGRAM_JWT_SECRET: secret,
      ENGRAM_SERVICE_JWT_SECRET: serviceSecretOf(secret),
      ENGRAM_DATA_DIR: dataDir,
      ENGRAM_LOG_LEVEL: 'silent',
      ...env,
    }),
    { handleSignals: false },
  );
  const transport = createGrpcTransport({ baseUrl: server.url });
  return { server, dataDir, transport, stop: () => server.shutdown(), ...engramClients(transport) };
}

/** The gRPC code and ErrorInfo of a call that must fail (throws when it succeeds). */
export async function failure(
  call: Promise<unknown>,
): Promise<{ code: Code; reason: string | undefined; metadata: Record<string, string> }> {
  try {
    await call;
  } catch (error) {
    const e = ConnectError.from(error);
    const info = errorInfoOf(e);
    return { code: e.code, reason: info?.reason, metadata: info?.metadata ?? {} };
  }
  throw new Error('expected the call to fail');
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Runs `run` over `tasks` with at most `concurrency` in flight, in order of the list. */
export async function pool<T>(tasks: readonly T[], concurrency: number, run: (task: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < tasks.length) await run(tasks[next++]!);
    }),
  );
}

/** The seed of a randomized suite: ENGRAM_ISOLATION_SEED to replay a failure, else the clock. */
export function isolationSeed(): number {
  const fromEnv = process.env['ENGRAM_ISOLATION_SEED'];
  return fromEnv !== undefined && fromEnv !== '' ? Number(fromEnv) >>> 0 : Date.now() >>> 0;
}

/** A real `npm start`-equivalent process (same entry point), with its parsed log lines. */
export interface EngramProcess {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  readonly logs: Record<string, unknown>[];
  readonly stderr: () => string;
  readonly exited: Promise<number | null>;
  /** Resolves with the listening URL, or rejects if the process exits first. */
  readonly listening: Promise<string>;
}

/** Calls `onEntry` with each JSON line `stream` writes (the process's log lines; other lines are skipped). */
export function onLogLines(stream: Readable, onEntry: (entry: Record<string, unknown>) => void): void {
  let buffered = '';
  stream.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      let entry: unknown;
      try {
        entry = JSON.parse(line);
      } catch {
        continue; // not a log line
      }
      if (typeof entry === 'object' && entry !== null) onEntry(entry as Record<string, unknown>);
    }
  });
}

export function startProcess(env: Record<string, string>): EngramProcess {
  const child = spawn(
    process.execPath,
    ['--conditions=@engram/source', '--import', 'tsx', 'services/all-in-one/src/main.ts'],
    { cwd: repoRoot, env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolveExit) =>
    child.on('exit', (code) => {
      resolveExit(code);
    }),
  );
  const listening = new Promise<string>((resolveUrl, reject) => {
    onLogLines(child.stdout, (entry) => {
      logs.push(entry);
      if (typeof entry['url'] === 'string' && String(entry['msg']).includes('listening'))
        resolveUrl(entry['url']);
    });
    void exited.then((code) => {
      reject(new Error(`process exited with ${String(code)} before listening: ${stderr}`));
    });
  });
  listening.catch(() => undefined);
  return { child, logs, stderr: () => stderr, exited, listening };
}

/** How a command run by {@link runCommand} ended. */
export interface CommandRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a command to its end and resolves with its exit code and output; never rejects on an exit
 * status, only when the command cannot start (then with `setup`, the advice on installing it).
 * The environment is `PATH` and `HOME` plus `env`, or the whole of this process's with `inherit`.
 */
export function runCommand(
  file: string,
  args: readonly string[],
  options: {
    readonly env?: Record<string, string>;
    readonly timeoutMs: number;
    readonly cwd?: string;
    readonly inherit?: boolean;
    readonly setup?: string;
  },
): Promise<CommandRun> {
  const base = options.inherit
    ? process.env
    : { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: process.env['HOME'] ?? '/tmp' };
  return new Promise((resolveRun, reject) => {
    execFile(
      file,
      args,
      {
        cwd: options.cwd ?? repoRoot,
        env: { ...base, ...options.env },
        timeout: options.timeoutMs,
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code === 'string') {
          reject(new Error(`could not run ${file}: ${error.message}. ${options.setup ?? ''}`));
          return;
        }
        resolveRun({
          code: error === null ? 0 : typeof error.code === 'number' ? error.code : null,
          stdout,
          stderr,
        });
      },
    );
  });
}

/** A failed command's exit code and output, for a test's failure message. */
export function explainRun(what: string, result: CommandRun): string {
  return `${what} exited with ${String(result.code)}\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`;
}
