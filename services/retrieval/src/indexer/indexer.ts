import type { Embedder } from '@engram/embeddings';
import { encodeDocument } from '@engram/lexical';
import { Worker, describeError, type IndexPassMetrics, type Logger, type PassOutcome } from '@engram/runtime';
import { OutboxRepository, enqueueOutbox, inTransaction, type OutboxClass, type Store } from '@engram/store';
import {
  STAGED_STATUS,
  type ItemKind,
  type Point,
  type ScrolledPoint,
  type VectorIndex,
} from '@engram/vector-index';
import { retryDelayMs, type IndexDocument } from '../domain/points.js';
import {
  ChangePlanner,
  key,
  stagedChunks,
  type Change,
  type Planned,
  type StagedOutcome,
} from './planner.js';

export type { Change } from './planner.js';

/** What the indexer is built from. */
export interface IndexerDeps {
  readonly store: Store;
  readonly embedder: Embedder;
  /** The live collection (alias) searches read. */
  readonly index: VectorIndex;
  readonly logger: Logger;
  /**
   * Lexical-first indexing (decision 0032, default true): the outbox loop writes each new point
   * with its BM25 vector at once and without its dense vector, and the dense stage
   * ({@link Indexer.denseWorker}) embeds pending points afterwards. False: the outbox loop embeds
   * before it writes, as Reindex and rebuilds always do.
   */
  readonly lexicalFirst?: boolean;
  /** Outbox rows per batch. Default 128 lexical-first (no embedding in the pass), else 32. */
  readonly batchSize?: number;
  /** Outbox rows per pass of the bulk loop (`only` `bulk`). Default {@link batchSize}'s. */
  readonly bulkBatchSize?: number;
  /** Pending points the dense stage embeds per pass. Default 32. */
  readonly denseBatchSize?: number;
  /**
   * How long the dense stage waits at most, at a time, while an outbox loop has a backlog, ms
   * (`0`: never). Default {@link DENSE_YIELD_MAX_MS}.
   */
  readonly denseYieldMaxMs?: number;
  /** How long a leased batch stays invisible to other indexers, ms. Default 30 s. */
  readonly leaseMs?: number;
  /** The workers' pause when there is nothing to do, ms. Default 200. */
  readonly idleMs?: number;
  /**
   * While this answers true, the workers' passes do nothing: the live index holds another model's
   * vectors and writes wait for the rebuild (which wakes the worker when it has swapped the alias).
   */
  readonly paused?: () => boolean;
  /** Failures after which a row is parked. Default 10. */
  readonly maxAttempts?: number;
  /** Where each pass's stage times go (`engram_index_pass_stage_seconds`); none when absent. */
  readonly metrics?: IndexPassMetrics;
}

/** The loops whose passes {@link IndexPassMetrics} tells apart. */
type PassLoop = OutboxClass | 'all' | 'dense';

/** Times the stages of one pass, each from the end of the one before. */
class PassTimer {
  readonly #metrics: IndexPassMetrics | undefined;
  readonly #loop: PassLoop;
  #last = performance.now();

  constructor(metrics: IndexPassMetrics | undefined, loop: PassLoop) {
    this.#metrics = metrics;
    this.#loop = loop;
  }

  /** Records the time since the previous lap (or the start) as `stage`. */
  lap(stage: string): void {
    const now = performance.now();
    this.#metrics?.duration.observe({ loop: this.#loop, stage }, (now - this.#last) / 1000);
    this.#last = now;
  }

  rows(count: number): void {
    this.#metrics?.rows.inc({ loop: this.#loop }, count);
  }
}

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

/** What one pass of the dense stage did. */
export interface DensePass {
  /** Pending points it read. */
  readonly pending: number;
  /** Points rewritten with their dense vector. */
  readonly embedded: number;
  /** Points skipped because a newer write replaced them meanwhile (they stay pending). */
  readonly superseded: number;
  /** Points whose text could not be embedded: moved to the back of the queue. */
  readonly failed: number;
}

/** When dense vectors are computed: before the write (`now`), or by the dense stage (`later`). */
export type DenseTiming = 'now' | 'later';

/** The dense stage's order: conversational items before document chunks. */
const DENSE_PRIORITY: readonly (readonly ItemKind[])[] = [['ROUND', 'MEMORY'], ['CHUNK']];

