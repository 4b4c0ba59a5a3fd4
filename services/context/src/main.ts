import { runMain } from '@engram/runtime';
import { loadConfig } from './config.js';
import { createContextServer } from './server.js';

runMain(() => createContextServer(loadConfig(process.env)));
