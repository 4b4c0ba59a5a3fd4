import http from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net';
import { Code } from '@connectrpc/connect';
import { afterEach, describe, expect, it } from '@jest/globals';
import { QdrantHttp, QdrantHttpError } from '../src/qdrant-http.js';

/** Servers started by a test, closed after it. */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

type Handler = (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void;

/** A fake Qdrant: counts requests and connections, answers with `handler`. */
async function fakeQdrant(handler: Handler) {
  const stats = { requests: 0, connections: 0 };
  const server = http.createServer((req, res) => {
    stats.requests++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handler(req, Buffer.concat(chunks).toString('utf8'), res);
    });
  });
  server.on('connection', () => stats.connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => {
          r();
        });
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stats };
}

function answer(res: http.ServerResponse, status: number, envelope: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(envelope));
}

const ok =
  (result: unknown): Handler =>
  (_req, _body, res) => {
    answer(res, 200, { result, status: 'ok', time: 0 });
  };

function client(url: string, extra: Partial<ConstructorParameters<typeof QdrantHttp>[0]> = {}): QdrantHttp {
  const http_ = new QdrantHttp({ url, backoffMs: 1, maxBackoffMs: 5, ...extra });
  cleanups.push(async () => {
    http_.close();
  });
  return http_;
}

