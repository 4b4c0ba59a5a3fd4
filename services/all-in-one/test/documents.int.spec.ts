import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { openStore } from '@engram/store';
import {
  bearer,
  errorInfo,
  grpcClient,
  loadProtos,
  newSecret,
  startServer,
  tempDir,
  tokenFor,
  unary,
} from './harness.js';

interface Document {
  name: string;
  displayName: string;
  state: string;
  chunkCount: number;
  indexedChunkCount: number;
  contentHash: string;
  charCount: string;
  owner: string;
  chunking: { chunkSizeChars: number; overlapChars: number };
}
interface Chunk {
  name: string;
  ordinal: number;
  kind: string;
  text: string;
  startOffset: string;
  endOffset: string;
  headingPath: string[];
  tokenCount: number;
}
interface IngestResponse {
  document: Document;
  chunksWritten: number;
  deduplicated: boolean;
  indexComplete: boolean;
}

const secret = newSecret();
let stop: () => Promise<void>;
let ingestion: grpc.Client;
let retrieval: grpc.Client;

const dataDir = tempDir();

beforeAll(async () => {
  const started = await startServer(secret, { dataDir });
  stop = started.stop;
  const protos = loadProtos();
  const address = `127.0.0.1:${started.server.port}`;
  ingestion = grpcClient(protos, 'engram.ingestion.v1.IngestionService', address);
  retrieval = grpcClient(protos, 'engram.retrieval.v1.RetrievalService', address);
}, 60_000);

afterAll(async () => {
  ingestion.close();
  retrieval.close();
  await stop();
});

const as = async (subject: string, options: { orgIds?: string[]; roles?: ('admin' | 'platform')[] } = {}) =>
  bearer(await tokenFor(secret, { subject, tenantId: 'acme', ...options }));

const markdown = [
  '# Travel policy',
  '',
  'Employees book economy class for flights under six hours. 超过六小时的航班可以预订商务舱。',
  '',
  '## Allowances',
  '',
  '| city | per day |',
  '| --- | --- |',
  '| Tokyo | 20000 JPY |',
  '| Berlin | 60 EUR |',
  '',
  '```sh',
  'engram ingest policy.md',
  '```',
  '',
].join('\n');

async function ingest(request: object, subject = 'alice') {
  return unary<IngestResponse>(ingestion, 'IngestDocument', request, { metadata: await as(subject) });
}

