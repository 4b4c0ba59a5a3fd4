import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import { Scope } from '@engram/contracts/common';
import { ChunkKind, DocumentState, type IngestionService } from '@engram/contracts/ingestion';
import { redact } from '@engram/redaction';
import { errors, requirePrincipal, type Logger } from '@engram/runtime';
import { DocumentRepository, idempotent, inTransaction, requestHash, type Store } from '@engram/store';
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
  viewerOf,
} from './documents-api.js';
import { chunkText } from './domain/chunker.js';
import { codePoints, contentHash, normalizeContent, parseMediaType } from './domain/normalize.js';
import { countTokens } from './domain/token-count.js';

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
    readonly redactSecrets: boolean;
  };
}

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 500;
const REQUEST_ID = /^[A-Za-z0-9_-]{1,64}$/;
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
    async ingestDocument(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const input = request.document;
      if (input === undefined) throw errors.fieldRequired('document');
      const mediaType = parseMediaType(input.mimeType);
      checkDocumentFields(input);
      const { scope, orgId } = authorizedScope(principal, input.scope, input.orgId);
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
      if (request.requestId !== '' && !REQUEST_ID.test(request.requestId)) {
        throw errors.fieldInvalid('request_id', '1-64 characters of [A-Za-z0-9_-]');
      }
      const options = chunkingOptions(request.chunking, deps.settings);
      let waitMs = INDEX_WAIT_DEFAULT_MS;
      if (request.indexWaitTimeout !== undefined) {
        waitMs =
          Number(request.indexWaitTimeout.seconds) * 1000 + Math.floor(request.indexWaitTimeout.nanos / 1e6);
        if (waitMs <= 0 || waitMs > INDEX_WAIT_MAX_MS)
          throw errors.fieldInvalid('index_wait_timeout', 'range (0, 600s]');
      }

      let text = normalizeContent(request.content, mediaType);
      if (deps.settings.redactSecrets) text = redact(text).text;
      const hash = contentHash(text);
      const pieces = chunkText(text, { ...options, markdown: mediaType !== 'text/plain' });

      const { result } = await idempotent(
        deps.store,
        request.requestId === ''
          ? undefined
          : {
              tenantId: principal.tenantId,
              subject: principal.subject,
              method: 'engram.ingestion.v1.IngestionService/IngestDocument',
              requestId: request.requestId,
            },
        // The request as it matters: the content by its hash, not its bytes.
        {
          document: input,
          content: requestHash(Buffer.from(request.content).toString('base64')),
          chunking: request.chunking,
        },
        async (trx) => {
          const existing = await documents.findByContentHash(trx, {
            tenantId: principal.tenantId,
            ownerId: principal.subject,
            scope,
            orgId,
            mimeType: mediaType,
            contentHash: hash,
          });
          if (existing?.state === 'READY')
            return { documentId: existing.id, chunksWritten: 0, deduplicated: true };
          const document = await documents.createDocument(trx, {
            tenantId: principal.tenantId,
            ownerId: principal.subject,
            orgId,
            scope,
            displayName:
              input.displayName === '' ? defaultDisplayName(input.sourceUri, text) : input.displayName,
            mimeType: mediaType,
            sourceUri: input.sourceUri,
            metadata: { ...input.metadata },
            contentHash: hash,
            sizeBytes: request.content.byteLength,
            charCount: codePoints(text),
            state: 'READY',
            chunkSize: options.chunkSize,
            chunkOverlap: options.overlap,
            keepTablesWhole: options.keepTablesWhole,
            keepCodeWhole: options.keepCodeWhole,
          });
          const chunks = await documents.addChunks(
            trx,
            principal.tenantId,
            document.id,
            pieces.map((piece) => ({ ...piece, tokenCount: countTokens(piece.text) })),
          );
          return { documentId: document.id, chunksWritten: chunks.length, deduplicated: false };
        },
      );

      let document = await documents.get(principal.tenantId, result.documentId);
      if (document === undefined) throw errors.notFound(`documents/${result.documentId}`);
      let indexed = await documents.indexedChunkCount(principal.tenantId, document.id);
      if (request.waitForIndex && indexed < document.chunkCount) {
        indexed = await waitForIndex(principal.tenantId, document.id, document.chunkCount, waitMs, ctx);
        document = (await documents.get(principal.tenantId, document.id)) ?? document;
      }
      return {
        document: documentMessage(document, indexed),
        chunksWritten: result.chunksWritten,
        deduplicated: result.deduplicated,
        resumed: false,
        indexComplete: document.state === 'READY' && indexed >= document.chunkCount,
      };
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
