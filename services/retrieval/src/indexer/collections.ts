import type { Embedder } from '@engram/embeddings';
import type { CollectionSpec, VectorIndex, VectorStore } from '@engram/vector-index';
import { INDEX_TEXT_VERSION } from '../domain/points.js';

/** The alias every search and the indexer go through; Reindex repoints it atomically. */
export const LIVE_ALIAS = 'engram';

/**
 * What a collection built with `embedder` records: the embedding model with the version of the
 * index texts (`domain/points.ts`), so that either change makes the live index stale until a
 * Reindex instead of mixing vectors or texts of two kinds in one collection.
 */
export function indexSpec(embedder: Pick<Embedder, 'model' | 'dimensions'>): CollectionSpec {
  return { model: `${embedder.model}+text.v${INDEX_TEXT_VERSION}`, dimensions: embedder.dimensions };
}

/** `engram__<model>__d<dimensions>__g<generation>`: one collection per model and rebuild. */
export function collectionName(spec: CollectionSpec, generation: number): string {
  const model = spec.model
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '');
  return `${LIVE_ALIAS}__${model}__d${spec.dimensions}__g${generation}`;
}

/** The generation number of a collection name made by {@link collectionName} (0 if foreign). */
export function generationOf(name: string): number {
  const match = /__g(\d+)$/.exec(name);
  return match === null ? 0 : Number(match[1]);
}

/**
 * The live index and whether it was built with the configured embedding model. `collection`,
 * `stale` and `spec` change when a rebuild at start swaps the alias (`openRetrievalResources`);
 * readers look them up at each use.
 */
export interface LiveIndex {
  readonly index: VectorIndex;
  collection: string;
  /**
   * The live collection's spec differs from the embedder's: writes wait for a rebuild, and
   * Search answers from the lexical signal alone.
   */
  stale: boolean;
  spec: CollectionSpec;
}

/**
 * Opens the live alias, creating generation 1 for `spec` on first use. When the alias points at a
 * collection of another model (the embedding model was changed), it is reported `stale` rather
 * than written to: mixing models in one collection is impossible by construction.
 */
export async function ensureLiveIndex(vectors: VectorStore, spec: CollectionSpec): Promise<LiveIndex> {
  let collection = await vectors.aliasTarget(LIVE_ALIAS);
  if (collection === undefined) {
    collection = collectionName(spec, 1);
    await vectors.index(collection).ensureCollection(spec);
    await vectors.setAlias(LIVE_ALIAS, collection);
  }
  const live = (await vectors.index(collection).spec()) ?? spec;
  const stale = live.model !== spec.model || live.dimensions !== spec.dimensions;
  return { index: vectors.index(LIVE_ALIAS), collection, stale, spec: live };
}
