/** @engram/governance: the governance service, as a process (`src/main.ts`) or mounted by the all-in-one. */
export {
  DEFAULT_PORT,
  governanceEnvShape,
  loadConfig,
  type GovernanceConfig,
  type GovernanceDataConfig,
} from './config.js';
export { ExtractionRunner } from './extraction.js';
export { ForgetWorker, createForgetHandlers, type ForgetWorkerDeps } from './forget.js';
export { chooseExtractor, runOfflineExtractor } from './extractors.js';
export { createGovernanceService, type GovernanceDeps } from './governance-service.js';
export { registerGovernanceMetrics } from './metrics.js';
export { openGovernanceResources, type GovernanceResources } from './resources.js';
export { governanceRoutes } from './routes.js';
export { createGovernanceServer } from './server.js';
