import { runMain } from '@engram/runtime';
import { loadConfig } from './config.js';
import { createGovernanceServer } from './server.js';

runMain(() => createGovernanceServer(loadConfig(process.env)));
