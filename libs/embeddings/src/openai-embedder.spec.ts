// The OpenAI adapter against a scripted OpenAI-compatible server on 127.0.0.1 (real HTTP, no mocks).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { isEngramError } from '@engram/errors';
import { OpenAIEmbedder, type OpenAIEmbedderOptions } from './openai-embedder.js';

interface EmbeddingsRequest {
  readonly model: string;
  readonly input: string[];
  readonly encoding_format?: string;
  readonly dimensions?: number;
}

interface Recorded {
  readonly body: EmbeddingsRequest;
  readonly authorization: string | undefined;
}

/** Answers one request; the default returns deterministic unnormalized 4-dimensional vectors. */
type Script = (request: EmbeddingsRequest, attempt: number, response: ServerResponse) => void;

/** A deterministic, deliberately unnormalized vector for `text`. */
function fakeVector(text: string, dimensions: number): number[] {
  return Array.from({ length: dimensions }, (_, i) => ((text.charCodeAt(i % text.length) % 7) + 1) * (i + 1));
}

function answer(response: ServerResponse, request: EmbeddingsRequest, dimensions = 4): void {
  const data = request.input.map((text, index) => ({
    object: 'embedding',
    index,
    embedding: fakeVector(text, dimensions),
  }));
  // Out of order on purpose: the adapter must place vectors by `index`.
  data.reverse();
  sendJson(response, 200, {
    object: 'list',
    model: request.model,
    data,
    usage: { prompt_tokens: 1, total_tokens: 1 },
  });
}

function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const payload = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(payload);
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    request.on('error', reject);
  });
}

