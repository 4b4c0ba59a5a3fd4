/**
 * The VectorIndex port: what retrieval needs from a vector store, independent of Qdrant or the
 * embedded adapter. Both adapters pass one contract suite with identical assertions.
 *
 * A point is one searchable item (a memory, a document chunk, a conversation round) with a dense
 * vector (cosine), a sparse BM25 vector (term weights; the index applies IDF) and a payload that
 * carries everything filters need. Filters are applied before the top-k cut, never after.
 */

import type { Similarities } from './similarities.js';

export type ItemKind = 'MEMORY' | 'CHUNK' | 'ROUND';
export type PointScope = 'SELF' | 'ORG' | 'PLATFORM';

/** A sparse vector: strictly increasing term ids (uint32) and their positive weights. */
export interface SparseVector {
  readonly indices: readonly number[];
  readonly values: readonly number[];
}

/** Everything a filter can look at. Times are UTC epoch milliseconds. Never any text. */
export interface PointPayload {
  readonly tenantId: string;
  readonly kind: ItemKind;
  /** The source row's id (memory, chunk or the round's user message). */
  readonly sourceId: string;
  readonly scope: PointScope;
  readonly ownerId: string;
  /** '' unless scope is ORG. */
  readonly orgId: string;
  /**
   * ACTIVE, … (memories); ACTIVE (chunks of a READY document, rounds); {@link STAGED_STATUS} (chunks
   * of a document still INGESTING).
   */
  readonly status: string;
  /** MEMORY only: FACT, EPISODE, EVENT, FORESIGHT, SUMMARY. */
  readonly memoryType?: string;
  readonly namespace?: string;
  readonly evergreen?: boolean;
  /** ROUND (and memories extracted from a session): the session id. */
  readonly sessionId?: string;
  /** CHUNK only: the document id. */
  readonly documentId?: string;
  readonly occurredAt?: number;
  readonly createdAt: number;
  readonly expiresAt?: number;
  /**
   * When the source row last changed, so a drift repair can tell a stale point. Stored and
   * returned, never filtered on.
   */
  readonly sourceUpdatedAt?: number;
  /**
   * Lexical-first indexing (decision 0032): set exactly when the point was written without its
   * dense vector, to a value that grows with every such write (epoch ms, made strictly increasing by
   * the writer). It is the point's "dense vector due" mark and its version: the dense stage embeds
   * what it saw and writes only if the mark is unchanged. Absent on points with a dense vector.
   */
  readonly densePendingSince?: number;
}

/**
 * The status of a point written before its source may be found: a chunk of a document that is
 * still INGESTING. Searches never return it (they ask for ACTIVE points), the dense stage does
 * not take it ({@link VectorIndex.pendingDense} and {@link VectorIndex.countPendingDense} leave it
 * out), and {@link VectorIndex.setStatus} makes the document's chunks searchable at once when it
 * becomes READY, instead of writing them all then.
 */
export const STAGED_STATUS = 'STAGED';

export interface Point {
  /** A UUID derived deterministically from kind + source id (idempotent upserts). */
  readonly id: string;
  /**
   * Absent while the point is lexical-only (its dense vector is due): dense searches skip it, sparse
   * searches find it. A point without `dense` must carry `payload.densePendingSince`, a point with
   * one must not (INVALID_ARGUMENT otherwise, before anything is written).
   */
  readonly dense?: readonly number[] | Float32Array | undefined;
  readonly sparse: SparseVector;
  readonly payload: PointPayload;
}

/** Inclusive lower, exclusive upper bound; either may be omitted. */
export interface Range {
  readonly gte?: number;
  readonly lt?: number;
}

/** Who is searching: the visible scopes are derived from this, never from request fields. */
export interface Visibility {
  readonly subject: string;
  readonly orgIds: readonly string[];
  /** Holds the `platform` role. */
  readonly platform: boolean;
}

/**
 * The typed filter language. Every condition narrows (AND); an empty or absent list means "any".
 * `tenantId` is mandatory: nothing ever crosses tenants.
 */
