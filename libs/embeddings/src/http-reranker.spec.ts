/**
 * The HTTP reranker against a scripted `/rerank` server on a real loopback socket (the only kind of
 * fake the project allows: an external model API played inside the test).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { isEngramError } from '@engram/errors';
import { HttpReranker } from './http-reranker.js';
import { unitScore } from './reranker.js';

type Handler = (body: Record<string, unknown>, req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let baseURL: string;
let script: Handler[] = [];
const seen: { body: Record<string, unknown>; auth: string | undefined; url: string | undefined }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => {
      raw += chunk.toString('utf8');
    });
    req.on('end', () => {
      const body = JSON.parse(raw) as Record<string, unknown>;
      seen.push({ body, auth: req.headers.authorization, url: req.url });
      const next = script.shift();
      if (next === undefined) {
        res.writeHead(500).end();
        return;
      }
      next(body, req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  await new Promise<void>((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
});
beforeEach(() => {
  script = [];
  seen.length = 0;
});

const json =
  (status: number, value: unknown): Handler =>
  (_body, _req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
  };

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('HttpReranker', () => {
  it('speaks the Cohere-style API and returns the scores in document order', async () => {
    script.push(
      json(200, {
        results: [
          { index: 1, relevance_score: 0.9 },
          { index: 0, relevance_score: 0.2 },
        ],
      }),
    );
    const reranker = new HttpReranker({ baseURL, model: 'bge-reranker-base', apiKey: 'k-123' });
    expect(reranker.model).toBe('http:bge-reranker-base');
    expect(await reranker.rerank('where do I live', ['in Boston', 'moved to Denver'])).toEqual([0.2, 0.9]);
    expect(seen[0]).toMatchObject({
      url: '/v1/rerank',
      auth: 'Bearer k-123',
      body: {
        model: 'bge-reranker-base',
        query: 'where do I live',
        documents: ['in Boston', 'moved to Denver'],
        top_n: 2,
      },
    });
  });

  it('speaks the TEI API and maps logits into [0, 1]', async () => {
    script.push(
      json(200, [
        { index: 0, score: 2.5 },
        { index: 1, score: -1 },
      ]),
    );
    const reranker = new HttpReranker({ baseURL, model: 'any', api: 'tei' });
    expect(await reranker.rerank('q', ['a', 'b'])).toEqual([unitScore(2.5), unitScore(-1)]);
    expect(seen[0]?.body).toEqual({ query: 'q', texts: ['a', 'b'], raw_scores: false, truncate: true });
    expect(seen[0]?.auth).toBeUndefined();
    expect(unitScore(0.5)).toBe(0.5);
    expect(unitScore(0)).toBe(0);
    expect(unitScore(2.5)).toBeCloseTo(1 / (1 + Math.exp(-2.5)), 12);
  });

  it('retries a 503 and a 429, then answers', async () => {
    script.push(json(503, {}), json(429, {}), json(200, { results: [{ index: 0, relevance_score: 0.4 }] }));
    const reranker = new HttpReranker({ baseURL, model: 'm', initialBackoffMs: 1 });
    expect(await reranker.rerank('q', ['a'])).toEqual([0.4]);
    expect(seen).toHaveLength(3);
  });

  it('is UNAVAILABLE naming the reranker when the retries run out or the status is final', async () => {
    script.push(json(500, {}), json(500, {}), json(500, {}));
    const reranker = new HttpReranker({ baseURL, model: 'm', initialBackoffMs: 1, maxRetries: 2 });
    const error = await rejection(reranker.rerank('q', ['a']));
    expect(isEngramError(error) && [error.reason, error.metadata]).toEqual([
      'DEPENDENCY_UNAVAILABLE',
      { dependency: 'reranker' },
    ]);
    script.push(json(401, { error: 'no' }));
    const denied = await rejection(reranker.rerank('q', ['a']));
    expect(String(denied)).toContain('HTTP 401');
    expect(seen).toHaveLength(4);
  });

  it.each([
    ['a missing document', { results: [{ index: 0, relevance_score: 0.3 }] }],
    [
      'a repeated index',
      {
        results: [
          { index: 0, relevance_score: 0.3 },
          { index: 0, relevance_score: 0.1 },
        ],
      },
    ],
    [
      'an index out of range',
      {
        results: [
          { index: 0, relevance_score: 0.3 },
          { index: 5, relevance_score: 0.1 },
        ],
      },
    ],
    ['another shape', { data: [] }],
    [
      'a non-numeric score',
      [
        { index: 0, score: 'high' },
        { index: 1, score: 1 },
      ],
    ],
  ])('rejects an answer with %s as invalid output', async (_what, answer) => {
    script.push(json(200, answer));
    const error = await rejection(new HttpReranker({ baseURL, model: 'm' }).rerank('q', ['a', 'b']));
    expect(isEngramError(error) && error.metadata).toEqual({
      dependency: 'reranker',
      failure: 'output_invalid',
    });
  });

  it('times out a server that does not answer, and asks nothing for no documents', async () => {
    script.push(
      () => undefined,
      () => undefined,
    );
    const reranker = new HttpReranker({
      baseURL,
      model: 'm',
      timeoutMs: 50,
      maxRetries: 1,
      initialBackoffMs: 1,
    });
    const error = await rejection(reranker.rerank('q', ['a']));
    expect(String(error)).toContain('timed out after 50 ms');
    seen.length = 0;
    expect(await reranker.rerank('q', [])).toEqual([]);
    expect(seen).toHaveLength(0);
  });

  it('stops with the caller’s signal', async () => {
    script.push(() => undefined);
    const controller = new AbortController();
    const reranker = new HttpReranker({ baseURL, model: 'm', timeoutMs: 5_000 });
    const pending = reranker.rerank('q', ['a'], { signal: controller.signal });
    setTimeout(() => {
      controller.abort(new Error('client went away'));
    }, 20);
    expect(String(await rejection(pending))).toContain('client went away');
  });
});
