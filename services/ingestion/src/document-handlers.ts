import type { MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { Scope } from '@engram/contracts/common';
import {
  ChunkKind,
  DocumentState,
  IngestPhase,
  IngestionService,
  type IngestDocumentHeader,
  type IngestDocumentRequest,
  type StreamIngestDocumentRequest,
  type StreamIngestDocumentResponseSchema,
} from '@engram/contracts/ingestion';
import {
  chunkMessage,
  documentMessage,
  pageSize,
  parseChunkName,
  parseDocumentName,
  DEFAULT_PAGE_LIMITS,
} from '@engram/resources';
import { PrincipalAdmission, errors, requirePrincipal, type Principal } from '@engram/runtime';
import {
  idempotent,
  inTransaction,
  previousResult,
  viewerOf,
  type DocumentRecord,
  type RequestKey,
  type Store,
} from '@engram/store';
import type { IngestionDeps } from './deps.js';
import {
  DocumentIngestion,
  type IngestResponse,
  type PreparedContent,
  type StoredResult,
} from './document-ingestion.js';
import { authorizedListScope } from './documents-api.js';
import { createTimeFilter } from './time.js';

type Impl = ServiceImpl<typeof IngestionService>;
type StreamEvent = MessageInitShape<typeof StreamIngestDocumentResponseSchema>;
type ProgressCounts = Partial<
  Record<'bytesReceived' | 'chunksPlanned' | 'chunksWritten' | 'chunksIndexed', number>
> & { document?: string };
type Progress = (phase: IngestPhase, counts: ProgressCounts) => StreamEvent;

/** Streamed documents: at most 64 MiB in parts of at most 1 MiB (the API's limits). */
const STREAM_MAX_BYTES = 64 * 1024 * 1024;
const MAX_PART_BYTES = 1024 * 1024;
/** Progress while counts change, at most this often, ms. */
const PROGRESS_EVERY_MS = 250;
/** Chunks per transaction of a streamed ingestion. */
const WRITE_BATCH = 200;
/**
 * A streamed ingestion's write transactions run again when InnoDB picks them as a deadlock victim
 * (every effect is in the database): one lost batch would otherwise end the whole upload.
 */
const WRITE_TRANSACTION = { deadlockRetries: 3 } as const;
/** ListChunks: 100 chunks by default, at most 1,000. */
const CHUNK_PAGE_LIMITS = { fallback: 100, max: 1000 } as const;

const tooLarge = (message: string, limit: number) =>
  errors.resourceExhausted('DOCUMENT_TOO_LARGE', message, { limit_bytes: limit });

const protocolViolation = (message: string, field: string) =>
  errors.invalidArgument('STREAM_PROTOCOL_VIOLATION', message, { field });

/** The progress events of a stream whose header announced `expected` bytes. */
function progressOf(expected: bigint | undefined): Progress {
  return (phase, counts) => ({
    event: {
      case: 'progress',
      value: {
        phase,
        bytesReceived: BigInt(counts.bytesReceived ?? 0),
        expectedSizeBytes: expected ?? 0n,
        chunksPlanned: counts.chunksPlanned ?? 0,
        chunksWritten: counts.chunksWritten ?? 0,
        chunksIndexed: counts.chunksIndexed ?? 0,
        document: counts.document ?? '',
      },
    },
  });
}

const resultEvent = (value: IngestResponse): StreamEvent => ({ event: { case: 'result', value } });

/** The first message of a stream, which must be the header. */
async function streamHeader(
  stream: AsyncIterator<StreamIngestDocumentRequest>,
): Promise<IngestDocumentHeader> {
  const first = await stream.next();
  if (first.done === true || first.value.payload.case !== 'header') {
    throw protocolViolation('the first message must be the header', 'header');
  }
  return first.value.payload.value;
}

/**
 * RECEIVING: the parts, until the client half-closes. Nothing is written before, so a cancelled
 * upload leaves nothing. Returns the content.
 */
async function* receive(
  stream: AsyncIterator<StreamIngestDocumentRequest>,
  expected: bigint | undefined,
  progress: Progress,
): AsyncGenerator<StreamEvent, Buffer> {
  const parts: Uint8Array[] = [];
  let received = 0;
  let reported = Date.now();
  for (let next = await stream.next(); next.done !== true; next = await stream.next()) {
    if (next.value.payload.case !== 'part') {
      throw protocolViolation('only parts may follow the header', 'part');
    }
    const data = next.value.payload.value.data;
    if (data.byteLength > MAX_PART_BYTES) {
      throw errors.resourceExhausted('MESSAGE_TOO_LARGE', 'a part is over 1 MiB', {
        limit_bytes: MAX_PART_BYTES,
      });
    }
    received += data.byteLength;
    if (received > STREAM_MAX_BYTES) {
      throw tooLarge('the document is over the streamed document limit', STREAM_MAX_BYTES);
    }
    parts.push(data);
    if (Date.now() - reported >= PROGRESS_EVERY_MS) {
      reported = Date.now();
      yield progress(IngestPhase.RECEIVING, { bytesReceived: received });
    }
  }
  if (expected !== undefined && BigInt(received) !== expected) {
    throw protocolViolation('the content size differs from expected_size_bytes', 'expected_size_bytes');
  }
  if (received === 0) throw errors.fieldRequired('part');
  return Buffer.concat(parts);
}

/**
 * documents: IngestDocument, StreamIngestDocument, GetDocument, ListDocuments, DeleteDocument,
 * GetChunk, ListChunks.
 */
export class DocumentHandlers implements Pick<
  Impl,
  | 'ingestDocument'
  | 'streamIngestDocument'
  | 'getDocument'
  | 'listDocuments'
  | 'deleteDocument'
  | 'getChunk'
  | 'listChunks'
> {
  readonly #store: Store;
  readonly #maxDocumentBytes: number;
  readonly #ingestion: DocumentIngestion;
  /** Per-principal limits shared by both ingestion methods. */
  readonly #admission: PrincipalAdmission;

  constructor(deps: IngestionDeps) {
    this.#store = deps.store;
    this.#maxDocumentBytes = deps.settings.maxDocumentBytes;
    this.#ingestion = new DocumentIngestion(deps.store, deps.settings);
    this.#admission = new PrincipalAdmission(deps.settings.admission.documents, {
      name: 'document ingestion',
    });
  }

  get #documents() {
    return this.#ingestion.documents;
  }

  /** IngestDocument: the whole document in one request, committed in one transaction. */
  readonly ingestDocument: Impl['ingestDocument'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const ticket = this.#admission.admit(principal, IngestionService.method.ingestDocument.name);
    try {
      return await this.#ingestOne(principal, request, ctx);
    } finally {
      ticket.release();
    }
  };

  async #ingestOne(principal: Principal, request: IngestDocumentRequest, ctx: HandlerContext) {
    const ingestion = this.#ingestion;
    const plan = ingestion.plan(principal, request);
    if (request.content.byteLength === 0) throw errors.fieldRequired('content');
    if (request.content.byteLength > this.#maxDocumentBytes) {
      throw tooLarge(
        'the document is too large for one request; use StreamIngestDocument',
        this.#maxDocumentBytes,
      );
    }
    const prepared = await ingestion.prepare(principal.tenantId, plan, request.content);
    const { result } = await idempotent(
      this.#store,
      ingestion.requestKey(principal, plan, IngestionService.method.ingestDocument),
      ingestion.requestBody(plan, request.content),
      async (trx) => {
        const existing = await this.#documents.findByContentHash(
          trx,
          ingestion.identity(principal, plan, prepared.hash),
        );
        if (existing?.state === 'READY')
          return { documentId: existing.id, chunksWritten: 0, deduplicated: true };
        const document = await this.#documents.createDocument(
          trx,
          ingestion.newDocument(principal, plan, prepared, request.content.byteLength, 'READY'),
        );
        const chunks = await this.#documents.addChunks(trx, principal.tenantId, document.id, prepared.pieces);
        return { documentId: document.id, chunksWritten: chunks.length, deduplicated: false };
      },
    );
    return ingestion.response(principal, plan, { ...result, resumed: false }, ctx);
  }

  /** StreamIngestDocument: up to 64 MiB in parts, with progress (RECEIVING, CHUNKING, WRITING, INDEXING). */
  readonly streamIngestDocument: Impl['streamIngestDocument'] = (requests, ctx) =>
    this.#streamAdmitted(requests, ctx);

  /** The stream holds its admission from the first message to its end (or cancellation). */
  async *#streamAdmitted(
    requests: AsyncIterable<StreamIngestDocumentRequest>,
    ctx: HandlerContext,
  ): AsyncGenerator<StreamEvent> {
    const principal = requirePrincipal(ctx.values);
    const ticket = this.#admission.admit(principal, IngestionService.method.streamIngestDocument.name);
    try {
      yield* this.#streamIngest(requests, ctx);
    } finally {
      ticket.release();
    }
  }

  async *#streamIngest(
    requests: AsyncIterable<StreamIngestDocumentRequest>,
    ctx: HandlerContext,
  ): AsyncGenerator<StreamEvent> {
    const principal = requirePrincipal(ctx.values);
    const ingestion = this.#ingestion;
    const stream = requests[Symbol.asyncIterator]();
    const header = await streamHeader(stream);
    const plan = ingestion.plan(principal, header);
    const expected = header.expectedSizeBytes;
    if (expected !== undefined && (expected < 0n || expected > BigInt(STREAM_MAX_BYTES))) {
      throw tooLarge('expected_size_bytes is over the streamed document limit', STREAM_MAX_BYTES);
    }
    const progress = progressOf(expected);
    yield progress(IngestPhase.RECEIVING, {});
    const content = yield* receive(stream, expected, progress);
    const received = content.byteLength;

    const key = ingestion.requestKey(principal, plan, IngestionService.method.streamIngestDocument);
    const body = ingestion.requestBody(plan, content);
    const replayed =
      key === undefined ? undefined : await previousResult<StoredResult>(this.#store, key, body);
    if (replayed !== undefined) {
      yield resultEvent(await ingestion.response(principal, plan, replayed, ctx));
      return;
    }

    yield progress(IngestPhase.CHUNKING, { bytesReceived: received });
    const steps = ingestion.prepareInSteps(principal.tenantId, plan, content);
    let step = await steps.next();
    for (; step.done !== true; step = await steps.next()) {
      yield progress(IngestPhase.CHUNKING, {
        bytesReceived: received,
        chunksPlanned: step.value.chunksPlanned,
      });
    }
    const prepared = step.value;
    const document = await inTransaction(this.#store, async (trx) => {
      const existing = await this.#documents.findByContentHash(
        trx,
        ingestion.identity(principal, plan, prepared.hash),
      );
      return (
        existing ??
        this.#documents.createDocument(
          trx,
          ingestion.newDocument(principal, plan, prepared, received, 'INGESTING'),
        )
      );
    });
    if (document.state === 'READY') {
      const result = { documentId: document.id, chunksWritten: 0, deduplicated: true, resumed: false };
      yield resultEvent(await ingestion.response(principal, plan, result, ctx));
      return;
    }

    const result = yield* this.#write(principal, document, prepared, { key, body, received, progress });
    const written = prepared.pieces.length;
    if (header.waitForIndex) {
      yield progress(IngestPhase.INDEXING, {
        bytesReceived: received,
        chunksPlanned: written,
        chunksWritten: written,
        document: `documents/${document.id}`,
      });
    }
    yield resultEvent(await ingestion.response(principal, plan, result, ctx));
  }

  /**
   * WRITING: batches of chunks with their outbox rows; the last batch makes the document READY
   * and records the result under the request id. Chunking is deterministic, so a resumed
   * ingestion skips the chunks already committed.
   */
  async *#write(
    principal: Principal,
    document: DocumentRecord,
    prepared: PreparedContent,
    stream: {
      readonly key: RequestKey | undefined;
      readonly body: unknown;
      readonly received: number;
      readonly progress: Progress;
    },
  ): AsyncGenerator<StreamEvent, StoredResult> {
    const { tenantId } = principal;
    const resumed = document.chunkCount > 0;
    const remaining = prepared.pieces.slice(document.chunkCount);
    let written = document.chunkCount;
    const writing = () =>
      stream.progress(IngestPhase.WRITING, {
        bytesReceived: stream.received,
        chunksPlanned: prepared.pieces.length,
        chunksWritten: written,
        document: `documents/${document.id}`,
      });
    yield writing();
    let offset = 0;
    while (remaining.length - offset > WRITE_BATCH) {
      const batch = remaining.slice(offset, offset + WRITE_BATCH);
      await inTransaction(
        this.#store,
        (trx) => this.#documents.addChunks(trx, tenantId, document.id, batch),
        WRITE_TRANSACTION,
      );
      offset += batch.length;
      written += batch.length;
      yield writing();
    }
    const last = remaining.slice(offset);
    const { result } = await idempotent(
      this.#store,
      stream.key,
      stream.body,
      async (trx) => {
        if (last.length > 0) await this.#documents.addChunks(trx, tenantId, document.id, last);
        await this.#documents.markReady(trx, tenantId, document.id);
        return {
          documentId: document.id,
          chunksWritten: prepared.pieces.length - document.chunkCount,
          deduplicated: false,
          resumed,
        };
      },
      Date.now(),
      WRITE_TRANSACTION,
    );
    return result;
  }

  readonly getDocument: Impl['getDocument'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const document = await this.#documents.getVisible(viewerOf(principal), parseDocumentName(request.name));
    return {
      document: documentMessage(
        document,
        await this.#documents.indexedChunkCount(principal.tenantId, document.id),
      ),
    };
  };

  readonly listDocuments: Impl['listDocuments'] = async (request, ctx) => {
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
    const created = createTimeFilter(request.createTimeRange);
    const scopes = request.scope === Scope.UNSPECIFIED ? [] : [authorizedListScope(request.scope)];
    const page = await this.#documents.list(
      viewerOf(principal),
      {
        ...(scopes.length > 0 ? { scopes } : {}),
        ...(states.length > 0 ? { states } : {}),
        ...(request.mimeTypes.length > 0 ? { mimeTypes: request.mimeTypes.map((m) => m.toLowerCase()) } : {}),
        ...(request.orgId === '' ? {} : { orgId: request.orgId }),
        ...(request.ownedByCaller ? { ownerId: principal.subject } : {}),
        // Compared with what is stored: the URI as ingestion cleans it.
        ...(request.sourceUri === ''
          ? {}
          : { sourceUri: this.#ingestion.storedText(principal.tenantId).sourceUri(request.sourceUri) }),
        ...(request.contentHash === '' ? {} : { contentHash: request.contentHash }),
        ...created,
      },
      { pageSize: pageSize(request.pageSize, DEFAULT_PAGE_LIMITS), pageToken: request.pageToken },
    );
    const items = await Promise.all(
      page.items.map(async (d) =>
        documentMessage(d, await this.#documents.indexedChunkCount(principal.tenantId, d.id)),
      ),
    );
    return { documents: items, nextPageToken: page.nextPageToken };
  };

  readonly deleteDocument: Impl['deleteDocument'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const id = parseDocumentName(request.name);
    const document = await this.#documents.getVisible(viewerOf(principal), id);
    if (document.ownerId !== principal.subject) {
      throw errors.permissionDenied('NOT_OWNER', 'only the owner may delete this document', {
        name: request.name,
      });
    }
    const expected =
      request.etag === '' ? undefined : Number(/^"(\d+)"$/.exec(request.etag)?.[1] ?? Number.NaN);
    if (expected !== undefined && Number.isNaN(expected))
      throw errors.fieldInvalid('etag', 'not an etag of this document');
    const deleted = await inTransaction(this.#store, (trx) =>
      this.#documents.deleteDocument(trx, principal.tenantId, id, expected),
    );
    return { name: `documents/${id}`, chunksDeleted: deleted.chunks };
  };

  readonly getChunk: Impl['getChunk'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const { documentId, chunkId } = parseChunkName(request.name);
    await this.#documents.getVisible(viewerOf(principal), documentId);
    const chunk = await this.#documents.getChunk(principal.tenantId, documentId, chunkId);
    if (chunk === undefined) throw errors.notFound(request.name);
    return { chunk: chunkMessage(chunk) };
  };

  readonly listChunks: Impl['listChunks'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const documentId = parseDocumentName(request.parent, 'parent');
    await this.#documents.getVisible(viewerOf(principal), documentId);
    const kinds = request.kinds.map((k) => {
      if (k === ChunkKind.TEXT) return 'TEXT' as const;
      if (k === ChunkKind.TABLE) return 'TABLE' as const;
      if (k === ChunkKind.CODE) return 'CODE' as const;
      throw errors.fieldInvalid('kinds', 'CHUNK_KIND_UNSPECIFIED is not a kind');
    });
    const page = await this.#documents.listChunks(
      principal.tenantId,
      documentId,
      { pageSize: pageSize(request.pageSize, CHUNK_PAGE_LIMITS), pageToken: request.pageToken },
      {
        ...(request.fromOrdinal === undefined ? {} : { fromOrdinal: request.fromOrdinal }),
        ...(request.toOrdinal === undefined ? {} : { toOrdinal: request.toOrdinal }),
        ...(kinds.length > 0 ? { kinds } : {}),
      },
    );
    return { chunks: page.items.map(chunkMessage), nextPageToken: page.nextPageToken };
  };
}
