/** @engram/governance: the governance service, as a process (`src/main.ts`) or mounted by the all-in-one. */
export { DEFAULT_PORT, loadConfig, type GovernanceConfig } from './config.js';
export { createGovernanceService, type GovernanceDeps } from './governance-service.js';
export { governanceRoutes } from './routes.js';
export { createGovernanceServer } from './server.js';
