/** @engram/context: the context service, as a process (`src/main.ts`) or mounted by the all-in-one. */
export {
  DEFAULT_PORT,
  contextClientEnvShape,
  contextEnvShape,
  contextSettings,
  loadConfig,
  type ContextConfig,
  type ContextDataConfig,
  type ContextSettings,
} from './config.js';
export { openContextResources, type ContextResources, type ContextResourcesConfig } from './resources.js';
export { contextModule } from './module.js';
export { listChatModels } from './models.js';
export { createContextServer } from './server.js';
