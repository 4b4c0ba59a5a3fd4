import type { Schemas } from '@qdrant/js-client-rest';
import { errors, isEngramError } from '@engram/errors';
import { checkLimit, checkPendingMark, checkPendingOptions, checkPendingScope } from './point-checks.js';
import type {
  CollectionSpec,
  IndexFilter,
  ItemKind,
  PendingScope,
  Point,
  PointPayload,
  ScoredPoint,
  ScrolledPoint,
  ScrollOptions,
  ScrollPage,
  SearchQuery,
  SparseVector,
  VectorIndex,
  VectorStore,
} from './port.js';
import { STAGED_STATUS } from './port.js';
import { toQdrantFilter, toQdrantQueryFilter } from './qdrant-filter.js';
import { QdrantHttp, isQdrantHttpError, segment } from './qdrant-http.js';
import { checkScrollOptions } from './scroll.js';
import {
  MATRIX_MAX_POINTS,
  NO_SIMILARITIES,
  SimilarityMatrix,
  VectorSimilarities,
  type Similarities,
} from './similarities.js';

/** Options of {@link createQdrantStore}. */
export interface QdrantStoreOptions {
  /** REST endpoint, e.g. `http://127.0.0.1:6333`. */
  readonly url: string;
  /** Qdrant API key (sent as the `api-key` header). */
  readonly apiKey?: string;
  /** Per-attempt request timeout in milliseconds. Default 30 000. */
  readonly timeoutMs?: number;
  /** Attempts for a request after transient failures, including the first. Default 4. */
  readonly maxAttempts?: number;
  /** First retry delay in milliseconds; doubles per attempt, with jitter. Default 100. */
  readonly backoffMs?: number;
  /** Points per upsert request. Default 256. */
  readonly upsertBatchSize?: number;
  /**
   * Search by brute force instead of HNSW (`params.exact`). Default false: once a collection
   * outgrows Qdrant's indexing threshold (~5,000 points of 512 dimensions) an unselective search is
   * approximate (HNSW, high recall); selective filters stay exact either way, because Qdrant's
   * planner scans the payload index when the filtered set is small.
   */
  readonly exact?: boolean;
}

/** Names of the two vectors every point carries. */
const DENSE = 'dense';
const SPARSE = 'sparse';

/** Where the collection's {@link CollectionSpec} lives: Qdrant's collection metadata (≥ 1.16). */
const METADATA_KEY = 'engram';

/** Point ids per delete request. */
const DELETE_BATCH = 1_000;

/** The dense stage's work leaves out staged points (a document still INGESTING). */
const NOT_STAGED: Schemas['Condition'][] = [{ key: 'status', match: { value: STAGED_STATUS } }];

/**
 * A payload index for every field a filter can look at. `tenantId` is a tenant index: Qdrant keeps
 * each tenant's points together and plans tenant-filtered searches accordingly. Time fields only
 * need ranges (no exact lookups).
 */
const PAYLOAD_INDEXES: ReadonlyArray<readonly [keyof PointPayload, Schemas['PayloadFieldSchema']]> = [
  ['tenantId', { type: 'keyword', is_tenant: true }],
  ['kind', 'keyword'],
  ['scope', 'keyword'],
  ['ownerId', 'keyword'],
  ['orgId', 'keyword'],
  ['status', 'keyword'],
  ['memoryType', 'keyword'],
  ['namespace', 'keyword'],
  ['sessionId', 'keyword'],
  ['documentId', 'keyword'],
  ['sourceId', 'keyword'],
  ['evergreen', 'bool'],
  ['occurredAt', { type: 'integer', lookup: false, range: true }],
  ['createdAt', { type: 'integer', lookup: false, range: true }],
  ['expiresAt', { type: 'integer', lookup: false, range: true }],
  // Lexical-first points: `pendingDense` orders by it (`order_by` needs a range index), and
  // `countPendingDense` counts the points that have it.
  ['densePendingSince', { type: 'integer', lookup: false, range: true }],
];

