/** @engram/governance: the governance service, as a process (`src/main.ts`) or mounted by the all-in-one. */
export {
  DEFAULT_PORT,
  governanceEnvShape,
  loadConfig,
  type GovernanceConfig,
  type GovernanceDataConfig,
} from './config.js';
export { governanceModule } from './module.js';
export { openGovernanceResources, type GovernanceResources } from './resources.js';
export { createGovernanceServer } from './server.js';
// The offline extractors and how they are scored on the labelled sample (`bench/extractors.ts`).
export type { Candidate, ExtractionInput, ExtractorName } from './domain/candidate.js';
export { extractOffline } from './domain/extractors/index.js';
export {
  rates,
  scoreCase,
  toExtractionInput,
  total,
  type CaseScore,
  type Counts,
} from './domain/extractors/scoring.js';
