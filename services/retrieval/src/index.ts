/** @engram/retrieval: the retrieval service, as a process (`src/main.ts`) or mounted by the all-in-one. */
export {
  DEFAULT_PORT,
  loadConfig,
  refineRetrievalEnv,
  retrievalEnvShape,
  type RetrievalConfig,
  type RetrievalDataConfig,
} from './config.js';
export { retrievalModule } from './module.js';
export { openRetrievalResources, type RetrievalResources } from './resources.js';
export { createRetrievalServer } from './server.js';
// The embedder and the query plan and filters of Search, for the floors of bench/perf/run.ts.
export { createEmbedder } from './resources.js';
export {
  candidateQueries,
  indexCandidates,
  indexFilters,
  lexicalQuery,
  needsVectors,
  storedSimilarities,
} from './search.js';
export { searchPlan } from './search-api.js';
