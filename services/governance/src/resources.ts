import { mkdirSync } from 'node:fs';
import { chatModelFromEnv, type ChatModel } from '@engram/llm';
import {
  ConfigError,
  loadTenantPolicies,
  redactSecretsOf,
  type Logger,
  type TenantPolicies,
} from '@engram/runtime';
import { isMysqlTarget, openStore, storeTarget, type Store } from '@engram/store';
import type { GovernanceDataConfig } from './config.js';
import { isPolicyError, resolvePolicy, type GovernancePolicy } from './domain/rules/policy.js';

/** Everything the governance service runs on, opened from configuration. */
export interface GovernanceResources {
  readonly store: Store;
  /** The extraction model; absent: the offline extractors. */
  readonly chatModel?: ChatModel;
  /** The hard rules' policy of a tenant: the documented defaults under the tenant's overrides. */
  readonly policies: (tenantId: string) => GovernancePolicy;
  /** The most bytes one ImportUser stream may carry (`ENGRAM_IMPORT_MAX_BYTES`). */
  readonly importMaxBytes: number;
  /** Whether a tenant's imported text is redacted (its `redactSecrets`, else `ENGRAM_REDACT_SECRETS`). */
  readonly redactSecrets: (tenantId: string) => boolean;
  /** Closes what was opened (the store); the module's workers are stopped before. */
  close(): Promise<void>;
}

/**
 * Opens governance's connection to the source of truth and its model client, and resolves the
 * tenants' policies (no workers: `governanceModule` owns them).
 */
export function openGovernanceResources(
  config: GovernanceDataConfig & { readonly ENGRAM_TENANT_POLICY_FILE?: string | undefined },
  logger: Logger,
): GovernanceResources {
  const tenants = loadTenantPolicies(config.ENGRAM_TENANT_POLICY_FILE);
  const policies = tenantPolicies(tenants);
  const target = storeTarget(config);
  if (!isMysqlTarget(target)) mkdirSync(config.ENGRAM_DATA_DIR, { recursive: true, mode: 0o700 });
  const store = openStore({ target });
  const chatModel = chatModelFromEnv(config, { logger });
  return {
    store,
    ...(chatModel !== undefined ? { chatModel } : {}),
    policies,
    importMaxBytes: config.ENGRAM_IMPORT_MAX_BYTES,
    redactSecrets: redactSecretsOf(tenants, config.ENGRAM_REDACT_SECRETS),
    close: () => store.close(),
  };
}

/**
 * Every tenant's effective policy, resolved and checked once at start: a bad override fails the
 * start naming the tenant and the setting.
 */
function tenantPolicies(file: TenantPolicies): (tenantId: string) => GovernancePolicy {
  const resolve = (tenantId: string | undefined): GovernancePolicy => {
    const override = (tenantId === undefined ? file.settings('') : file.settings(tenantId)).governance;
    try {
      return resolvePolicy(override ?? {});
    } catch (error) {
      if (!isPolicyError(error)) throw error;
      throw new ConfigError([
        {
          variable: 'ENGRAM_TENANT_POLICY_FILE',
          message: `${tenantId === undefined ? 'default' : `tenants.${tenantId}`}.governance: ${error.message}`,
        },
      ]);
    }
  };
  const fallback = resolve(undefined);
  const byTenant = new Map(file.tenantIds.map((t) => [t, resolve(t)]));
  return (tenantId) => byTenant.get(tenantId) ?? fallback;
}
