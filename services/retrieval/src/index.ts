/** @engram/retrieval: the retrieval service, as a process (`src/main.ts`) or mounted by the all-in-one. */
export {
  DEFAULT_PORT,
  loadConfig,
  refineRetrievalEnv,
  retrievalEnvShape,
  type RetrievalConfig,
  type RetrievalDataConfig,
} from './config.js';
export { registerRetrievalMetrics } from './metrics.js';
export { openRetrievalResources, type RetrievalResources } from './resources.js';
export { createRetrievalService, type RetrievalDeps } from './retrieval-service.js';
export { retrievalRoutes } from './routes.js';
export { createRetrievalServer } from './server.js';
