/** @engram/ingestion: the ingestion service, as a process (`src/main.ts`) or mounted by the all-in-one. */
export {
  DEFAULT_PORT,
  ingestionEnvShape,
  loadConfig,
  type IngestionConfig,
  type IngestionDataConfig,
} from './config.js';
export { createIngestionService, type IngestionDeps } from './ingestion-service.js';
export { openIngestionResources, type IngestionResources } from './resources.js';
export { ingestionRoutes } from './routes.js';
export { createIngestionServer } from './server.js';
export { Segmenter, boundaryJudge, modelJudge, offlineJudge, type BoundaryJudge } from './segmenter.js';
export { ExtractionHandOff } from './handoff.js';
