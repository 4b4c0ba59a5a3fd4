import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '@engram/config';

/** What an operator may set per tenant (blueprint: policy values configurable per tenant). */
export interface TenantSettings {
  /** Redact secrets in every text ingestion and context store (documents, sessions, messages, states, Chat replays). */
  readonly redactSecrets?: boolean;
  /** Overrides of governance's hard-rule policy (see docs/policy.md); checked by governance. */
  readonly governance?: Readonly<Record<string, unknown>>;
}

/** The per-tenant settings of a deployment: `default` for every tenant, `tenants` on top. */
export interface TenantPolicies {
  /** The settings of `tenantId`: its own entries over the file's `default`. */
  settings(tenantId: string): TenantSettings;
  /** The tenants the file names (to check each one's settings at start). */
  readonly tenantIds: readonly string[];
}

const settingsSchema = z
  .object({
    redactSecrets: z.boolean().optional(),
    governance: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
const fileSchema = z
  .object({
    default: settingsSchema.optional(),
    tenants: z.record(z.string().min(1), settingsSchema).optional(),
  })
  .strict();

/**
 * Reads `ENGRAM_TENANT_POLICY_FILE` (JSON: `{ "default": {...}, "tenants": { "<tenant>": {...} } }`)
 * once at start. Unset: every tenant gets the server's defaults. A file that cannot be read or
 * does not have this shape fails the start with the variable's name.
 */
export function loadTenantPolicies(path: string | undefined): TenantPolicies {
  if (path === undefined) return { settings: () => ({}), tenantIds: [] };
  let parsed: z.output<typeof fileSchema>;
  try {
    parsed = fileSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
  } catch (error) {
    const message =
      error instanceof z.ZodError
        ? error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')
        : error instanceof Error
          ? error.message
          : String(error);
    throw new ConfigError([{ variable: 'ENGRAM_TENANT_POLICY_FILE', message: `${path}: ${message}` }]);
  }
  const base = parsed.default ?? {};
  const tenants = parsed.tenants ?? {};
  return {
    tenantIds: Object.keys(tenants),
    settings: (tenantId) => {
      const own = tenants[tenantId];
      if (own === undefined) return base;
      return {
        ...base,
        ...own,
        ...(base.governance !== undefined || own.governance !== undefined
          ? { governance: { ...base.governance, ...own.governance } }
          : {}),
      };
    },
  };
}

/**
 * Whether secrets are redacted before a tenant's text is stored: the tenant's `redactSecrets`,
 * else the server's `ENGRAM_REDACT_SECRETS`. Ingestion and context resolve it the same way.
 */
export function redactSecretsOf(
  policies: TenantPolicies,
  server: 'on' | 'off',
): (tenantId: string) => boolean {
  return (tenantId) => policies.settings(tenantId).redactSecrets ?? server === 'on';
}
