import { createHash } from 'node:crypto';
import type { Duration } from '@bufbuild/protobuf/wkt';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import { Scope } from '@engram/contracts/common';
import {
  ChunkKind,
  DocumentState,
  IngestPhase,
  type ChunkingOptions,
  type Document,
  type IngestionService,
} from '@engram/contracts/ingestion';
import { redact } from '@engram/redaction';
import { errors, requirePrincipal, type Logger, type Principal } from '@engram/runtime';
import {
  DocumentRepository,
  checkRequestId,
  idempotent,
  inTransaction,
  previousResult,
  requestKeyOf,
  viewerOf,
  type Scope as StoredScope,
  type Store,
} from '@engram/store';
import {
  authorizedListScope,
  authorizedScope,
  checkDocumentFields,
  chunkMessage,
  chunkingOptions,
  defaultDisplayName,
  documentMessage,
  parseChunkName,
  parseDocumentName,
} from './documents-api.js';
import { chunkText, type ChunkPiece } from './domain/chunker.js';
import {
  codePoints,
  contentHash,
  normalizeContent,
  parseMediaType,
  type MediaType,
} from './domain/normalize.js';
import type { BoundaryRules } from './domain/boundaries.js';
import { countTokens } from './domain/token-count.js';
import type { ExtractionHandOff } from './handoff.js';
import { createSessionHandlers } from './sessions-service.js';

/** What the ingestion service is built from. */
export interface IngestionDeps {
  readonly logger: Logger;
  readonly store: Store;
  readonly settings: {
    /** Largest document in one IngestDocument request, bytes. */
    readonly maxDocumentBytes: number;
    /** Default chunk size and overlap, code points. */
    readonly chunkSize: number;
    readonly overlap: number;
    /** Redact secrets before anything is stored. */
    readonly redactSecrets: (tenantId: string) => boolean;
    /** Thresholds of the rule-based MemCell boundaries. */
    readonly boundaries: BoundaryRules;
  };
  /** The durable hand-off of closed MemCells to governance (absent: cells wait, PENDING). */
  readonly handOff?: ExtractionHandOff;
  /** Told when a session's open tail grew (the asynchronous boundary judge). */
  readonly onTailGrew?: (tenantId: string, sessionId: string) => void;
}

/** Streamed documents: at most 64 MiB in parts of at most 1 MiB (the API's limits). */
const STREAM_MAX_BYTES = 64 * 1024 * 1024;
const MAX_PART_BYTES = 1024 * 1024;
/** Progress while counts change, at most this often, ms. */
const PROGRESS_EVERY_MS = 250;
/** Chunks per transaction of a streamed ingestion. */
const WRITE_BATCH = 200;

/** A validated ingestion request, before its content is read. */
interface IngestPlan {
  readonly input: Document;
  readonly mediaType: MediaType;
  readonly scope: StoredScope;
  readonly orgId: string;
  readonly options: ReturnType<typeof chunkingOptions>;
  readonly waitMs: number;
  readonly waitForIndex: boolean;
  readonly requestId: string;
  readonly chunking: ChunkingOptions | undefined;
}

/** What an ingestion stores under its request id. */
interface StoredResult {
  readonly documentId: string;
  readonly chunksWritten: number;
  readonly deduplicated: boolean;
  readonly resumed: boolean;
}

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 500;
/** How long `wait_for_index` waits by default and at most, ms. */
const INDEX_WAIT_DEFAULT_MS = 60_000;
const INDEX_WAIT_MAX_MS = 600_000;

function pageSize(requested: number, max = MAX_PAGE_SIZE, fallback = DEFAULT_PAGE_SIZE): number {
  if (requested < 0) throw errors.fieldInvalid('page_size', 'must not be negative');
  return requested === 0 ? fallback : Math.min(requested, max);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}

/**
 * `engram.ingestion.v1.IngestionService`. Methods are added here as their issues land; a method
 * that is absent answers UNIMPLEMENTED with reason NOT_IMPLEMENTED, never with made-up data.
 */
