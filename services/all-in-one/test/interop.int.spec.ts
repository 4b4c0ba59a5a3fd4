import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { engramServices } from '@engram/contracts/registry';
import { mintToken } from '@engram/runtime';
import {
  bearer,
  errorInfo,
  grpcClient,
  loadProtos,
  newSecret,
  repoRoot,
  startServer,
  tokenFor,
  unary,
} from './harness.js';

const run = promisify(execFile);
const secret = newSecret();
const SERVICES = engramServices.map((s) => s.typeName);

let stop: () => Promise<void>;
let address: string;
let url: string;
let token: string;
const protos = loadProtos();
const clients: grpc.Client[] = [];

function client(fullName: string): grpc.Client {
  const created = grpcClient(protos, fullName, address);
  clients.push(created);
  return created;
}

beforeAll(async () => {
  const started = await startServer(secret, { env: { ENGRAM_MAX_MESSAGE_BYTES: '65536' } });
  stop = started.stop;
  address = `127.0.0.1:${started.server.port}`;
  url = started.server.url;
  token = await tokenFor(secret, { subject: 'alice', tenantId: 't1' });
});

afterAll(async () => {
  for (const c of clients) c.close();
  await stop();
});

describe('the all-in-one server, called by a plain @grpc/grpc-js client over HTTP/2', () => {
  it('reports every service and the server as SERVING through grpc.health.v1', async () => {
    const health = client('grpc.health.v1.Health');
    for (const service of ['', ...SERVICES]) {
      const { response, error } = await unary<{ status: string }>(health, 'Check', { service });
      expect(error).toBeUndefined();
      expect(response?.status).toBe('SERVING');
    }
    const unknown = await unary(health, 'Check', { service: 'nope.v1.Nope' });
    expect(unknown.error?.code).toBe(grpc.status.NOT_FOUND);
  });

  it('answers a call without a token with UNAUTHENTICATED and ErrorInfo TOKEN_MISSING', async () => {
    const { error } = await unary(client('engram.governance.v1.GovernanceService'), 'GetMemory', {
      name: 'memories/01JD7Z5Q2G8V6K3M9T1R4X0B2C',
    });
    expect(error?.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(error && errorInfo(error)).toMatchObject({ reason: 'TOKEN_MISSING', domain: 'engram.governance' });
  });

  it('answers a token signed with another secret with UNAUTHENTICATED TOKEN_SIGNATURE_INVALID', async () => {
    const forged = await mintToken(
      { subject: 'mallory', tenantId: 't1' },
      { algorithm: 'HS256', secret: randomBytes(32) },
    );
    const { error } = await unary(
      client('engram.retrieval.v1.RetrievalService'),
      'Search',
      { query: 'x' },
      {
        metadata: bearer(forged),
      },
    );
    expect(error?.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(error && errorInfo(error)?.reason).toBe('TOKEN_SIGNATURE_INVALID');
  });

  it('answers a call with a missing field with INVALID_ARGUMENT and the field in its ErrorInfo', async () => {
    for (const [service, method, field] of [
      ['engram.context.v1.ContextService', 'BuildContext', 'session'],
      ['engram.context.v1.ContextService', 'GetSessionState', 'name'],
    ] as const) {
      const { error } = await unary(client(service), method, {}, { metadata: bearer(token) });
      expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(error?.details).toContain(`${field} is required`);
      expect(error && errorInfo(error)).toMatchObject({
        reason: 'FIELD_REQUIRED',
        domain: 'engram.context',
        metadata: { field },
      });
    }
  });

  it('ends a call at its deadline with DEADLINE_EXCEEDED', async () => {
    const health = client('grpc.health.v1.Health');
    const call = (
      health as unknown as {
        Watch: (req: object, options: grpc.CallOptions) => grpc.ClientReadableStream<{ status: string }>;
      }
    ).Watch({ service: '' }, { deadline: Date.now() + 300 });
    const statuses: string[] = [];
    const code = await new Promise<number>((resolve) => {
      call.on('data', (message: { status: string }) => statuses.push(message.status));
      call.on('error', (error: grpc.ServiceError) => {
        resolve(error.code);
      });
      call.on('end', () => {
        resolve(grpc.status.OK);
      });
    });
    expect(statuses).toEqual(['SERVING']);
    expect(code).toBe(grpc.status.DEADLINE_EXCEEDED);
  });

  it('refuses a request larger than the maximum message size with RESOURCE_EXHAUSTED', async () => {
    const { error } = await unary(
      client('engram.governance.v1.GovernanceService'),
      'GetMemory',
      { name: 'x'.repeat(100_000) },
      { metadata: bearer(token) },
    );
    expect(error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  });

  it('lists the four services, health and reflection through grpc.reflection.v1', async () => {
    const reflection = client('grpc.reflection.v1.ServerReflection');
    const stream = (
      reflection as unknown as {
        ServerReflectionInfo: () => grpc.ClientDuplexStream<
          object,
          { listServicesResponse?: { service: { name: string }[] } }
        >;
      }
    ).ServerReflectionInfo();
    const names = await new Promise<string[]>((resolve, reject) => {
      stream.on('data', (response: { listServicesResponse?: { service: { name: string }[] } }) => {
        resolve(response.listServicesResponse?.service.map((s) => s.name) ?? []);
        stream.end();
      });
      stream.on('error', reject);
      stream.write({ listServices: '' });
    });
    expect(names).toEqual(
      expect.arrayContaining([...SERVICES, 'grpc.health.v1.Health', 'grpc.reflection.v1.ServerReflection']),
    );
  });
});

describe('buf curl against the all-in-one server (the README instructions)', () => {
  const buf = (args: string[]) =>
    run('npx', ['--no-install', 'buf', 'curl', '--protocol', 'grpc', '--http2-prior-knowledge', ...args], {
      cwd: repoRoot,
    });

  it('lists every method of the four services through reflection', async () => {
    const { stdout } = await buf(['--list-methods', url]);
    const methods = stdout.trim().split('\n');
    expect(methods).toEqual(
      expect.arrayContaining([
        'engram.governance.v1.GovernanceService/CreateMemory',
        'engram.ingestion.v1.IngestionService/AppendMessages',
        'engram.retrieval.v1.RetrievalService/Search',
        'engram.context.v1.ContextService/BuildContext',
      ]),
    );
  });

  it('calls a method by name, with a token, using only reflection for the schema', async () => {
    const { stdout } = await buf([
      '-d',
      '{"service":"engram.context.v1.ContextService"}',
      `${url}/grpc.health.v1.Health/Check`,
    ]);
    expect(JSON.parse(stdout)).toEqual({ status: 'SERVING' });
    await expect(
      buf([
        '-H',
        `authorization: Bearer ${token}`,
        '-d',
        '{}',
        `${url}/engram.context.v1.ContextService/BuildContext`,
      ]),
    ).rejects.toMatchObject({ stderr: expect.stringContaining('invalid_argument') });
  });
});