const STRING_FIELDS = [
  'tenantId',
  'kind',
  'sourceId',
  'scope',
  'ownerId',
  'orgId',
  'status',
  'memoryType',
  'namespace',
  'sessionId',
  'documentId',
] as const satisfies ReadonlyArray<keyof PointPayload>;
/** `sourceUpdatedAt` is stored but never filtered on: it has no payload index. */
const NUMBER_FIELDS = [
  'occurredAt',
  'createdAt',
  'expiresAt',
  'sourceUpdatedAt',
  'densePendingSince',
] as const satisfies ReadonlyArray<keyof PointPayload>;

/**
 * The Qdrant adapter of the {@link VectorStore} port, over Qdrant's REST API.
 *
 * A collection holds one embedding model: a named dense vector `dense` (cosine, the model's
 * dimensions) and a named sparse vector `sparse` with the IDF modifier, so Qdrant applies
 * `idf = ln(1 + (N − n + 0.5)/(n + 0.5))` from its own statistics at query time and the indexer only
 * sends BM25 term weights. The {@link CollectionSpec} is kept in the collection's metadata, which
 * is how `ensureCollection` refuses a collection made for another model.
 *
 * Requests go through {@link QdrantHttp} (one write per request, keep-alive, retries), not
 * through `@qdrant/js-client-rest`, whose OpenAPI types still describe the bodies.
 */
export function createQdrantStore(options: QdrantStoreOptions): VectorStore {
  const http = new QdrantHttp({
    url: options.url,
    ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
    ...(options.backoffMs !== undefined ? { backoffMs: options.backoffMs } : {}),
  });
  const batchSize = options.upsertBatchSize ?? 256;
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new Error('upsertBatchSize must be a positive integer');
  }
  return new QdrantStore(http, { batchSize, exact: options.exact ?? false });
}

/** Settings every index of a store shares. */
interface IndexSettings {
  readonly batchSize: number;
  readonly exact: boolean;
}

class QdrantStore implements VectorStore {
  readonly backend = 'QDRANT';

  constructor(
    private readonly http: QdrantHttp,
    private readonly settings: IndexSettings,
  ) {}

  index(name: string): VectorIndex {
    if (name === '') throw errors.fieldRequired('collection');
    return new QdrantIndex(this.http, name, this.settings);
  }

  async listCollections(): Promise<string[]> {
    const result = await this.http.call<Schemas['CollectionsResponse']>('GET', '/collections');
    return result.collections.map((c) => c.name).sort();
  }

  async deleteCollection(name: string): Promise<void> {
    await this.http.call('DELETE', `/collections/${segment(name)}`);
  }

  async aliasTarget(alias: string): Promise<string | undefined> {
    const result = await this.http.call<Schemas['CollectionsAliasesResponse']>('GET', '/aliases');
    return result.aliases.find((a) => a.alias_name === alias)?.collection_name;
  }

  async setAlias(alias: string, collection: string): Promise<void> {
    // Both actions in one request: Qdrant applies them atomically, so readers never miss the alias.
    const body: Schemas['ChangeAliasesOperation'] = {
      actions: [
        { delete_alias: { alias_name: alias } },
        { create_alias: { alias_name: alias, collection_name: collection } },
      ],
    };
    try {
      await this.http.call('POST', '/collections/aliases', body);
    } catch (error) {
      if (isQdrantHttpError(error) && error.status === 404) throw errors.notFound(collection);
      throw error;
    }
  }

  close(): Promise<void> {
    this.http.close();
    return Promise.resolve();
  }
}

/** What `GET /collections/{name}` tells us. */
interface CollectionState {
  readonly spec: CollectionSpec | undefined;
  readonly indexedFields: ReadonlySet<string>;
}

class QdrantIndex implements VectorIndex {
  readonly backend = 'QDRANT';
  private readonly path: string;
  /** The collection's dimensions, learned on first use; re-read once when a vector disagrees. */
  private dimensions: number | undefined;

  constructor(
    private readonly http: QdrantHttp,
    readonly name: string,
    private readonly settings: IndexSettings,
  ) {
    this.path = `/collections/${segment(name)}`;
  }

  async spec(): Promise<CollectionSpec | undefined> {
    return (await this.state())?.spec;
  }

