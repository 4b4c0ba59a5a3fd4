import { createLogger, runMain } from '@engram/runtime';
import { openStore, storeTarget } from '@engram/store';
import { loadConfig } from './config.js';
import { rebuildCollection } from './indexer/rebuild.js';
import { createEmbedder, createVectorStore } from './resources.js';

/**
 * `npm run reindex`: rebuilds the whole vector index from the source of truth for the configured
 * embedding model (e.g. after changing it), then swaps the live alias. With Qdrant it can run while
 * the services serve; the embedded index belongs to one process, so stop `npm start` first. Restart
 * retrieval afterwards if the model changed (its indexer pauses while the live index is stale).
 */
runMain(async () => {
  const config = loadConfig(process.env);
  const logger = createLogger({ service: 'reindex', level: config.ENGRAM_LOG_LEVEL });
  const store = openStore({ target: storeTarget(config) });
  const vectors = createVectorStore(config);
  const embedder = createEmbedder(config);
  try {
    const report = await rebuildCollection(
      { store, vectors, embedder, logger },
      {
        onProgress: (p) => {
          process.stderr.write(
            `\r${p.phase.padEnd(9)} ${p.collection}  rows ${p.rowsScanned}  replayed ${p.changesReplayed}  failures ${p.failures}   `,
          );
        },
      },
    );
    process.stderr.write('\n');
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    if (report.failures > 0) process.exitCode = 1;
  } finally {
    await vectors.close();
    await embedder.close();
    await store.close();
  }
});
