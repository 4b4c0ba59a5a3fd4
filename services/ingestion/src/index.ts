/** @engram/ingestion: the ingestion service, as a process (`src/main.ts`) or mounted by the all-in-one. */
export {
  DEFAULT_PORT,
  ingestionEnvShape,
  loadConfig,
  type IngestionConfig,
  type IngestionDataConfig,
} from './config.js';
export {
  openIngestionResources,
  type IngestionResources,
  type IngestionResourcesConfig,
} from './resources.js';
export { ingestionModule } from './module.js';
export { createIngestionServer } from './server.js';
// The chunker and the offline topic-shift detector, for bench/chunk-size.ts and bench/topic-shift.ts.
export { chunkText, type ChunkPiece } from './domain/chunker.js';
export { splitPositions, type JudgedMessage, type JudgedRole } from './domain/boundary-judgement.js';
export { DEFAULT_TOPIC_SHIFT_OPTIONS, scoreGaps, selectSplits, windowTexts } from './domain/topic-shift.js';