describe('OpenAIEmbedder', () => {
  let server: Server;
  let baseURL: string;
  let recorded: Recorded[];
  let script: Script;

  beforeAll(async () => {
    server = createServer((request, response) => {
      void (async () => {
        const body = JSON.parse(await readBody(request)) as EmbeddingsRequest;
        if (request.method !== 'POST' || request.url !== '/v1/embeddings') {
          sendJson(response, 404, { error: { message: `no route ${request.method} ${request.url}` } });
          return;
        }
        recorded.push({ body, authorization: request.headers.authorization });
        script(body, recorded.length, response);
      })();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    recorded = [];
    script = (request, _attempt, response) => {
      answer(response, request);
    };
  });

  function embedder(options: Partial<OpenAIEmbedderOptions> = {}): OpenAIEmbedder {
    return new OpenAIEmbedder({
      baseURL,
      apiKey: 'test-key',
      model: 'test-embed',
      dimensions: 4,
      initialBackoffMs: 5,
      ...options,
    });
  }

  it('returns normalized vectors in input order with the model id', async () => {
    const texts = ['alpha', 'beta', 'gamma'];
    const result = await embedder().embed(texts, 'document');
    expect(result.model).toBe('openai:test-embed');
    expect(result.dimensions).toBe(4);
    expect(result.truncated).toEqual([false, false, false]);
    texts.forEach((text, i) => {
      const raw = fakeVector(text, 4);
      const length = Math.hypot(...raw);
      const vector = result.vectors[i]!;
      expect(vector).toBeInstanceOf(Float32Array);
      expect(Math.hypot(...vector)).toBeCloseTo(1, 6);
      raw.forEach((x, j) => {
        expect(vector[j]).toBeCloseTo(x / length, 6);
      });
    });
    expect(recorded).toHaveLength(1);
    expect(recorded[0]!.authorization).toBe('Bearer test-key');
    expect(recorded[0]!.body).toEqual({ model: 'test-embed', input: texts, encoding_format: 'float' });
  });

  it('splits a large call into requests of at most batchSize texts', async () => {
    const texts = Array.from({ length: 7 }, (_, i) => `text ${i}`);
    const result = await embedder({ batchSize: 3 }).embed(texts, 'document');
    expect(recorded.map((r) => r.body.input)).toEqual([texts.slice(0, 3), texts.slice(3, 6), texts.slice(6)]);
    expect(result.vectors).toHaveLength(7);
    const single = await embedder().embed(['text 4'], 'document');
    expect(result.vectors[4]).toEqual(single.vectors[0]);
  });

  it('uses batches of 64 by default and sends nothing for no texts', async () => {
    const texts = Array.from({ length: 130 }, (_, i) => `t${i}`);
    await embedder().embed(texts, 'document');
    expect(recorded.map((r) => r.body.input.length)).toEqual([64, 64, 2]);
    recorded = [];
    expect((await embedder().embed([], 'document')).vectors).toEqual([]);
    expect(recorded).toHaveLength(0);
  });

  it('retries a 429 and then succeeds', async () => {
    script = (request, attempt, response) => {
      if (attempt === 1) {
        sendJson(response, 429, { error: { message: 'slow down' } }, { 'retry-after-ms': '10' });
      } else {
        answer(response, request);
      }
    };
    const result = await embedder().embed(['hello'], 'document');
    expect(result.vectors).toHaveLength(1);
    expect(recorded).toHaveLength(2);
  });

  it('retries 5xx with backoff and reports UNAVAILABLE when retries run out', async () => {
    script = (_request, _attempt, response) => {
      sendJson(response, 500, { error: { message: 'boom' } });
    };
    const started = performance.now();
    const error = await embedder({ maxRetries: 3, initialBackoffMs: 20 })
      .embed(['hello'], 'document')
      .catch((e: unknown) => e);
    expect(recorded).toHaveLength(4);
    expect(isEngramError(error)).toBe(true);
    if (!isEngramError(error)) return;
    expect(error.reason).toBe('DEPENDENCY_UNAVAILABLE');
    expect(error.metadata).toEqual({ dependency: 'embeddings' });
    expect(error.message).toContain('4 attempts');
    expect(error.message).toContain('500');
    // Backoff is bounded: full jitter under 20 + 40 + 80 ms, plus request time.
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('does not retry a client error such as 401', async () => {
    script = (_request, _attempt, response) => {
      sendJson(response, 401, { error: { message: 'bad key' } });
    };
    const error = await embedder()
      .embed(['hello'], 'document')
      .catch((e: unknown) => e);
    expect(recorded).toHaveLength(1);
    expect(isEngramError(error) && error.reason).toBe('DEPENDENCY_UNAVAILABLE');
    expect(String(error)).toContain('401');
  });

  it('reports UNAVAILABLE when the server cannot be reached', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await embedder({ baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 1 })
      .embed(['hello'], 'document')
      .catch((e: unknown) => e);
    expect(isEngramError(error) && error.reason).toBe('DEPENDENCY_UNAVAILABLE');
    expect(String(error)).toContain('2 attempts');
  });

  it('rejects vectors whose length differs from the configured dimensions with INVALID_ARGUMENT', async () => {
    script = (request, _attempt, response) => {
      answer(response, request, 3);
    };
    const error = await embedder()
      .embed(['hello'], 'document')
      .catch((e: unknown) => e);
    expect(isEngramError(error)).toBe(true);
    if (!isEngramError(error)) return;
    expect(error.reason).toBe('FIELD_INVALID');
    expect(error.metadata).toEqual({ field: 'dimensions', expected: 4, actual: 3 });
    expect(error.message).toContain('returned 3-dimensional vectors');
  });

  it('reports a response with the wrong number of vectors as UNAVAILABLE', async () => {
    script = (request, _attempt, response) => {
      answer(response, { ...request, input: request.input.slice(1) });
    };
    const error = await embedder()
      .embed(['a', 'b'], 'document')
      .catch((e: unknown) => e);
    expect(isEngramError(error) && error.reason).toBe('DEPENDENCY_UNAVAILABLE');
    expect(String(error)).toContain('1 vectors for 2 texts');
  });

  it('sends dimensions only when asked, and prefixes queries only with a configured instruction', async () => {
    await embedder({ requestDimensions: true, queryInstruction: 'query: ' }).embed(['q'], 'query');
    await embedder({ queryInstruction: 'query: ' }).embed(['d'], 'document');
    await embedder().embed(['q'], 'query');
    expect(recorded.map((r) => r.body)).toEqual([
      { model: 'test-embed', input: ['query: q'], encoding_format: 'float', dimensions: 4 },
      { model: 'test-embed', input: ['d'], encoding_format: 'float' },
      { model: 'test-embed', input: ['q'], encoding_format: 'float' },
    ]);
  });

  it('stops retrying when the signal aborts, rejecting with its reason', async () => {
    script = (_request, _attempt, response) => {
      sendJson(response, 503, { error: { message: 'busy' } }, { 'retry-after': '60' });
    };
    const controller = new AbortController();
    const pending = embedder({ maxBackoffMs: 60_000 }).embed(['hello'], 'document', {
      signal: controller.signal,
    });
    setTimeout(() => {
      controller.abort(new Error('deadline'));
    }, 100);
    const started = performance.now();
    await expect(pending).rejects.toThrow('deadline');
    expect(performance.now() - started).toBeLessThan(2000);
    expect(recorded).toHaveLength(1);
  });

  it('validates its options and inputs', async () => {
    expect(() => embedder({ dimensions: 0 })).toThrow('dimensions is invalid');
    expect(() => embedder({ batchSize: 0 })).toThrow('batchSize is invalid');
    const error = await embedder()
      .embed([''], 'document')
      .catch((e: unknown) => e);
    expect(isEngramError(error) && error.reason).toBe('FIELD_INVALID');
    expect(recorded).toHaveLength(0);
    const closed = embedder();
    await closed.close();
    await expect(closed.embed(['x'], 'document')).rejects.toThrow('is closed');
  });
});
