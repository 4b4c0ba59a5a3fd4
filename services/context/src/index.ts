/** @engram/context: the context service, as a process (`src/main.ts`) or mounted by the all-in-one. */
export {
  DEFAULT_PORT,
  contextEnvShape,
  contextSettings,
  loadConfig,
  type ContextConfig,
  type ContextSettings,
} from './config.js';
export { createContextService, type ContextDeps } from './context-service.js';
export { contextRoutes } from './routes.js';
export { createContextServer } from './server.js';
