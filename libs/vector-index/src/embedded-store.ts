import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { errors, isEngramError } from '@engram/errors';
import { CollectionState, type Hit, type StoredPoint } from './embedded-collection.js';
import { checkFilter } from './embedded-filter.js';
import { filtersOf } from './filter-semantics.js';
import { checkLimit, checkPendingMark, checkPendingOptions, checkPendingScope } from './point-checks.js';
import type {
  CollectionSpec,
  IndexFilter,
  ItemKind,
  PendingScope,
  Point,
  PointPayload,
  PointScope,
  ScoredPoint,
  ScrolledPoint,
  ScrollOptions,
  ScrollPage,
  SearchQuery,
  SparseVector,
  VectorIndex,
  VectorStore,
} from './port.js';
import { checkScrollOptions } from './scroll.js';
import { NO_SIMILARITIES, VectorSimilarities, type Similarities } from './similarities.js';

/** Options of {@link createEmbeddedStore}. */
export interface EmbeddedStoreOptions {
  /**
   * The index's own directory (created if missing). It holds `vectors.sqlite` (+ its WAL), which
   * one process at a time may open: a second opener fails with UNAVAILABLE.
   */
  readonly path: string;
  /**
   * How the in-memory copy holds dense vectors (decision 0034). `none` (default): float32, exact
   * scores. `int8`: one byte per dimension plus a scale per vector — a quarter of the memory,
   * dense scores and rankings approximate (recall@10 measured in docs/benchmarks.md). The file
   * always keeps the float32 vectors, so the setting can change between opens; fetched vectors
   * are the dequantized ones.
   */
  readonly quantization?: 'none' | 'int8';
}

/** The file inside {@link EmbeddedStoreOptions.path}. */
export const EMBEDDED_INDEX_FILE = 'vectors.sqlite';

const DEPENDENCY = 'vector-index';
const SCHEMA_VERSION = 3;
const KINDS: readonly ItemKind[] = ['MEMORY', 'CHUNK', 'ROUND'];
const SCOPES: readonly PointScope[] = ['SELF', 'ORG', 'PLATFORM'];

/**
 * Opens the embedded vector index: the single-machine default, no server (decision 0006).
 *
 * Durability: SQLite in WAL mode with `synchronous = FULL` is the log of record — an upsert or
 * delete resolves only after its transaction committed, so an acknowledged write survives a crash
 * or power loss. Search: each collection is mirrored in memory (contiguous Float32Array vectors,
 * typed payload columns, an inverted index for the sparse side), loaded on first use and updated
 * after every commit; searches filter first and score exactly within the filter, with the same
 * scores as Qdrant (cosine on normalized vectors; sparse dot product with Qdrant's IDF).
 *
 * The file is opened with an exclusive lock: the retrieval process owns it.
 */
export function createEmbeddedStore(options: EmbeddedStoreOptions): VectorStore {
  // Checked at run time too: the setting comes from configuration.
  const quantization: string = options.quantization ?? 'none';
  if (quantization !== 'none' && quantization !== 'int8')
    throw errors.fieldInvalid('quantization', 'must be none or int8');
  return new EmbeddedStore(options.path, quantization === 'int8');
}

/** Runs `work`, turning driver failures into UNAVAILABLE (EngramErrors pass through). */
function guard<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    if (isEngramError(error)) throw error;
    throw errors.unavailable(DEPENDENCY, `the embedded vector index failed: ${describe(error)}`, {
      cause: error,
    });
  }
}