describe('QdrantHttp', () => {
  it('sends the request line, headers and body in one write, uncompressed answers asked', async () => {
    // A raw TCP server sees what one write delivers: the first chunk must hold the whole request.
    const firstChunks: string[] = [];
    const server: Server = createTcpServer((socket) => {
      let first = true;
      socket.on('data', (chunk) => {
        if (first) firstChunks.push(chunk.toString('latin1'));
        first = false;
        const body = '{"result":{"ok":true},"status":"ok","time":0}';
        socket.write(
          `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(
      () =>
        new Promise<void>((r) =>
          server.close(() => {
            r();
          }),
        ),
    );
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const vector = Array.from({ length: 512 }, (_, i) => Math.sin(i) / 3);

    const result = await client(url, { apiKey: 'secret' }).call<{ ok: boolean }>(
      'POST',
      '/collections/c/points/query',
      {
        query: vector,
      },
    );

    expect(result).toEqual({ ok: true });
    const request = firstChunks[0] ?? '';
    const [head = '', body = ''] = request.split('\r\n\r\n');
    expect(head).toMatch(/^POST \/collections\/c\/points\/query HTTP\/1\.1\r\n/);
    expect(head).toMatch(/\r\naccept-encoding: identity\r\n/i);
    expect(head).toMatch(/\r\napi-key: secret\r\n/i);
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
    expect(Buffer.byteLength(body)).toBe(length);
    expect(JSON.parse(body)).toEqual({ query: vector });
  });

  it('reuses one keep-alive connection for sequential requests', async () => {
    const fake = await fakeQdrant(ok({ count: 1 }));
    const http_ = client(fake.url);
    for (let i = 0; i < 20; i++) await http_.call('POST', '/collections/c/points/count', { exact: true });
    expect(fake.stats.requests).toBe(20);
    expect(fake.stats.connections).toBe(1);
  });

  it('keeps a path prefix of the base URL', async () => {
    const paths: string[] = [];
    const fake = await fakeQdrant((req, _body, res) => {
      paths.push(req.url ?? '');
      answer(res, 200, { result: [], status: 'ok' });
    });
    await client(`${fake.url}/qdrant/`).call('GET', '/collections');
    expect(paths).toEqual(['/qdrant/collections']);
  });

  it('throws a QdrantHttpError with Qdrant’s message for a 4xx answer, without retrying', async () => {
    const fake = await fakeQdrant((_req, _body, res) => {
      answer(res, 400, { status: { error: 'Wrong input: Vector dimension error: expected dim: 4, got 3' } });
    });
    const error = await client(fake.url)
      .call('PUT', '/collections/c/points', { points: [] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QdrantHttpError);
    expect(error).toMatchObject({
      status: 400,
      detail: 'Wrong input: Vector dimension error: expected dim: 4, got 3',
    });
    expect(fake.stats.requests).toBe(1);
  });

  it('retries an idempotent request after 503 and 429 answers', async () => {
    const fake = await fakeQdrant((_req, _body, res) => {
      if (fake.stats.requests === 1) answer(res, 503, { status: { error: 'busy' } });
      else if (fake.stats.requests === 2) answer(res, 429, { status: { error: 'slow down' } });
      else answer(res, 200, { result: 'done', status: 'ok' });
    });
    expect(await client(fake.url).call('GET', '/collections')).toBe('done');
    expect(fake.stats.requests).toBe(3);
  });

  it('retries after the server resets the connection', async () => {
    let resets = 0;
    const fake = await fakeQdrant((req, _body, res) => {
      if (resets++ < 2) req.socket.destroy();
      else answer(res, 200, { result: 'done', status: 'ok' });
    });
    expect(await client(fake.url).call('GET', '/collections')).toBe('done');
    expect(fake.stats.requests).toBe(3);
  });

  it('gives up after maxAttempts with UNAVAILABLE, naming qdrant and keeping the cause', async () => {
    const fake = await fakeQdrant((_req, _body, res) => {
      answer(res, 503, { status: { error: 'down' } });
    });
    const error = await client(fake.url, { maxAttempts: 3 })
      .call('GET', '/collections')
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: Code.Unavailable,
      reason: 'DEPENDENCY_UNAVAILABLE',
      metadata: { dependency: 'qdrant' },
    });
    expect((error as Error).cause).toBeInstanceOf(QdrantHttpError);
    expect(fake.stats.requests).toBe(3);
  });

  it('does not resend a request marked non-idempotent', async () => {
    const fake = await fakeQdrant((_req, _body, res) => {
      answer(res, 503, { status: { error: 'down' } });
    });
    await expect(
      client(fake.url).call('POST', '/collections/c/points', {}, { idempotent: false }),
    ).rejects.toMatchObject({ code: Code.Unavailable });
    expect(fake.stats.requests).toBe(1);
  });

  it('reports UNAVAILABLE when nothing listens', async () => {
    const fake = await fakeQdrant(ok(null));
    const url = fake.url;
    await cleanups.pop()?.(); // close the server: the port refuses connections now
    await expect(client(url, { maxAttempts: 2 }).call('GET', '/collections')).rejects.toMatchObject({
      code: Code.Unavailable,
      message: expect.stringMatching(/ECONNREFUSED/),
    });
  });

  it('times out a server that never answers', async () => {
    const fake = await fakeQdrant(() => undefined);
    const started = performance.now();
    await expect(
      client(fake.url, { timeoutMs: 50, maxAttempts: 2 }).call('GET', '/collections'),
    ).rejects.toMatchObject({
      code: Code.Unavailable,
      message: expect.stringMatching(/no answer within 50 ms/),
    });
    expect(fake.stats.requests).toBe(2);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('stops at once when the caller aborts, with the signal’s reason', async () => {
    const fake = await fakeQdrant(() => undefined);
    const controller = new AbortController();
    const reason = new Error('deadline');
    setTimeout(() => {
      controller.abort(reason);
    }, 30);
    await expect(
      client(fake.url).call('GET', '/collections', undefined, { signal: controller.signal }),
    ).rejects.toBe(reason);
    expect(fake.stats.requests).toBe(1);
  });

  it('rejects a 2xx answer that is not JSON', async () => {
    const fake = await fakeQdrant((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>proxy login</html>');
    });
    await expect(client(fake.url).call('GET', '/collections')).rejects.toMatchObject({
      status: 200,
      detail: '<html>proxy login</html>',
    });
  });

  it('refuses calls after close', async () => {
    const fake = await fakeQdrant(ok([]));
    const http_ = client(fake.url);
    http_.close();
    await expect(http_.call('GET', '/collections')).rejects.toThrow(/closed/);
  });
});