  async ensureCollection(spec: CollectionSpec): Promise<void> {
    if (spec.model === '') throw errors.fieldRequired('model');
    if (!Number.isInteger(spec.dimensions) || spec.dimensions < 1) {
      throw errors.fieldInvalid('dimensions', 'must be a positive integer');
    }
    let state = await this.state();
    if (state === undefined) {
      const body: Schemas['CreateCollection'] = {
        vectors: { [DENSE]: { size: spec.dimensions, distance: 'Cosine' } },
        sparse_vectors: { [SPARSE]: { modifier: 'idf' } },
        metadata: { [METADATA_KEY]: { model: spec.model, dimensions: spec.dimensions } },
      };
      try {
        await this.http.call('PUT', this.path, body);
      } catch (error) {
        // 409: created concurrently by another process; its spec is checked below.
        if (!(isQdrantHttpError(error) && error.status === 409)) throw error;
      }
      state = await this.state();
      if (state === undefined) throw new Error(`collection ${this.name} vanished right after it was created`);
    }
    const existing = state.spec;
    if (existing?.model !== spec.model || existing.dimensions !== spec.dimensions) {
      const held =
        existing === undefined ? 'no Engram model' : `${existing.model} (${existing.dimensions} dimensions)`;
      throw errors.failedPrecondition(
        'STATE_CONFLICT',
        `collection ${this.name} holds ${held}; it cannot hold ${spec.model} (${spec.dimensions} dimensions): build a new collection and move the alias`,
        { name: this.name, state: existing?.model ?? '' },
      );
    }
    // Also repairs a collection whose creation was interrupted before all indexes existed.
    for (const [field, schema] of PAYLOAD_INDEXES) {
      if (state.indexedFields.has(field)) continue;
      const body: Schemas['CreateFieldIndex'] = { field_name: field, field_schema: schema };
      await this.http.call('PUT', `${this.path}/index?wait=true`, body);
    }
    this.dimensions = spec.dimensions;
  }

  async upsert(points: readonly Point[], options?: { wait?: boolean }): Promise<void> {
    if (points.length === 0) return;
    // Checked before sending anything: Qdrant applies the valid points of a request that has a
    // vector of the wrong size, so a bad point would otherwise leave a half-written batch.
    for (const point of points) checkPoint(point);
    const sizes = new Set(points.flatMap((p) => (p.dense === undefined ? [] : [p.dense.length])));
    for (const size of sizes) await this.checkDimensions(size);
    const wait = options?.wait ?? true;
    for (let i = 0; i < points.length; i += this.settings.batchSize) {
      const body: Schemas['PointInsertOperations'] = {
        points: points.slice(i, i + this.settings.batchSize).map((p) => {
          const sparse = { indices: [...p.sparse.indices], values: [...p.sparse.values] };
          // A lexical-first point simply lacks the named vector `dense`: dense queries skip it.
          const vector =
            p.dense === undefined ? { [SPARSE]: sparse } : { [DENSE]: Array.from(p.dense), [SPARSE]: sparse };
          return { id: p.id, vector, payload: encodePayload(p.payload) };
        }),
      };
      await this.write('PUT', `${this.path}/points?wait=${wait}`, body);
    }
  }

  async delete(ids: readonly string[], options?: { wait?: boolean }): Promise<void> {
    const wait = options?.wait ?? true;
    for (let i = 0; i < ids.length; i += DELETE_BATCH) {
      const body: Schemas['PointsSelector'] = { points: ids.slice(i, i + DELETE_BATCH) };
      await this.write('POST', `${this.path}/points/delete?wait=${wait}`, body);
    }
  }

  async deleteByFilter(filter: IndexFilter, options?: { wait?: boolean }): Promise<void> {
    const body: Schemas['PointsSelector'] = { filter: toQdrantFilter(filter) };
    await this.write('POST', `${this.path}/points/delete?wait=${options?.wait ?? true}`, body);
  }

  async setStatus(filter: IndexFilter, status: string, options?: { wait?: boolean }): Promise<void> {
    if (typeof status !== 'string' || status === '') throw errors.fieldRequired('status');
    const body: Schemas['SetPayload'] = { payload: { status }, filter: toQdrantFilter(filter) };
    await this.write('POST', `${this.path}/points/payload?wait=${options?.wait ?? true}`, body);
  }

