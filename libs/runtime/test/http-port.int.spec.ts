/**
 * One port, two protocols (decision 0035): gRPC over HTTP/2 with prior knowledge, and HTTP/1.1 for
 * the Connect and gRPC-Web protocols and the plain HTTP routes, over real sockets.
 */
import { randomBytes } from 'node:crypto';
import * as http2 from 'node:http2';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Health, HealthCheckResponse_ServingStatus } from '@engram/contracts/grpc';
import { RetrievalService } from '@engram/contracts/retrieval';
import {
  createAuthenticator,
  createLogger,
  errorInfoOf,
  mintToken,
  registration,
  startServer,
  type EngramServer,
  type HttpRoute,
} from '../src/index.js';

const secret = randomBytes(32);
const logger = createLogger({ service: 'test', level: 'silent' });
let server: EngramServer;
let authorization: string;
/** Lets the `/v1/slow` handler finish its answer. */
let releaseSlow: () => void = () => undefined;

const routes: HttpRoute[] = [
  {
    prefix: '/v1/',
    handle: async (req, res, caller) => {
      if (req.url === '/v1/throw') throw new Error('handler bug');
      if (req.url === '/v1/slow') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('first;');
        await new Promise<void>((resolve) => {
          releaseSlow = resolve;
        });
        res.end('last');
        return;
      }
      let body = '';
      for await (const chunk of req) body += String(chunk);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          url: req.url,
          body,
          subject: caller.subject,
          tenant: caller.tenantId,
          auth: caller.authorization,
        }),
      );
    },
  },
  {
    prefix: '/mcp',
    handle: (req, res) => {
      res.writeHead(204);
      res.end();
      return Promise.resolve();
    },
  },
  {
    prefix: '/public',
    access: 'public',
    handle: (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`public ${req.headers.authorization ?? 'anonymous'}`);
      return Promise.resolve();
    },
  },
];

beforeAll(async () => {
  server = await startServer({
    services: [registration(RetrievalService, { search: () => ({ results: [] }) })],
    authenticate: await createAuthenticator({ mode: 'hs256', secret, clockToleranceSec: 0 }),
    logger,
    limits: { maxMessageBytes: 1 << 20, maxStreamMessages: 100, maxTimeoutMs: 60_000 },
    host: '127.0.0.1',
    port: 0,
    shutdownGraceMs: 5_000,
    httpRoutes: routes,
  });
  authorization = `Bearer ${await mintToken({ subject: 'alice', tenantId: 't1' }, { algorithm: 'HS256', secret })}`;
});
afterAll(async () => {
  releaseSlow();
  await server.shutdown();
});

