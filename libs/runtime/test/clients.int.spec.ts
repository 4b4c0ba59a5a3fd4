import { randomBytes } from 'node:crypto';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { GovernanceService } from '@engram/contracts/governance';
import { RetrievalService } from '@engram/contracts/retrieval';
import {
  createAuthenticator,
  createLogger,
  createNetworkTransport,
  errorInfoOf,
  forwardedCallOptions,
  mintToken,
  principalKey,
  registration,
  requestIdKey,
  startServer,
  type EngramServer,
  type Principal,
  type ServiceRegistration,
} from '../src/index.js';

const secret = randomBytes(32);
const logger = createLogger({ service: 'test', level: 'silent' });
const limits = { maxMessageBytes: 1 << 20, maxStreamMessages: 100, maxTimeoutMs: 60_000 };
const servers: EngramServer[] = [];

async function serve(services: ServiceRegistration[]): Promise<EngramServer> {
  const server = await startServer({
    services,
    authenticate: await createAuthenticator({ mode: 'hs256', secret, clockToleranceSec: 0 }),
    logger,
    limits,
    host: '127.0.0.1',
    port: 0,
    shutdownGraceMs: 1_000,
  });
  servers.push(server);
  return server;
}

interface Seen {
  principal: Principal | undefined;
  requestId: string;
  timeoutMs: number | undefined;
  acceptEncoding: string | null;
  aborted?: boolean;
}
let seen: Seen | undefined;
let front: EngramServer;

beforeAll(async () => {
  // "retrieval" in its own process-like server; "governance" calls it over the network.
  const back = await serve([
    registration(RetrievalService, {
      async search(request, context) {
        seen = {
          principal: context.values.get(principalKey),
          requestId: context.values.get(requestIdKey),
          timeoutMs: context.timeoutMs(),
          acceptEncoding: context.requestHeader.get('grpc-accept-encoding'),
        };
        if (request.query === 'slow') {
          await new Promise<void>((resolve) => {
            context.signal.addEventListener('abort', () => {
              if (seen !== undefined) seen.aborted = true;
              resolve();
            });
          });
          throw context.signal.reason;
        }
        return {};
      },
    }),
  ]);
  const retrieval = createClient(RetrievalService, createNetworkTransport(back.url));
  front = await serve([
    registration(GovernanceService, {
      async getMemory(request, context) {
        await retrieval.search(
          { query: request.name === 'memories/slow' ? 'slow' : 'fast' },
          forwardedCallOptions(context),
        );
        return {};
      },
    }),
  ]);
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.shutdown()));
});

describe('service-to-service calls over real HTTP/2', () => {
  it("carry the caller's credential, request id and remaining deadline, and accept no compression", async () => {
    const token = await mintToken(
      { subject: 'dave', tenantId: 't9', orgIds: ['o1'] },
      { algorithm: 'HS256', secret },
    );
    const client = createClient(GovernanceService, createGrpcTransport({ baseUrl: front.url }));
    await client.getMemory(
      { name: 'memories/m1' },
      { headers: { authorization: `Bearer ${token}`, 'x-request-id': 'trace-7' }, timeoutMs: 10_000 },
    );
    expect(seen?.principal).toMatchObject({ subject: 'dave', tenantId: 't9', orgIds: ['o1'] });
    expect(seen?.requestId).toBe('trace-7');
    expect(seen?.timeoutMs).toBeGreaterThan(0);
    expect(seen?.timeoutMs).toBeLessThanOrEqual(10_000);
    // Between Engram's own processes answers travel uncompressed (no gzip work at either end).
    expect(seen?.acceptEncoding ?? '').not.toMatch(/gzip|br/);
  });

  it('cancel the downstream call when the caller’s deadline passes', async () => {
    const token = await mintToken({ subject: 'dave', tenantId: 't9' }, { algorithm: 'HS256', secret });
    const client = createClient(GovernanceService, createGrpcTransport({ baseUrl: front.url }));
    seen = undefined;
    let error: ConnectError | undefined;
    try {
      // Long enough for the call to reach the downstream service on a busy CI machine.
      await client.getMemory(
        { name: 'memories/slow' },
        { headers: { authorization: `Bearer ${token}` }, timeoutMs: 1_500 },
      );
    } catch (e) {
      error = ConnectError.from(e);
    }
    expect(error?.code).toBe(Code.DeadlineExceeded);
    // The downstream call was made, and its abort arrives after the caller's deadline. (Read
    // through a function: the handler sets `seen`, which TypeScript cannot see from here.)
    const downstream = (): Seen | undefined => seen;
    expect(downstream()).toBeDefined();
    for (let waited = 0; downstream()?.aborted !== true && waited < 5_000; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(downstream()?.aborted).toBe(true);
  });

  it('refuse a downstream call that arrives without a credential', async () => {
    const back = servers[0]!;
    const retrieval = createClient(RetrievalService, createNetworkTransport(back.url));
    let error: ConnectError | undefined;
    try {
      await retrieval.search({ query: 'q' });
    } catch (e) {
      error = ConnectError.from(e);
    }
    expect(error?.code).toBe(Code.Unauthenticated);
    expect(errorInfoOf(error)?.reason).toBe('TOKEN_MISSING');
  });
});
