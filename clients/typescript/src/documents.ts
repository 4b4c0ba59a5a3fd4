import type { MessageInitShape } from '@bufbuild/protobuf';
import {
  IngestionService,
  type Chunk,
  type DeleteDocumentResponse,
  type Document,
  type IngestDocumentHeaderSchema,
  type IngestDocumentResponse,
  type IngestProgress,
  type ListChunksRequestSchema,
  type ListDocumentsRequestSchema,
  type StreamIngestDocumentRequestSchema,
} from '@engram/contracts/ingestion';
import { newRequestId, type CallOptions, type Caller, type FieldsOf } from './caller.js';
import { collect, knownSize, partsOf, type IngestContent } from './content.js';
import { answered, toEngramError } from './errors.js';
import { Paginated } from './pagination.js';

/** The largest content `IngestDocument` (one request) takes: 4 MiB. */
export const UNARY_INGEST_LIMIT_BYTES = 4 * 1024 * 1024;
/** The largest part StreamIngestDocument takes: 1 MiB. */
export const MAX_PART_BYTES = 1024 * 1024;
/** Parts of 256 KiB: few messages, and progress every few parts. */
const DEFAULT_PART_BYTES = 256 * 1024;

/**
 * What `documents.ingest` takes besides the content: the `document` (its `mimeType` is required;
 * `displayName`, `scope`, `orgId`, `sourceUri`, `metadata`), `chunking`, `requestId`,
 * `waitForIndex` and `indexWaitTimeout`, and:
 */
export type IngestOptions = Omit<FieldsOf<typeof IngestDocumentHeaderSchema>, 'expectedSizeBytes'> & {
  /** Told of each server progress message (streamed ingestion only: the gRPC transport). */
  readonly onProgress?: (progress: IngestProgress) => void;
  /** Bytes per streamed part, at most 1 MiB. Default 256 KiB. */
  readonly partBytes?: number;
};
/** What `documents.list` takes: filters and page size. */
export type ListDocumentsInit = Omit<FieldsOf<typeof ListDocumentsRequestSchema>, 'pageToken'>;
/** What `documents.chunks` takes besides the document: ordinal range, kinds, page size. */
export type ListChunksInit = Omit<FieldsOf<typeof ListChunksRequestSchema>, 'pageToken' | 'parent'>;

type StreamRequest = MessageInitShape<typeof StreamIngestDocumentRequestSchema>;

/** Documents and their chunks (engram.ingestion.v1). */
export class Documents {
  readonly #caller: Caller;

  constructor(caller: Caller) {
    this.#caller = caller;
  }

  /**
   * Ingests a document. Over a transport with bidirectional streams (gRPC, `@engram/client/node`)
   * the content is streamed in parts (up to 64 MiB) with `onProgress` told of each phase; over
   * fetch (Connect, gRPC-Web) it is sent in one `IngestDocument` request, and content over 4 MiB
   * fails with RESOURCE_EXHAUSTED `DOCUMENT_TOO_LARGE` before anything is sent.
   * Either way one `requestId` (given or generated) makes a repeated ingestion idempotent.
   */
  ingest(
    content: IngestContent,
    request: IngestOptions,
    options?: CallOptions,
  ): Promise<IngestDocumentResponse> {
    return this.#caller.bidiStreaming
      ? this.#streamIngest(content, request, options)
      : this.#unaryIngest(content, request, options);
  }

  /** One document by name (`documents/{id}`). */
  async get(name: string, options?: CallOptions): Promise<Document> {
    const response = await this.#caller.unary(IngestionService.method.getDocument, { name }, options);
    return answered(response.document, 'document');
  }

  /** The documents visible to the caller, page by page. */
  list(request: ListDocumentsInit = {}, options?: CallOptions): Paginated<Document> {
    return new Paginated(async (pageToken) => {
      const response = await this.#caller.unary(
        IngestionService.method.listDocuments,
        { ...request, pageToken },
        options,
      );
      return { items: response.documents, nextPageToken: response.nextPageToken };
    });
  }

  /** The chunks of the document `parent`, in order, page by page. */
  chunks(parent: string, request: ListChunksInit = {}, options?: CallOptions): Paginated<Chunk> {
    return new Paginated(async (pageToken) => {
      const response = await this.#caller.unary(
        IngestionService.method.listChunks,
        { ...request, parent, pageToken },
        options,
      );
      return { items: response.chunks, nextPageToken: response.nextPageToken };
    });
  }

  /** Deletes a document and its chunks. */
  delete(name: string, etag = '', options?: CallOptions): Promise<DeleteDocumentResponse> {
    return this.#caller.unary(IngestionService.method.deleteDocument, { name, etag }, options);
  }

  async #unaryIngest(
    content: IngestContent,
    { onProgress: _onProgress, partBytes: _partBytes, ...header }: IngestOptions,
    options?: CallOptions,
  ): Promise<IngestDocumentResponse> {
    let bytes: Uint8Array;
    try {
      bytes = await collect(
        content,
        UNARY_INGEST_LIMIT_BYTES,
        'stream it over the gRPC transport of @engram/client/node (up to 64 MiB)',
      );
    } catch (error) {
      throw toEngramError(error); // e.g. the caller's stream failed to read its file
    }
    return this.#caller.unary(IngestionService.method.ingestDocument, { ...header, content: bytes }, options);
  }

  async #streamIngest(
    content: IngestContent,
    { onProgress, partBytes = DEFAULT_PART_BYTES, ...fields }: IngestOptions,
    options?: CallOptions,
  ): Promise<IngestDocumentResponse> {
    const requestId =
      fields.requestId === undefined || fields.requestId === '' ? newRequestId() : fields.requestId;
    const size = knownSize(content);
    const header = {
      ...fields,
      requestId,
      ...(size === undefined ? {} : { expectedSizeBytes: BigInt(size) }),
    };
    const partSize = Math.max(1, Math.min(MAX_PART_BYTES, partBytes));
    async function* requests(): AsyncGenerator<StreamRequest, void, undefined> {
      yield { payload: { case: 'header', value: header } };
      for await (const data of partsOf(content, partSize))
        yield { payload: { case: 'part', value: { data } } };
    }
    let result: IngestDocumentResponse | undefined;
    for await (const response of this.#caller.bidiStream(
      IngestionService.method.streamIngestDocument,
      requests(),
      requestId,
      options,
    )) {
      if (response.event.case === 'progress') onProgress?.(response.event.value);
      else if (response.event.case === 'result') result = response.event.value;
    }
    return answered(result, 'result');
  }
}
