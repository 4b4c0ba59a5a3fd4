import { runMain } from '@engram/runtime';
import { loadConfig } from './config.js';
import { createAllInOneServer } from './server.js';

runMain(() => createAllInOneServer(loadConfig(process.env)));