  async searchDense(
    vector: readonly number[] | Float32Array,
    filter: IndexFilter,
    limit: number,
  ): Promise<ScoredPoint[]> {
    const request = await this.queryRequest({ dense: vector, filter, limit });
    if (request === undefined) return [];
    const result = await this.read<Schemas['QueryResponse']>('POST', `${this.path}/points/query`, request);
    return decodeScored(result.points);
  }

  async searchSparse(vector: SparseVector, filter: IndexFilter, limit: number): Promise<ScoredPoint[]> {
    const request = await this.queryRequest({ sparse: vector, filter, limit });
    if (request === undefined) return [];
    const result = await this.read<Schemas['QueryResponse']>('POST', `${this.path}/points/query`, request);
    return decodeScored(result.points);
  }

  /**
   * One `POST …/points/query/batch` for every query that can have an answer (a zero limit or a
   * sparse query without terms answers nothing without asking), the answers put back in order.
   */
  async searchBatch(queries: readonly SearchQuery[]): Promise<ScoredPoint[][]> {
    const requests: (Schemas['QueryRequest'] | undefined)[] = [];
    for (const query of queries) requests.push(await this.queryRequest(query));
    const searches = requests.filter((r): r is Schemas['QueryRequest'] => r !== undefined);
    if (searches.length === 0) return queries.map(() => []);
    const body: Schemas['QueryRequestBatch'] = { searches };
    const answers = await this.read<Schemas['QueryResponse'][]>(
      'POST',
      `${this.path}/points/query/batch`,
      body,
    );
    if (answers.length !== searches.length)
      throw new Error(`Qdrant answered ${answers.length} of ${searches.length} batched queries`);
    let next = 0;
    return requests.map((r) => (r === undefined ? [] : decodeScored(answers[next++]?.points ?? [])));
  }

  /**
   * Qdrant's `order_by` scroll gives the smallest marks first but orders equal marks by its
   * internal offsets, not by id. So it asks for `limit + 1`: when the extra point's mark is above
   * the page's last mark (or there is none), the page is complete and only needs its ties sorted by
   * id; otherwise the points carrying that last mark are read again in id order (a plain scroll)
   * and the page ends with the first of them.
   */
  async pendingDense(limit: number, kinds?: readonly ItemKind[]): Promise<ScrolledPoint[]> {
    checkPendingOptions(limit, kinds);
    const must: Schemas['Condition'][] = [{ key: 'densePendingSince', range: { gte: 0 } }];
    if (kinds !== undefined && kinds.length > 0) must.push({ key: 'kind', match: { any: [...kinds] } });
    const body: Schemas['ScrollRequest'] = {
      filter: { must, must_not: NOT_STAGED },
      limit: limit + 1,
      order_by: { key: 'densePendingSince', direction: 'asc' },
      with_payload: true,
      with_vector: false,
    };
    const result = await this.read<Schemas['ScrollResult']>('POST', `${this.path}/points/scroll`, body);
    const found = result.points
      .map((r) => ({ id: String(r.id), payload: decodePayload(r.payload) }))
      .sort(byPendingMark);
    const [last, extra] = [found[limit - 1], found[limit]];
    if (last === undefined || extra === undefined) return found;
    const lastMark = markOf(last);
    if (markOf(extra) > lastMark) return found.slice(0, limit);
    const below = found.filter((p) => markOf(p) < lastMark);
    const ties: Schemas['ScrollRequest'] = {
      filter: {
        must: [...must.slice(1), { key: 'densePendingSince', range: { gte: lastMark, lte: lastMark } }],
        must_not: NOT_STAGED,
      },
      limit: limit - below.length,
      with_payload: true,
      with_vector: false,
    };
    const tied = await this.read<Schemas['ScrollResult']>('POST', `${this.path}/points/scroll`, ties);
    return [...below, ...tied.points.map((r) => ({ id: String(r.id), payload: decodePayload(r.payload) }))];
  }

