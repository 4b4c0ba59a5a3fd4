import type { Embedder } from '@engram/embeddings';
import { encodeDocument } from '@engram/lexical';
import { Worker, describeError, type Logger, type PassOutcome } from '@engram/runtime';
import {
  DocumentRepository,
  ForgetReceiptRepository,
  MemoryRepository,
  OutboxRepository,
  SessionRepository,
  enqueueOutbox,
  inTransaction,
  type OutboxEntry,
  type OutboxEvent,
  type Store,
} from '@engram/store';
import { pointId, type IndexFilter, type Point, type VectorIndex } from '@engram/vector-index';
import {
  chunkDocument,
  firstReply,
  memoryDocument,
  previousTurn,
  retryDelayMs,
  roundDocument,
  type IndexDocument,
} from '../domain/points.js';

/** What the indexer is built from. */
export interface IndexerDeps {
  readonly store: Store;
  readonly embedder: Embedder;
  /** The live collection (alias) searches read. */
  readonly index: VectorIndex;
  readonly logger: Logger;
  /** Outbox rows per batch. Default 32. */
  readonly batchSize?: number;
  /** How long a leased batch stays invisible to other indexers, ms. Default 30 s. */
  readonly leaseMs?: number;
  /** The worker's pause when the outbox is empty, ms. Default 200. */
  readonly idleMs?: number;
  /**
   * While this answers true, the worker's passes do nothing: the live index holds another model's
   * vectors and writes wait for the rebuild (which wakes the worker when it has swapped the alias).
   */
  readonly paused?: () => boolean;
  /** Failures after which a row is parked. Default 10. */
  readonly maxAttempts?: number;
}

/** One change to apply: an outbox row, or a synthetic one made by Reindex. */
export type Change = Pick<
  OutboxEntry,
  'id' | 'tenantId' | 'aggregate' | 'aggregateId' | 'operation' | 'payload'
>;

/** A change that re-applies a searchable source row (Reindex and full rebuilds replay these). */
export function replayChange(
  id: number,
  aggregate: 'MEMORY' | 'DOCUMENT' | 'ROUND',
  row: { readonly tenantId: string; readonly id: string; readonly sessionId?: string },
): Change {
  return {
    id,
    tenantId: row.tenantId,
    aggregate,
    aggregateId: row.id,
    operation: 'UPSERT',
    payload: row.sessionId === undefined ? {} : { sessionId: row.sessionId },
  };
}

/** What one pass did. */
export interface IndexerPass {
  readonly leased: number;
  readonly processed: number;
  readonly failed: number;
}

/** What an outbox row asks of the index once its source rows have been read. */
type Action =
  | { readonly kind: 'upsert'; readonly documents: readonly IndexDocument[] }
  | { readonly kind: 'enqueue'; readonly events: readonly OutboxEvent[] }
  | { readonly kind: 'delete'; readonly ids: readonly string[] }
  | { readonly kind: 'deleteByFilter'; readonly filter: IndexFilter };

/**
 * Retrieval's indexer: the only consumer of the outbox. It leases rows in order, re-reads their
 * source rows from the source of truth (an outbox row carries ids, never contents), embeds and
 * tokenizes what is searchable, writes or deletes points, and marks the rows done. At-least-once:
 * point ids are derived from source ids, so a replay overwrites instead of duplicating. A row that
 * keeps failing is retried with backoff and parked after `maxAttempts`, without blocking others.
 * Its loop is {@link worker}: a pass at once after work, every `idleMs` when idle, backoff from
 * 500 ms to 30 s while the source of truth is unreachable.
 */
export class Indexer {
  /** The outbox loop (started and stopped by the retrieval module's process). */
  readonly worker: Worker;
  readonly #deps: IndexerDeps;
  readonly #outbox: OutboxRepository;
  readonly #memories: MemoryRepository;
  readonly #documents: DocumentRepository;
  readonly #sessions: SessionRepository;
  readonly #receipts: ForgetReceiptRepository;