/** Runs synchronous `work` as a promise: a throw becomes a rejection, never a synchronous throw. */
function settle<T>(work: () => T): Promise<T> {
  return new Promise<T>((resolve) => {
    resolve(work());
  });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A row of `points` as read at open (raw mode: positional, in {@link POINT_COLUMNS} order). */
type PointRow = [
  id: string,
  dense: Buffer,
  sparse: Buffer,
  tenantId: string,
  kind: string,
  sourceId: string,
  scope: string,
  ownerId: string,
  orgId: string,
  status: string,
  memoryType: string | null,
  namespace: string | null,
  evergreen: number | null,
  sessionId: string | null,
  documentId: string | null,
  occurredAt: number | null,
  createdAt: number,
  expiresAt: number | null,
  sourceUpdatedAt: number | null,
  densePendingSince: number | null,
];

const POINT_COLUMNS = [
  'id',
  'dense',
  'sparse',
  'tenant_id',
  'kind',
  'source_id',
  'scope',
  'owner_id',
  'org_id',
  'status',
  'memory_type',
  'namespace',
  'evergreen',
  'session_id',
  'document_id',
  'occurred_at',
  'created_at',
  'expires_at',
  'source_updated_at',
  'dense_pending_since',
] as const;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS engram_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS collections (
    name TEXT PRIMARY KEY, model TEXT NOT NULL, dimensions INTEGER NOT NULL, created_at INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS aliases (alias TEXT PRIMARY KEY, collection TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS points (
    collection TEXT NOT NULL, id TEXT NOT NULL,
    dense BLOB NOT NULL, sparse BLOB NOT NULL,
    tenant_id TEXT NOT NULL, kind TEXT NOT NULL, source_id TEXT NOT NULL, scope TEXT NOT NULL,
    owner_id TEXT NOT NULL, org_id TEXT NOT NULL, status TEXT NOT NULL,
    memory_type TEXT, namespace TEXT, evergreen INTEGER, session_id TEXT, document_id TEXT,
    occurred_at INTEGER, created_at INTEGER NOT NULL, expires_at INTEGER, source_updated_at INTEGER,
    dense_pending_since INTEGER,
    UNIQUE (collection, id));`;

/**
 * The migrations, by the schema version they start from. 1 → 2 adds `source_updated_at`; 2 → 3
 * adds `dense_pending_since` (lexical-first points: their `dense` is a zero-length blob). The
 * points written before keep NULL, i.e. absent / not pending.
 */
const MIGRATIONS: ReadonlyMap<number, string> = new Map([
  [1, 'ALTER TABLE points ADD COLUMN source_updated_at INTEGER'],
  [2, 'ALTER TABLE points ADD COLUMN dense_pending_since INTEGER'],
]);

/** The payload of a row (absent optional fields read as undefined). */
function payloadOf(row: PointRow): PointPayload {
  return {
    tenantId: row[3],
    kind: row[4] as ItemKind,
    sourceId: row[5],
    scope: row[6] as PointScope,
    ownerId: row[7],
    orgId: row[8],
    status: row[9],
    memoryType: row[10] ?? undefined,
    namespace: row[11] ?? undefined,
    evergreen: row[12] === null ? undefined : row[12] === 1,
    sessionId: row[13] ?? undefined,
    documentId: row[14] ?? undefined,
    occurredAt: row[15] ?? undefined,
    createdAt: row[16],
    expiresAt: row[17] ?? undefined,
    sourceUpdatedAt: row[18] ?? undefined,
    densePendingSince: row[19] ?? undefined,
  };
}

function checkPayload(p: PointPayload): void {
  const text = (field: string, value: unknown, required: boolean) => {
    if (value === undefined && !required) return;
    if (typeof value !== 'string') throw errors.fieldInvalid(`payload.${field}`, 'must be a string');
  };
  const time = (field: string, value: unknown, required: boolean) => {
    if (value === undefined && !required) return;
    if (typeof value !== 'number' || !Number.isFinite(value))
      throw errors.fieldInvalid(`payload.${field}`, 'must be epoch milliseconds');
  };
  if (typeof p.tenantId !== 'string' || p.tenantId === '') throw errors.fieldRequired('payload.tenantId');
  if (!KINDS.includes(p.kind))
    throw errors.fieldInvalid('payload.kind', `must be one of ${KINDS.join(', ')}`);
  if (!SCOPES.includes(p.scope))
    throw errors.fieldInvalid('payload.scope', `must be one of ${SCOPES.join(', ')}`);
  for (const field of ['sourceId', 'ownerId', 'orgId', 'status'] as const) text(field, p[field], true);
  for (const field of ['memoryType', 'namespace', 'sessionId', 'documentId'] as const)
    text(field, p[field], false);
  if (p.evergreen !== undefined && typeof p.evergreen !== 'boolean')
    throw errors.fieldInvalid('payload.evergreen', 'must be a boolean');
  time('createdAt', p.createdAt, true);
  time('occurredAt', p.occurredAt, false);
  time('expiresAt', p.expiresAt, false);
  time('sourceUpdatedAt', p.sourceUpdatedAt, false);
}

/**
 * A point's dense side: its normalized vector, or undefined for a lexical-first point. Exactly one
 * of `dense` and `payload.densePendingSince` must be present (decision 0032).
 */
function denseOf(point: Point, dims: number): Float32Array | undefined {
  checkPendingMark(point);
  return point.dense === undefined ? undefined : normalized('point.dense', point.dense, dims);
}

/** The vector scaled to unit length (a zero vector stays zero), as Qdrant stores cosine vectors. */
function normalized(field: string, vector: readonly number[] | Float32Array, dims: number): Float32Array {
  if (vector.length !== dims)
    throw errors.fieldInvalid(field, `expected ${dims} dimensions, got ${vector.length}`);
  let norm = 0;
  for (let d = 0; d < dims; d++) {
    const x = vector[d] ?? NaN;
    if (!Number.isFinite(x)) throw errors.fieldInvalid(field, 'must hold finite numbers');
    norm += x * x;
  }
  const out = new Float32Array(dims);
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  for (let d = 0; d < dims; d++) out[d] = (vector[d] ?? 0) * scale;
  return out;
}

/** A sparse vector sorted by term id, validated (unique uint32 ids, finite weights). */
function sparseOf(field: string, sparse: SparseVector, dropZeros: boolean): [Uint32Array, Float32Array] {
  const { indices, values } = sparse;
  if (indices.length !== values.length)
    throw errors.fieldInvalid(field, 'indices and values must have the same length');
  const pairs = indices.map((term, i) => [term, values[i] ?? NaN] as const).sort((a, b) => a[0] - b[0]);
  const ids: number[] = [];
  const weights: number[] = [];
  for (const [term, weight] of pairs) {
    if (!Number.isInteger(term) || term < 0 || term > 0xffffffff)
      throw errors.fieldInvalid(field, 'indices must be unsigned 32-bit integers');
    if (!Number.isFinite(weight)) throw errors.fieldInvalid(field, 'values must be finite numbers');
    if (ids.length > 0 && ids[ids.length - 1] === term)
      throw errors.fieldInvalid(field, `index ${term} repeats`);
    // Qdrant's IDF counts points with a non-zero value for a term; a zero weight scores nothing.
    if (dropZeros && weight === 0) continue;
    ids.push(term);
    weights.push(weight);
  }
  return [Uint32Array.from(ids), Float32Array.from(weights)];
}

/** The `dense` blob of a lexical-first point. */
const NO_DENSE = Buffer.alloc(0);

function bytes(array: Float32Array): Buffer {
  return Buffer.from(array.buffer, array.byteOffset, array.byteLength);
}

/** A sparse vector as one blob: its n term ids (uint32), then its n weights (float32). */
function sparseBlob(indices: Uint32Array, values: Float32Array): Buffer {
  const blob = Buffer.alloc(indices.length * 8);
  blob.set(new Uint8Array(indices.buffer, indices.byteOffset, indices.byteLength), 0);
  blob.set(new Uint8Array(values.buffer, values.byteOffset, values.byteLength), indices.byteLength);
  return blob;
}

function sparseOfBlob(blob: Buffer): [Uint32Array, Float32Array] {
  // Copied into an aligned buffer: SQLite's need not be 4-byte aligned.
  const aligned = new Uint8Array(blob).buffer;
  const n = blob.length / 8;
  return [new Uint32Array(aligned, 0, n), new Float32Array(aligned, n * 4, n)];
}

class EmbeddedStore implements VectorStore {
  readonly backend = 'EMBEDDED' as const;
  private readonly db: BetterSqlite3.Database;
  private readonly specs = new Map<string, CollectionSpec>();
  private readonly aliases = new Map<string, string>();
  private readonly states = new Map<string, CollectionState>();
  private closed = false;
  private readonly statements: ReturnType<EmbeddedStore['prepare']>;

  constructor(
    readonly path: string,
    private readonly quantized: boolean,
  ) {
    this.db = guard(() => {
      mkdirSync(path, { recursive: true });
      return new BetterSqlite3(join(path, EMBEDDED_INDEX_FILE), { timeout: 0 });
    });
    try {
      // Exclusive before WAL: no shared-memory index, and the lock taken by the first write
      // below is held until close, so a second process (or handle) cannot open the index.
      this.db.pragma('page_size = 16384');
      this.db.pragma('locking_mode = EXCLUSIVE');
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = FULL');
      this.db
        .transaction(() => {
          this.db.exec(SCHEMA);
          const version = this.db
            .prepare("SELECT value FROM engram_meta WHERE key = 'schema'")
            .pluck()
            .get() as string | undefined;
          if (version === undefined) {
            this.db
              .prepare("INSERT INTO engram_meta (key, value) VALUES ('schema', ?)")
              .run(String(SCHEMA_VERSION));
          } else if (Number(version) > SCHEMA_VERSION) {
            throw errors.unavailable(DEPENDENCY, `${path} was written by a newer Engram (schema ${version})`);
          } else if (Number(version) < SCHEMA_VERSION) {
            for (let from = Number(version); from < SCHEMA_VERSION; from++) {
              const migration = MIGRATIONS.get(from);
              if (migration !== undefined) this.db.exec(migration);
            }
            this.db
              .prepare("UPDATE engram_meta SET value = ? WHERE key = 'schema'")
              .run(String(SCHEMA_VERSION));
          }
        })
        .immediate();
      this.statements = this.prepare();
      const collections = this.db.prepare('SELECT name, model, dimensions FROM collections').all() as {
        name: string;
        model: string;
        dimensions: number;
      }[];
      for (const c of collections) this.specs.set(c.name, { model: c.model, dimensions: c.dimensions });
      const aliases = this.db.prepare('SELECT alias, collection FROM aliases').all() as {
        alias: string;
        collection: string;
      }[];
      for (const a of aliases) this.aliases.set(a.alias, a.collection);
    } catch (error) {
      this.db.close();
      if (isEngramError(error)) throw error;
      const busy = (error as { code?: unknown }).code === 'SQLITE_BUSY';
      throw errors.unavailable(
        DEPENDENCY,
        busy
          ? `the embedded vector index at ${path} is in use by another process`
          : `cannot open the embedded vector index at ${path}: ${describe(error)}`,
        { cause: error },
      );
    }
  }

  private prepare() {
    const db = this.db;
    return {
      upsert: db.prepare(
        `INSERT OR REPLACE INTO points (collection, ${POINT_COLUMNS.join(', ')}) ` +
          `VALUES (?, ${POINT_COLUMNS.map(() => '?').join(', ')})`,
      ),
      delete: db.prepare('DELETE FROM points WHERE collection = ? AND id = ?'),
      setStatus: db.prepare('UPDATE points SET status = ? WHERE collection = ? AND id = ?'),
      // A table scan in rowid (= write) order, not an index walk: sequential reads at open.
      load: db
        .prepare(`SELECT ${POINT_COLUMNS.join(', ')} FROM points NOT INDEXED WHERE collection = ?`)
        .raw(),
      countPoints: db.prepare('SELECT count(*) FROM points WHERE collection = ?').pluck(),
      createCollection: db.prepare(
        'INSERT INTO collections (name, model, dimensions, created_at) VALUES (?, ?, ?, ?)',
      ),
      deleteCollection: db.prepare('DELETE FROM collections WHERE name = ?'),
      deleteCollectionPoints: db.prepare('DELETE FROM points WHERE collection = ?'),
      deleteAliasesOf: db.prepare('DELETE FROM aliases WHERE collection = ?'),
      setAlias: db.prepare('INSERT OR REPLACE INTO aliases (alias, collection) VALUES (?, ?)'),
    };
  }

  private open(): void {
    if (this.closed) throw errors.unavailable(DEPENDENCY, 'the embedded vector index is closed');
  }

  /** The collection a name designates: an alias's target, else the name itself. */
  resolve(name: string): string {
    return this.aliases.get(name) ?? name;
  }

  spec(name: string): CollectionSpec | undefined {
    this.open();
    return this.specs.get(this.resolve(name));
  }

  /** The in-memory state of a collection, loaded from the file on first use. */
  state(name: string): { collection: string; spec: CollectionSpec; state: CollectionState } {
    this.open();
    const collection = this.resolve(name);
    const spec = this.specs.get(collection);
    if (spec === undefined) throw errors.notFound(`collection ${name}`);
    let state = this.states.get(collection);
    if (state === undefined) {
      state = guard(() => this.load(collection, spec));
      this.states.set(collection, state);
    }
    return { collection, spec, state };
  }

  private load(collection: string, spec: CollectionSpec): CollectionState {
    const expected = Number(this.statements.countPoints.get(collection));
    const state = new CollectionState(spec.dimensions, expected, this.quantized);
    const rows = this.statements.load.iterate(collection) as IterableIterator<PointRow>;
    state.load(
      (function* () {
        for (const row of rows) {
          const [sparseIndices, sparseValues] = sparseOfBlob(row[2]);
          yield {
            id: row[0],
            // A zero-length blob: a lexical-first point (no collection has zero dimensions).
            dense: row[1].length === 0 ? undefined : row[1],
            sparseIndices,
            sparseValues,
            payload: payloadOf(row),
          } satisfies StoredPoint;
        }
      })(),
    );
    return state;
  }

  ensureCollection(name: string, spec: CollectionSpec): void {
    this.open();
    if (typeof spec.model !== 'string' || spec.model === '') throw errors.fieldRequired('spec.model');
    if (!Number.isInteger(spec.dimensions) || spec.dimensions <= 0)
      throw errors.fieldInvalid('spec.dimensions', 'must be a positive integer');
    const collection = this.resolve(name);
    const existing = this.specs.get(collection);
    if (existing !== undefined) {
      if (existing.model !== spec.model || existing.dimensions !== spec.dimensions) {
        throw errors.failedPrecondition(
          'STATE_CONFLICT',
          `collection ${collection} holds ${existing.model} (${existing.dimensions} dimensions), not ${spec.model} (${spec.dimensions})`,
          { collection },
        );
      }
      return;
    }
    guard(() => this.statements.createCollection.run(collection, spec.model, spec.dimensions, Date.now()));
    this.specs.set(collection, { model: spec.model, dimensions: spec.dimensions });
  }

  upsert(name: string, points: readonly Point[]): void {
    const { collection, spec, state } = this.state(name);
    const stored: StoredPoint[] = points.map((p) => {
      if (typeof p.id !== 'string' || p.id === '') throw errors.fieldRequired('point.id');
      checkPayload(p.payload);
      const [sparseIndices, sparseValues] = sparseOf('point.sparse', p.sparse, true);
      return {
        id: p.id,
        dense: denseOf(p, spec.dimensions),
        sparseIndices,
        sparseValues,
        payload: p.payload,
      };
    });
    if (stored.length === 0) return;
    const insert = this.statements.upsert;
    guard(() => {
      this.db.transaction(() => {
        for (const p of stored) {
          const q = p.payload;
          insert.run(
            collection,
            p.id,
            p.dense === undefined ? NO_DENSE : bytes(p.dense as Float32Array),
            sparseBlob(p.sparseIndices, p.sparseValues),
            q.tenantId,
            q.kind,
            q.sourceId,
            q.scope,
            q.ownerId,
            q.orgId,
            q.status,
            q.memoryType ?? null,
            q.namespace ?? null,
            q.evergreen === undefined ? null : q.evergreen ? 1 : 0,
            q.sessionId ?? null,
            q.documentId ?? null,
            q.occurredAt ?? null,
            q.createdAt,
            q.expiresAt ?? null,
            q.sourceUpdatedAt ?? null,
            p.dense === undefined ? (q.densePendingSince ?? null) : null,
          );
        }
      })();
    });
    // Committed: now visible to searches.
    state.upsert(stored);
  }

  delete(name: string, ids: readonly string[]): void {
    const { collection, state } = this.state(name);
    const present = [...new Set(ids)].filter((id) => state.has(id));
    if (present.length === 0) return;
    const remove = this.statements.delete;
    guard(() => {
      this.db.transaction(() => {
        for (const id of present) remove.run(collection, id);
      })();
    });
    state.delete(present);
  }

  deleteByFilter(name: string, filter: IndexFilter): void {
    checkFilter(filter);
    const { state } = this.state(name);
    this.delete(name, state.idsMatching(filter));
  }

  setStatus(name: string, filter: IndexFilter, status: string): void {
    checkFilter(filter);
    if (typeof status !== 'string' || status === '') throw errors.fieldRequired('status');
    const { collection, state } = this.state(name);
    const ids = state.idsMatching(filter);
    if (ids.length === 0) return;
    const update = this.statements.setStatus;
    guard(() => {
      this.db.transaction(() => {
        for (const id of ids) update.run(status, collection, id);
      })();
    });
    // Committed: now what searches filter on.
    state.setStatus(ids, status);
  }

  fetch(name: string, ids: readonly string[], withVectors: boolean): Point[] {
    const { state } = this.state(name);
    const points: Point[] = [];
    for (const id of new Set(ids)) {
      const p = state.get(id);
      if (p === undefined) continue;
      const dense = withVectors ? (p.dense === undefined ? undefined : Array.from(p.dense)) : [];
      points.push({
        id,
        ...(dense !== undefined ? { dense } : {}),
        sparse: withVectors
          ? { indices: Array.from(p.sparseIndices), values: Array.from(p.sparseValues) }
          : { indices: [], values: [] },
        payload: p.payload,
      });
    }
    return points;
  }

  /** The dense vectors compared here (lazily): the embedded index has them in memory. */
  similarities(name: string, ids: readonly string[]): Similarities {
    const unique = [...new Set(ids)];
    if (unique.length < 2) return NO_SIMILARITIES;
    const { state } = this.state(name);
    const vectors = new Map<string, Float32Array>();
    for (const id of unique) {
      const dense = state.denseOf(id);
      if (dense !== undefined) vectors.set(id, dense);
    }
    return new VectorSimilarities(vectors);
  }

  searchDense(
    name: string,
    vector: readonly number[] | Float32Array,
    filter: IndexFilter,
    limit: number,
  ): ScoredPoint[] {
    return this.searchBatch(name, [{ dense: vector, filter, limit }])[0] ?? [];
  }

  searchSparse(name: string, vector: SparseVector, filter: IndexFilter, limit: number): ScoredPoint[] {
    return this.searchBatch(name, [{ sparse: vector, filter, limit }])[0] ?? [];
  }

  /** Every query validated first (one bad query rejects the batch), then run in order. */
  searchBatch(name: string, queries: readonly SearchQuery[]): ScoredPoint[][] {
    const filters = queries.map((query) => {
      const members = filtersOf(query.filter);
      members.forEach(checkFilter);
      checkLimit(query.limit);
      return members;
    });
    const { spec, state } = this.state(name);
    const prepared = queries.map((query, q) => {
      const members = filters[q] ?? [];
      if ('dense' in query) {
        const vector = normalized('vector', query.dense, spec.dimensions);
        return () =>
          union(
            members.map((f) => state.searchDense(vector, f, query.limit)),
            query.limit,
          );
      }
      const [indices, values] = sparseOf('vector', query.sparse, false);
      return () =>
        union(
          members.map((f) => state.searchSparse(indices, values, f, query.limit)),
          query.limit,
        );
    });
    return prepared.map((run) => run());
  }

  pendingDense(name: string, limit: number, kinds: readonly ItemKind[] | undefined): ScrolledPoint[] {
    checkPendingOptions(limit, kinds);
    return this.state(name).state.pendingDense(limit, kinds ?? []);
  }

  countPendingDense(name: string, of: PendingScope | undefined): number {
    if (of !== undefined) checkPendingScope(of);
    return this.state(name).state.countPending(of?.tenantId, of?.kinds ?? []);
  }

  scroll(name: string, filter: IndexFilter, options: ScrollOptions): ScrollPage {
    checkFilter(filter);
    checkScrollOptions(options);
    return this.state(name).state.scroll(filter, options.limit, options.after);
  }

  count(name: string, filter?: IndexFilter): number {
    if (filter !== undefined) checkFilter(filter);
    return this.state(name).state.count(filter);
  }

  index(name: string): VectorIndex {
    return new EmbeddedIndex(this, name);
  }

  listCollections(): Promise<string[]> {
    return settle(() => {
      this.open();
      return [...this.specs.keys()].sort();
    });
  }

  /** Deletes a collection, its points and the aliases pointing to it; a missing one is no error. */
  deleteCollection(name: string): Promise<void> {
    return settle(() => {
      this.open();
      if (!this.specs.has(name)) return;
      guard(() => {
        this.db.transaction(() => {
          this.statements.deleteCollectionPoints.run(name);
          this.statements.deleteAliasesOf.run(name);
          this.statements.deleteCollection.run(name);
        })();
      });
      this.specs.delete(name);
      this.states.delete(name);
      for (const [alias, target] of this.aliases) if (target === name) this.aliases.delete(alias);
    });
  }

  aliasTarget(alias: string): Promise<string | undefined> {
    return settle(() => {
      this.open();
      return this.aliases.get(alias);
    });
  }

  setAlias(alias: string, collection: string): Promise<void> {
    return settle(() => {
      this.open();
      if (!this.specs.has(collection)) throw errors.notFound(`collection ${collection}`);
      if (this.specs.has(alias))
        throw errors.failedPrecondition('STATE_CONFLICT', `${alias} is a collection, not an alias`, {
          alias,
        });
      guard(() => this.statements.setAlias.run(alias, collection));
      this.aliases.set(alias, collection);
    });
  }

  close(): Promise<void> {
    return settle(() => {
      if (this.closed) return;
      this.closed = true;
      this.states.clear();
      guard(() => this.db.close());
    });
  }
}

/**
 * A view of one collection or alias of an {@link EmbeddedStore}. Every call resolves the alias
 * anew, so a swapped alias takes effect on the next call. Writes are durable when they resolve
 * (`wait` is implied).
 */
class EmbeddedIndex implements VectorIndex {
  readonly backend = 'EMBEDDED' as const;

  constructor(
    private readonly store: EmbeddedStore,
    readonly name: string,
  ) {}

  spec(): Promise<CollectionSpec | undefined> {
    return settle(() => this.store.spec(this.name));
  }

  ensureCollection(spec: CollectionSpec): Promise<void> {
    return settle(() => {
      this.store.ensureCollection(this.name, spec);
    });
  }

  upsert(points: readonly Point[]): Promise<void> {
    return settle(() => {
      this.store.upsert(this.name, points);
    });
  }

  delete(ids: readonly string[]): Promise<void> {
    return settle(() => {
      this.store.delete(this.name, ids);
    });
  }

  deleteByFilter(filter: IndexFilter): Promise<void> {
    return settle(() => {
      this.store.deleteByFilter(this.name, filter);
    });
  }

  setStatus(filter: IndexFilter, status: string): Promise<void> {
    return settle(() => {
      this.store.setStatus(this.name, filter, status);
    });
  }

  searchDense(
    vector: readonly number[] | Float32Array,
    filter: IndexFilter,
    limit: number,
  ): Promise<ScoredPoint[]> {
    return settle(() => this.store.searchDense(this.name, vector, filter, limit));
  }

  searchSparse(vector: SparseVector, filter: IndexFilter, limit: number): Promise<ScoredPoint[]> {
    return settle(() => this.store.searchSparse(this.name, vector, filter, limit));
  }

  searchBatch(queries: readonly SearchQuery[]): Promise<ScoredPoint[][]> {
    return settle(() => this.store.searchBatch(this.name, queries));
  }

  pendingDense(limit: number, kinds?: readonly ItemKind[]): Promise<ScrolledPoint[]> {
    return settle(() => this.store.pendingDense(this.name, limit, kinds));
  }

  countPendingDense(of?: PendingScope): Promise<number> {
    return settle(() => this.store.countPendingDense(this.name, of));
  }

  fetch(ids: readonly string[], options?: { withVectors?: boolean }): Promise<Point[]> {
    return settle(() => this.store.fetch(this.name, ids, options?.withVectors ?? false));
  }

  similarities(ids: readonly string[]): Promise<Similarities> {
    return settle(() => this.store.similarities(this.name, ids));
  }

  scroll(filter: IndexFilter, options: ScrollOptions): Promise<ScrollPage> {
    return settle(() => this.store.scroll(this.name, filter, options));
  }

  count(filter?: IndexFilter): Promise<number> {
    return settle(() => this.store.count(this.name, filter));
  }

  /** The store owns the file: closing one index view releases nothing. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * The best `limit` of several answers to one query (a union filter's members), each point once, by
 * score then id, as one search over the union answers. One answer is returned as it is.
 */
function union(answers: readonly Hit[][], limit: number): Hit[] {
  const [only] = answers;
  if (answers.length === 1 && only !== undefined) return only;
  const best = new Map<string, Hit>();
  for (const answer of answers) for (const hit of answer) if (!best.has(hit.id)) best.set(hit.id, hit);
  return [...best.values()]
    .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, limit);
}
