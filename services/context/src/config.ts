import { z } from 'zod';
import { llmEnvShape } from '@engram/llm';
import {
  ConfigError,
  envEnum,
  envInt,
  envString,
  parseEnv,
  redactSecretsOf,
  serviceEnvSchema,
  ADAPTIVE_MIN_SLOTS,
  type ProcessAdmissionLimits,
  type TenantPolicies,
} from '@engram/runtime';
import { storeEnvShape } from '@engram/store';
import { FILL_ORDER, type OptionalLayer } from './domain/types.js';

/** Port of the context service when it runs as its own process (`ENGRAM_PORT` overrides). */
export const DEFAULT_PORT = 50064;

/** The default share of the pool of each optional layer (context.proto, `TokenBudget`). */
export const DEFAULT_LAYER_SHARES: Readonly<Record<OptionalLayer, number>> = {
  TOOLS: 0.1,
  KEY_POINTS: 0.05,
  OPEN_LOOPS: 0.05,
  SESSION_SUMMARY: 0.1,
  EVERGREEN_FACTS: 0.1,
  RETRIEVED_KNOWLEDGE: 0.25,
  RECENT_TURNS: 0.35,
};

/** Context's own settings, shared with the all-in-one process. */
export const contextEnvShape = {
  ...storeEnvShape,
  ...llmEnvShape,
  /**
   * Layer shares replacing the defaults, e.g. `RETRIEVED_KNOWLEDGE=0.4,RECENT_TURNS=0.2`; the
   * layers not named keep their defaults and the result must sum to 1.
   */
  ENGRAM_CONTEXT_LAYER_SHARES: envString(),
  /** Compaction is due when the uncompacted tail exceeds this many o200k tokens. */
  ENGRAM_COMPACTION_THRESHOLD_TOKENS: envInt(3_000, 200, 1_000_000),
  /** Messages a compaction leaves verbatim. */
  ENGRAM_COMPACTION_KEEP_RECENT_TURNS: envInt(6, 0, 200),
  /** Largest rolling summary, o200k tokens. */
  ENGRAM_COMPACTION_SUMMARY_MAX_TOKENS: envInt(800, 100, 4_000),
  /** Chat models a `Chat` request may name besides `ENGRAM_LLM_MODEL`, comma-separated. */
  ENGRAM_CHAT_ALLOWED_MODELS: envString(),
  /** `max_output_tokens` of a `Chat` call that sets neither it nor `reserved_output_tokens`. */
  ENGRAM_CHAT_MAX_OUTPUT_TOKENS: envInt(1_024, 1, 128_000),
  /**
   * Redact secrets in what context stores (session states, compaction results, Chat replays);
   * the same variable and per-tenant override (`redactSecrets`) as ingestion's.
   */
  ENGRAM_REDACT_SECRETS: envEnum(['on', 'off'], 'on'),
  /**
   * BuildContext calls this process executes at once (decision 0033); `0` turns the process
   * admission off. Eight on two cores, like Search: a BuildContext mostly waits for its Search,
   * its reads of the session and the facts.
   */
  ENGRAM_BUILD_CONTEXT_MAX_CONCURRENT: envInt(8, 0, 10_000),
  /** BuildContext calls that may wait for a slot (FIFO); beyond, RESOURCE_EXHAUSTED `OVERLOADED`. */
  ENGRAM_BUILD_CONTEXT_MAX_QUEUE: envInt(32, 0, 100_000),
  /** The longest a BuildContext may wait for a slot, ms (one expected to wait longer is refused at once). */
  ENGRAM_BUILD_CONTEXT_MAX_QUEUE_WAIT_MS: envInt(100, 0, 60_000),
  /**
   * The average BuildContext execution time the process admission steers for, ms (decision 0046): its
   * slots shrink while executions are slower (down to two) and grow back while they are faster
   * and calls wait. Set it above the method's execution time on an idle machine; `0` keeps
   * `ENGRAM_BUILD_CONTEXT_MAX_CONCURRENT` slots.
   */
  ENGRAM_BUILD_CONTEXT_TARGET_EXECUTION_MS: envInt(0, 0, 600_000),
} as const;

/** The process admission of BuildContext (decision 0033) of a configuration. */
export function buildContextAdmissionLimits(config: ContextDataConfig): ProcessAdmissionLimits {
  return {
    maxConcurrent: config.ENGRAM_BUILD_CONTEXT_MAX_CONCURRENT,
    maxQueue: config.ENGRAM_BUILD_CONTEXT_MAX_QUEUE,
    maxQueueWaitMs: config.ENGRAM_BUILD_CONTEXT_MAX_QUEUE_WAIT_MS,
    targetExecutionMs: config.ENGRAM_BUILD_CONTEXT_TARGET_EXECUTION_MS,
    minConcurrent: ADAPTIVE_MIN_SLOTS,
  };
}