export interface IndexFilter {
  readonly tenantId: string;
  /** When set: SELF points of the subject, ORG points of its orgs, PLATFORM points only with the role. */
  readonly visibleTo?: Visibility;
  readonly kinds?: readonly ItemKind[];
  readonly scopes?: readonly PointScope[];
  readonly ownerIds?: readonly string[];
  readonly orgIds?: readonly string[];
  readonly memoryTypes?: readonly string[];
  readonly statuses?: readonly string[];
  readonly namespaces?: readonly string[];
  readonly sessionIds?: readonly string[];
  readonly documentIds?: readonly string[];
  readonly sourceIds?: readonly string[];
  readonly evergreen?: boolean;
  readonly occurredAt?: Range;
  readonly createdAt?: Range;
  /** Keep points whose `expiresAt` is absent or later than this time. */
  readonly notExpiredAt?: number;
}

export interface ScoredPoint {
  readonly id: string;
  /** Dense: cosine similarity. Sparse: Σ query weight · IDF · document weight. */
  readonly score: number;
  readonly payload: PointPayload;
}

/** Whose pending points {@link VectorIndex.countPendingDense} counts. */
export interface PendingScope {
  readonly tenantId: string;
  readonly kinds?: readonly ItemKind[];
}

/**
 * The filter of one {@link SearchQuery}: one {@link IndexFilter}, or the union of several of one
 * tenant (`anyOf`: the points matching any of them), answered as one query: the best `limit` over
 * the union, each point once. Search asks one dense and one sparse query over the union of its
 * kinds' filters, instead of one per kind (decision 0044).
 */
export type QueryFilter = IndexFilter | { readonly anyOf: readonly IndexFilter[] };

/** One query of {@link VectorIndex.searchBatch}: dense (cosine) or sparse (IDF-weighted dot product). */
export type SearchQuery =
  | {
      readonly dense: readonly number[] | Float32Array;
      readonly filter: QueryFilter;
      readonly limit: number;
    }
  | {
      readonly sparse: SparseVector;
      readonly filter: QueryFilter;
      readonly limit: number;
    };

/** A point as {@link VectorIndex.scroll} lists it: no vectors. */
export interface ScrolledPoint {
  readonly id: string;
  readonly payload: PointPayload;
}

/** Paging of {@link VectorIndex.scroll}. */
export interface ScrollOptions {
  /** Points per page, 1–1000. */
  readonly limit: number;
  /** A previous page's `next`: the page starts after this point id (exclusive). */
  readonly after?: string;
}

/** One page of {@link VectorIndex.scroll}. */
export interface ScrollPage {
  readonly points: ScrolledPoint[];
  /** The `after` of the next page; absent on the last page. */
  readonly next?: string;
}

/** What a collection holds: one embedding model, so models can never be mixed in one collection. */
export interface CollectionSpec {
  /** Embedding model id, e.g. `BAAI/bge-small-zh-v1.5@q8`. */
  readonly model: string;
  readonly dimensions: number;
}

/**
 * One collection (addressed through an alias in production). Writes are idempotent by point id.
 * Adapters throw EngramError UNAVAILABLE (`DEPENDENCY_UNAVAILABLE`, dependency `qdrant` or
 * `vector-index`) when the store cannot be reached, and INVALID_ARGUMENT for a vector of the wrong
 * dimension.
 */
