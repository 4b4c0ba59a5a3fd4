import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fromBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { ErrorInfoSchema, StatusSchema, type ErrorInfo } from '@engram/contracts/grpc';

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

/** A real `npm start`-equivalent process (same entry point), with its parsed log lines. */
export interface EngramProcess {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  readonly logs: Record<string, unknown>[];
  readonly stderr: () => string;
  readonly exited: Promise<number | null>;
  /** Resolves with the listening URL, or rejects if the process exits first. */
  readonly listening: Promise<string>;
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
    let buffered = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          if (typeof entry['url'] === 'string' && String(entry['msg']).includes('listening'))
            resolveUrl(entry['url']);
        } catch {
          // not a log line
        }
      }
    });
    void exited.then((code) => {
      reject(new Error(`process exited with ${String(code)} before listening: ${stderr}`));
    });
  });
  listening.catch(() => undefined);
  return { child, logs, stderr: () => stderr, exited, listening };
}
