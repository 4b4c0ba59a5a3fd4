/** @engram/all-in-one: the four services on one server, with embedded defaults (`npm start`). */
export { DEFAULT_PORT, loadConfig, storeTarget, type AllInOneConfig } from './config.js';
export { LOCAL_SECRET_FILE, LOCAL_SERVICE_SECRET_FILE, loadOrCreateLocalSecret } from '@engram/runtime';
export { createAllInOneServer } from './server.js';