describe('the RPCs on one port', () => {
  it('answer gRPC over HTTP/2 and Connect and gRPC-Web over HTTP/1.1', async () => {
    const transports = [
      createGrpcTransport({ baseUrl: server.url }),
      createConnectTransport({ baseUrl: server.url, httpVersion: '1.1' }),
      createGrpcWebTransport({ baseUrl: server.url, httpVersion: '1.1' }),
      createConnectTransport({ baseUrl: server.url, httpVersion: '2' }),
    ];
    for (const transport of transports) {
      const health = await createClient(Health, transport).check({});
      expect(health.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
      const search = await createClient(RetrievalService, transport).search(
        { query: 'x' },
        { headers: { authorization } },
      );
      expect(search.results).toEqual([]);
    }
  });

  it('keep their errors over HTTP/1.1 (code and ErrorInfo reason)', async () => {
    const client = createClient(
      RetrievalService,
      createConnectTransport({ baseUrl: server.url, httpVersion: '1.1' }),
    );
    const error = await client.search({ query: 'x' }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.Unauthenticated);
    expect(errorInfoOf(error)?.reason).toBe('TOKEN_MISSING');
  });
});

describe('HTTP routes', () => {
  it('hand an authenticated HTTP/1.1 request to its handler with the verified caller', async () => {
    const response = await fetch(`${server.url}/v1/echo?x=1`, {
      method: 'POST',
      headers: { authorization },
      body: 'hello',
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await response.json()).toEqual({
      url: '/v1/echo?x=1',
      body: 'hello',
      subject: 'alice',
      tenant: 't1',
      auth: authorization,
    });
  });

  it('answer 401 with the reason in an OpenAI-style body when the credential is missing or refused', async () => {
    const missing = await fetch(`${server.url}/v1/echo`);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    expect(await missing.json()).toMatchObject({
      error: { type: 'authentication_error', code: 'TOKEN_MISSING', param: null },
    });
    const forged = `Bearer ${await mintToken({ subject: 'alice', tenantId: 't1' }, { algorithm: 'HS256', secret: randomBytes(32) })}`;
    const refused = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { authorization: forged } });
    expect(refused.status).toBe(401);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('TOKEN_SIGNATURE_INVALID');
    expect(body.error.message).not.toContain(forged);
  });

  it('hand a public route every request without reading a credential, over both HTTP versions', async () => {
    const plain = await fetch(`${server.url}/public/page`);
    expect({ status: plain.status, body: await plain.text() }).toEqual({
      status: 200,
      body: 'public anonymous',
    });
    // A refused token is not checked either: the route acts on nobody's behalf.
    const forged = await fetch(`${server.url}/public`, { headers: { authorization: 'Bearer x.y.z' } });
    expect(forged.status).toBe(200);
    const session = http2.connect(server.url);
    try {
      const stream = session.request({ ':path': '/public/h2' });
      let body = '';
      stream.on('data', (chunk: Buffer) => (body += chunk.toString()));
      await new Promise<void>((resolve, reject) => {
        stream.on('end', resolve);
        stream.on('error', reject);
      });
      expect(body).toBe('public anonymous');
    } finally {
      session.close();
    }
  });

  it('match by prefix: `/mcp` exactly or below it, never `/mcpx`', async () => {
    const exact = await fetch(`${server.url}/mcp?session=1`, { method: 'POST', headers: { authorization } });
    expect(exact.status).toBe(204);
    // Not a route: the RPC router answers (no such method).
    const other = await fetch(`${server.url}/mcpx`, { method: 'POST', headers: { authorization } });
    expect(other.status).toBe(404);
  });

  it('serve HTTP/2 requests too', async () => {
    const session = http2.connect(server.url);
    try {
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const stream = session.request({ ':method': 'POST', ':path': '/v1/h2', authorization });
        let status = 0;
        let body = '';
        stream.on('response', (headers) => {
          status = Number(headers[':status']);
        });
        stream.on('data', (chunk: Buffer) => {
          body += chunk.toString();
        });
        stream.on('end', () => {
          resolve({ status, body });
        });
        stream.on('error', reject);
        stream.end('over h2');
      });
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toMatchObject({ url: '/v1/h2', body: 'over h2', subject: 'alice' });
    } finally {
      session.close();
    }
  });

  it('answer 500 without details when a handler throws, and the server goes on', async () => {
    const response = await fetch(`${server.url}/v1/throw`, { headers: { authorization } });
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({
      error: { message: 'internal error', type: 'server_error', param: null, code: 'INTERNAL' },
    });
    expect((await fetch(`${server.url}/v1/again`, { headers: { authorization } })).status).toBe(200);
  });
});

describe('shutdown with HTTP/1.1 connections', () => {
  it('lets a response in flight finish, then closes every connection', async () => {
    const slow = await fetch(`${server.url}/v1/slow`, { headers: { authorization } });
    expect(slow.status).toBe(200);
    const reader = (slow.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value ?? new Uint8Array()).toString()).toBe('first;');
    // An idle keep-alive connection as well.
    await fetch(`${server.url}/v1/idle`, { headers: { authorization } }).then((r) => r.text());
    const stopped = server.shutdown();
    releaseSlow();
    let rest = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += Buffer.from(value).toString();
    }
    expect(rest).toBe('last');
    await stopped;
    await expect(fetch(`${server.url}/v1/after`, { headers: { authorization } })).rejects.toThrow();
  });
});