/** The last pending mark this process gave (shared by every indexer of the process). */
let lastMark = 0;

/**
 * While an outbox loop has a backlog (its last pass leased a full batch), the dense stage embeds
 * conversational items only (rounds and memories: short texts, a few ms each), and document chunks
 * at most one batch per this long, counted from the end of the previous one. The two stages share
 * the machine's cores: a batch of 32 long chunks takes both cores for ~3.5 s, and embedding them
 * beside a document's lexical batches cut those from ~2,100 to ~400 chunks/s (docs/benchmarks.md,
 * issue 19 freshness).
 */
const DENSE_YIELD_MAX_MS = 30_000;

/** Runs async sections one at a time, in call order. */
class WriteLock {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(section: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(section);
    this.#tail = result.catch(() => undefined);
    return result;
  }
}

/**
 * Retrieval's indexer: the only consumer of the outbox. It leases rows (conversational changes
 * first), re-reads their source rows from the source of truth (an outbox row carries ids, never
 * contents; {@link ChangePlanner}), writes or deletes points, and marks the rows done.
 * At-least-once: point ids are derived from source ids, so a replay overwrites instead of
 * duplicating. A row that keeps failing is retried with backoff and parked after `maxAttempts`,
 * without blocking others.
 *
 * Lexical-first (decision 0032): the outbox loops only tokenize, so a new item is lexically
 * searchable within a pass — one loop for conversational rows ({@link worker}) and one for bulk rows
 * ({@link bulkWorker}), so a message never waits for a batch of a document's chunks; its point carries `densePendingSince` and no dense vector.
 * The dense stage ({@link denseWorker}) reads pending points from the index (rounds and memories
 * before chunks, oldest first), re-reads their rows, embeds them and rewrites each point unless a
 * newer write replaced it meanwhile (its mark changed); the check and the write are serialized
 * with the outbox loop's writes in this process. Both loops: a pass at once after work, every
 * `idleMs` when idle, backoff from 500 ms to 30 s while a dependency is unreachable.
 */
export class Indexer {
  /**
   * The outbox loop (started and stopped by the retrieval module's process): conversational rows
   * when lexical-first, every row otherwise.
   */
  readonly worker: Worker;
  /** Lexical-first: the outbox loop of bulk rows (a document's chunks); idle otherwise. */
  readonly bulkWorker: Worker;
  /** The dense stage's loop; it has nothing to do unless {@link IndexerDeps.lexicalFirst}. */
  readonly denseWorker: Worker;
  readonly #deps: IndexerDeps;
  readonly #outbox: OutboxRepository;
  readonly #planner: ChangePlanner;
  readonly #lock = new WriteLock();
  readonly #lexicalFirst: boolean;
  /** The outbox classes whose last pass leased a full batch (more is waiting). */
  readonly #backlogged = new Set<OutboxClass | 'all'>();
  /**
   * Since when the dense stage has held document chunks back for a backlog: when it first saw
   * it, then the end of each chunk batch it ran anyway (undefined: no backlog).
   */
  #yieldingSince: number | undefined;

