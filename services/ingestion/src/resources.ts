import { mkdirSync } from 'node:fs';
import { isMysqlTarget, openStore, storeTarget, type Store } from '@engram/store';
import type { IngestionDataConfig } from './config.js';
import { DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP } from './domain/chunker.js';
import type { IngestionDeps } from './ingestion-service.js';

/** Everything the ingestion service runs on, opened from configuration. */
export interface IngestionResources {
  readonly store: Store;
  readonly settings: IngestionDeps['settings'];
  close(): Promise<void>;
}

/** Opens ingestion's connection to the source of truth and resolves its settings. */
export function openIngestionResources(config: IngestionDataConfig): IngestionResources {
  const target = storeTarget(config);
  if (!isMysqlTarget(target)) mkdirSync(config.ENGRAM_DATA_DIR, { recursive: true, mode: 0o700 });
  const store = openStore({ target });
  return {
    store,
    settings: {
      maxDocumentBytes: config.ENGRAM_MAX_DOCUMENT_BYTES,
      chunkSize: config.ENGRAM_CHUNK_SIZE ?? DEFAULT_CHUNK_SIZE,
      overlap: DEFAULT_OVERLAP,
      redactSecrets: config.ENGRAM_REDACT_SECRETS === 'on',
    },
    close: () => store.close(),
  };
}
