import { mkdirSync } from 'node:fs';
import { chatModelFromEnv, type ChatModel } from '@engram/llm';
import type { Logger } from '@engram/runtime';
import { isMysqlTarget, openStore, storeTarget, type Store } from '@engram/store';
import type { GovernanceDataConfig } from './config.js';
import { DEFAULT_POLICY, type GovernancePolicy } from './domain/rules/policy.js';
import { ExpirySweeper } from './expiry.js';

/** Everything the governance service runs on, opened from configuration. */
export interface GovernanceResources {
  readonly store: Store;
  /** The extraction model; absent: the offline extractors. */
  readonly chatModel?: ChatModel;
  /** The hard rules' policy (the documented defaults). */
  readonly policy: GovernancePolicy;
  /** Marks expired memories EXPIRED (started with the process, stopped by `close`). */
  readonly expiry: ExpirySweeper;
  close(): Promise<void>;
}

/** Opens governance's connection to the source of truth and its model client. */
export function openGovernanceResources(config: GovernanceDataConfig, logger: Logger): GovernanceResources {
  const target = storeTarget(config);
  if (!isMysqlTarget(target)) mkdirSync(config.ENGRAM_DATA_DIR, { recursive: true, mode: 0o700 });
  const store = openStore({ target });
  const chatModel = chatModelFromEnv(config, { logger });
  const expiry = new ExpirySweeper({ store, logger: logger.child({ component: 'expiry' }) });
  expiry.start();
  return {
    store,
    ...(chatModel !== undefined ? { chatModel } : {}),
    policy: DEFAULT_POLICY,
    expiry,
    async close() {
      await expiry.stop();
      await store.close();
    },
  };
}