export function createIngestionService(deps: IngestionDeps): Partial<ServiceImpl<typeof IngestionService>> {
  const documents = new DocumentRepository(deps.store);

  /** Validates what IngestDocument and the stream header share; fails before any content is read. */
  const validateHeader = (
    principal: Principal,
    header: {
      document?: Document | undefined;
      chunking?: ChunkingOptions | undefined;
      requestId: string;
      indexWaitTimeout?: Duration | undefined;
      waitForIndex: boolean;
    },
  ): IngestPlan => {
    const input = header.document;
    if (input === undefined) throw errors.fieldRequired('document');
    const mediaType = parseMediaType(input.mimeType);
    checkDocumentFields(input);
    const { scope, orgId } = authorizedScope(principal, input.scope, input.orgId);
    checkRequestId(header.requestId);
    const options = chunkingOptions(header.chunking, deps.settings);
    let waitMs = INDEX_WAIT_DEFAULT_MS;
    if (header.indexWaitTimeout !== undefined) {
      waitMs =
        Number(header.indexWaitTimeout.seconds) * 1000 + Math.floor(header.indexWaitTimeout.nanos / 1e6);
      if (waitMs <= 0 || waitMs > INDEX_WAIT_MAX_MS)
        throw errors.fieldInvalid('index_wait_timeout', 'range (0, 600s]');
    }
    return {
      input,
      mediaType,
      scope,
      orgId,
      options,
      waitMs,
      waitForIndex: header.waitForIndex,
      requestId: header.requestId,
      chunking: header.chunking,
    };
  };

  /** Normalized, redacted text, its hash, and its chunks with token counts. */
  const prepare = (tenantId: string, plan: IngestPlan, content: Uint8Array) => {
    let text = normalizeContent(content, plan.mediaType);
    if (deps.settings.redactSecrets(tenantId)) text = redact(text).text;
    const pieces = chunkText(text, { ...plan.options, markdown: plan.mediaType !== 'text/plain' }).map(
      (piece) => ({
        ...piece,
        tokenCount: countTokens(piece.text),
      }),
    );
    return { text, hash: contentHash(text), pieces };
  };

  /**
   * The same for a streamed document (up to 64 MiB): token counting yields to the event loop
   * between batches, so a large document does not stall the other calls of the process.
   */
  const prepareLarge = async (tenantId: string, plan: IngestPlan, content: Uint8Array) => {
    let text = normalizeContent(content, plan.mediaType);
    if (deps.settings.redactSecrets(tenantId)) text = redact(text).text;
    const chunks = chunkText(text, { ...plan.options, markdown: plan.mediaType !== 'text/plain' });
    const pieces: (ChunkPiece & { tokenCount: number })[] = [];
    for (const [i, piece] of chunks.entries()) {
      pieces.push({ ...piece, tokenCount: countTokens(piece.text) });
      if (i % 500 === 499) await new Promise((resolve) => setImmediate(resolve));
    }
    return { text, hash: contentHash(text), pieces };
  };

  const requestKey = (principal: Principal, requestId: string, method: string) =>
    requestKeyOf(principal, `engram.ingestion.v1.IngestionService/${method}`, requestId);

  /** The request as it matters for request ids: the header, and the content by its hash. */
  const requestBody = (plan: IngestPlan, content: Uint8Array) => ({
    document: plan.input,
    chunking: plan.chunking,
    content: createHash('sha256').update(content).digest('hex'),
  });

  const identity = (principal: Principal, plan: IngestPlan, hash: string) => ({
    tenantId: principal.tenantId,
    ownerId: principal.subject,
    scope: plan.scope,
    orgId: plan.orgId,
    mimeType: plan.mediaType,
    contentHash: hash,
  });

  const newDocument = (
    principal: Principal,
    plan: IngestPlan,
    prepared: { text: string; hash: string },
    sizeBytes: number,
    state: 'READY' | 'INGESTING',
  ) => ({
    tenantId: principal.tenantId,
    ownerId: principal.subject,
    orgId: plan.orgId,
    scope: plan.scope,
    displayName:
      plan.input.displayName === ''
        ? defaultDisplayName(plan.input.sourceUri, prepared.text)
        : plan.input.displayName,
    mimeType: plan.mediaType,
    sourceUri: plan.input.sourceUri,
    metadata: { ...plan.input.metadata },
    contentHash: prepared.hash,
    sizeBytes,
    charCount: codePoints(prepared.text),
    state,
    chunkSize: plan.options.chunkSize,
    chunkOverlap: plan.options.overlap,
    keepTablesWhole: plan.options.keepTablesWhole,
    keepCodeWhole: plan.options.keepCodeWhole,
  });

  /** The response of both ingestion methods, after waiting for the index when asked to. */
  const finish = async (
    principal: Principal,
    plan: IngestPlan,
    result: StoredResult,
    ctx: HandlerContext,
  ) => {
    let document = await documents.get(principal.tenantId, result.documentId);
    if (document === undefined) throw errors.notFound(`documents/${result.documentId}`);
    let indexed = await documents.indexedChunkCount(principal.tenantId, document.id);
    if (plan.waitForIndex && indexed < document.chunkCount) {
      indexed = await waitForIndex(principal.tenantId, document.id, document.chunkCount, plan.waitMs, ctx);
      document = (await documents.get(principal.tenantId, document.id)) ?? document;
    }
    return {
      document: documentMessage(document, indexed),
      chunksWritten: result.chunksWritten,
      deduplicated: result.deduplicated,
      resumed: result.resumed,
      indexComplete: document.state === 'READY' && indexed >= document.chunkCount,
    };
  };

  /** Waits until every chunk of a READY document is in the index, or the time is up. */
  const waitForIndex = async (
    tenantId: string,
    documentId: string,
    chunkCount: number,
    ms: number,
    ctx: HandlerContext,
  ) => {
    const remaining = ctx.timeoutMs();
    // Leave the call time to answer before its own deadline.
    const deadline = Date.now() + Math.min(ms, remaining === undefined ? ms : Math.max(0, remaining - 250));
    for (;;) {
      const indexed = await documents.indexedChunkCount(tenantId, documentId);
      if (indexed >= chunkCount || Date.now() >= deadline) return indexed;
      await sleep(Math.min(100, Math.max(0, deadline - Date.now())), ctx.signal);
    }
  };

  return {
    ...createSessionHandlers(deps),

    async ingestDocument(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const plan = validateHeader(principal, request);
      if (request.content.byteLength === 0) throw errors.fieldRequired('content');
      if (request.content.byteLength > deps.settings.maxDocumentBytes) {
        throw errors.resourceExhausted(
          'DOCUMENT_TOO_LARGE',
          'the document is too large for one request; use StreamIngestDocument',
          {
            limit_bytes: deps.settings.maxDocumentBytes,
          },
        );
      }
      const prepared = prepare(principal.tenantId, plan, request.content);
      const { result } = await idempotent(
        deps.store,
        requestKey(principal, plan.requestId, 'IngestDocument'),
        requestBody(plan, request.content),
        async (trx) => {
          const existing = await documents.findByContentHash(trx, identity(principal, plan, prepared.hash));
          if (existing?.state === 'READY')
            return { documentId: existing.id, chunksWritten: 0, deduplicated: true };
          const document = await documents.createDocument(
            trx,
            newDocument(principal, plan, prepared, request.content.byteLength, 'READY'),
          );
          const chunks = await documents.addChunks(trx, principal.tenantId, document.id, prepared.pieces);
          return { documentId: document.id, chunksWritten: chunks.length, deduplicated: false };
        },
      );
      return finish(principal, plan, { ...result, resumed: false }, ctx);
    },

    async *streamIngestDocument(requests, ctx) {
      const principal = requirePrincipal(ctx.values);
      const stream = requests[Symbol.asyncIterator]();
      const first = await stream.next();
      if (first.done === true || first.value.payload.case !== 'header') {
        throw errors.invalidArgument('STREAM_PROTOCOL_VIOLATION', 'the first message must be the header', {
          field: 'header',
        });
      }
      const header = first.value.payload.value;
      const plan = validateHeader(principal, header);
      const limit = STREAM_MAX_BYTES;
      if (
        header.expectedSizeBytes !== undefined &&
        (header.expectedSizeBytes < 0n || header.expectedSizeBytes > BigInt(limit))
      ) {
        throw errors.resourceExhausted(
          'DOCUMENT_TOO_LARGE',
          'expected_size_bytes is over the streamed document limit',
          {
            limit_bytes: limit,
          },
        );
      }
      const progress = (
        phase: IngestPhase,
        fields: Partial<
          Record<'bytesReceived' | 'chunksPlanned' | 'chunksWritten' | 'chunksIndexed', number>
        > & { document?: string },
      ) => ({
        event: {
          case: 'progress' as const,
          value: {
            phase,
            bytesReceived: BigInt(fields.bytesReceived ?? 0),
            expectedSizeBytes: header.expectedSizeBytes ?? 0n,
            chunksPlanned: fields.chunksPlanned ?? 0,
            chunksWritten: fields.chunksWritten ?? 0,
            chunksIndexed: fields.chunksIndexed ?? 0,
            document: fields.document ?? '',
          },
        },
      });
      yield progress(IngestPhase.RECEIVING, {});

      // RECEIVING: nothing is written until the client half-closes, so a cancelled upload leaves nothing.
      const parts: Uint8Array[] = [];
      let received = 0;
      let reported = Date.now();
      for (let next = await stream.next(); next.done !== true; next = await stream.next()) {
        if (next.value.payload.case !== 'part') {
          throw errors.invalidArgument('STREAM_PROTOCOL_VIOLATION', 'only parts may follow the header', {
            field: 'part',
          });
        }
        const data = next.value.payload.value.data;
        if (data.byteLength > MAX_PART_BYTES) {
          throw errors.resourceExhausted('MESSAGE_TOO_LARGE', 'a part is over 1 MiB', {
            limit_bytes: MAX_PART_BYTES,
          });
        }
        received += data.byteLength;
        if (received > limit) {
          throw errors.resourceExhausted(
            'DOCUMENT_TOO_LARGE',
            'the document is over the streamed document limit',
            { limit_bytes: limit },
          );
        }
        parts.push(data);
        if (Date.now() - reported >= PROGRESS_EVERY_MS) {
          reported = Date.now();
          yield progress(IngestPhase.RECEIVING, { bytesReceived: received });
        }
      }
      if (header.expectedSizeBytes !== undefined && BigInt(received) !== header.expectedSizeBytes) {
        throw errors.invalidArgument(
          'STREAM_PROTOCOL_VIOLATION',
          'the content size differs from expected_size_bytes',
          {
            field: 'expected_size_bytes',
          },
        );
      }
      if (received === 0) throw errors.fieldRequired('part');
      const content = Buffer.concat(parts);

      const key = requestKey(principal, plan.requestId, 'StreamIngestDocument');
      const body = requestBody(plan, content);
      const replayed =
        key === undefined ? undefined : await previousResult<StoredResult>(deps.store, key, body);
      if (replayed !== undefined) {
        yield { event: { case: 'result' as const, value: await finish(principal, plan, replayed, ctx) } };
        return;
      }

      yield progress(IngestPhase.CHUNKING, { bytesReceived: received });
      const prepared = await prepareLarge(principal.tenantId, plan, content);
      const document = await inTransaction(deps.store, async (trx) => {
        const existing = await documents.findByContentHash(trx, identity(principal, plan, prepared.hash));
        return (
          existing ??
          documents.createDocument(trx, newDocument(principal, plan, prepared, received, 'INGESTING'))
        );
      });
      const name = `documents/${document.id}`;
      if (document.state === 'READY') {
        const result = { documentId: document.id, chunksWritten: 0, deduplicated: true, resumed: false };
        yield { event: { case: 'result' as const, value: await finish(principal, plan, result, ctx) } };
        return;
      }

      // WRITING: batches of chunks with their outbox rows; the last batch makes the document READY.
      // Chunking is deterministic, so a resumed ingestion skips the chunks already committed.
      const resumed = document.chunkCount > 0;
      const remaining = prepared.pieces.slice(document.chunkCount);
      let written = document.chunkCount;
      yield progress(IngestPhase.WRITING, {
        bytesReceived: received,
        chunksPlanned: prepared.pieces.length,
        chunksWritten: written,
        document: name,
      });
      let offset = 0;
      while (remaining.length - offset > WRITE_BATCH) {
        const batch = remaining.slice(offset, offset + WRITE_BATCH);
        await inTransaction(deps.store, (trx) =>
          documents.addChunks(trx, principal.tenantId, document.id, batch),
        );
        offset += batch.length;
        written += batch.length;
        yield progress(IngestPhase.WRITING, {
          bytesReceived: received,
          chunksPlanned: prepared.pieces.length,
          chunksWritten: written,
          document: name,
        });
      }
      const last = remaining.slice(offset);
      const { result } = await idempotent(deps.store, key, body, async (trx) => {
        if (last.length > 0) await documents.addChunks(trx, principal.tenantId, document.id, last);
        await documents.markReady(trx, principal.tenantId, document.id);
        return {
          documentId: document.id,
          chunksWritten: prepared.pieces.length - document.chunkCount,
          deduplicated: false,
          resumed,
        };
      });
      written = prepared.pieces.length;
      if (header.waitForIndex) {
        yield progress(IngestPhase.INDEXING, {
          bytesReceived: received,
          chunksPlanned: written,
          chunksWritten: written,
          document: name,
        });
      }
      yield { event: { case: 'result' as const, value: await finish(principal, plan, result, ctx) } };
    },

    async getDocument(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const document = await documents.getVisible(viewerOf(principal), parseDocumentName(request.name));
      return {
        document: documentMessage(
          document,
          await documents.indexedChunkCount(principal.tenantId, document.id),
        ),
      };
    },

    async deleteDocument(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const id = parseDocumentName(request.name);
      const document = await documents.getVisible(viewerOf(principal), id);
      if (document.ownerId !== principal.subject) {
        throw errors.permissionDenied('NOT_OWNER', 'only the owner may delete this document', {
          name: request.name,
        });
      }
      const expected =
        request.etag === '' ? undefined : Number(/^"(\d+)"$/.exec(request.etag)?.[1] ?? Number.NaN);
      if (expected !== undefined && Number.isNaN(expected))
        throw errors.fieldInvalid('etag', 'not an etag of this document');
      await inTransaction(deps.store, (trx) =>
        documents.deleteDocument(trx, principal.tenantId, id, expected),
      );
      return {};
    },

    async getChunk(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const { documentId, chunkId } = parseChunkName(request.name);
      await documents.getVisible(viewerOf(principal), documentId);
      const chunk = await documents.getChunk(principal.tenantId, documentId, chunkId);
      if (chunk === undefined) throw errors.notFound(request.name);
      return { chunk: chunkMessage(chunk) };
    },

    async listChunks(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const documentId = parseDocumentName(request.parent, 'parent');
      await documents.getVisible(viewerOf(principal), documentId);
      const kinds = request.kinds.map((k) => {
        if (k === ChunkKind.TEXT) return 'TEXT' as const;
        if (k === ChunkKind.TABLE) return 'TABLE' as const;
        if (k === ChunkKind.CODE) return 'CODE' as const;
        throw errors.fieldInvalid('kinds', 'CHUNK_KIND_UNSPECIFIED is not a kind');
      });
      const page = await documents.listChunks(
        principal.tenantId,
        documentId,
        { pageSize: pageSize(request.pageSize, 1000, 100), pageToken: request.pageToken },
        {
          ...(request.fromOrdinal === undefined ? {} : { fromOrdinal: request.fromOrdinal }),
          ...(request.toOrdinal === undefined ? {} : { toOrdinal: request.toOrdinal }),
          ...(kinds.length > 0 ? { kinds } : {}),
        },
      );
      return { chunks: page.items.map(chunkMessage), nextPageToken: page.nextPageToken };
    },

    async listDocuments(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      if (request.displayNamePrefix !== '') {
        throw errors.fieldInvalid('display_name_prefix', 'not supported by this server version');
      }
      const states = request.states.map((s) => {
        if (s === DocumentState.READY) return 'READY' as const;
        if (s === DocumentState.INGESTING) return 'INGESTING' as const;
        if (s === DocumentState.FAILED) return 'FAILED' as const;
        throw errors.fieldInvalid('states', 'DOCUMENT_STATE_UNSPECIFIED is not a state');
      });
      const range = request.createTimeRange;
      const from = range?.startTime === undefined ? undefined : timestampMs(range.startTime);
      const before = range?.endTime === undefined ? undefined : timestampMs(range.endTime);
      if (from !== undefined && before !== undefined && before <= from) {
        throw errors.invalidArgument('TIME_RANGE_INVALID', 'create_time_range ends at or before its start', {
          field: 'create_time_range',
        });
      }
      const scopes = request.scope === Scope.UNSPECIFIED ? [] : [authorizedListScope(request.scope)];
      const page = await documents.list(
        viewerOf(principal),
        {
          ...(scopes.length > 0 ? { scopes } : {}),
          ...(states.length > 0 ? { states } : {}),
          ...(request.mimeTypes.length > 0
            ? { mimeTypes: request.mimeTypes.map((m) => m.toLowerCase()) }
            : {}),
          ...(request.orgId === '' ? {} : { orgId: request.orgId }),
          ...(request.ownedByCaller ? { ownerId: principal.subject } : {}),
          ...(request.sourceUri === '' ? {} : { sourceUri: request.sourceUri }),
          ...(request.contentHash === '' ? {} : { contentHash: request.contentHash }),
          ...(from === undefined ? {} : { createdFrom: from }),
          ...(before === undefined ? {} : { createdBefore: before }),
        },
        { pageSize: pageSize(request.pageSize), pageToken: request.pageToken },
      );
      const items = await Promise.all(
        page.items.map(async (d) =>
          documentMessage(d, await documents.indexedChunkCount(principal.tenantId, d.id)),
        ),
      );
      return { documents: items, nextPageToken: page.nextPageToken };
    },
  };
}
