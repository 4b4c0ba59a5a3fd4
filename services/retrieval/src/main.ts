import { runMain } from '@engram/runtime';
import { loadConfig } from './config.js';
import { createRetrievalServer } from './server.js';

runMain(() => createRetrievalServer(loadConfig(process.env)));