export interface VectorIndex {
  readonly backend: 'EMBEDDED' | 'QDRANT';
  /** The collection (or alias) this index reads and writes. */
  readonly name: string;
  /** The collection's model and dimensions. */
  spec(): Promise<CollectionSpec | undefined>;
  /** Creates the collection with payload indexes if missing; fails if it exists with another spec. */
  ensureCollection(spec: CollectionSpec): Promise<void>;
  /** Inserts or replaces points. `wait` (default true): visible to searches when this resolves. */
  upsert(points: readonly Point[], options?: { wait?: boolean }): Promise<void>;
  delete(ids: readonly string[], options?: { wait?: boolean }): Promise<void>;
  deleteByFilter(filter: IndexFilter, options?: { wait?: boolean }): Promise<void>;
  /**
   * Sets the payload `status` of every point matching `filter` (nothing else of them changes).
   * `wait` (default true): searches see the new status when this resolves. INVALID_ARGUMENT for an
   * empty status.
   */
  setStatus(filter: IndexFilter, status: string, options?: { wait?: boolean }): Promise<void>;
  /** The `limit` nearest points by cosine among those matching `filter` (exact within the filter). */
  searchDense(
    vector: readonly number[] | Float32Array,
    filter: IndexFilter,
    limit: number,
  ): Promise<ScoredPoint[]>;
  /** The `limit` best points by IDF-weighted sparse dot product among those matching `filter`. */
  searchSparse(vector: SparseVector, filter: IndexFilter, limit: number): Promise<ScoredPoint[]>;
  /**
   * Several searches in one round trip to the store (Qdrant's batch Query API): the answers in the
   * order of `queries`, each exactly what `searchDense`/`searchSparse` would answer (for a union
   * filter: the best `limit` of their answers for each of its filters, ties by id). Validation as
   * theirs, and INVALID_ARGUMENT for an empty union or one across tenants; one invalid query
   * rejects the whole batch. Hits carry no vectors: a ranking that needs
   * their similarities asks {@link similarities} for the few it keeps.
   */
  searchBatch(queries: readonly SearchQuery[]): Promise<ScoredPoint[][]>;
  /**
   * Up to `limit` (1–1000) points of any tenant stored without a dense vector, of `kinds` (any when
   * absent or empty), in ascending `densePendingSince` order (ties by id), {@link STAGED_STATUS}
   * points left out. The dense stage of the indexer reads its work from here. No vectors.
   */
  pendingDense(limit: number, kinds?: readonly ItemKind[]): Promise<ScrolledPoint[]>;
  /**
   * How many points lack their dense vector (the dense stage's backlog, {@link STAGED_STATUS} points
   * left out): of any tenant, or of `of.tenantId` (and `of.kinds`, any when absent or empty).
   * INVALID_ARGUMENT for an empty tenant.
   */
  countPendingDense(of?: PendingScope): Promise<number>;
  /**
   * Points by id (missing ids are left out), optionally with their vectors (for MMR). Without
   * `withVectors` every point comes with `dense: []` and an empty sparse vector; with it, a point
   * stored without a dense vector comes without `dense`.
   */
  fetch(ids: readonly string[], options?: { withVectors?: boolean }): Promise<Point[]>;
  /**
   * The pairwise cosine similarities of the stored dense vectors of the points among `ids` that
   * have one (missing points and lexical-first points have none): what MMR and newer-first need
   * of the candidates a search keeps. Fewer than two distinct ids: no pair, `NO_SIMILARITIES`.
   * Qdrant computes them itself (its distance-matrix API; for more than
   * `MATRIX_MAX_POINTS` points the vectors are read and compared here), so the scores cross
   * the wire instead of the vectors (decision 0044).
   */
  similarities(ids: readonly string[]): Promise<Similarities>;
  /**
   * Every point matching `filter`, a page at a time, in ascending point-id order (the string order
   * of the canonical lower-case UUID, which is also Qdrant's order of UUID ids). A page holds the
   * first `limit` (1–1000) matching points whose id is greater than `after` (all when absent);
   * `next` is the id of the page's last point when more points follow, to pass as the next page's
   * `after`. Pages cover every point that matches throughout the scroll exactly once; points
   * written or deleted meanwhile may or may not appear. `after` must be a canonical lower-case
   * UUID, else INVALID_ARGUMENT (as is a `limit` outside 1–1000). No vectors.
   */
  scroll(filter: IndexFilter, options: ScrollOptions): Promise<ScrollPage>;
  /** Points matching `filter` (all points when absent). */
  count(filter?: IndexFilter): Promise<number>;
  close(): Promise<void>;
}

/** Collections and aliases: Reindex builds a new collection, then swaps the alias atomically. */
export interface VectorStore {
  readonly backend: 'EMBEDDED' | 'QDRANT';
  /** An index over a collection or an alias. */
  index(name: string): VectorIndex;
  listCollections(): Promise<string[]>;
  deleteCollection(name: string): Promise<void>;
  /** The collection an alias points to, if any. */
  aliasTarget(alias: string): Promise<string | undefined>;
  /** Points `alias` at `collection` atomically (searches never see a missing alias). */
  setAlias(alias: string, collection: string): Promise<void>;
  close(): Promise<void>;
}