  constructor(deps: IndexerDeps) {
    this.#deps = deps;
    this.#lexicalFirst = deps.lexicalFirst ?? true;
    this.#outbox = new OutboxRepository(deps.store, deps.maxAttempts ?? 10);
    this.#planner = new ChangePlanner(deps.store);
    const loop = (name: string, pass: () => Promise<PassOutcome>) =>
      new Worker({
        name,
        logger: deps.logger,
        idleMs: deps.idleMs ?? 200,
        backoff: { minMs: 500, maxMs: 30_000 },
        pass,
      });
    this.worker = loop('indexer', () => this.#pass(this.#lexicalFirst ? 'conversational' : undefined));
    this.bulkWorker = loop('bulk-indexer', () =>
      this.#lexicalFirst ? this.#pass('bulk') : Promise.resolve({}),
    );
    this.denseWorker = loop('dense-indexer', async () => {
      if (this.#deps.paused?.() === true) return {};
      // Decided again right before chunks would be selected (a bulk pass may have begun meanwhile).
      let yielding = this.#yieldToLexical();
      const pass = await this.runDenseOnce(DENSE_PRIORITY, (kinds) => {
        yielding = kinds.includes('CHUNK') && this.#yieldToLexical();
        return yielding;
      });
      // A chunk batch run during a backlog: the next one waits a whole period from its end.
      if (!yielding && this.#yieldingSince !== undefined) this.#yieldingSince = Date.now();
      return { more: pass.pending >= (this.#deps.denseBatchSize ?? 32) };
    });
  }

  /** An outbox loop's pass: one batch (another at once when it leased rows), nothing while paused. */
  async #pass(only: OutboxClass | undefined): Promise<PassOutcome> {
    if (this.#deps.paused?.() === true) return {};
    const pass = await this.runOnce(Date.now(), only);
    return { more: pass.leased > 0 };
  }

  /**
   * Whether the dense stage holds document chunks back in this pass: an outbox loop has a backlog
   * and {@link DENSE_YIELD_MAX_MS} has not passed since the stage first saw it or since the end of
   * the last chunk batch it ran anyway.
   */
  #yieldToLexical(now = Date.now()): boolean {
    const maxMs = this.#deps.denseYieldMaxMs ?? DENSE_YIELD_MAX_MS;
    if (this.#backlogged.size === 0 || maxMs === 0) {
      this.#yieldingSince = undefined;
      return false;
    }
    this.#yieldingSince ??= now;
    return now - this.#yieldingSince < maxMs;
  }

  #batchSize(only?: OutboxClass): number {
    const base = this.#deps.batchSize ?? (this.#lexicalFirst ? 128 : 32);
    return only === 'bulk' ? (this.#deps.bulkBatchSize ?? base) : base;
  }

  /**
   * Leases one batch (of one class of rows, or conversational rows first and then bulk ones) and
   * processes it. Returns what it did (0 leased when nothing is due).
   */
  async runOnce(now = Date.now(), only?: OutboxClass): Promise<IndexerPass> {
    const limit = this.#batchSize(only);
    const timer = new PassTimer(this.#deps.metrics, only ?? 'all');
    const entries = await this.#outbox.lease(limit, this.#deps.leaseMs ?? 30_000, now, only);
    // A full batch means more is waiting: the dense stage yields from now on (before any point
    // of this batch is written); a partial one clears that once it has been written.
    const backlog = only ?? 'all';
    if (entries.length >= limit) this.#backlogged.add(backlog);
    if (entries.length === 0) {
      if (this.#backlogged.delete(backlog)) this.denseWorker.wake();
      return { leased: 0, processed: 0, failed: 0 };
    }
    timer.lap('lease');
    timer.rows(entries.length);
    const timing: DenseTiming = this.#lexicalFirst ? 'later' : 'now';
    const { done, failed } = await this.#apply(entries, this.#deps.index, timing, timer, true);
    const byId = new Map(entries.map((e) => [e.id, e]));
    const failures = failed.flatMap(({ change, error }) => {
      const entry = byId.get(change.id);
      return entry === undefined
        ? []
        : [{ entry, error: describeError(error), retryAt: now + retryDelayMs(entry.attempts) }];
    });
    await this.#outbox.complete(done, now);
    await this.#outbox.fail(failures, now);
    timer.lap('complete');
    if (failures.length > 0) {
      this.#deps.logger.warn(
        { failed: failures.length, rows: failures.map((f) => f.entry.id), error: failures[0]?.error },
        'indexing failed for some outbox rows; they will be retried',
      );
    }
    if (entries.length < limit) this.#backlogged.delete(backlog);
    if (timing === 'later' && done.length > 0) this.denseWorker.wake();
    return { leased: entries.length, processed: done.length, failed: failures.length };
  }

  /**
   * Applies changes to `index`: reads their source rows, tokenizes what is searchable and, with
   * `dense` `now` (the default: Reindex and rebuilds), embeds it (one entry at a time, so a text the
   * model cannot take fails its own change only); with `later`, writes the points without dense
   * vectors for the dense stage. Writes all points in one request, then deletes. Returns the ids
   * applied and the failures.
   */
  async apply(
    changes: readonly Change[],
    index: VectorIndex,
    dense: DenseTiming = 'now',
  ): Promise<{ done: number[]; failed: { change: Change; error: unknown }[] }> {
    return this.#apply(changes, index, dense, new PassTimer(undefined, 'all'), false);
  }

  /**
   * {@link apply}; `stage` (the live outbox's rows): chunks of a document still INGESTING are
   * written as staged points, and made searchable when it is READY (decision 0040).
   */
  async #apply(
    changes: readonly Change[],
    index: VectorIndex,
    dense: DenseTiming,
    timer: PassTimer,
    stage: boolean,
  ): Promise<{ done: number[]; failed: { change: Change; error: unknown }[] }> {
    const planned = await this.#planner.planAll(changes, index, { stage });
    timer.lap('plan');
    const failed: { change: Change; error: unknown }[] = [];
    for (const p of planned) if ('error' in p) failed.push({ change: p.change, error: p.error });
    const actions = planned.filter((p): p is Extract<Planned, { action: unknown }> => 'action' in p);

    const points: Point[] = [];
    const upserted: Change[] = [];
    // The documents whose chunks this batch writes as staged points, with the rows that write them.
    const staged = new Map<string, { tenantId: string; documentId: string; changes: Change[] }>();
    // A point several rows of this batch would write (a chunk's own row and its document's row)
    // is written once.
    const seen = new Set<string>();
    for (const { change, action } of actions) {
      if (action.kind !== 'upsert') continue;
      try {
        const documents = action.documents.filter((d) => !seen.has(d.id));
        for (const d of documents) seen.add(d.id);
        if (documents.length > 0) {
          points.push(
            ...(dense === 'now' ? await this.#embedded(documents, change.id) : this.#lexical(documents)),
          );
        }
        for (const { payload } of documents) {
          if (payload.status !== STAGED_STATUS || payload.documentId === undefined) continue;
          const at = key(payload.tenantId, payload.documentId);
          const entry = staged.get(at) ?? {
            tenantId: payload.tenantId,
            documentId: payload.documentId,
            changes: [],
          };
          entry.changes.push(change);
          staged.set(at, entry);
        }
        upserted.push(change);
      } catch (error) {
        failed.push({ change, error });
      }
    }

    timer.lap(dense === 'now' ? 'embed' : 'tokenize');
    const done: number[] = [];
    let written = false;
    try {
      if (points.length > 0) await this.#lock.run(() => index.upsert(points, { wait: true }));
      done.push(...upserted.map((c) => c.id));
      written = true;
    } catch (error) {
      for (const change of upserted) failed.push({ change, error });
    }
    /** A step after the change was counted done failed: it is retried instead. */
    const undo = (undone: readonly Change[], error: unknown) => {
      for (const change of undone) {
        const at = done.indexOf(change.id);
        if (at < 0) continue;
        done.splice(at, 1);
        failed.push({ change, error });
      }
    };
    if (written && staged.size > 0) await this.#settleStaged(staged, index, undo);
    // The batch's point deletions go out as one request: one round trip per row held the lexical
    // stage to a few hundred rows per second when a document's chunks were deleted row by row.
    const deletions = actions.filter((a) => a.action.kind === 'delete');
    const ids = deletions.flatMap(({ action }) => (action.kind === 'delete' ? action.ids : []));
    try {
      if (ids.length > 0) await index.delete([...new Set(ids)], { wait: true });
      done.push(...deletions.map(({ change }) => change.id));
    } catch (error) {
      for (const { change } of deletions) failed.push({ change, error });
    }
    for (const { change, action } of actions) {
      if (action.kind === 'upsert' || action.kind === 'delete') continue;
      try {
        if (action.kind === 'enqueue') {
          for (let i = 0; i < action.events.length; i += 500) {
            await inTransaction(this.#deps.store, (trx) =>
              enqueueOutbox(trx, action.events.slice(i, i + 500)),
            );
          }
        } else await index.deleteByFilter(action.filter, { wait: true });
        done.push(change.id);
      } catch (error) {
        failed.push({ change, error });
      }
    }
    // A READY document's row: its staged chunks become searchable, in one request.
    for (const { change, action } of actions) {
      if ((action.kind !== 'upsert' && action.kind !== 'enqueue') || action.activate === undefined) continue;
      if (!done.includes(change.id)) continue;
      try {
        await index.setStatus(action.activate, 'ACTIVE', { wait: true });
      } catch (error) {
        undo([change], error);
      }
    }
    timer.lap('write');
    return { done, failed };
  }

  /**
   * Staged points were just written from a read of their document that may be stale: it may have
   * become READY since, and its READY row may have activated its chunks before these landed (the
   * rows run in other loops or replicas). Reads the documents again, after the write, and activates
   * what is READY now and removes what FAILED or is gone; whichever of this and the READY row comes
   * last sees both the points and the state.
   */
  async #settleStaged(
    staged: ReadonlyMap<string, { tenantId: string; documentId: string; changes: Change[] }>,
    index: VectorIndex,
    undo: (changes: readonly Change[], error: unknown) => void,
  ): Promise<void> {
    let outcomes: Map<string, StagedOutcome>;
    try {
      outcomes = await this.#planner.stagedOutcomes([...staged.values()]);
    } catch (error) {
      undo(
        [...staged.values()].flatMap((e) => e.changes),
        error,
      );
      return;
    }
    for (const [at, entry] of staged) {
      const filter = stagedChunks(entry.tenantId, entry.documentId);
      try {
        const outcome = outcomes.get(at) ?? 'drop';
        if (outcome === 'activate') await index.setStatus(filter, 'ACTIVE', { wait: true });
        else if (outcome === 'drop') await index.deleteByFilter(filter, { wait: true });
      } catch (error) {
        undo(entry.changes, error);
      }
    }
  }

  /** Complete points: embedded and tokenized. */
  async #embedded(documents: readonly IndexDocument[], changeId: number): Promise<Point[]> {
    const { vectors, truncated } = await this.#deps.embedder.embed(
      documents.map((d) => d.text),
      'document',
    );
    const truncatedCount = truncated.filter(Boolean).length;
    if (truncatedCount > 0) {
      this.#deps.logger.debug(
        { change: changeId, truncated: truncatedCount },
        'text longer than the model input was truncated',
      );
    }
    return documents.map((d, i) => {
      const dense = vectors[i];
      if (dense === undefined) throw new Error('the embedder returned fewer vectors than texts');
      return { id: d.id, dense, sparse: encodeDocument(d.text), payload: d.payload };
    });
  }

  /** Lexical-only points, marked as waiting for their dense vector. */
  #lexical(documents: readonly IndexDocument[]): Point[] {
    return documents.map((d) => ({
      id: d.id,
      sparse: encodeDocument(d.text),
      payload: { ...d.payload, densePendingSince: this.#mark() },
    }));
  }

  /** A pending mark: the time, strictly increasing within this process (it is also a version). */
  #mark(): number {
    lastMark = Math.max(Date.now(), lastMark + 1);
    return lastMark;
  }