  constructor(deps: IndexerDeps) {
    this.#deps = deps;
    this.#outbox = new OutboxRepository(deps.store, deps.maxAttempts ?? 10);
    this.#memories = new MemoryRepository(deps.store);
    this.#documents = new DocumentRepository(deps.store);
    this.#sessions = new SessionRepository(deps.store);
    this.#receipts = new ForgetReceiptRepository(deps.store);
    this.worker = new Worker({
      name: 'indexer',
      logger: deps.logger,
      idleMs: deps.idleMs ?? 200,
      backoff: { minMs: 500, maxMs: 30_000 },
      pass: () => this.#pass(),
    });
  }

  /** The worker's pass: one batch (another at once when it leased rows), nothing while paused. */
  async #pass(): Promise<PassOutcome> {
    if (this.#deps.paused?.() === true) return {};
    const pass = await this.runOnce();
    return { more: pass.leased > 0 };
  }

  /** Leases one batch and processes it. Returns what it did (0 leased when the outbox is idle). */
  async runOnce(now = Date.now()): Promise<IndexerPass> {
    const entries = await this.#outbox.lease(this.#deps.batchSize ?? 32, this.#deps.leaseMs ?? 30_000, now);
    if (entries.length === 0) return { leased: 0, processed: 0, failed: 0 };
    const { done, failed } = await this.apply(entries, this.#deps.index);
    const byId = new Map(entries.map((e) => [e.id, e]));
    const failures = failed.flatMap(({ change, error }) => {
      const entry = byId.get(change.id);
      return entry === undefined
        ? []
        : [{ entry, error: describeError(error), retryAt: now + retryDelayMs(entry.attempts) }];
    });
    await this.#outbox.complete(done, now);
    await this.#outbox.fail(failures, now);
    if (failures.length > 0) {
      this.#deps.logger.warn(
        { failed: failures.length, rows: failures.map((f) => f.entry.id), error: failures[0]?.error },
        'indexing failed for some outbox rows; they will be retried',
      );
    }
    return { leased: entries.length, processed: done.length, failed: failures.length };
  }

  /**
   * Applies changes to `index`: reads their source rows, embeds and tokenizes what is searchable
   * (one entry at a time, so a text the model cannot take fails its own change only), writes all
   * points in one request, then deletes. Used by the outbox loop and by Reindex (which replays the
   * whole source of truth into a new collection). Returns the ids applied and the failures.
   */
  async apply(
    changes: readonly Change[],
    index: VectorIndex,
  ): Promise<{ done: number[]; failed: { change: Change; error: unknown }[] }> {
    const planned: { change: Change; action: Action }[] = [];
    const failed: { change: Change; error: unknown }[] = [];
    for (const change of changes) {
      try {
        planned.push({ change, action: await this.#plan(change) });
      } catch (error) {
        failed.push({ change, error });
      }
    }

    const points: Point[] = [];
    const upserted: Change[] = [];
    // A point several rows of this batch would write (a chunk's own row and its document's row)
    // is embedded once.
    const seen = new Set<string>();
    for (const { change, action } of planned) {
      if (action.kind !== 'upsert') continue;
      try {
        const documents = action.documents.filter((d) => !seen.has(d.id));
        for (const d of documents) seen.add(d.id);
        if (documents.length > 0) {
          const { vectors, truncated } = await this.#deps.embedder.embed(
            documents.map((d) => d.text),
            'document',
          );
          const truncatedCount = truncated.filter(Boolean).length;
          if (truncatedCount > 0) {
            this.#deps.logger.debug(
              { change: change.id, truncated: truncatedCount },
              'text longer than the model input was truncated',
            );
          }
          documents.forEach((d, i) => {
            const dense = vectors[i];
            if (dense === undefined) throw new Error('the embedder returned fewer vectors than texts');
            points.push({ id: d.id, dense, sparse: encodeDocument(d.text), payload: d.payload });
          });
        }
        upserted.push(change);
      } catch (error) {
        failed.push({ change, error });
      }
    }

    const done: number[] = [];
    try {
      if (points.length > 0) await index.upsert(points, { wait: true });
      done.push(...upserted.map((c) => c.id));
    } catch (error) {
      for (const change of upserted) failed.push({ change, error });
    }
    for (const { change, action } of planned) {
      if (action.kind === 'upsert') continue;
      try {
        if (action.kind === 'enqueue') {
          for (let i = 0; i < action.events.length; i += 500) {
            await inTransaction(this.#deps.store, (trx) =>
              enqueueOutbox(trx, action.events.slice(i, i + 500)),
            );
          }
        } else if (action.kind === 'delete') await index.delete(action.ids, { wait: true });
        else await index.deleteByFilter(action.filter, { wait: true });
        done.push(change.id);
      } catch (error) {
        failed.push({ change, error });
      }
    }
    return { done, failed };
  }

