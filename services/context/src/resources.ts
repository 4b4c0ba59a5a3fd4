import { mkdirSync } from 'node:fs';
import { LocalEmbedder, resolveModelRoot, type Embedder } from '@engram/embeddings';
import { chatModelFromEnv, type ChatModel, type ModelCatalog, type StreamingChatModel } from '@engram/llm';
import { loadTenantPolicies, type Logger, type ProcessAdmissionLimits } from '@engram/runtime';
import { isMysqlTarget, openStore, storeTarget, type Store } from '@engram/store';
import {
  buildContextAdmissionLimits,
  contextSettings,
  type ContextDataConfig,
  type ContextSettings,
} from './config.js';

/** What the context package reads of a configuration (its own process's, or the all-in-one's). */
export type ContextResourcesConfig = ContextDataConfig & {
  /** Per-tenant settings (`redactSecrets`), shared with ingestion and governance. */
  readonly ENGRAM_TENANT_POLICY_FILE?: string | undefined;
  /** The local embedding model's directory, for offline compaction (default: the workspace's). */
  readonly ENGRAM_MODEL_DIR?: string | undefined;
};

/** Everything the context service runs on, opened from configuration. */
export interface ContextResources {
  /** Context's own connection to the source of truth (session states, request ids). */
  readonly store: Store;
  readonly settings: ContextSettings;
  /** The configured chat model (compaction, Chat, the proxy's model list), if any. */
  readonly chatModel?: ChatModel & StreamingChatModel & ModelCatalog;
  /** The local embedding model, for offline compaction; called at first use. */
  readonly embedder: () => Embedder;
  /** The process admission of BuildContext (decision 0033); absent, BuildContext is not gated. */
  readonly buildContextAdmission?: ProcessAdmissionLimits;
  /** Closes the embedding model if these resources loaded it, then the database. */
  close(): Promise<void>;
}

/**
 * Opens the database (creating the data directory for SQLite) and the chat model of a
 * configuration. The embedding model is `shared.embedder` when the process has one (the
 * all-in-one shares retrieval's), else a local model loaded at its first use.
 */
export function openContextResources(
  config: ContextResourcesConfig,
  shared: { readonly embedder?: () => Embedder } = {},
  logger: Logger,
): ContextResources {
  // Before the store opens: a bad policy file fails the start with nothing to close.
  const tenants = loadTenantPolicies(config.ENGRAM_TENANT_POLICY_FILE);
  const target = storeTarget(config);
  if (!isMysqlTarget(target)) mkdirSync(config.ENGRAM_DATA_DIR, { recursive: true, mode: 0o700 });
  const store = openStore({ target });
  const chatModel = chatModelFromEnv(config, { logger });
  let own: Embedder | undefined;
  const embedder =
    shared.embedder ??
    (() => (own ??= new LocalEmbedder({ modelRoot: resolveModelRoot(config.ENGRAM_MODEL_DIR) })));
  return {
    store,
    settings: contextSettings(config, tenants),
    ...(chatModel !== undefined ? { chatModel } : {}),
    embedder,
    buildContextAdmission: buildContextAdmissionLimits(config),
    close: async () => {
      await own?.close();
      await store.close();
    },
  };
}
