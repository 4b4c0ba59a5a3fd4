import { Code, ConnectError, createRouterTransport, type HandlerContext } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { ContextService } from '@engram/contracts/context';
import { GovernanceService, MemoryType } from '@engram/contracts/governance';
import { ErrorInfoSchema, RetryInfoSchema } from '@engram/contracts/grpc';
import { IngestionService, IngestPhase, type StreamIngestDocumentRequest } from '@engram/contracts/ingestion';
import { EngramClient } from './client.js';
import { UNARY_INGEST_LIMIT_BYTES } from './documents.js';
import { EngramError } from './errors.js';

// The facade over an in-memory Connect router (no network): what the SDK itself decides —
// retries, request ids, auth headers, error mapping, stream handling. The real server is
// exercised by services/all-in-one/test/typescript-sdk.int.spec.ts.

/** A refusal the policy retries at once: RESOURCE_EXHAUSTED OVERLOADED with a 1 ms RetryInfo. */
function overloaded(): ConnectError {
  return new ConnectError('overloaded', Code.ResourceExhausted, undefined, [
    { desc: ErrorInfoSchema, value: { reason: 'OVERLOADED', domain: 'engram.governance', metadata: {} } },
    { desc: RetryInfoSchema, value: { retryDelay: { seconds: 0n, nanos: 1_000_000 } } },
  ]);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('EngramClient retries', () => {
  it('sends the same generated request_id on every attempt of a retried create', async () => {
    const seen: string[] = [];
    const transport = createRouterTransport(({ service }) => {
      service(GovernanceService, {
        createMemory: (request) => {
          seen.push(request.requestId);
          if (seen.length < 3) throw overloaded();
          return { memory: { name: 'memories/01', text: request.memory?.text ?? '' } };
        },
      });
    });
    const engram = new EngramClient(transport);
    const created = await engram.memories.create({
      memory: { type: MemoryType.FACT, text: 'Ann likes tea.' },
    });
    expect(created.memory?.name).toBe('memories/01');
    expect(seen).toHaveLength(3);
    expect(seen[0]).toMatch(UUID);
    expect(new Set(seen).size).toBe(1);
  });

  it("keeps the caller's own request_id", async () => {
    const seen: string[] = [];
    const transport = createRouterTransport(({ service }) => {
      service(IngestionService, {
        createSession: (request) => {
          seen.push(request.requestId);
          if (seen.length === 1) throw overloaded();
          return { session: { name: 'sessions/01' } };
        },
      });
    });
    const session = await new EngramClient(transport).sessions.create({ displayName: 'x' }, 'my-key-1');
    expect(session.name).toBe('sessions/01');
    expect(seen).toEqual(['my-key-1', 'my-key-1']);
  });

  it('gives up after 4 attempts with an EngramError carrying the reason, RetryInfo and request id', async () => {
    let attempts = 0;
    const transport = createRouterTransport(({ service }) => {
      service(IngestionService, {
        appendMessages: () => {
          attempts++;
          throw overloaded();
        },
      });
    });
    const engram = new EngramClient(transport);
    const failure = await engram.sessions.append('sessions/01', [{ content: 'hi' }]).catch((e: unknown) => e);
    expect(attempts).toBe(4);
    expect(failure).toBeInstanceOf(EngramError);
    expect(failure).toMatchObject({
      code: Code.ResourceExhausted,
      codeName: 'RESOURCE_EXHAUSTED',
      reason: 'OVERLOADED',
      domain: 'engram.governance',
      retryDelayMs: 1,
      requestId: expect.stringMatching(UUID),
    });
  });

  it('does not retry with `retry: false`, nor an error the policy refuses', async () => {
    let attempts = 0;
    const transport = createRouterTransport(({ service }) => {
      service(GovernanceService, {
        getMemory: () => {
          attempts++;
          throw new ConnectError('gone', Code.NotFound, undefined, [
            {
              desc: ErrorInfoSchema,
              value: {
                reason: 'RESOURCE_NOT_FOUND',
                domain: 'engram.governance',
                metadata: { name: 'memories/x' },
              },
            },
          ]);
        },
        createMemory: () => {
          attempts++;
          throw overloaded();
        },
      });
    });
    const error = await new EngramClient(transport).memories.get('memories/x').catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: Code.NotFound,
      reason: 'RESOURCE_NOT_FOUND',
      metadata: { name: 'memories/x' },
    });
    expect(attempts).toBe(1);
    attempts = 0;
    await expect(
      new EngramClient(transport, { retry: false }).memories.create({ memory: {} }),
    ).rejects.toMatchObject({
      reason: 'OVERLOADED',
    });
    expect(attempts).toBe(1);
  });

  it('does not retry past the deadline', async () => {
    let attempts = 0;
    const transport = createRouterTransport(({ service }) => {
      service(GovernanceService, {
        createMemory: () => {
          attempts++;
          throw new ConnectError('overloaded', Code.ResourceExhausted, undefined, [
            {
              desc: ErrorInfoSchema,
              value: { reason: 'OVERLOADED', domain: 'engram.governance', metadata: {} },
            },
            { desc: RetryInfoSchema, value: { retryDelay: { seconds: 5n, nanos: 0 } } },
          ]);
        },
      });
    });
    const started = performance.now();
    await expect(
      new EngramClient(transport, { timeoutMs: 1000 }).memories.create({ memory: {} }),
    ).rejects.toMatchObject({
      reason: 'OVERLOADED',
      retryDelayMs: 5000,
    });
    expect(attempts).toBe(1);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe('EngramClient auth', () => {
  it('asks the tokenProvider on every request, so a refreshed token is used', async () => {
    const headers: (string | null)[] = [];
    const transport = createRouterTransport(({ service }) => {
      service(GovernanceService, {
        getMemory: (request, context: HandlerContext) => {
          headers.push(context.requestHeader.get('authorization'));
          return { memory: { name: request.name } };
        },
      });
    });
    let n = 0;
    const engram = new EngramClient(transport, { tokenProvider: async () => `token-${String(++n)}` });
    await engram.memories.get('memories/a');
    await engram.raw.governance.getMemory({ name: 'memories/b' });
    expect(headers).toEqual(['Bearer token-1', 'Bearer token-2']);
  });

  it('fails with UNAUTHENTICATED when the tokenProvider throws', async () => {
    const transport = createRouterTransport(({ service }) => {
      service(GovernanceService, { getMemory: () => ({}) });
    });
    const engram = new EngramClient(transport, {
      tokenProvider: () => {
        throw new Error('identity provider down');
      },
    });
    await expect(engram.memories.get('memories/a')).rejects.toMatchObject({ code: Code.Unauthenticated });
  });
});

describe('EngramClient chat', () => {
  it('retries a stream that failed before its first event, with the same request_id, and yields the deltas', async () => {
    const seen: string[] = [];
    const transport = createRouterTransport(({ service }) => {
      service(ContextService, {
        async *chat(request) {
          seen.push(request.requestId);
          if (seen.length === 1) throw overloaded();
          yield { event: { case: 'context', value: { model: 'm' } } };
          yield { event: { case: 'delta', value: { text: 'Hel' } } };
          yield { event: { case: 'delta', value: { text: 'lo' } } };
          yield { event: { case: 'done', value: { text: 'Hello' } } };
        },
      });
    });
    const engram = new EngramClient(transport);
    const text: string[] = [];
    for await (const delta of engram.chat({
      session: 'sessions/1',
      userMessage: 'hi',
      budget: { totalTokens: 100 },
    })) {
      text.push(delta.text);
    }
    expect(text).toEqual(['Hel', 'lo']);
    expect(seen).toHaveLength(2);
    expect(seen[0]).toMatch(UUID);
    expect(seen[1]).toBe(seen[0]);
  });

  it('does not retry once an event has arrived', async () => {
    let calls = 0;
    const transport = createRouterTransport(({ service }) => {
      service(ContextService, {
        async *chat() {
          calls++;
          yield { event: { case: 'context', value: {} } };
          throw overloaded();
        },
      });
    });
    const events: string[] = [];
    const consume = async () => {
      for await (const event of new EngramClient(transport).chat.events({ session: 's', userMessage: 'q' })) {
        events.push(event.event.case ?? '');
      }
    };
    await expect(consume()).rejects.toMatchObject({ reason: 'OVERLOADED', code: Code.ResourceExhausted });
    expect(events).toEqual(['context']);
    expect(calls).toBe(1);
  });
});

describe('EngramClient documents.ingest', () => {
  it('streams parts after one header, reporting the server progress, where the transport has bidi streams', async () => {
    const received: StreamIngestDocumentRequest[] = [];
    const transport = createRouterTransport(({ service }) => {
      service(IngestionService, {
        async *streamIngestDocument(requests) {
          let bytes = 0n;
          for await (const request of requests) {
            received.push(request);
            if (request.payload.case === 'part') bytes += BigInt(request.payload.value.data.byteLength);
            yield {
              event: { case: 'progress', value: { phase: IngestPhase.RECEIVING, bytesReceived: bytes } },
            };
          }
          yield { event: { case: 'result', value: { document: { name: 'documents/1' }, chunksWritten: 2 } } };
        },
      });
    });
    const engram = new EngramClient(transport, {}, { bidiStreaming: true });
    const progress: bigint[] = [];
    async function* content() {
      yield new TextEncoder().encode('# Title\n\n');
      yield new TextEncoder().encode('Some text that goes on.');
    }
    const result = await engram.documents.ingest(content(), {
      document: { mimeType: 'text/markdown' },
      partBytes: 10,
      onProgress: (p) => progress.push(p.bytesReceived),
    });
    expect(result).toMatchObject({ document: { name: 'documents/1' }, chunksWritten: 2 });
    const [header, ...parts] = received;
    expect(header?.payload.case).toBe('header');
    const headerValue = header?.payload.case === 'header' ? header.payload.value : undefined;
    expect(headerValue?.requestId).toMatch(UUID);
    expect(headerValue?.expectedSizeBytes).toBeUndefined(); // unknown for an async iterable
    const datas = parts.map((p) => (p.payload.case === 'part' ? p.payload.value.data : new Uint8Array()));
    expect(datas.every((d) => d.byteLength <= 10)).toBe(true);
    expect(new TextDecoder().decode(Buffer.concat(datas))).toBe('# Title\n\nSome text that goes on.');
    expect(progress.at(-1)).toBe(32n);
  });

  it('falls back to one IngestDocument request over fetch, and refuses over 4 MiB before sending', async () => {
    const contents: string[] = [];
    const transport = createRouterTransport(({ service }) => {
      service(IngestionService, {
        ingestDocument: (request) => {
          contents.push(new TextDecoder().decode(request.content));
          return { document: { name: 'documents/2', mimeType: request.document?.mimeType ?? '' } };
        },
      });
    });
    const engram = new EngramClient(transport);
    const small = await engram.documents.ingest('hello world', { document: { mimeType: 'text/plain' } });
    expect(small.document?.name).toBe('documents/2');
    expect(contents).toEqual(['hello world']);
    const large = new Uint8Array(UNARY_INGEST_LIMIT_BYTES + 1).fill(0x61);
    await expect(
      engram.documents.ingest(large, { document: { mimeType: 'text/plain' } }),
    ).rejects.toMatchObject({
      code: Code.ResourceExhausted,
      reason: 'DOCUMENT_TOO_LARGE',
      metadata: { limit_bytes: String(UNARY_INGEST_LIMIT_BYTES) },
    });
    expect(contents).toHaveLength(1);
  });
});

describe('EngramClient pagination', () => {
  it('lists memories across pages, sending each next_page_token and the same filters', async () => {
    const tokens: string[] = [];
    const transport = createRouterTransport(({ service }) => {
      service(GovernanceService, {
        listMemories: (request) => {
          tokens.push(request.pageToken);
          expect(request.pageSize).toBe(2);
          expect(request.types).toEqual([MemoryType.FACT]);
          const start = request.pageToken === '' ? 0 : Number(request.pageToken);
          const names = ['a', 'b', 'c', 'd', 'e'].slice(start, start + 2);
          return {
            memories: names.map((n) => ({ name: `memories/${n}` })),
            nextPageToken: start + 2 < 5 ? String(start + 2) : '',
          };
        },
      });
    });
    const names: string[] = [];
    for await (const memory of new EngramClient(transport).memories.list({
      pageSize: 2,
      types: [MemoryType.FACT],
    })) {
      names.push(memory.name);
    }
    expect(names).toEqual(['memories/a', 'memories/b', 'memories/c', 'memories/d', 'memories/e']);
    expect(tokens).toEqual(['', '2', '4']);
  });
});

describe('EngramClient errors', () => {
  it('throws an EngramError when the content stream itself fails', async () => {
    const transport = createRouterTransport(({ service }) => {
      service(IngestionService, { ingestDocument: () => ({}) });
    });
    async function* broken(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array([0x61]);
      throw new Error('ENOENT: no such file');
    }
    const failure = await new EngramClient(transport).documents
      .ingest(broken(), { document: { mimeType: 'text/plain' } })
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(EngramError);
    expect((failure as EngramError).message).toContain('ENOENT');
  });
});
