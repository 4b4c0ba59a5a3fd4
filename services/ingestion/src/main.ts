import { runMain } from '@engram/runtime';
import { loadConfig } from './config.js';
import { createIngestionServer } from './server.js';

runMain(() => createIngestionServer(loadConfig(process.env)));
