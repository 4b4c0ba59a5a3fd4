/** @engram/vector-index: the VectorIndex port, its filter language, and its adapters. */
export { pointId } from './point-id.js';
export { STAGED_STATUS } from './port.js';
export type {
  CollectionSpec,
  IndexFilter,
  ItemKind,
  PendingScope,
  Point,
  PointPayload,
  PointScope,
  QueryFilter,
  Range,
  ScoredPoint,
  SearchQuery,
  ScrolledPoint,
  ScrollOptions,
  ScrollPage,
  SparseVector,
  VectorIndex,
  VectorStore,
  Visibility,
} from './port.js';
export {
  MATRIX_MAX_POINTS,
  NO_SIMILARITIES,
  SimilarityMatrix,
  VectorSimilarities,
  type Similarities,
} from './similarities.js';
export { createQdrantStore, type QdrantStoreOptions } from './qdrant-store.js';
export { createEmbeddedStore, type EmbeddedStoreOptions } from './embedded-store.js';
// The Qdrant filter translation, for the index benchmark's raw-client baseline (bench/index-bench.ts).
export { toQdrantFilter } from './qdrant-filter.js';
