import { createHash } from 'node:crypto';
import type { DescMethod, MessageInitShape } from '@bufbuild/protobuf';
import type { Duration } from '@bufbuild/protobuf/wkt';
import type { HandlerContext } from '@connectrpc/connect';
import type { ChunkingOptions, Document, IngestDocumentResponseSchema } from '@engram/contracts/ingestion';
import { redact } from '@engram/redaction';
import { documentMessage, methodKey } from '@engram/resources';
import { errors, type Principal } from '@engram/runtime';
import {
  DocumentRepository,
  checkRequestId,
  requestKeyOf,
  type NewDocument,
  type Scope as StoredScope,
  type Store,
} from '@engram/store';
import type { IngestionSettings } from './deps.js';
import {
  authorizedScope,
  checkDocumentFields,
  chunkingOptions,
  defaultDisplayName,
} from './documents-api.js';
import { chunkText, type ChunkPiece } from './domain/chunker.js';
import {
  codePoints,
  contentHash,
  normalizeContent,
  parseMediaType,
  type MediaType,
} from './domain/normalize.js';
import { countTokens } from './domain/token-count.js';
import { waitDeadline, waitMsOf } from './time.js';

/** How long `wait_for_index` waits by default and at most, ms. */
const INDEX_WAIT_DEFAULT_MS = 60_000;
const INDEX_WAIT_MAX_MS = 600_000;

/** What IngestDocument and the header of StreamIngestDocument share. */
export interface IngestHeader {
  readonly document?: Document | undefined;
  readonly chunking?: ChunkingOptions | undefined;
  readonly requestId: string;
  readonly indexWaitTimeout?: Duration | undefined;
  readonly waitForIndex: boolean;
}

/** A validated ingestion request, before its content is read. */
export interface IngestPlan {
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

/** A document's text as stored: normalized, redacted, hashed, and chunked with token counts. */
export interface PreparedContent {
  readonly text: string;
  readonly hash: string;
  readonly pieces: (ChunkPiece & { tokenCount: number })[];
}

/** What an ingestion stores under its request id. */
export interface StoredResult {
  readonly documentId: string;
  readonly chunksWritten: number;
  readonly deduplicated: boolean;
  readonly resumed: boolean;
}

export type IngestResponse = MessageInitShape<typeof IngestDocumentResponseSchema>;

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

/** What both ingestion methods share: validation, preparation, the stored record, the response. */
export class DocumentIngestion {
  readonly documents: DocumentRepository;
  readonly #settings: IngestionSettings;

  constructor(store: Store, settings: IngestionSettings) {
    this.documents = new DocumentRepository(store);
    this.#settings = settings;
  }

  /** Validates the header; fails before any content is read. */
  plan(principal: Principal, header: IngestHeader): IngestPlan {
    const input = header.document;
    if (input === undefined) throw errors.fieldRequired('document');
    const mediaType = parseMediaType(input.mimeType);
    checkDocumentFields(input);
    const { scope, orgId } = authorizedScope(principal, input.scope, input.orgId);
    checkRequestId(header.requestId);
    const options = chunkingOptions(header.chunking, this.#settings);
    let waitMs = INDEX_WAIT_DEFAULT_MS;
    if (header.indexWaitTimeout !== undefined) {
      waitMs = waitMsOf(header.indexWaitTimeout);
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
  }

  /** The normalized, redacted text, its hash, and its chunks with token counts. */
  prepare(tenantId: string, plan: IngestPlan, content: Uint8Array): PreparedContent {
    const text = this.#text(tenantId, plan, content);
    const pieces = this.#chunks(plan, text).map((piece) => ({
      ...piece,
      tokenCount: countTokens(piece.text),
    }));
    return { text, hash: contentHash(text), pieces };
  }

  /**
   * The same for a streamed document (up to 64 MiB): token counting yields to the event loop
   * between batches, so a large document does not stall the other calls of the process.
   */
  async prepareLarge(tenantId: string, plan: IngestPlan, content: Uint8Array): Promise<PreparedContent> {
    const text = this.#text(tenantId, plan, content);
    const pieces: (ChunkPiece & { tokenCount: number })[] = [];
    for (const [i, piece] of this.#chunks(plan, text).entries()) {
      pieces.push({ ...piece, tokenCount: countTokens(piece.text) });
      if (i % 500 === 499) await new Promise((resolve) => setImmediate(resolve));
    }
    return { text, hash: contentHash(text), pieces };
  }

  /** The request-id key of an ingestion call (`IngestionService.method.ingestDocument`, …). */
  requestKey(principal: Principal, plan: IngestPlan, method: DescMethod) {
    return requestKeyOf(principal, methodKey(method), plan.requestId);
  }

  /** The request as it matters for request ids: the header, and the content by its hash. */
  requestBody(plan: IngestPlan, content: Uint8Array) {
    return {
      document: plan.input,
      chunking: plan.chunking,
      content: createHash('sha256').update(content).digest('hex'),
    };
  }

  /** What makes two ingestions of the same owner the same document (deduplication, resumption). */
  identity(principal: Principal, plan: IngestPlan, hash: string) {
    return {
      tenantId: principal.tenantId,
      ownerId: principal.subject,
      scope: plan.scope,
      orgId: plan.orgId,
      mimeType: plan.mediaType,
      contentHash: hash,
    };
  }

  /** The document record a new ingestion creates. */
  newDocument(
    principal: Principal,
    plan: IngestPlan,
    prepared: { text: string; hash: string },
    sizeBytes: number,
    state: 'READY' | 'INGESTING',
  ): NewDocument {
    return {
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
    };
  }

  /** The response of both ingestion methods, after waiting for the index when asked to. */
  async response(
    principal: Principal,
    plan: IngestPlan,
    result: StoredResult,
    ctx: HandlerContext,
  ): Promise<IngestResponse> {
    const { documents } = this;
    let document = await documents.get(principal.tenantId, result.documentId);
    if (document === undefined) throw errors.notFound(`documents/${result.documentId}`);
    let indexed = await documents.indexedChunkCount(principal.tenantId, document.id);
    if (plan.waitForIndex && indexed < document.chunkCount) {
      indexed = await this.#waitForIndex(
        principal.tenantId,
        document.id,
        document.chunkCount,
        plan.waitMs,
        ctx,
      );
      document = (await documents.get(principal.tenantId, document.id)) ?? document;
    }
    return {
      document: documentMessage(document, indexed),
      chunksWritten: result.chunksWritten,
      deduplicated: result.deduplicated,
      resumed: result.resumed,
      indexComplete: document.state === 'READY' && indexed >= document.chunkCount,
    };
  }

  #text(tenantId: string, plan: IngestPlan, content: Uint8Array): string {
    const text = normalizeContent(content, plan.mediaType);
    return this.#settings.redactSecrets(tenantId) ? redact(text).text : text;
  }

  #chunks(plan: IngestPlan, text: string): ChunkPiece[] {
    return chunkText(text, { ...plan.options, markdown: plan.mediaType !== 'text/plain' });
  }

  /** Waits until every chunk of a READY document is in the index, or the time is up. */
  async #waitForIndex(
    tenantId: string,
    documentId: string,
    chunkCount: number,
    ms: number,
    ctx: HandlerContext,
  ): Promise<number> {
    const deadline = waitDeadline(ms, ctx);
    for (;;) {
      const indexed = await this.documents.indexedChunkCount(tenantId, documentId);
      if (indexed >= chunkCount || Date.now() >= deadline) return indexed;
      await sleep(Math.min(100, Math.max(0, deadline - Date.now())), ctx.signal);
    }
  }
}