  async countPendingDense(of?: PendingScope): Promise<number> {
    if (of !== undefined) checkPendingScope(of);
    const must: Schemas['Condition'][] = [{ key: 'densePendingSince', range: { gte: 0 } }];
    if (of !== undefined) must.unshift({ key: 'tenantId', match: { value: of.tenantId } });
    if (of?.kinds !== undefined && of.kinds.length > 0)
      must.push({ key: 'kind', match: { any: [...of.kinds] } });
    const body: Schemas['CountRequest'] = { exact: true, filter: { must, must_not: NOT_STAGED } };
    const result = await this.read<Schemas['CountResult']>('POST', `${this.path}/points/count`, body);
    return result.count;
  }

  async fetch(ids: readonly string[], options?: { withVectors?: boolean }): Promise<Point[]> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return [];
    const withVectors = options?.withVectors ?? false;
    const body: Schemas['PointRequest'] = {
      ids: unique,
      with_payload: true,
      with_vector: withVectors ? [DENSE, SPARSE] : false,
    };
    const records = await this.read<Schemas['Record'][]>('POST', `${this.path}/points`, body);
    const byId = new Map(records.map((r) => [String(r.id), r]));
    const points: Point[] = [];
    for (const id of unique) {
      const record = byId.get(id);
      if (record === undefined) continue;
      const vectors = (record.vector ?? {}) as Record<string, unknown>;
      // With vectors, a lexical-first point has no `dense`; without, `dense` is empty as before.
      const dense = withVectors ? (vectors[DENSE] as number[] | undefined) : [];
      points.push({
        id,
        ...(dense !== undefined ? { dense } : {}),
        sparse: withVectors ? decodeSparse(vectors[SPARSE]) : { indices: [], values: [] },
        payload: decodePayload(record.payload),
      });
    }
    return points;
  }

  /**
   * Up to {@link MATRIX_MAX_POINTS} points: `POST …/points/search/matrix/offsets` restricted to
   * them (`has_id`), every one sampled (`sample` = their number) and each with all the others as
   * neighbours (`limit` = number − 1), compared by the dense vector. Qdrant samples only points
   * that have that vector, so lexical-first and missing points are left out by the store itself.
   * More points: their dense vectors (no payload, no sparse vector), compared here.
   */
  async similarities(ids: readonly string[]): Promise<Similarities> {
    const unique = [...new Set(ids)];
    if (unique.length < 2) return NO_SIMILARITIES;
    if (unique.length > MATRIX_MAX_POINTS) return new VectorSimilarities(await this.denseVectors(unique));
    const body: Schemas['SearchMatrixRequest'] = {
      filter: { must: [{ has_id: unique }] },
      sample: unique.length,
      limit: unique.length - 1,
      using: DENSE,
    };
    const matrix = await this.read<Schemas['SearchMatrixOffsetsResponse']>(
      'POST',
      `${this.path}/points/search/matrix/offsets`,
      body,
    );
    return new SimilarityMatrix(
      matrix.ids.map(String),
      matrix.offsets_row,
      matrix.offsets_col,
      matrix.scores,
    );
  }

  /**
   * Qdrant's scroll lists points in ascending id order (UUIDs as 128-bit numbers: the string order
   * of their lower-case form). Its `offset` is inclusive (the first id of the page), the port's
   * `after` exclusive (the last id already seen), so the request starts at the UUID right after
   * `after`. Qdrant answers `next_page_offset` (the first id of the next page) only when more
   * points follow; `next` is then the id of this page's last point.
   */
  async scroll(filter: IndexFilter, options: ScrollOptions): Promise<ScrollPage> {
    checkScrollOptions(options);
    const query = toQdrantFilter(filter);
    const offset = options.after === undefined ? undefined : uuidSuccessor(options.after);
    if (offset === null) return { points: [] }; // `after` is the largest UUID: nothing follows
    const body: Schemas['ScrollRequest'] = {
      filter: query,
      limit: options.limit,
      ...(offset !== undefined ? { offset } : {}),
      with_payload: true,
      with_vector: false,
    };
    const result = await this.read<Schemas['ScrollResult']>('POST', `${this.path}/points/scroll`, body);
    const points = result.points.map((r) => ({ id: String(r.id), payload: decodePayload(r.payload) }));
    const last = points[points.length - 1];
    const more = result.next_page_offset !== undefined && result.next_page_offset !== null;
    return more && last !== undefined ? { points, next: last.id } : { points };
  }

  async count(filter?: IndexFilter): Promise<number> {
    const body: Schemas['CountRequest'] = {
      exact: true,
      ...(filter !== undefined ? { filter: toQdrantFilter(filter) } : {}),
    };
    const result = await this.read<Schemas['CountResult']>('POST', `${this.path}/points/count`, body);
    return result.count;
  }

  /** The stored dense vectors of those of `ids` that have one (one request, nothing else read). */
  private async denseVectors(ids: readonly string[]): Promise<Map<string, Float32Array>> {
    const body: Schemas['PointRequest'] = { ids: [...ids], with_payload: false, with_vector: [DENSE] };
    const records = await this.read<Schemas['Record'][]>('POST', `${this.path}/points`, body);
    const vectors = new Map<string, Float32Array>();
    for (const record of records) {
      const dense = (record.vector as Record<string, unknown> | null | undefined)?.[DENSE];
      if (Array.isArray(dense)) vectors.set(String(record.id), Float32Array.from(dense as number[]));
    }
    return vectors;
  }

  /** The index borrows the store's connection pool: closing the store releases it. */
  close(): Promise<void> {
    return Promise.resolve(); // nothing of its own to release
  }

  /**
   * The Query API request of one search, validated as `searchDense`/`searchSparse` validate;
   * undefined when the answer is empty without asking (limit 0, a sparse query without terms).
   */
  private async queryRequest(query: SearchQuery): Promise<Schemas['QueryRequest'] | undefined> {
    const { filter, limit } = query;
    checkLimit(limit);
    let search: Schemas['QueryRequest'];
    if ('dense' in query) {
      const filterBody = toQdrantQueryFilter(filter);
      checkFinite(query.dense, 'vector');
      await this.checkDimensions(query.dense.length);
      if (limit === 0) return undefined;
      search = { query: Array.from(query.dense), using: DENSE, filter: filterBody, limit };
    } else {
      checkSparse(query.sparse, 'vector');
      const filterBody = toQdrantQueryFilter(filter);
      if (limit === 0 || query.sparse.indices.length === 0) return undefined;
      const sparse = { indices: [...query.sparse.indices], values: [...query.sparse.values] };
      search = { query: sparse, using: SPARSE, filter: filterBody, limit };
    }
    return {
      ...search,
      with_payload: true,
      with_vector: false,
      ...(this.settings.exact ? { params: { exact: true } } : {}),
    };
  }

  /** `GET /collections/{name}` (aliases resolve), or undefined when there is no such collection. */
  private async state(): Promise<CollectionState | undefined> {
    let info: Schemas['CollectionInfo'];
    try {
      info = await this.http.call<Schemas['CollectionInfo']>('GET', this.path);
    } catch (error) {
      if (isQdrantHttpError(error) && error.status === 404) return undefined;
      throw error;
    }
    const meta = (info.config as { metadata?: Record<string, unknown> | null }).metadata?.[METADATA_KEY];
    let spec: CollectionSpec | undefined;
    if (typeof meta === 'object' && meta !== null) {
      const { model, dimensions } = meta as { model?: unknown; dimensions?: unknown };
      if (typeof model === 'string' && typeof dimensions === 'number') spec = { model, dimensions };
    }
    if (spec !== undefined) this.dimensions = spec.dimensions;
    return { spec, indexedFields: new Set(Object.keys(info.payload_schema)) };
  }

  /** Rejects a vector of the wrong size with INVALID_ARGUMENT (re-reading the spec once first). */
  private async checkDimensions(size: number): Promise<void> {
    if (this.dimensions === size) return;
    const state = await this.state();
    if (state === undefined) throw errors.notFound(this.name);
    const expected = state.spec?.dimensions;
    if (expected !== undefined && expected !== size) {
      throw errors.fieldInvalid(
        'dense',
        `collection ${this.name} expects ${expected} dimensions, got ${size}`,
      );
    }
  }

  private async read<T>(method: string, path: string, body: unknown): Promise<T> {
    try {
      return await this.http.call<T>(method, path, body);
    } catch (error) {
      throw this.mapError(error);
    }
  }

  private async write(method: string, path: string, body: unknown): Promise<void> {
    // Upserts by explicit id and deletes are idempotent: retrying them is safe.
    await this.read(method, path, body);
  }

  private mapError(error: unknown): unknown {
    if (isEngramError(error) || !isQdrantHttpError(error)) return error;
    if (error.status === 404) return errors.notFound(this.name);
    if (error.status === 400 && /dimension/i.test(error.detail))
      return errors.fieldInvalid('dense', error.detail);
    return error;
  }
}

