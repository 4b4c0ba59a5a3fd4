import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import { errors, type EngramError } from '@engram/errors';
import { batches } from './batches.js';
import { findByIds, readByIds } from './by-ids.js';
import type { Store } from './database.js';
import { filterOnly, supportsRowLocks } from './dialect.js';
import { etagMismatch } from './errors.js';
import { newId } from './ids.js';
import { enqueueOutbox, type OutboxEvent } from './outbox.js';
import { keysetOn, keysetPage, type Page, type PageRequest } from './pagination.js';
import { clipped, enumOf, flag, json, rowCodec, stringMap } from './row-codec.js';
import { deleteWhereIn, findOne, findVisible } from './rows.js';
import type { ChunksTable, Database, DocumentsTable } from './schema.js';
import { read, run, type Executor } from './store-context.js';
import { visibleTo, type Scope, type Viewer } from './visibility.js';

export type DocumentState = 'INGESTING' | 'READY' | 'FAILED';
export type ChunkKind = 'TEXT' | 'TABLE' | 'CODE';

/**
 * A document as stored (`engram.ingestion.v1.Document`). Counts and offsets refer to the
 * normalized text, in Unicode code points. Times are UTC epoch milliseconds.
 */
export interface DocumentRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly ownerId: string;
  /** '' unless scope is ORG. */
  readonly orgId: string;
  readonly scope: Scope;
  readonly displayName: string;
  /** Lower-case, without parameters. */
  readonly mimeType: string;
  readonly sourceUri: string;
  readonly metadata: Readonly<Record<string, string>>;
  /** sha256 of the normalized text, 64 lower-case hex characters. */
  readonly contentHash: string;
  readonly sizeBytes: number;
  readonly charCount: number;
  /** Chunks written so far (all of them once READY; 0 once FAILED). */
  readonly chunkCount: number;
  readonly state: DocumentState;
  readonly chunkSize: number;
  readonly chunkOverlap: number;
  readonly keepTablesWhole: boolean;
  readonly keepCodeWhole: boolean;
  /** Why the document is FAILED (an ErrorReason name); '' otherwise. */
  readonly failureReason: string;
  /** A human-readable explanation of the failure (no document content); '' otherwise. */
  readonly failureMessage: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Incremented by every change (state, counters); the optimistic-concurrency token (etag). */
  readonly version: number;
}

/** What a new document is made of; the repository assigns id, times, counters and version. */
export type NewDocument = Omit<
  DocumentRecord,
  'id' | 'state' | 'chunkCount' | 'failureReason' | 'failureMessage' | 'createdAt' | 'updatedAt' | 'version'
> & {
  /** INGESTING while chunks are written in batches; READY when they are all written in this transaction. */
  readonly state: 'INGESTING' | 'READY';
};

/** A contiguous piece of a document's normalized text (`engram.ingestion.v1.Chunk`). */
export interface ChunkRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly documentId: string;
  /** 0-based and dense within the document; unique per document. */
  readonly ordinal: number;
  readonly kind: ChunkKind;
  readonly text: string;
  readonly startOffset: number;
  /** Exclusive. */
  readonly endOffset: number;
  readonly overlapPrefixChars: number;
  readonly headerPrefixChars: number;
  readonly tokenCount: number;
  /** Markdown headings in effect, outermost first. */
  readonly headingPath: readonly string[];
  readonly createdAt: number;
}

/** What a new chunk is made of; the repository assigns id, tenant, document and time. */
export type NewChunk = Omit<ChunkRecord, 'id' | 'tenantId' | 'documentId' | 'createdAt'>;

/** What makes two uploads the same content for deduplication and resumption. */
export type DocumentIdentity = Pick<
  DocumentRecord,
  'tenantId' | 'ownerId' | 'scope' | 'orgId' | 'mimeType' | 'contentHash'
>;

/** Narrowing filters of {@link DocumentRepository.list}. Empty arrays mean "any". */
export interface DocumentFilter {
  readonly scopes?: readonly Scope[];
  readonly mimeTypes?: readonly string[];
  readonly states?: readonly DocumentState[];
  /** Only ORG documents of this org. */
  readonly orgId?: string;
  /** Only documents of this owner (`owned_by_caller`). */
  readonly ownerId?: string;
  readonly sourceUri?: string;
  readonly contentHash?: string;
  /** Inclusive. */
  readonly createdFrom?: number;
  /** Exclusive. */
  readonly createdBefore?: number;
}

