import {
  DocumentRepository,
  ForgetReceiptRepository,
  MemoryRepository,
  SessionRepository,
  type ChunkRecord,
  type DocumentRecord,
  type MemoryRecord,
  type OutboxEntry,
  type OutboxEvent,
  type Store,
} from '@engram/store';
import { STAGED_STATUS, pointId, type IndexFilter, type VectorIndex } from '@engram/vector-index';
import {
  chunkDocument,
  firstReply,
  memoryDocument,
  previousTurn,
  roundDocument,
  type IndexDocument,
} from '../domain/points.js';

/** One change to apply: an outbox row, or a synthetic one made by Reindex or the dense stage. */
export type Change = Pick<
  OutboxEntry,
  'id' | 'tenantId' | 'aggregate' | 'aggregateId' | 'operation' | 'payload'
>;

/**
 * What a change asks of the index once its source rows have been read. `activate` (a READY
 * document): the staged points to make searchable (ACTIVE) besides.
 */
export type Action =
  | {
      readonly kind: 'upsert';
      readonly documents: readonly IndexDocument[];
      readonly activate?: IndexFilter;
    }
  | { readonly kind: 'enqueue'; readonly events: readonly OutboxEvent[]; readonly activate?: IndexFilter }
  | { readonly kind: 'delete'; readonly ids: readonly string[] }
  | { readonly kind: 'deleteByFilter'; readonly filter: IndexFilter };

/** A change with its action, or the error that kept it from being planned. */
export type Planned =
  { readonly change: Change; readonly action: Action } | { readonly change: Change; readonly error: unknown };

/** Chunks a DOCUMENT row embeds itself; more are handed back to the outbox as CHUNK rows. */
const DIRECT_UPSERT_MAX = 64;
/** How many messages before a round the indexer reads to find the turn it answers. */
const PRECEDING_WINDOW = 8;
/** How many messages after a round's user message the indexer reads to find its reply. */
const FOLLOWING_WINDOW = 50;

/** Source rows read ahead for a batch of changes: memories and chunks (the bulk) in a few queries. */
interface Prefetched {
  readonly memories: ReadonlyMap<string, MemoryRecord>;
  readonly chunks: ReadonlyMap<string, ChunkRecord>;
  readonly documents: ReadonlyMap<string, DocumentRecord>;
}

/** A map key of a tenant's row. */
export const key = (tenantId: string, id: string) => `${tenantId}\u0000${id}`;

/** How {@link ChangePlanner.planAll} plans. */
export interface PlanOptions {
  /**
   * The live outbox's changes, planned against the live index: a chunk of a document still
   * INGESTING becomes a staged point (instead of nothing), and a READY document's row trusts the
   * outbox to bring the chunks that have a pending row. Reindex, rebuilds and the dense stage plan
   * without it.
   */
  readonly stage?: boolean;
}

/** A document's staged points (the chunks indexed while it was INGESTING). */
export function stagedChunks(tenantId: string, documentId: string): IndexFilter {
  return { tenantId, kinds: ['CHUNK'], documentIds: [documentId], statuses: [STAGED_STATUS] };
}

/** What became of a document whose chunks were just written as staged points. */
export type StagedOutcome = 'activate' | 'drop' | 'keep';

/** Ids of `changes` per tenant, by `pick` (undefined: not wanted). */
function idsByTenant(
  changes: readonly Change[],
  pick: (change: Change) => string | undefined,
): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const change of changes) {
    const id = pick(change);
    if (id === undefined || id === '') continue;
    const list = out.get(change.tenantId) ?? [];
    list.push(id);
    out.set(change.tenantId, list);
  }
  return out;
}

/**
 * Turns changes into what they ask of the index, re-reading their source rows from the source of
 * truth (an outbox row carries ids, never contents). A batch's memories, chunks and their
 * documents are read ahead in one query per kind and tenant (per 500 ids); rounds, documents and
 * the rest are read per change.
 */
export class ChangePlanner {
  readonly #memories: MemoryRepository;
  readonly #documents: DocumentRepository;
  readonly #sessions: SessionRepository;
  readonly #receipts: ForgetReceiptRepository;

  constructor(store: Store) {
    this.#memories = new MemoryRepository(store);
    this.#documents = new DocumentRepository(store);
    this.#sessions = new SessionRepository(store);
    this.#receipts = new ForgetReceiptRepository(store);
  }

