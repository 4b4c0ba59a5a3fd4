/**
 * Issue 18, finding 9: ingestion cannot be starved by one caller. Per-principal concurrency and
 * rate limits answer RESOURCE_EXHAUSTED `RATE_LIMITED` with a `google.rpc.RetryInfo` while other
 * principals are served, and a 10 MiB document is prepared in steps that leave the server free to
 * answer other calls (over real HTTP/2, the all-in-one on its embedded defaults, indexer off).
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Scope } from '@engram/contracts/common';
import { RetryInfoSchema } from '@engram/contracts/grpc';
import {
  IngestPhase,
  MessageRole,
  StreamIngestDocumentRequestSchema,
  type StreamIngestDocumentRequest,
  type StreamIngestDocumentResponse,
} from '@engram/contracts/ingestion';
import { errorInfoOf } from '@engram/runtime';
import { seededRandom } from '@engram/testing';
import { callerOf, newSecret, startServer, type TestServer } from './harness.js';

const secret = newSecret();
const as = callerOf(secret);
let server: TestServer;

beforeAll(async () => {
  server = await startServer(secret, {
    env: {
      ENGRAM_INDEXER: 'off',
      ENGRAM_INGEST_DOCUMENT_CONCURRENCY: '1',
      ENGRAM_INGEST_DOCUMENT_RATE_PER_MIN: '0',
      ENGRAM_INGEST_APPEND_CONCURRENCY: '0',
      // A burst of one call, then one every ten seconds.
      ENGRAM_INGEST_APPEND_RATE_PER_MIN: '6',
    },
  });
}, 120_000);

afterAll(async () => {
  await server.stop();
});

/** A client stream the test feeds by hand and closes (half-close) when it likes. */
function feed() {
  const queue: StreamIngestDocumentRequest[] = [];
  let wake: (() => void) | undefined;
  let closed = false;
  const requests: AsyncIterable<StreamIngestDocumentRequest> = {
    async *[Symbol.asyncIterator]() {
      for (;;) {
        const next = queue.shift();
        if (next !== undefined) {
          yield next;
          continue;
        }
        if (closed) return;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
  const push = (message: Parameters<typeof create<typeof StreamIngestDocumentRequestSchema>>[1]) => {
    queue.push(create(StreamIngestDocumentRequestSchema, message));
    wake?.();
  };
  const close = () => {
    closed = true;
    wake?.();
  };
  return { requests, push, close };
}

const header = (requestId: string) => ({
  payload: {
    case: 'header' as const,
    value: { document: { mimeType: 'text/markdown', scope: Scope.SELF }, requestId },
  },
});
const part = (data: Uint8Array) => ({ payload: { case: 'part' as const, value: { data } } });

/** The error a call that must be refused fails with. */
const refusal = (call: Promise<unknown>): Promise<ConnectError | undefined> =>
  call.then(
    () => undefined,
    (error: unknown) => ConnectError.from(error),
  );

/** About `bytes` of Markdown in headed sections of seeded prose. */
function markdown(bytes: number): Uint8Array {
  const random = seededRandom(18);
  const words = [
    'ledger',
    'river',
    'budget',
    'crane',
    'policy',
    'harbor',
    'signal',
    'orchard',
    'vector',
    'lantern',
  ];
  const blocks: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    let block: string;
    if (i % 15 === 0) block = `## Section ${i / 15}`;
    else {
      const sentences: string[] = [];
      for (let s = 0; s < 4; s++) {
        const n = 8 + Math.floor(random() * 10);
        const sentence = Array.from({ length: n }, () => words[Math.floor(random() * words.length)]).join(
          ' ',
        );
        sentences.push(`${sentence.charAt(0).toUpperCase()}${sentence.slice(1)}.`);
      }
      block = sentences.join(' ');
    }
    blocks.push(block);
    size += Buffer.byteLength(block) + 2;
  }
  return new TextEncoder().encode(blocks.join('\n\n'));
}

describe('ingestion admission', () => {
  it('refuses a principal over its document concurrency limit with RetryInfo while another is served', async () => {
    const upload = feed();
    const responses = server.ingestion.streamIngestDocument(upload.requests, await as('alice'));
    const events = responses[Symbol.asyncIterator]();
    upload.push(header('first'));
    // RECEIVING: the stream holds alice's one slot until it ends.
    expect((await events.next()).value).toMatchObject({ event: { case: 'progress' } });

    const small = {
      document: { mimeType: 'text/plain', scope: Scope.SELF },
      content: new TextEncoder().encode('hello'),
    };
    const refused = await refusal(server.ingestion.ingestDocument(small, await as('alice')));
    expect(refused?.code).toBe(Code.ResourceExhausted);
    expect(errorInfoOf(refused)?.reason).toBe('RATE_LIMITED');
    expect(errorInfoOf(refused)?.metadata).toMatchObject({ limit: 'concurrency', method: 'IngestDocument' });
    const retry = refused?.findDetails(RetryInfoSchema)[0];
    expect(retry?.retryDelay).toBeDefined();
    // Another principal, meanwhile, is served.
    const bobs = await server.ingestion.ingestDocument(small, await as('bob'));
    expect(bobs.document?.state).toBeDefined();

    upload.push(part(new TextEncoder().encode('# Notes\n\nThe first document.')));
    upload.close();
    let last: StreamIngestDocumentResponse | undefined;
    for (let next = await events.next(); next.done !== true; next = await events.next()) last = next.value;
    expect(last?.event.case).toBe('result');
    // The slot is free again once the stream has ended.
    await expect(server.ingestion.ingestDocument(small, await as('alice'))).resolves.toBeDefined();
  });

  it('refuses AppendMessages over the rate with the delay until the next call is due', async () => {
    const user = (content: string) => ({ role: MessageRole.USER, content });
    const carol = await as('carol');
    const { session } = await server.ingestion.createSession({}, carol);
    const parent = session?.name ?? '';
    await server.ingestion.appendMessages({ parent, messages: [user('one')] }, carol);
    const refused = await refusal(
      server.ingestion.appendMessages({ parent, messages: [user('two')] }, carol),
    );
    expect(refused?.code).toBe(Code.ResourceExhausted);
    expect(errorInfoOf(refused)?.reason).toBe('RATE_LIMITED');
    expect(errorInfoOf(refused)?.metadata).toMatchObject({ limit: 'rate', method: 'AppendMessages' });
    const delay = refused?.findDetails(RetryInfoSchema)[0]?.retryDelay;
    const ms = Number(delay?.seconds ?? 0n) * 1000 + (delay?.nanos ?? 0) / 1e6;
    expect(ms).toBeGreaterThan(0);
    expect(ms).toBeLessThanOrEqual(10_000);
    // Dave has his own bucket.
    const dave = await as('dave');
    const daves = await server.ingestion.createSession({}, dave);
    await expect(
      server.ingestion.appendMessages({ parent: daves.session?.name ?? '', messages: [user('hi')] }, dave),
    ).resolves.toBeDefined();
  });

  it('answers another call while a 10 MiB document is being chunked', async () => {
    const content = markdown(10 << 20);
    const upload = feed();
    upload.push(header('large'));
    for (let offset = 0; offset < content.byteLength; offset += 1 << 20) {
      upload.push(part(content.subarray(offset, offset + (1 << 20))));
    }
    upload.close();
    const order: string[] = [];
    let answered: Promise<void> | undefined;
    const erin = await as('erin');
    const frank = await as('frank');
    for await (const response of server.ingestion.streamIngestDocument(upload.requests, erin)) {
      if (response.event.case === 'result') {
        order.push('result');
        continue;
      }
      const progress = response.event.value;
      if (progress === undefined) continue;
      const label =
        progress.phase === IngestPhase.CHUNKING
          ? progress.chunksPlanned > 0
            ? 'chunks planned'
            : 'chunking'
          : IngestPhase[progress.phase];
      if (order.at(-1) !== label) order.push(label);
      if (progress.phase === IngestPhase.CHUNKING && answered === undefined) {
        // A small call of another caller, sent as soon as the server starts preparing the text.
        answered = server.ingestion.listDocuments({}, frank).then(() => {
          order.push('small call answered');
        });
      }
    }
    await answered;
    expect(order.at(-1)).toBe('result');
    // The small call was answered while the document was still being prepared (before anything
    // was written), and the planned chunk count was reported during CHUNKING.
    const answeredAt = order.indexOf('small call answered');
    expect(answeredAt).toBeGreaterThan(order.indexOf('chunking'));
    expect(answeredAt).toBeLessThan(order.indexOf('WRITING'));
    expect(order.indexOf('chunks planned')).toBeGreaterThan(order.indexOf('chunking'));
    expect(order.indexOf('chunks planned')).toBeLessThan(order.indexOf('WRITING'));
  }, 180_000);
});