/** Narrowing filters of {@link DocumentRepository.listChunks}. */
export interface ChunkFilter {
  /** Inclusive. */
  readonly fromOrdinal?: number;
  /** Inclusive. */
  readonly toOrdinal?: number;
  /** Empty means "any". */
  readonly kinds?: readonly ChunkKind[];
}

/** What a delete removed. */
export interface DeletedCounts {
  readonly documents: number;
  readonly chunks: number;
}

// Rows per statement: well under SQLite's 32,766 bound parameters (13 per chunk, 10 per outbox
// row) and, with the byte bound, under MySQL's 16 MiB default max_allowed_packet (a UTF-16 code
// unit is at most 3 bytes of UTF-8).
const CHUNKS_PER_INSERT = 200;
const CHUNK_BYTES_PER_INSERT = 4 * 1024 * 1024;
const OUTBOX_PER_INSERT = 500;

const { toRecord, toRow } = rowCodec<DocumentRecord, DocumentsTable>({
  id: 'id',
  tenantId: 'tenant_id',
  ownerId: 'owner_id',
  orgId: 'org_id',
  scope: ['scope', enumOf<Scope>()],
  displayName: 'display_name',
  mimeType: 'mime_type',
  sourceUri: 'source_uri',
  metadata: ['metadata_json', stringMap],
  contentHash: 'content_hash',
  sizeBytes: 'size_bytes',
  charCount: 'char_count',
  chunkCount: 'chunk_count',
  state: ['state', enumOf<DocumentState>()],
  chunkSize: 'chunk_size',
  chunkOverlap: 'chunk_overlap',
  keepTablesWhole: ['keep_tables_whole', flag],
  keepCodeWhole: ['keep_code_whole', flag],
  failureReason: ['failure_reason', clipped(64)],
  failureMessage: ['failure_message', clipped(1024)],
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  version: 'version',
});

/** Rows of `documents` and their records, both ways (export and import, `portability.ts`). */
export const documentRows = { toRecord, toRow } as const;

const { toRecord: toChunkRecord, toRow: toChunkRow } = rowCodec<ChunkRecord, ChunksTable>({
  id: 'id',
  tenantId: 'tenant_id',
  documentId: 'document_id',
  ordinal: 'ordinal',
  kind: ['kind', enumOf<ChunkKind>()],
  text: 'text',
  startOffset: 'start_offset',
  endOffset: 'end_offset',
  overlapPrefixChars: 'overlap_prefix_chars',
  headerPrefixChars: 'header_prefix_chars',
  tokenCount: 'token_count',
  headingPath: ['heading_path_json', json<readonly string[]>(() => [])],
  createdAt: 'created_at',
});

/** Rows of `chunks` and their records, both ways (export and import, `portability.ts`). */
export const chunkRows = { toRecord: toChunkRecord, toRow: toChunkRow } as const;

/**
 * Documents and their chunks, one aggregate. Chunk writes and deletes enqueue their outbox rows
 * in the caller's transaction (`trx`), so the index learns of exactly what was committed; a
 * document's state changes enqueue a DOCUMENT row, since only READY documents are searchable.
 */
/**
 * "This chunk has an unprocessed outbox row (its point may be missing)", for counting a
 * document's pending chunks: a correlated EXISTS, so that the plan walks the document's chunks and
 * looks each one up in the outbox by (kind, id), rather than walking every CHUNK row of the outbox,
 * which a join left SQLite free to choose (decision 0045).
 */
function chunkPending(eb: ExpressionBuilder<Database, 'chunks'>): Expression<SqlBool> {
  return eb.exists(
    eb
      .selectFrom('outbox')
      .select(eb.lit(1).as('one'))
      .whereRef('outbox.aggregate_id', '=', 'chunks.id')
      .where('outbox.aggregate_kind', '=', 'CHUNK')
      .where('outbox.processed_at', 'is', null),
  );
}

export class DocumentRepository {
  constructor(private readonly store: Store) {}

  /**
   * Inserts a document with no chunks yet (chunk count 0, version 1) in the given state. Writes no
   * outbox row: a document without chunks has nothing to index.
   */
  async createDocument(trx: Executor, input: NewDocument, now = Date.now()): Promise<DocumentRecord> {
    const record: DocumentRecord = {
      ...input,
      id: newId(now),
      chunkCount: 0,
      failureReason: '',
      failureMessage: '',
      createdAt: now,
      updatedAt: now,
      version: 1,
    };
    await trx.insertInto('documents').values(toRow(record)).execute();
    return record;
  }

