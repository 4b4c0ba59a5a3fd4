import type { Embedder } from '@engram/embeddings';
import type { Logger } from '@engram/runtime';
import { OutboxRepository, scanSearchable, type Store } from '@engram/store';
import type { VectorStore } from '@engram/vector-index';
import { LIVE_ALIAS, collectionName, generationOf, indexSpec } from './collections.js';
import { Indexer, replayChange, type Change } from './indexer.js';

/** Progress of a rebuild, reported as it goes. */
export interface RebuildProgress {
  readonly phase: 'scan' | 'catch-up' | 'swap' | 'done';
  readonly collection: string;
  readonly rowsScanned: number;
  readonly changesReplayed: number;
  readonly failures: number;
}

export interface RebuildReport extends RebuildProgress {
  readonly previous?: string;
  readonly points: number;
  readonly errorSamples: readonly string[];
}

export interface RebuildOptions {
  /** Rows per batch (embedding one text per call inside a batch). Default 64. */
  readonly batchSize?: number;
  /** Keep the previous collection instead of deleting it after the swap. Default false. */
  readonly keepPrevious?: boolean;
  readonly onProgress?: (progress: RebuildProgress) => void | Promise<void>;
}

/**
 * Rebuilds the whole index from the source of truth alone into a new collection for the current
 * embedding model (a new generation), then repoints the live alias. Searches keep using the old
 * collection until the swap. Changes committed meanwhile are not lost: the outbox high-water mark
 * taken at the start is replayed into the new collection before the swap and once more after it
 * (applying a change twice is harmless: point ids are derived from source ids).
 */
export async function rebuildCollection(
  deps: { store: Store; vectors: VectorStore; embedder: Embedder; logger: Logger },
  options: RebuildOptions = {},
): Promise<RebuildReport> {
  const batchSize = options.batchSize ?? 64;
  const spec = indexSpec(deps.embedder);
  const previous = await deps.vectors.aliasTarget(LIVE_ALIAS);
  const generation = Math.max(0, ...(await deps.vectors.listCollections()).map(generationOf)) + 1;
  const collection = collectionName(spec, generation);
  const target = deps.vectors.index(collection);
  await target.ensureCollection(spec);

  const outbox = new OutboxRepository(deps.store);
  let mark = await outbox.lastId();
  // The indexer's apply() is the one place that turns source rows into points.
  const writer = new Indexer({
    store: deps.store,
    embedder: deps.embedder,
    index: target,
    logger: deps.logger,
  });
  let rowsScanned = 0;
  let changesReplayed = 0;
  let failures = 0;
  const errorSamples: string[] = [];
  const record = (failed: { error: unknown }[]) => {
    failures += failed.length;
    for (const { error } of failed) {
      if (errorSamples.length < 20) errorSamples.push(error instanceof Error ? error.message : String(error));
    }
  };
  const report = async (phase: RebuildProgress['phase']) => {
    await options.onProgress?.({ phase, collection, rowsScanned, changesReplayed, failures });
  };

  let synthetic = 0;
  for (const kind of ['MEMORY', 'DOCUMENT', 'ROUND'] as const) {
    let after = '';
    for (;;) {
      const rows = await scanSearchable(deps.store, kind, after, batchSize);
      if (rows.length === 0) break;
      const changes: Change[] = rows.map((row) => replayChange((synthetic += 1), kind, row));
      record((await writer.apply(changes, target)).failed);
      rowsScanned += rows.length;
      after = rows[rows.length - 1]?.id ?? after;
      await report('scan');
    }
  }

  const catchUp = async () => {
    for (;;) {
      const changes = await outbox.since(mark, batchSize);
      if (changes.length === 0) return;
      record((await writer.apply(changes, target)).failed);
      changesReplayed += changes.length;
      mark = changes[changes.length - 1]?.id ?? mark;
      await report('catch-up');
    }
  };
  await catchUp();
  await deps.vectors.setAlias(LIVE_ALIAS, collection);
  await report('swap');
  // Changes the live indexer wrote to the old collection between the last catch-up and the swap.
  await catchUp();
  if (previous !== undefined && previous !== collection && options.keepPrevious !== true) {
    await deps.vectors.deleteCollection(previous);
  }
  const points = await target.count();
  await report('done');
  deps.logger.info({ collection, previous, rowsScanned, changesReplayed, failures, points }, 'index rebuilt');
  return {
    phase: 'done',
    collection,
    ...(previous === undefined ? {} : { previous }),
    rowsScanned,
    changesReplayed,
    failures,
    points,
    errorSamples,
  };
}