function checkFinite(values: ArrayLike<number>, field: string): void {
  for (let i = 0; i < values.length; i++) {
    if (!Number.isFinite(values[i])) throw errors.fieldInvalid(field, `value ${i} is not a finite number`);
  }
}

function checkSparse(vector: SparseVector, field: string): void {
  if (vector.indices.length !== vector.values.length) {
    throw errors.fieldInvalid(field, 'sparse indices and values differ in length');
  }
  for (let i = 0; i < vector.indices.length; i++) {
    const index = vector.indices[i] ?? -1;
    if (!Number.isInteger(index) || index < 0 || index > 0xffff_ffff) {
      throw errors.fieldInvalid(field, `sparse index ${i} is not a uint32`);
    }
  }
  checkFinite(vector.values, field);
}

function checkPoint(point: Point): void {
  checkPendingMark(point);
  if (point.dense !== undefined) checkFinite(point.dense, 'dense');
  checkSparse(point.sparse, 'sparse');
}

/** The pending mark of a point read by `pendingDense` (whose filter requires one). */
function markOf(point: ScrolledPoint): number {
  return point.payload.densePendingSince ?? Number.NaN;
}

/** Ascending pending mark, ties by id (the order of {@link VectorIndex.pendingDense}). */
function byPendingMark(a: ScrolledPoint, b: ScrolledPoint): number {
  const d = markOf(a) - markOf(b);
  return d !== 0 ? d : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Query API hits (asked without vectors). */
function decodeScored(points: readonly Schemas['ScoredPoint'][]): ScoredPoint[] {
  return points.map((p) => ({ id: String(p.id), score: p.score, payload: decodePayload(p.payload) }));
}

/** Only the known payload fields are stored: a payload never carries text. */
function encodePayload(payload: PointPayload): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const key of STRING_FIELDS) {
    const value = payload[key];
    if (value !== undefined) out[key] = value;
  }
  for (const key of NUMBER_FIELDS) {
    const value = payload[key];
    if (value !== undefined) out[key] = value;
  }
  if (payload.evergreen !== undefined) out['evergreen'] = payload.evergreen;
  return out;
}

function decodePayload(raw: Schemas['Payload'] | null | undefined): PointPayload {
  const source: Record<string, unknown> = raw ?? {};
  const out: Record<string, string | number | boolean> = {};
  for (const key of STRING_FIELDS) {
    const value = source[key];
    if (typeof value === 'string') out[key] = value;
  }
  for (const key of NUMBER_FIELDS) {
    const value = source[key];
    if (typeof value === 'number') out[key] = value;
  }
  if (typeof source['evergreen'] === 'boolean') out['evergreen'] = source['evergreen'];
  return out as unknown as PointPayload;
}

/** The UUID right after `id` (a canonical lower-case UUID) as a 128-bit number; null after the last. */
function uuidSuccessor(id: string): string | null {
  const value = BigInt(`0x${id.replaceAll('-', '')}`) + 1n;
  if (value >> 128n !== 0n) return null;
  const hex = value.toString(16).padStart(32, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function decodeSparse(raw: unknown): SparseVector {
  if (typeof raw !== 'object' || raw === null) return { indices: [], values: [] };
  const { indices, values } = raw as { indices?: number[]; values?: number[] };
  return { indices: indices ?? [], values: values ?? [] };
}