  /** Plans every change; one that cannot be read fails alone. `index` answers which chunks have points. */
  async planAll(
    changes: readonly Change[],
    index: VectorIndex,
    options: PlanOptions = {},
  ): Promise<Planned[]> {
    let prefetched: Prefetched;
    try {
      prefetched = await this.#prefetch(changes);
    } catch (error) {
      return changes.map((change) => ({ change, error }));
    }
    const out: Planned[] = [];
    for (const change of changes) {
      try {
        out.push({ change, action: await this.#plan(change, prefetched, index, options.stage ?? false) });
      } catch (error) {
        out.push({ change, error });
      }
    }
    return out;
  }

  async #prefetch(changes: readonly Change[]): Promise<Prefetched> {
    const upserts = changes.filter((c) => c.operation === 'UPSERT');
    const memoryIds = idsByTenant(upserts, (c) => (c.aggregate === 'MEMORY' ? c.aggregateId : undefined));
    const chunkIds = idsByTenant(upserts, (c) => (c.aggregate === 'CHUNK' ? c.aggregateId : undefined));
    const documentIds = idsByTenant(upserts, (c) =>
      c.aggregate === 'CHUNK' ? String(c.payload['documentId'] ?? '') : undefined,
    );
    const memories = new Map<string, MemoryRecord>();
    const chunks = new Map<string, ChunkRecord>();
    const documents = new Map<string, DocumentRecord>();
    const reads: Promise<void>[] = [];
    for (const [tenantId, ids] of memoryIds) {
      reads.push(
        this.#memories.getMany(tenantId, ids).then((rows) => {
          for (const [id, row] of rows) memories.set(key(tenantId, id), row);
        }),
      );
    }
    for (const [tenantId, ids] of chunkIds) {
      reads.push(
        this.#documents.getChunks(tenantId, ids).then((rows) => {
          for (const [id, row] of rows) chunks.set(key(tenantId, id), row);
        }),
      );
    }
    for (const [tenantId, ids] of documentIds) {
      reads.push(
        this.#documents.getMany(tenantId, [...new Set(ids)]).then((rows) => {
          for (const [id, row] of rows) documents.set(key(tenantId, id), row);
        }),
      );
    }
    await Promise.all(reads);
    return { memories, chunks, documents };
  }

  /** Reads the source rows of one change and decides what to do with the index. */
  async #plan(change: Change, pre: Prefetched, index: VectorIndex, stage: boolean): Promise<Action> {
    const { tenantId, aggregateId, operation, payload } = change;
    switch (change.aggregate) {
      case 'MEMORY': {
        const memory = operation === 'UPSERT' ? pre.memories.get(key(tenantId, aggregateId)) : undefined;
        const document = memory === undefined ? undefined : memoryDocument(memory);
        return document === undefined
          ? { kind: 'delete', ids: [pointId('MEMORY', aggregateId)] }
          : { kind: 'upsert', documents: [document] };
      }
      case 'CHUNK': {
        const documentId = String(payload['documentId'] ?? '');
        const remove: Action = { kind: 'delete', ids: [pointId('CHUNK', aggregateId)] };
        if (operation === 'DELETE' || documentId === '') return remove;
        const chunk = pre.chunks.get(key(tenantId, aggregateId));
        const document = pre.documents.get(key(tenantId, documentId));
        const indexed =
          chunk === undefined || document === undefined || chunk.documentId !== documentId
            ? undefined
            : chunkDocument(chunk, document, stage);
        return indexed === undefined ? remove : { kind: 'upsert', documents: [indexed] };
      }
      case 'DOCUMENT':
        return this.#planDocument(change, index, stage);
      case 'ROUND':
        return this.#planRound(change);
      case 'SESSION':
        return { kind: 'deleteByFilter', filter: { tenantId, kinds: ['ROUND'], sessionIds: [aggregateId] } };
      case 'SUBJECT': {
        // A forget's final purge names its receipt (decision 0030): every point of the subject.
        const receipt = await this.#receipts.get(tenantId, aggregateId);
        return receipt === undefined
          ? { kind: 'delete', ids: [] }
          : { kind: 'deleteByFilter', filter: { tenantId, ownerIds: [receipt.subject] } };
      }
    }
  }

  /**
   * Whether every chunk of a READY document has a point or a pending row of its own (two counts),
   * so the live outbox will have indexed it without a scan of the whole document.
   */
  async #chunksAccountedFor(document: DocumentRecord, index: VectorIndex): Promise<boolean> {
    const [points, pending] = await Promise.all([
      index.count({ tenantId: document.tenantId, kinds: ['CHUNK'], documentIds: [document.id] }),
      this.#documents.pendingChunkRows(document.tenantId, document.id),
    ]);
    return points + pending >= document.chunkCount;
  }

  async #planDocument(change: Change, index: VectorIndex, stage: boolean): Promise<Action> {
    const { tenantId, aggregateId, operation } = change;
    const document = operation === 'UPSERT' ? await this.#documents.get(tenantId, aggregateId) : undefined;
    if (document?.state !== 'READY') {
      return { kind: 'deleteByFilter', filter: { tenantId, kinds: ['CHUNK'], documentIds: [aggregateId] } };
    }
    // READY: the chunks indexed while the document was INGESTING become searchable at once.
    const activate = stagedChunks(tenantId, aggregateId);
    if (stage && (await this.#chunksAccountedFor(document, index))) {
      return { kind: 'upsert', documents: [], activate };
    }
    // A READY document's chunks never change: only those without a point need indexing (none,
    // unless a chunk's row was lost: parked, or skipped by an older indexer; or, for Reindex and
    // rebuilds, every chunk of a new collection).
    const indexed = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await index.scroll(
        { tenantId, kinds: ['CHUNK'], documentIds: [aggregateId] },
        { limit: 1000, ...(cursor === undefined ? {} : { after: cursor }) },
      );
      for (const point of page.points) indexed.add(point.id);
      cursor = page.next;
    } while (cursor !== undefined);
    const documents: IndexDocument[] = [];
    let pageToken = '';
    do {
      const page = await this.#documents.listChunks(tenantId, aggregateId, { pageSize: 500, pageToken });
      for (const chunk of page.items) {
        const point = chunkDocument(chunk, document);
        if (point !== undefined && !indexed.has(point.id)) documents.push(point);
      }
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
    if (documents.length <= DIRECT_UPSERT_MAX) return { kind: 'upsert', documents, activate };
    // Many missing: hand them back to the outbox as chunk rows, so the work is spread over
    // passes (and replicas) instead of holding one lease for the whole document.
    return {
      kind: 'enqueue',
      activate,
      events: documents.map((d) => ({
        tenantId,
        aggregate: 'CHUNK' as const,
        aggregateId: d.payload.sourceId,
        operation: 'UPSERT' as const,
        payload: { documentId: aggregateId },
      })),
    };
  }

  /**
   * What to do with documents whose chunks a pass has just written as staged points, read again
   * after the write: `activate` when the document has become READY meanwhile (its READY row may
   * have been processed before the write landed), `drop` when it FAILED or is gone, `keep` while it
   * is INGESTING (its READY row will activate them).
   */
  async stagedOutcomes(
    documents: readonly { readonly tenantId: string; readonly documentId: string }[],
  ): Promise<Map<string, StagedOutcome>> {
    const outcomes = new Map<string, StagedOutcome>();
    const byTenant = new Map<string, string[]>();
    for (const { tenantId, documentId } of documents) {
      byTenant.set(tenantId, [...(byTenant.get(tenantId) ?? []), documentId]);
    }
    for (const [tenantId, ids] of byTenant) {
      const rows = await this.#documents.getMany(tenantId, [...new Set(ids)]);
      for (const id of ids) {
        const state = rows.get(id)?.state;
        outcomes.set(
          key(tenantId, id),
          state === 'READY' ? 'activate' : state === 'INGESTING' ? 'keep' : 'drop',
        );
      }
    }
    return outcomes;
  }

  async #planRound(change: Change): Promise<Action> {
    const { tenantId, aggregateId, operation, payload } = change;
    const sessionId = String(payload['sessionId'] ?? '');
    const remove: Action = { kind: 'delete', ids: [pointId('ROUND', aggregateId)] };
    if (operation === 'DELETE' || sessionId === '') return remove;
    const [session, user] = await Promise.all([
      this.#sessions.get(tenantId, sessionId),
      this.#sessions.getMessage(tenantId, sessionId, aggregateId),
    ]);
    if (session === undefined || user?.role !== 'USER') return remove;
    // One read around the user message: the turns before it (the one it answers) and after it
    // (its reply).
    const around = await this.#sessions.listMessages(
      tenantId,
      sessionId,
      { fromSequence: Math.max(1, user.sequence - PRECEDING_WINDOW) },
      { pageSize: PRECEDING_WINDOW + 1 + FOLLOWING_WINDOW },
    );
    const preceding = around.items.filter((m) => m.sequence < user.sequence);
    const following = around.items.filter((m) => m.sequence > user.sequence);
    return {
      kind: 'upsert',
      documents: [roundDocument(session, user, firstReply(following), previousTurn(preceding))],
    };
  }
}