  /**
   * Appends chunks to a document that is not FAILED, with one outbox row per chunk (CHUNK UPSERT,
   * payload `{ documentId }`), and adds them to its chunk count (a new version). NOT_FOUND when the
   * document does not exist in the tenant; FAILED_PRECONDITION `STATE_CONFLICT` when it is FAILED;
   * ALREADY_EXISTS when an ordinal is already taken (a resumed ingestion must skip the chunks
   * already committed).
   */
  async addChunks(
    trx: Executor,
    tenantId: string,
    documentId: string,
    chunks: readonly NewChunk[],
    now = Date.now(),
  ): Promise<ChunkRecord[]> {
    if (chunks.length === 0) {
      await this.#require(trx, tenantId, documentId);
      return [];
    }
    // Counting first also locks the document row (MySQL) for the rest of the transaction.
    const counted = await trx
      .updateTable('documents')
      .set({
        chunk_count: sql<number>`chunk_count + ${chunks.length}`,
        updated_at: now,
        version: sql<number>`version + 1`,
      })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', documentId)
      .where('state', '<>', 'FAILED')
      .executeTakeFirst();
    if (Number(counted.numUpdatedRows) !== 1) {
      await this.#require(trx, tenantId, documentId);
      throw stateConflict(documentId, 'chunks cannot be added to a FAILED document');
    }
    const records = chunks.map((c): ChunkRecord => ({
      ...c,
      id: newId(now),
      tenantId,
      documentId,
      headingPath: [...c.headingPath],
      createdAt: now,
    }));
    for (const batch of batches(
      records,
      CHUNKS_PER_INSERT,
      CHUNK_BYTES_PER_INSERT,
      (c) => c.text.length * 3,
    )) {
      await trx.insertInto('chunks').values(batch.map(toChunkRow)).execute();
    }
    await this.#enqueue(
      trx,
      records.map((c) => ({
        tenantId,
        aggregate: 'CHUNK',
        aggregateId: c.id,
        operation: 'UPSERT',
        payload: { documentId },
      })),
      now,
    );
    return records;
  }

  /**
   * INGESTING → READY: all chunks are written. Enqueues DOCUMENT UPSERT so the indexer makes the
   * chunks searchable. NOT_FOUND, ABORTED `ETAG_MISMATCH` when `expectedVersion` is given and
   * stale, FAILED_PRECONDITION `STATE_CONFLICT` unless INGESTING.
   */
  async markReady(
    trx: Executor,
    tenantId: string,
    id: string,
    expectedVersion?: number,
    now = Date.now(),
  ): Promise<DocumentRecord> {
    const before = await this.#transition(trx, tenantId, id, expectedVersion);
    return this.#write(trx, before, { state: 'READY' }, now);
  }

  /**
   * INGESTING → FAILED for good: removes the chunks written so far (CHUNK DELETE outbox rows),
   * sets the chunk count to 0 and records `failureReason` (an ErrorReason name, e.g. `INTERNAL`);
   * enqueues DOCUMENT UPSERT. Errors as {@link markReady}.
   */
  async markFailed(
    trx: Executor,
    tenantId: string,
    id: string,
    expectedVersion: number | undefined,
    failureReason: string,
    now = Date.now(),
    failureMessage = '',
  ): Promise<DocumentRecord> {
    const before = await this.#transition(trx, tenantId, id, expectedVersion);
    await this.#deleteChunks(trx, tenantId, [id], now);
    return this.#write(trx, before, { state: 'FAILED', failureReason, failureMessage, chunkCount: 0 }, now);
  }

  /** A document by id within the tenant, whatever its state and scope (callers check visibility). */
  async get(tenantId: string, id: string, executor?: Executor): Promise<DocumentRecord | undefined> {
    return findOne(this.store, 'documents', { tenant_id: tenantId, id }, toRecord, executor);
  }

  /** A document if `viewer` may see it (NOT_FOUND otherwise: invisible and absent look the same). */
  async getVisible(viewer: Viewer, id: string): Promise<DocumentRecord> {
    return findVisible(this.store, 'documents', viewer, id, `documents/${id}`, toRecord);
  }

  /**
   * Documents visible to `viewer` in every state, newest first (id descending: ids sort by
   * creation time). A page token is valid only with the same viewer and filter.
   */
  async list(viewer: Viewer, filter: DocumentFilter, page: PageRequest): Promise<Page<DocumentRecord>> {
    return keysetPage(this.store, page, {
      query: { viewer, filter },
      rows: (db) => {
        let q = db.selectFrom('documents').selectAll().where(visibleTo(viewer));
        if (filter.scopes?.length) q = q.where('scope', 'in', [...filter.scopes]);
        if (filter.mimeTypes?.length) q = q.where('mime_type', 'in', [...filter.mimeTypes]);
        if (filter.states?.length) q = q.where('state', 'in', [...filter.states]);
        if (filter.orgId !== undefined) q = q.where('scope', '=', 'ORG').where('org_id', '=', filter.orgId);
        if (filter.ownerId !== undefined) q = q.where('owner_id', '=', filter.ownerId);
        if (filter.sourceUri !== undefined) q = q.where('source_uri', '=', filter.sourceUri);
        if (filter.contentHash !== undefined) q = q.where('content_hash', '=', filter.contentHash);
        if (filter.createdFrom !== undefined) q = q.where('created_at', '>=', filter.createdFrom);
        if (filter.createdBefore !== undefined) q = q.where('created_at', '<', filter.createdBefore);
        return q;
      },
      order: keysetOn('id', 'desc', String),
      toItem: toRecord,
    });
  }

  /**
   * The document with this identity that deduplicates or resumes an upload: READY if there is one,
   * else the oldest INGESTING one; FAILED documents never count. On MySQL the rows read (and the
   * gap, when there are none) stay locked until `trx` ends, so two concurrent uploads of the same
   * content cannot both create a document: one of them is ABORTED and retries.
   */
  async findByContentHash(trx: Executor, identity: DocumentIdentity): Promise<DocumentRecord | undefined> {
    let q = trx
      .selectFrom('documents')
      .selectAll()
      .where('tenant_id', '=', identity.tenantId)
      .where('owner_id', '=', identity.ownerId)
      .where('content_hash', '=', identity.contentHash)
      .where('scope', '=', identity.scope)
      .where('org_id', '=', identity.orgId)
      .where('mime_type', '=', identity.mimeType)
      .where('state', 'in', ['READY', 'INGESTING'])
      .orderBy('id', 'asc');
    if (supportsRowLocks(this.store.dialect)) q = q.forUpdate();
    const rows = await q.execute();
    const row = rows.find((r) => r.state === 'READY') ?? rows[0];
    return row === undefined ? undefined : toRecord(row);
  }

  /**
   * Chunks of a document by ordinal ascending (callers check the document's visibility first). A
   * page token is valid only with the same document and filter.
   */
  async listChunks(
    tenantId: string,
    documentId: string,
    page: PageRequest,
    filter: ChunkFilter = {},
  ): Promise<Page<ChunkRecord>> {
    return keysetPage(this.store, page, {
      query: { tenantId, documentId, filter },
      rows: (db) => {
        let q = db
          .selectFrom('chunks')
          .selectAll()
          .where('tenant_id', '=', tenantId)
          .where('document_id', '=', documentId);
        if (filter.fromOrdinal !== undefined) q = q.where('ordinal', '>=', filter.fromOrdinal);
        if (filter.toOrdinal !== undefined) q = q.where('ordinal', '<=', filter.toOrdinal);
        if (filter.kinds?.length) q = q.where('kind', 'in', [...filter.kinds]);
        return q;
      },
      order: keysetOn('ordinal', 'asc', Number),
      toItem: toChunkRecord,
    });
  }

  /** A chunk of the document, or undefined (callers check the document's visibility first). */
  async getChunk(tenantId: string, documentId: string, chunkId: string): Promise<ChunkRecord | undefined> {
    return findOne(
      this.store,
      'chunks',
      { tenant_id: tenantId, document_id: documentId, id: chunkId },
      toChunkRecord,
    );
  }

  /**
   * Documents by id within the tenant, whatever their state and scope (callers check visibility),
   * in the order of `ids`; absent ids are missing from the map. One query per 500 ids.
   */
  async getMany(tenantId: string, ids: readonly string[]): Promise<Map<string, DocumentRecord>> {
    return findByIds(this.store, 'documents', tenantId, ids, toRecord);
  }

  /**
   * Chunks by id within the tenant, of any document (callers check that a chunk belongs to the
   * document they expect, and that document's visibility), in the order of `ids`; absent ids are
   * missing from the map. One query per 500 ids.
   */
  async getChunks(tenantId: string, ids: readonly string[]): Promise<Map<string, ChunkRecord>> {
    return findByIds(this.store, 'chunks', tenantId, ids, toChunkRecord);
  }

  /**
   * {@link indexedChunkCount} of several documents in one query per 500 ids, in the order of
   * `ids`: 0 for a document that is not READY or not yet activated; absent documents are missing
   * from the map.
   */
  async indexedChunkCounts(tenantId: string, ids: readonly string[]): Promise<Map<string, number>> {
    return readByIds(
      ids,
      (batch) =>
        run(this.store, (db) =>
          db
            .selectFrom('documents')
            .select(['documents.id', 'documents.chunk_count', 'documents.state'])
            .select((eb) =>
              eb
                .selectFrom('chunks')
                .select((count) => count.fn.countAll<number>().as('n'))
                .whereRef('chunks.tenant_id', '=', 'documents.tenant_id')
                .whereRef('chunks.document_id', '=', 'documents.id')
                .where(chunkPending)
                .as('pending'),
            )
            .select((eb) =>
              eb
                .selectFrom('outbox')
                .select((count) => count.fn.countAll<number>().as('n'))
                .whereRef('outbox.tenant_id', '=', 'documents.tenant_id')
                .whereRef('outbox.aggregate_id', '=', 'documents.id')
                .where('outbox.aggregate_kind', '=', 'DOCUMENT')
                .where('outbox.operation', '=', 'UPSERT')
                .where('outbox.processed_at', 'is', null)
                .as('activating'),
            )
            .where(filterOnly(db, 'documents.tenant_id'), '=', tenantId)
            .where('documents.id', 'in', batch)
            .execute(),
        ),
      (row) =>
        row.state === 'READY' && (row.activating ?? 0) === 0 ? row.chunk_count - (row.pending ?? 0) : 0,
    );
  }

  /**
   * Deletes a document and its chunks for good, with one CHUNK DELETE outbox row per chunk and a
   * DOCUMENT DELETE row. NOT_FOUND when absent; ABORTED `ETAG_MISMATCH` when `expectedVersion` is
   * given and stale.
   */
  async deleteDocument(
    trx: Executor,
    tenantId: string,
    id: string,
    expectedVersion?: number,
    now = Date.now(),
  ): Promise<DeletedCounts> {
    const before = await this.#require(trx, tenantId, id);
    if (expectedVersion !== undefined && before.version !== expectedVersion)
      throw etagMismatch(`documents/${id}`);
    return this.#deleteDocuments(trx, tenantId, [before.id], now);
  }

  /**
   * How many of a document's chunks are searchable: those without an unprocessed outbox row (the
   * indexer marks a row processed once its point is written), once the document's READY row has
   * been processed too (until then its chunks indexed while it was INGESTING are staged, not
   * searchable: 0). Counting pending rows rather than processed ones keeps the answer right after
   * old processed rows are pruned.
   */
  async indexedChunkCount(tenantId: string, documentId: string): Promise<number> {
    return (await this.indexedChunkCounts(tenantId, [documentId])).get(documentId) ?? 0;
  }

  /** How many of a document's chunks have an unprocessed outbox row (their point may be missing). */
  async pendingChunkRows(tenantId: string, documentId: string, executor?: Executor): Promise<number> {
    const query = async (db: Executor) => {
      const pending = await db
        .selectFrom('chunks')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('chunks.tenant_id', '=', tenantId)
        .where('chunks.document_id', '=', documentId)
        .where(chunkPending)
        .executeTakeFirstOrThrow();
      return pending.n;
    };
    return read(this.store, executor, query);
  }

  /**
   * Deletes every document of `ownerId` in the tenant, whatever its scope and state, with their
   * chunks and outbox DELETE rows (ForgetUser). Returns what was removed.
   */
  async purgeOwner(
    trx: Executor,
    tenantId: string,
    ownerId: string,
    now = Date.now(),
  ): Promise<DeletedCounts> {
    const rows = await trx
      .selectFrom('documents')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('owner_id', '=', ownerId)
      .execute();
    return this.#deleteDocuments(
      trx,
      tenantId,
      rows.map((r) => r.id),
      now,
    );
  }

  /**
   * Deletes up to `limit` documents of `ownerId` in the tenant created at or before the cutoff,
   * whatever their scope and state, with their chunks and outbox DELETE rows carrying `payload`
   * (governance `ForgetUser` through ingestion `EraseSubject`, one batch per transaction).
   * Returns what was removed; zero documents when none is left.
   */
  async purgeOwnerBatch(
    trx: Executor,
    tenantId: string,
    ownerId: string,
    options: {
      readonly createdAtOrBefore: number;
      readonly limit: number;
      readonly payload?: Readonly<Record<string, string | number>>;
    },
    now = Date.now(),
  ): Promise<DeletedCounts> {
    const rows = await trx
      .selectFrom('documents')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('owner_id', '=', ownerId)
      .where('created_at', '<=', options.createdAtOrBefore)
      .orderBy('id')
      .limit(options.limit)
      .execute();
    return this.#deleteDocuments(
      trx,
      tenantId,
      rows.map((r) => r.id),
      now,
      options.payload,
    );
  }

  async #require(trx: Executor, tenantId: string, id: string): Promise<DocumentRecord> {
    const record = await this.get(tenantId, id, trx);
    if (record === undefined) throw errors.notFound(`documents/${id}`);
    return record;
  }

  /** The document before a state change: it must exist, be at `expectedVersion` and be INGESTING. */
  async #transition(
    trx: Executor,
    tenantId: string,
    id: string,
    expectedVersion: number | undefined,
  ): Promise<DocumentRecord> {
    const before = await this.#require(trx, tenantId, id);
    if (expectedVersion !== undefined && before.version !== expectedVersion)
      throw etagMismatch(`documents/${id}`);
    if (before.state !== 'INGESTING')
      throw stateConflict(id, `documents/${id} is ${before.state}, not INGESTING`);
    return before;
  }

  /** Writes `change` if nobody else has changed the document since `before` was read. */
  async #write(
    trx: Executor,
    before: DocumentRecord,
    change: Partial<DocumentRecord>,
    now: number,
  ): Promise<DocumentRecord> {
    const after: DocumentRecord = { ...before, ...change, updatedAt: now, version: before.version + 1 };
    const result = await trx
      .updateTable('documents')
      .set(toRow(after))
      .where('tenant_id', '=', before.tenantId)
      .where('id', '=', before.id)
      .where('version', '=', before.version)
      .executeTakeFirst();
    // Another writer committed between our read and our write.
    if (Number(result.numUpdatedRows) !== 1) throw etagMismatch(`documents/${before.id}`);
    await enqueueOutbox(
      trx,
      [{ tenantId: before.tenantId, aggregate: 'DOCUMENT', aggregateId: before.id, operation: 'UPSERT' }],
      now,
    );
    return after;
  }

  /** Deletes the chunks of these documents with CHUNK DELETE outbox rows; returns how many. */
  async #deleteChunks(
    trx: Executor,
    tenantId: string,
    documentIds: readonly string[],
    now: number,
    payload: Readonly<Record<string, string | number>> = {},
  ): Promise<number> {
    let count = 0;
    for (const ids of batches(documentIds, OUTBOX_PER_INSERT)) {
      const chunks = await trx
        .selectFrom('chunks')
        .select(['id', 'document_id'])
        .where('tenant_id', '=', tenantId)
        .where('document_id', 'in', ids)
        .orderBy('id')
        .execute();
      if (chunks.length === 0) continue;
      await deleteWhereIn(trx, 'chunks', tenantId, 'document_id', ids);
      await this.#enqueue(
        trx,
        chunks.map((c) => ({
          tenantId,
          aggregate: 'CHUNK',
          aggregateId: c.id,
          operation: 'DELETE',
          payload: { ...payload, documentId: c.document_id },
        })),
        now,
      );
      count += chunks.length;
    }
    return count;
  }

  async #deleteDocuments(
    trx: Executor,
    tenantId: string,
    ids: readonly string[],
    now: number,
    payload: Readonly<Record<string, string | number>> = {},
  ): Promise<DeletedCounts> {
    // Chunks explicitly first (the foreign key would cascade), to know which to remove from the index.
    const chunks = await this.#deleteChunks(trx, tenantId, ids, now, payload);
    let documents = 0;
    for (const batch of batches(ids, OUTBOX_PER_INSERT)) {
      documents += await deleteWhereIn(trx, 'documents', tenantId, 'id', batch);
      await enqueueOutbox(
        trx,
        batch.map((id) => ({
          tenantId,
          aggregate: 'DOCUMENT',
          aggregateId: id,
          operation: 'DELETE',
          payload,
        })),
        now,
      );
    }
    return { documents, chunks };
  }

  async #enqueue(trx: Executor, events: readonly OutboxEvent[], now: number): Promise<void> {
    for (const batch of batches(events, OUTBOX_PER_INSERT)) await enqueueOutbox(trx, batch, now);
  }
}

function stateConflict(id: string, message: string): EngramError {
  return errors.failedPrecondition('STATE_CONFLICT', message, { name: `documents/${id}` });
}