  /**
   * One pass of the dense stage: up to `denseBatchSize` pending points (rounds and memories first),
   * their rows re-read, their texts embedded in one call, and each point rewritten with its dense
   * vector unless its mark changed meanwhile. A point whose source is gone is deleted (its outbox
   * row does the same); one whose text the model refuses gets a new mark (back of the queue) and a
   * warning, so it never blocks the others. `priority`: the kinds to take, group by group; `hold`,
   * asked right before a group is selected, skips it when it answers true (the worker's yield to
   * the lexical stage, decided per group: a bulk pass may begin while the first group is read).
   */
  async runDenseOnce(
    priority: readonly (readonly ItemKind[])[] = DENSE_PRIORITY,
    hold?: (kinds: readonly ItemKind[]) => boolean,
  ): Promise<DensePass> {
    const index = this.#deps.index;
    const limit = this.#deps.denseBatchSize ?? 32;
    const timer = new PassTimer(this.#deps.metrics, 'dense');
    const pending: ScrolledPoint[] = [];
    for (const kinds of priority) {
      if (pending.length >= limit) break;
      if (hold?.(kinds) === true) continue;
      pending.push(...(await index.pendingDense(limit - pending.length, kinds)));
    }
    if (pending.length === 0) return { pending: 0, embedded: 0, superseded: 0, failed: 0 };
    timer.lap('select');
    timer.rows(pending.length);
    const marks = new Map(pending.map((p) => [p.id, p.payload.densePendingSince]));
    const planned = await this.#planner.planAll(pending.map(pendingChange), index);
    const documents: IndexDocument[] = [];
    const gone: string[] = [];
    for (const p of planned) {
      if ('error' in p) throw p.error; // the source of truth is unreachable: the worker backs off
      const { action } = p;
      const id = pending[p.change.id]?.id ?? '';
      if (action.kind === 'upsert') {
        const document = action.documents.find((d) => d.id === id);
        if (document !== undefined) documents.push(document);
        else gone.push(id);
      } else gone.push(id);
    }
    timer.lap('plan');
    const { points, refused } = await this.#embedAll(documents);
    timer.lap('embed');
    const written = await this.#lock.run(async () => {
      const current = await index.fetch([...points.map((p) => p.id), ...refused.map((d) => d.id), ...gone]);
      const unchanged = new Set(
        current.filter((p) => p.payload.densePendingSince === marks.get(p.id)).map((p) => p.id),
      );
      const write = points.filter((p) => unchanged.has(p.id));
      const retry = this.#lexical(refused.filter((d) => unchanged.has(d.id)));
      const remove = gone.filter((id) => unchanged.has(id));
      if (write.length + retry.length > 0) await index.upsert([...write, ...retry], { wait: true });
      if (remove.length > 0) await index.delete(remove, { wait: true });
      if (retry.length > 0) {
        this.#deps.logger.warn(
          { points: retry.length },
          'some texts could not be embedded; their points stay lexical-only and will be retried',
        );
      }
      return {
        pending: pending.length,
        embedded: write.length,
        superseded: pending.length - unchanged.size,
        failed: retry.length,
      };
    });
    timer.lap('write');
    return written;
  }

  /**
   * Embeds documents in one call; when that fails, one by one, setting apart those the model
   * refuses. When it refuses every one, the model itself is failing, not the texts: the error
   * propagates and the worker backs off.
   */
  async #embedAll(
    documents: readonly IndexDocument[],
  ): Promise<{ points: Point[]; refused: IndexDocument[] }> {
    if (documents.length === 0) return { points: [], refused: [] };
    try {
      return { points: await this.#embedded(documents, 0), refused: [] };
    } catch (error) {
      if (documents.length === 1) throw error;
      this.#deps.logger.debug({ err: describeError(error) }, 'a dense batch failed: embedding one by one');
    }
    const points: Point[] = [];
    const refused: IndexDocument[] = [];
    let lastError: unknown;
    for (const d of documents) {
      try {
        points.push(...(await this.#embedded([d], 0)));
      } catch (error) {
        lastError = error;
        refused.push(d);
      }
    }
    if (points.length === 0) throw lastError;
    return { points, refused };
  }

  /**
   * Processes passes until the outbox has nothing due, then (lexical-first) dense passes until no
   * point is pending: everything searchable by both signals (tests, tools). Returns the outbox totals.
   */
  async drain(maxPasses = 1_000): Promise<IndexerPass> {
    const total = await this.drainOutbox(maxPasses);
    if (this.#lexicalFirst) await this.drainDense(maxPasses);
    return total;
  }

  /** Processes outbox passes until nothing is due (tests, tools). Returns the totals. */
  async drainOutbox(maxPasses = 1_000): Promise<IndexerPass> {
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

  /** Runs dense passes until no point is pending (tests, tools). Returns the points embedded. */
  async drainDense(maxPasses = 1_000): Promise<number> {
    let embedded = 0;
    for (let i = 0; i < maxPasses; i += 1) {
      const pass = await this.runDenseOnce();
      embedded += pass.embedded;
      if (pass.pending === 0 || pass.embedded + pass.superseded + pass.failed === 0) break;
    }
    return embedded;
  }
}

/** The change that re-reads a pending point's source row; its `id` is the point's place in the pass. */
function pendingChange(point: ScrolledPoint, place: number): Change {
  const { payload } = point;
  const aggregate = payload.kind;
  return {
    id: place,
    tenantId: payload.tenantId,
    aggregate,
    aggregateId: payload.sourceId,
    operation: 'UPSERT',
    payload:
      aggregate === 'ROUND'
        ? { sessionId: payload.sessionId ?? '' }
        : aggregate === 'CHUNK'
          ? { documentId: payload.documentId ?? '' }
          : {},
  };
}