/** Where the standalone context process reaches the other services (the all-in-one calls in-process). */
export const contextClientEnvShape = {
  ENGRAM_INGESTION_URL: envString(),
  ENGRAM_GOVERNANCE_URL: envString(),
  ENGRAM_RETRIEVAL_URL: envString(),
  /** The local embedding model's directory, for offline compaction (default: the workspace's). */
  ENGRAM_MODEL_DIR: envString(),
} as const;

const schema = serviceEnvSchema(DEFAULT_PORT).extend(contextEnvShape).extend(contextClientEnvShape);

export type ContextConfig = z.output<typeof schema>;
export type ContextDataConfig = z.output<z.ZodObject<typeof contextEnvShape>>;

/** The compaction policy with every field set (context.proto, `CompactionPolicy`). */
export interface CompactionDefaults {
  readonly thresholdTokens: number;
  readonly keepRecentTurns: number;
  readonly summaryMaxTokens: number;
}

/** What the handlers read from the configuration. */
export interface ContextSettings {
  readonly layerShares: Readonly<Record<OptionalLayer, number>>;
  readonly compaction: CompactionDefaults;
  /** Model names a Chat request may ask for (the configured model included). */
  readonly allowedChatModels: readonly string[];
  readonly chatMaxOutputTokens: number;
  /** Redact secrets before a tenant's text is stored (the tenant's setting, else the server's). */
  readonly redactSecrets: (tenantId: string) => boolean;
}

/** Parses the environment once, at start; a bad variable fails with its name. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): ContextConfig {
  return parseEnv(schema, env);
}

/**
 * The handlers' settings from a parsed configuration and the tenants' policies
 * (`ENGRAM_TENANT_POLICY_FILE`; none: every tenant has the server's settings).
 */
export function contextSettings(
  config: ContextDataConfig,
  tenants: TenantPolicies = { settings: () => ({}), tenantIds: [] },
): ContextSettings {
  const allowed = new Set<string>();
  if (config.ENGRAM_LLM_MODEL !== undefined) allowed.add(config.ENGRAM_LLM_MODEL);
  for (const name of (config.ENGRAM_CHAT_ALLOWED_MODELS ?? '').split(',')) {
    if (name.trim() !== '') allowed.add(name.trim());
  }
  return {
    layerShares: parseShares(config.ENGRAM_CONTEXT_LAYER_SHARES),
    compaction: {
      thresholdTokens: config.ENGRAM_COMPACTION_THRESHOLD_TOKENS,
      keepRecentTurns: config.ENGRAM_COMPACTION_KEEP_RECENT_TURNS,
      summaryMaxTokens: config.ENGRAM_COMPACTION_SUMMARY_MAX_TOKENS,
    },
    allowedChatModels: [...allowed],
    chatMaxOutputTokens: config.ENGRAM_CHAT_MAX_OUTPUT_TOKENS,
    redactSecrets: redactSecretsOf(tenants, config.ENGRAM_REDACT_SECRETS),
  };
}

const shareSchema = z.coerce.number().min(0).max(1);

/** `LAYER=share,…` over the defaults; the result must sum to 1 (±0.001). */
export function parseShares(text: string | undefined): Readonly<Record<OptionalLayer, number>> {
  const variable = 'ENGRAM_CONTEXT_LAYER_SHARES';
  const shares: Record<OptionalLayer, number> = { ...DEFAULT_LAYER_SHARES };
  if (text === undefined || text.trim() === '') return shares;
  for (const entry of text.split(',')) {
    const [layer = '', value = ''] = entry.split('=').map((s) => s.trim());
    if (!(FILL_ORDER as readonly string[]).includes(layer)) {
      throw new ConfigError([
        { variable, message: `unknown layer ${layer}; expected one of ${FILL_ORDER.join(', ')}` },
      ]);
    }
    const parsed = shareSchema.safeParse(value);
    if (!parsed.success)
      throw new ConfigError([{ variable, message: `${layer}: expected a number from 0 to 1` }]);
    shares[layer as OptionalLayer] = parsed.data;
  }
  const sum = Object.values(shares).reduce((a, b) => a + b, 0);
  if (Math.abs(sum - 1) > 0.001) {
    throw new ConfigError([
      { variable, message: `the shares must sum to 1 (they sum to ${sum.toFixed(3)})` },
    ]);
  }
  return shares;
}