  /** Reads the source rows of one change and decides what to do with the index. */
  async #plan(change: Change): Promise<Action> {
    const { tenantId, aggregateId, operation, payload } = change;
    switch (change.aggregate) {
      case 'MEMORY': {
        const memory = operation === 'UPSERT' ? await this.#memories.get(tenantId, aggregateId) : undefined;
        const document = memory === undefined ? undefined : memoryDocument(memory);
        return document === undefined
          ? { kind: 'delete', ids: [pointId('MEMORY', aggregateId)] }
          : { kind: 'upsert', documents: [document] };
      }
      case 'CHUNK': {
        const documentId = String(payload['documentId'] ?? '');
        if (operation === 'DELETE' || documentId === '')
          return { kind: 'delete', ids: [pointId('CHUNK', aggregateId)] };
        const [chunk, document] = await Promise.all([
          this.#documents.getChunk(tenantId, documentId, aggregateId),
          this.#documents.get(tenantId, documentId),
        ]);
        const indexed =
          chunk === undefined || document === undefined ? undefined : chunkDocument(chunk, document);
        return indexed === undefined
          ? { kind: 'delete', ids: [pointId('CHUNK', aggregateId)] }
          : { kind: 'upsert', documents: [indexed] };
      }
      case 'DOCUMENT': {
        const document =
          operation === 'UPSERT' ? await this.#documents.get(tenantId, aggregateId) : undefined;
        if (document?.state !== 'READY') {
          return {
            kind: 'deleteByFilter',
            filter: { tenantId, kinds: ['CHUNK'], documentIds: [aggregateId] },
          };
        }
        // A READY document's chunks never change: only those without a point need embedding
        // (usually none, when the chunks' own rows were indexed after the document became READY).
        const indexed = new Set<string>();
        let cursor: string | undefined;
        do {
          const page = await this.#deps.index.scroll(
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
        if (documents.length <= DIRECT_UPSERT_MAX) return { kind: 'upsert', documents };
        // Many missing: hand them back to the outbox as chunk rows, so the work is spread over
        // passes (and replicas) instead of holding one lease for the whole document.
        return {
          kind: 'enqueue',
          events: documents.map((d) => ({
            tenantId,
            aggregate: 'CHUNK' as const,
            aggregateId: d.payload.sourceId,
            operation: 'UPSERT' as const,
            payload: { documentId: aggregateId },
          })),
        };
      }
      case 'ROUND': {
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

  /** Processes passes until the outbox has nothing due (tests, tools). Returns the totals. */
  async drain(maxPasses = 1_000): Promise<IndexerPass> {
    const total = { leased: 0, processed: 0, failed: 0 };
    for (let i = 0; i < maxPasses; i += 1) {
      const pass = await this.runOnce();
      total.leased += pass.leased;
      total.processed += pass.processed;
      total.failed += pass.failed;
      if (pass.leased === 0) break;
    }
    return total;
  }
}

/** Chunks a DOCUMENT row embeds itself; more are handed back to the outbox as CHUNK rows. */
const DIRECT_UPSERT_MAX = 64;
/** How many messages before a round the indexer reads to find the turn it answers. */
const PRECEDING_WINDOW = 8;
/** How many messages after a round's user message the indexer reads to find its reply. */
const FOLLOWING_WINDOW = 50;