describe('document ingestion through gRPC on the embedded defaults', () => {
  let policy: Document;

  it('chunks a Markdown document, keeps tables and code whole, and makes it searchable', async () => {
    const { response, error } = await ingest({
      document: { mimeType: 'text/markdown', sourceUri: 'file:///docs/policy.md' },
      content: Buffer.from(markdown),
      waitForIndex: true,
      requestId: 'policy-1',
    });
    expect(error).toBeUndefined();
    policy = response!.document;
    expect(response).toMatchObject({ deduplicated: false, indexComplete: true });
    expect(policy).toMatchObject({ displayName: 'policy.md', state: 'DOCUMENT_STATE_READY', owner: 'alice' });
    expect(policy.chunkCount).toBe(response!.chunksWritten);
    expect(policy.indexedChunkCount).toBe(policy.chunkCount);
    expect(Number(policy.charCount)).toBe(Array.from(markdown).length);

    const chunks = await unary<{ chunks: Chunk[] }>(
      ingestion,
      'ListChunks',
      { parent: policy.name },
      { metadata: await as('alice') },
    );
    const kinds = chunks.response!.chunks.map((c) => c.kind);
    expect(kinds).toContain('CHUNK_KIND_TABLE');
    expect(kinds).toContain('CHUNK_KIND_CODE');
    const table = chunks.response!.chunks.find((c) => c.kind === 'CHUNK_KIND_TABLE')!;
    expect(table.text).toContain('| Tokyo | 20000 JPY |');
    expect(table.headingPath).toEqual(['Travel policy', 'Allowances']);
    expect(Array.from(markdown).slice(Number(table.startOffset), Number(table.endOffset)).join('')).toBe(
      table.text,
    );
    expect(table.tokenCount).toBeGreaterThan(0);
  });

  it('does not store identical content twice, and a retried request returns the first result', async () => {
    const again = await ingest({ document: { mimeType: 'text/markdown' }, content: Buffer.from(markdown) });
    expect(again.response).toMatchObject({ deduplicated: true, chunksWritten: 0 });
    expect(again.response?.document.name).toBe(policy.name);
    const retry = await ingest({
      document: { mimeType: 'text/markdown', sourceUri: 'file:///docs/policy.md' },
      content: Buffer.from(markdown),
      waitForIndex: true,
      requestId: 'policy-1',
    });
    expect(retry.response).toMatchObject({ deduplicated: false, chunksWritten: policy.chunkCount });
    expect(retry.response?.document.name).toBe(policy.name);
    const reused = await ingest({
      document: { mimeType: 'text/plain' },
      content: Buffer.from('other'),
      requestId: 'policy-1',
    });
    expect(reused.error && errorInfo(reused.error)?.reason).toBe('REQUEST_ID_REUSED');
  });

  it('redacts secrets before anything is stored', async () => {
    const key = ['sk', 'proj', 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'].join('-');
    const { response } = await ingest({
      document: { mimeType: 'text/plain' },
      content: Buffer.from(`Deploy notes. The API key is ${key} and the password: hunter2-Secret!`),
    });
    const chunks = await unary<{ chunks: Chunk[] }>(
      ingestion,
      'ListChunks',
      { parent: response!.document.name },
      { metadata: await as('alice') },
    );
    const text = chunks.response!.chunks.map((c) => c.text).join('\n');
    expect(text).toContain('[redacted:api_key]');
    expect(text).not.toContain(key);
    expect(text).not.toContain('hunter2-Secret!');
  });

  it('extracts the visible text of HTML with a real parser', async () => {
    const { response } = await ingest({
      document: { mimeType: 'text/html; charset=utf-8' },
      content: Buffer.from(
        '<html><head><script>bad()</script></head><body><h1>Menu</h1><p>Soup &amp; bread</p></body></html>',
      ),
    });
    const chunks = await unary<{ chunks: Chunk[] }>(
      ingestion,
      'ListChunks',
      { parent: response!.document.name },
      { metadata: await as('alice') },
    );
    expect(chunks.response!.chunks.map((c) => c.text).join('')).toBe('# Menu\n\nSoup & bread');
  });

  it('hides a SELF document from other users, and lets only the owner delete it', async () => {
    const other = await unary(ingestion, 'GetDocument', { name: policy.name }, { metadata: await as('bob') });
    expect(other.error?.code).toBe(grpc.status.NOT_FOUND);
    const listed = await unary<{ documents: Document[] }>(
      ingestion,
      'ListDocuments',
      {},
      { metadata: await as('bob') },
    );
    expect(listed.response?.documents).toEqual([]);
    const mine = await unary<{ documents: Document[] }>(
      ingestion,
      'ListDocuments',
      {},
      { metadata: await as('alice') },
    );
    expect(mine.response?.documents.map((d) => d.name)).toContain(policy.name);
  });

  it('answers precise errors for bad input', async () => {
    const html = await ingest({ document: { mimeType: 'application/pdf' }, content: Buffer.from('%PDF') });
    expect(html.error && errorInfo(html.error)).toMatchObject({ reason: 'MEDIA_TYPE_UNSUPPORTED' });
    const utf8 = await ingest({
      document: { mimeType: 'text/plain' },
      content: Buffer.from([0xff, 0xfe, 0x00]),
    });
    expect(utf8.error && errorInfo(utf8.error)).toMatchObject({
      reason: 'FIELD_INVALID',
      metadata: { field: 'content' },
    });
    const blank = await ingest({ document: { mimeType: 'text/plain' }, content: Buffer.from(' \n ') });
    expect(blank.error && errorInfo(blank.error)).toMatchObject({ reason: 'FIELD_REQUIRED' });
    const big = await ingest({
      document: { mimeType: 'text/plain' },
      content: Buffer.alloc(4 * 1024 * 1024 + 1, 0x61),
    });
    expect(big.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(big.error && errorInfo(big.error)?.reason).toBe('DOCUMENT_TOO_LARGE');
    const org = await ingest({
      document: { mimeType: 'text/plain', scope: 'SCOPE_ORG', orgId: 'globex' },
      content: Buffer.from('x'),
    });
    expect(org.error?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(org.error && errorInfo(org.error)?.reason).toBe('SCOPE_NOT_ALLOWED');
    const name = await unary(ingestion, 'GetDocument', { name: 'docs/1' }, { metadata: await as('alice') });
    expect(name.error && errorInfo(name.error)?.reason).toBe('NAME_INVALID');
  });

  it('deletes a document with its chunks, and their points leave the index', async () => {
    const deleted = await unary<{ name: string; chunksDeleted: number }>(
      ingestion,
      'DeleteDocument',
      { name: policy.name },
      { metadata: await as('alice') },
    );
    expect(deleted.error).toBeUndefined();
    // The response names what went, as documented (it was once empty).
    expect(deleted.response).toEqual({ name: policy.name, chunksDeleted: policy.chunkCount });
    const gone = await unary(
      ingestion,
      'GetDocument',
      { name: policy.name },
      { metadata: await as('alice') },
    );
    expect(gone.error?.code).toBe(grpc.status.NOT_FOUND);
    let chunks: { sourceRows: string; indexedPoints?: string } | undefined;
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const { response } = await unary<{
        indexStatus: {
          kinds: { kind: string; sourceRows: string; indexedPoints?: string }[];
          outboxPending: string;
        };
      }>(retrieval, 'GetIndexStatus', {}, { metadata: await as('root', { roles: ['admin'] }) });
      chunks = response?.indexStatus.kinds.find((k) => k.kind === 'ITEM_KIND_CHUNK');
      if (response?.indexStatus.outboxPending === '0' && chunks?.sourceRows === chunks?.indexedPoints) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(chunks?.indexedPoints).toBe(chunks?.sourceRows);
  });
});

interface StreamEvent {
  progress?: {
    phase: string;
    bytesReceived: string;
    chunksPlanned: number;
    chunksWritten: number;
    document: string;
  };
  result?: IngestResponse & { resumed: boolean };
}

/** Streams a header and parts through a grpc-js bidi call and collects the server's events. */
async function streamIngest(
  header: object,
  parts: Buffer[],
  subject = 'alice',
  options: { secondHeader?: boolean } = {},
) {
  const call = (
    ingestion as unknown as {
      StreamIngestDocument: (metadata: grpc.Metadata) => grpc.ClientDuplexStream<object, StreamEvent>;
    }
  ).StreamIngestDocument(await as(subject));
  const events: StreamEvent[] = [];
  const done = new Promise<{ events: StreamEvent[]; error?: grpc.ServiceError }>((resolve) => {
    call.on('data', (event: StreamEvent) => events.push(event));
    call.on('error', (error: grpc.ServiceError) => {
      resolve({ events, error });
    });
    call.on('end', () => {
      resolve({ events });
    });
  });
  call.write({ header });
  if (options.secondHeader === true) call.write({ header });
  for (const data of parts) call.write({ part: { data } });
  call.end();
  return done;
}

function bigMarkdown(sections: number): string {
  return Array.from(
    { length: sections },
    (_, i) =>
      `## Section ${i}\n\nThe quarterly report ${i} covers revenue, hiring and the roadmap. 第${i}节讨论了预算和招聘计划。\n\n| metric | value |\n| --- | --- |\n| revenue | ${i * 7} |\n`,
  ).join('\n');
}

describe('streamed document ingestion', () => {
  it('streams a large Markdown document in parts with progress events and ends with the result', async () => {
    const text = bigMarkdown(3000);
    const bytes = Buffer.from(text);
    const parts = Array.from({ length: Math.ceil(bytes.length / 65_536) }, (_, i) =>
      bytes.subarray(i * 65_536, (i + 1) * 65_536),
    );
    const { events, error } = await streamIngest(
      { document: { mimeType: 'text/markdown' }, expectedSizeBytes: bytes.length, requestId: 'stream-1' },
      parts,
    );
    expect(error).toBeUndefined();
    const phases = events.flatMap((e) => (e.progress === undefined ? [] : [e.progress.phase]));
    expect(phases[0]).toBe('INGEST_PHASE_RECEIVING');
    expect(phases).toContain('INGEST_PHASE_CHUNKING');
    expect(phases).toContain('INGEST_PHASE_WRITING');
    const result = events.at(-1)?.result;
    expect(result?.document.state).toBe('DOCUMENT_STATE_READY');
    expect(result?.chunksWritten).toBe(result?.document.chunkCount);
    expect(result?.document.chunkCount).toBeGreaterThan(200);
    const writing = events.flatMap((e) =>
      e.progress?.phase === 'INGEST_PHASE_WRITING' ? [e.progress.chunksWritten] : [],
    );
    expect(writing).toEqual([...writing].sort((a, b) => a - b));
    expect(Number(result?.document.charCount)).toBe(Array.from(text).length);

    // A retry with the same request id returns the same result without writing again.
    const retry = await streamIngest(
      { document: { mimeType: 'text/markdown' }, requestId: 'stream-1' },
      parts,
    );
    expect(retry.events.at(-1)?.result).toMatchObject({
      chunksWritten: result?.chunksWritten,
      deduplicated: false,
    });
    expect(retry.events.at(-1)?.result?.document.name).toBe(result?.document.name);
  });

  it('refuses a stream whose first message is not the header, or with a second header', async () => {
    const twice = await streamIngest({ document: { mimeType: 'text/plain' } }, [Buffer.from('x')], 'alice', {
      secondHeader: true,
    });
    expect(twice.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(twice.error && errorInfo(twice.error)?.reason).toBe('STREAM_PROTOCOL_VIOLATION');
    const wrongSize = await streamIngest({ document: { mimeType: 'text/plain' }, expectedSizeBytes: 10 }, [
      Buffer.from('abc'),
    ]);
    expect(wrongSize.error && errorInfo(wrongSize.error)).toMatchObject({
      reason: 'STREAM_PROTOCOL_VIOLATION',
      metadata: { field: 'expected_size_bytes' },
    });
    const tooBig = await streamIngest(
      { document: { mimeType: 'text/plain' }, expectedSizeBytes: 65 * 1024 * 1024 },
      [],
    );
    expect(tooBig.error && errorInfo(tooBig.error)?.reason).toBe('DOCUMENT_TOO_LARGE');
  });

  it('resumes an ingestion interrupted after some batches, without duplicating chunks', async () => {
    const text = bigMarkdown(1500).replaceAll('quarterly', 'annual');
    const bytes = Buffer.from(text);
    const header = { document: { mimeType: 'text/markdown' } };
    const complete = (
      await streamIngest(header, [bytes.subarray(0, 500_000), bytes.subarray(500_000)])
    ).events.at(-1)?.result;
    expect(complete?.document.state).toBe('DOCUMENT_STATE_READY');
    const total = complete!.document.chunkCount;
    // Simulate a crash after the first batches: the document is INGESTING with only its first chunks.
    const id = complete!.document.name.split('/')[1]!;
    const store = openStore({ target: join(dataDir, 'engram.db') });
    try {
      await store.db.deleteFrom('chunks').where('document_id', '=', id).where('ordinal', '>=', 200).execute();
      await store.db
        .updateTable('documents')
        .set({ state: 'INGESTING', chunk_count: 200 })
        .where('id', '=', id)
        .execute();
    } finally {
      await store.close();
    }
    const again = (await streamIngest(header, [bytes])).events.at(-1)?.result;
    expect(again).toMatchObject({ resumed: true, deduplicated: false, chunksWritten: total - 200 });
    expect(again?.document).toMatchObject({
      name: complete!.document.name,
      state: 'DOCUMENT_STATE_READY',
      chunkCount: total,
    });
    const page = await unary<{ chunks: Chunk[] }>(
      ingestion,
      'ListChunks',
      { parent: complete!.document.name, pageSize: 1000 },
      { metadata: await as('alice') },
    );
    const ordinals = page.response!.chunks.map((c) => c.ordinal);
    expect(ordinals).toEqual(Array.from({ length: Math.min(1000, total) }, (_, i) => i));
  });
});
