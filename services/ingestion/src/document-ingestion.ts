import { createHash } from 'node:crypto';
import { setImmediate as turn } from 'node:timers/promises';
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
import { StoredText } from './stored-text.js';
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

/** How far {@link DocumentIngestion.prepareInSteps} has got. */
export interface PreparationStep {
  readonly chunksPlanned: number;
  /** Chunks whose tokens are counted. */
  readonly chunksCounted: number;
}

/** Longest run of token counting between two turns of the event loop, ms. */
const SLICE_MS = 10;
/** Steps while counting tokens, at most this often, ms. */
const STEP_PROGRESS_MS = 250;

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
  async prepare(tenantId: string, plan: IngestPlan, content: Uint8Array): Promise<PreparedContent> {
    const steps = this.prepareInSteps(tenantId, plan, content);
    for (let step = await steps.next(); ; step = await steps.next()) {
      if (step.done === true) return step.value;
    }
  }

  /**
   * The same in steps (decision 0026): the event loop gets a turn before and after decoding and
   * normalization, redaction, chunking, and every {@link SLICE_MS} of token counting, so a large
   * document does not stall the other calls of the process. Yields the planned chunk count once
   * the text is chunked and then at most every {@link STEP_PROGRESS_MS} while counting tokens.
   */
  async *prepareInSteps(
    tenantId: string,
    plan: IngestPlan,
    content: Uint8Array,
  ): AsyncGenerator<PreparationStep, PreparedContent> {
    await turn();
    const normalized = normalizeContent(content, plan.mediaType);
    await turn();
    const text = this.#settings.redactSecrets(tenantId) ? redact(normalized).text : normalized;
    await turn();
    const hash = contentHash(text);
    const chunks = this.#chunks(plan, text);
    await turn();
    yield { chunksPlanned: chunks.length, chunksCounted: 0 };
    const pieces: (ChunkPiece & { tokenCount: number })[] = [];
    let slice = performance.now();
    let reported = slice;
    for (const piece of chunks) {
      pieces.push({ ...piece, tokenCount: countTokens(piece.text) });
      if (performance.now() - slice < SLICE_MS) continue;
      await turn();
      slice = performance.now();
      if (slice - reported >= STEP_PROGRESS_MS) {
        reported = slice;
        yield { chunksPlanned: chunks.length, chunksCounted: pieces.length };
      }
    }
    return { text, hash, pieces };
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
    const text = this.storedText(principal.tenantId);
    const sourceUri = text.sourceUri(plan.input.sourceUri);
    return {
      tenantId: principal.tenantId,
      ownerId: principal.subject,
      orgId: plan.orgId,
      scope: plan.scope,
      // The default name comes from what is stored: the cleaned URI, the redacted text.
      displayName:
        plan.input.displayName === ''
          ? defaultDisplayName(sourceUri, prepared.text)
          : text.displayName(plan.input.displayName),
      mimeType: plan.mediaType,
      sourceUri,
      metadata: text.metadata(plan.input.metadata),
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

  /** How the free-text fields beside a tenant's content are stored (display name, metadata, URI). */
  storedText(tenantId: string): StoredText {
    return new StoredText(this.#settings.redactSecrets(tenantId));
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
