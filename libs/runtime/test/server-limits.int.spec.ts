import { randomBytes } from 'node:crypto';
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient, type Transport } from '@connectrpc/connect';
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { GovernanceService } from '@engram/contracts/governance';
import { RetrievalService } from '@engram/contracts/retrieval';
import {
  createAuthenticator,
  createLogger,
  errorInfoOf,
  mintToken,
  registration,
  startServer,
  type EngramServer,
} from '../src/index.js';

const secret = randomBytes(32);
const logger = createLogger({ service: 'test', level: 'silent' });
const MIB = 1024 * 1024;
const MAX = 5 * MIB;
let server: EngramServer;
let authorization: string;

beforeAll(async () => {
  server = await startServer({
    services: [
      registration(RetrievalService, { search: () => ({ results: [] }) }),
      registration(GovernanceService, { createMemory: () => ({}) }),
    ],
    authenticate: await createAuthenticator({ mode: 'hs256', secret, clockToleranceSec: 0 }),
    logger,
    limits: { maxMessageBytes: MAX, maxStreamMessages: 100, maxTimeoutMs: 60_000 },
    host: '127.0.0.1',
    port: 0,
    shutdownGraceMs: 1_000,
  });
  authorization = `Bearer ${await mintToken({ subject: 'alice', tenantId: 't1' }, { algorithm: 'HS256', secret })}`;
});
afterAll(async () => {
  await server.shutdown();
});

const outcome = async (call: Promise<unknown>): Promise<string> => {
  try {
    await call;
    return 'OK';
  } catch (error) {
    const e = ConnectError.from(error);
    return `${Code[e.code]} ${errorInfoOf(e)?.reason ?? '-'}`;
  }
};

/** `{"k": [{"k": [ … "leaf" … ]}]}`, `depth` levels of JSON (two protobuf messages each). */
function nested(depth: number): JsonObject {
  let value: JsonValue = 'leaf';
  for (let i = 0; i < depth; i += 1) value = i % 2 === 0 ? { k: value } : [value];
  return { deep: value };
}

const transports: [string, (baseUrl: string) => Transport, boolean][] = [
  ['gRPC', (baseUrl) => createGrpcTransport({ baseUrl, idleConnectionTimeoutMs: 500 }), true],
  [
    'gRPC-Web',
    (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: '2', idleConnectionTimeoutMs: 500 }),
    false,
  ],
  [
    'Connect',
    (baseUrl) => createConnectTransport({ baseUrl, httpVersion: '2', idleConnectionTimeoutMs: 500 }),
    false,
  ],
];

describe.each(transports)('the HTTP/2 server over %s', (_name, transport, grpc) => {
  // gRPC-Web and Connect write the status in the body, where the server does not add ErrorInfo
  // to connect's own early errors (decision 0031); the connection must keep working for all.
  const tooLarge = grpc ? 'ResourceExhausted MESSAGE_TOO_LARGE' : 'ResourceExhausted -';

  it('answers requests over the receive limit with RESOURCE_EXHAUSTED, and the connection keeps working', async () => {
    const retrieval = createClient(RetrievalService, transport(server.url));
    const options = { headers: { authorization } };
    const codes: string[] = [];
    for (const size of [6 * MIB, 6 * MIB, 9_900_000, 0])
      codes.push(await outcome(retrieval.search({ query: 'q'.repeat(size) || 'tea' }, options)));
    expect(codes).toEqual([tooLarge, tooLarge, tooLarge, 'OK']);
  });
});

describe('the HTTP/2 server over gRPC', () => {
  it('answers a request nested deeper than the decoder allows with INVALID_ARGUMENT MESSAGE_MALFORMED', async () => {
    const governance = createClient(GovernanceService, transports[0]![1](server.url));
    const options = { headers: { authorization } };
    const codes: string[] = [];
    for (const depth of [10, 50, 200, 500])
      codes.push(
        await outcome(governance.createMemory({ memory: { text: 'deep', value: nested(depth) } }, options)),
      );
    expect(codes).toEqual([
      'OK',
      'InvalidArgument MESSAGE_MALFORMED',
      'InvalidArgument MESSAGE_MALFORMED',
      'InvalidArgument MESSAGE_MALFORMED',
    ]);
    // The connection is still fine.
    const search = createClient(RetrievalService, transports[0]![1](server.url));
    expect(await outcome(search.search({ query: 'tea' }, options))).toBe('OK');
  });
});
