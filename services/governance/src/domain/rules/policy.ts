/**
 * The hard-rule policy of a tenant (`engram.governance.v1.Policy`): thresholds, TTL limits, quotas,
 * what to do with secrets, personal data and prompt injection, and the content limits of the
 * contract. `DEFAULT_POLICY` holds the defaults documented in `policy.proto` and `memory.proto`;
 * `resolvePolicy` lays a tenant's override over them and checks it.
 */
import type { MemoryType } from '@engram/store';

const DAY_MS = 86_400_000;

/**
 * The hard rules in evaluation order (`Policy.rules`). The names are stable identifiers, in
 * snake_case as `policy.proto` spells them, reported in `Decision.rule` and
 * `RuleEvaluation.rule`.
 */
export const RULE_NAMES = [
  'schema',
  'evidence',
  'denied_namespace',
  'confidence_threshold',
  'scope_authorization',
  'secret_denial',
  'pii_denial',
  'prompt_injection',
  'ttl_cap',
  'dedupe_supersede',
  'quota',
] as const;

/** One of {@link RULE_NAMES}. */
export type RuleName = (typeof RULE_NAMES)[number];

/** One entry of `Policy.rules`. */
export interface PolicyRuleInfo {
  readonly name: RuleName;
  /** Whether the operator may not disable it. */
  readonly mandatory: boolean;
  readonly description: string;
}

/** Every rule with its description, in evaluation order (what GetPolicy lists). */
export const POLICY_RULES: readonly PolicyRuleInfo[] = [
  {
    name: 'schema',
    mandatory: true,
    description:
      'Fields present, well formed and within the content limits for the type (namespace/key pattern, value a JSON object within size and depth, text length, times consistent, evergreen only on FACT, metadata limits).',
  },
  {
    name: 'evidence',
    mandatory: false,
    description:
      'Evidence ids are well formed, extracted candidates cite their messages, and the referenced messages, MemCell and chunks exist and are visible.',
  },
  {
    name: 'denied_namespace',
    mandatory: false,
    description: 'FACTs in a namespace the policy denies are rejected.',
  },
  {
    name: 'confidence_threshold',
    mandatory: false,
    description:
      'Below confidence_threshold the candidate is rejected; below review_confidence_threshold it is quarantined.',
  },
  {
    name: 'scope_authorization',
    mandatory: true,
    description:
      "Resolves the scope (default SELF) against the caller's rights: ORG needs membership of org_id, PLATFORM the platform role; extracted memories are always SELF.",
  },
  {
    name: 'secret_denial',
    mandatory: true,
    description:
      'Credentials, keys, tokens and passwords in text, value, excerpt, metadata or TTL reason are rejected (or redacted, if the policy says so).',
  },
  {
    name: 'pii_denial',
    mandatory: false,
    description:
      "Payment cards, government ID numbers, bank accounts, email addresses and phone numbers are rejected, quarantined, redacted or allowed, per the category's action.",
  },
  {
    name: 'prompt_injection',
    mandatory: false,
    description:
      'Text that tries to instruct the model ("ignore previous instructions", "忽略之前的指令", "you are now …", "system prompt:") is quarantined for review.',
  },
  {
    name: 'ttl_cap',
    mandatory: false,
    description:
      "Turns the TTL hint into expire_time, applies the type's default TTL and caps it at the type's maximum.",
  },
  {
    name: 'dedupe_supersede',
    mandatory: true,
    description:
      'An identical ACTIVE or QUARANTINED memory makes the candidate a duplicate; an ACTIVE FACT with the same identity and another value is superseded, unless the candidate comes from a less trusted source.',
  },
  {
    name: 'quota',
    mandatory: false,
    description:
      "The owner's ACTIVE memories stay within max_memories_per_owner (and per-type caps); evergreen hints beyond max_evergreen_per_owner are dropped.",
  },
];

/** Rules that a policy may not disable (`PolicyRule.mandatory`). */
export const MANDATORY_RULES: readonly RuleName[] = POLICY_RULES.filter((r) => r.mandatory).map(
  (r) => r.name,
);

/**
 * Secret categories (`DeniedCategory.category`), named by what `@engram/redaction` found:
 * - `secret.api_key`: vendor API keys and labelled high-entropy keys/secrets;
 * - `secret.access_token`: JWTs, bearer tokens, GitHub and Slack tokens;
 * - `secret.private_key`: PEM/OpenSSH/PGP private key blocks;
 * - `secret.password`: labelled passwords, URL and Basic-auth passwords.
 */
export const SECRET_CATEGORIES = [
  'secret.api_key',
  'secret.access_token',
  'secret.private_key',
  'secret.password',
] as const;
export type SecretCategory = (typeof SECRET_CATEGORIES)[number];

/**
 * Personal-data categories:
 * - `pii.payment_card_number`: Luhn-valid card numbers in a known issuer range (`@engram/redaction`);
 * - `pii.government_id_number`: Chinese resident ID numbers (checksum, or 15 digits after their
 *   label), US SSNs, UK National Insurance numbers and passport numbers after their label
 *   (`@engram/redaction`);
 * - `pii.bank_account_number`: IBANs (MOD 97) (`@engram/redaction`);
 * - `pii.email_address`, `pii.phone_number`: this module's detectors (`pii-detectors.ts`).
 */
export const PII_CATEGORIES = [
  'pii.payment_card_number',
  'pii.government_id_number',
  'pii.bank_account_number',
  'pii.email_address',
  'pii.phone_number',
] as const;
export type PiiCategory = (typeof PII_CATEGORIES)[number];

/**
 * What a secret does to a candidate: REJECT (nothing written), or REDACT (replaced by
 * `[redacted:<type>]` and written; rule verdict ADJUSTED). Never quarantined or allowed: a secret
 * is not stored, not even for review.
 */
export type SecretAction = 'REJECT' | 'REDACT';

/** What personal data does to a candidate: also QUARANTINE (written, held for review) or ALLOW. */
export type PiiAction = 'REJECT' | 'QUARANTINE' | 'REDACT' | 'ALLOW';

/** When a scope hint asks for rights the caller does not have (rule `scope_authorization`). */
export type ScopeDeniedAction = 'REJECT' | 'NARROW_TO_SELF';

/** When a less trusted source would replace a more trusted FACT (rule `dedupe_supersede`). */
export type LowerTrustAction = 'QUARANTINE' | 'REJECT';

/** When text tries to instruct the model (rule `prompt_injection`). */
export type InjectionAction = 'QUARANTINE' | 'REJECT' | 'ALLOW';

/** TTL limits of one memory type (`TypeTtlLimit`); both counted from the write. */
export interface TtlLimit {
  /** Lifetime of a memory written without any expiry. Unset: it never expires. */
  readonly defaultTtlMs?: number;
  /** The longest lifetime allowed: later expiries are lowered to it. Unset: no cap. */
  readonly maxTtlMs?: number;
}

/**
 * Content limits (rule `schema`). The defaults are the contract's ("Common limits" of
 * `memory.proto`); a tenant may lower them, never raise them. The namespace/key patterns apply on
 * top of the contract's `[a-z0-9_.-]+`, so they can only narrow it.
 */
export interface ContentLimits {
  /** `text`, in Unicode code points. */
  readonly maxTextChars: number;
  /** `value`, serialized as compact UTF-8 JSON. */
  readonly maxValueBytes: number;
  /** `value` nesting, the top-level object being level 1. */
  readonly maxValueDepth: number;
  readonly maxNamespaceChars: number;
  readonly maxKeyChars: number;
  /** Regular expression (source) every namespace must match in full. */
  readonly namespacePattern: string;
  /** Regular expression (source) every key must match in full. */
  readonly keyPattern: string;
  readonly maxMetadataEntries: number;
  readonly maxMetadataKeyChars: number;
  readonly maxMetadataValueChars: number;
  readonly maxExcerptChars: number;
  readonly maxTtlReasonChars: number;
  /** Message ids, and chunk ids, each. */
  readonly maxEvidenceRefs: number;
  readonly maxOrgIdChars: number;
  readonly maxLanguageCodeChars: number;
  /** How far in the future `occur_time` may be (clock skew between services). */
  readonly clockToleranceMs: number;
}

/** The effective hard-rule configuration of one tenant. */
export interface GovernancePolicy {
  /** Below this, REJECTED (rule `confidence_threshold`). Default 0.6. */
  readonly confidenceThreshold: number;
  /** At or above the threshold but below this, QUARANTINED. Default 0.0 (off). */
  readonly reviewConfidenceThreshold: number;
  /** Per type; a type not listed has no default TTL and no cap. Default: FORESIGHT capped at 365 days. */
  readonly ttlLimits: Readonly<Partial<Record<MemoryType, TtlLimit>>>;
  /** Most ACTIVE memories per owner (rule `quota`). Default 100,000. */
  readonly maxMemoriesPerOwner: number;
  /** Most ACTIVE memories per owner and type, for the types listed. Default: none. */
  readonly maxMemoriesPerOwnerByType: Readonly<Partial<Record<MemoryType, number>>>;
  /** Most ACTIVE evergreen FACTs per owner. Default 100. */
  readonly maxEvergreenPerOwner: number;
  /** Rules not evaluated (reported NOT_EVALUATED). Mandatory rules cannot be listed. Default none. */
  readonly disabledRules: readonly RuleName[];
  /** Action per secret category. Default: REJECT for every one. */
  readonly secretActions: Readonly<Record<SecretCategory, SecretAction>>;
  /**
   * Action per personal-data category. Default: REJECT for payment cards, government IDs and bank
   * accounts; QUARANTINE for email addresses and phone numbers.
   */
  readonly piiActions: Readonly<Record<PiiCategory, PiiAction>>;
  /**
   * FACT namespaces refused outright (rule `denied_namespace`): exact names, or prefixes ending in
   * `*` (`internal.*`). Default none.
   */
  readonly deniedNamespaces: readonly string[];
  /**
   * A ProposeMemories scope hint the caller cannot use: REJECT (proto default) or
   * NARROW_TO_SELF. Extraction always narrows to SELF, whatever this says.
   */
  readonly scopeDenied: ScopeDeniedAction;
  /**
   * A FACT from a less trusted source than the ACTIVE FACT it would replace (see
   * `SOURCE_TRUST` in `dedupe.ts`). Default QUARANTINE: held for review, superseding nothing
   * until approved.
   */
  readonly lowerTrustSupersede: LowerTrustAction;
  /** Text that tries to instruct the model. Default QUARANTINE. */
  readonly promptInjection: InjectionAction;
  readonly limits: ContentLimits;
}

/** The contract's content limits (`memory.proto`). */
export const CONTRACT_LIMITS: ContentLimits = Object.freeze({
  maxTextChars: 8_000,
  maxValueBytes: 8_192,
  maxValueDepth: 8,
  maxNamespaceChars: 128,
  maxKeyChars: 128,
  namespacePattern: '[a-z0-9_.-]+',
  keyPattern: '[a-z0-9_.-]+',
  maxMetadataEntries: 32,
  maxMetadataKeyChars: 64,
  maxMetadataValueChars: 512,
  maxExcerptChars: 1_000,
  maxTtlReasonChars: 500,
  maxEvidenceRefs: 100,
  maxOrgIdChars: 128,
  maxLanguageCodeChars: 35,
  clockToleranceMs: 5 * 60_000,
});

/** The policy of a server with no policy configuration (the defaults of `policy.proto`). */
export const DEFAULT_POLICY: GovernancePolicy = deepFreeze({
  confidenceThreshold: 0.6,
  reviewConfidenceThreshold: 0,
  ttlLimits: { FORESIGHT: { maxTtlMs: 365 * DAY_MS } },
  maxMemoriesPerOwner: 100_000,
  maxMemoriesPerOwnerByType: {},
  maxEvergreenPerOwner: 100,
  disabledRules: [],
  secretActions: {
    'secret.api_key': 'REJECT',
    'secret.access_token': 'REJECT',
    'secret.private_key': 'REJECT',
    'secret.password': 'REJECT',
  },
  piiActions: {
    'pii.payment_card_number': 'REJECT',
    'pii.government_id_number': 'REJECT',
    'pii.bank_account_number': 'REJECT',
    'pii.email_address': 'QUARANTINE',
    'pii.phone_number': 'QUARANTINE',
  },
  deniedNamespaces: [],
  scopeDenied: 'REJECT',
  lowerTrustSupersede: 'QUARANTINE',
  promptInjection: 'QUARANTINE',
  limits: CONTRACT_LIMITS,
});

/**
 * A tenant's changes to the defaults. Maps merge per entry (`ttlLimits`, the per-type quotas and
 * the category actions; `null` removes a type's entry); lists replace; limits merge per field.
 */
export interface GovernancePolicyOverride {
  readonly confidenceThreshold?: number;
  readonly reviewConfidenceThreshold?: number;
  readonly ttlLimits?: Readonly<Partial<Record<MemoryType, TtlLimit | null>>>;
  readonly maxMemoriesPerOwner?: number;
  readonly maxMemoriesPerOwnerByType?: Readonly<Partial<Record<MemoryType, number | null>>>;
  readonly maxEvergreenPerOwner?: number;
  readonly disabledRules?: readonly RuleName[];
  readonly secretActions?: Readonly<Partial<Record<SecretCategory, SecretAction>>>;
  readonly piiActions?: Readonly<Partial<Record<PiiCategory, PiiAction>>>;
  readonly deniedNamespaces?: readonly string[];
  readonly scopeDenied?: ScopeDeniedAction;
  readonly lowerTrustSupersede?: LowerTrustAction;
  readonly promptInjection?: InjectionAction;
  readonly limits?: Partial<ContentLimits>;
}

/** A policy configuration that cannot be applied; `path` names the offending setting. */
export class PolicyError extends Error {
  override readonly name = 'PolicyError';
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`policy ${path}: ${message}`);
  }
}

export function isPolicyError(error: unknown): error is PolicyError {
  return error instanceof PolicyError;
}

const MEMORY_TYPES: readonly MemoryType[] = ['FACT', 'EPISODE', 'EVENT', 'FORESIGHT', 'SUMMARY'];

/**
 * The effective policy: `override` laid over `base` (default {@link DEFAULT_POLICY}), checked
 * as a whole. Throws {@link PolicyError} naming the first invalid setting. The result is frozen.
 */
export function resolvePolicy(
  override: GovernancePolicyOverride = {},
  base: GovernancePolicy = DEFAULT_POLICY,
): GovernancePolicy {
  const policy: GovernancePolicy = {
    confidenceThreshold: override.confidenceThreshold ?? base.confidenceThreshold,
    reviewConfidenceThreshold: override.reviewConfidenceThreshold ?? base.reviewConfidenceThreshold,
    ttlLimits: mergeEntries(base.ttlLimits, override.ttlLimits),
    maxMemoriesPerOwner: override.maxMemoriesPerOwner ?? base.maxMemoriesPerOwner,
    maxMemoriesPerOwnerByType: mergeEntries(
      base.maxMemoriesPerOwnerByType,
      override.maxMemoriesPerOwnerByType,
    ),
    maxEvergreenPerOwner: override.maxEvergreenPerOwner ?? base.maxEvergreenPerOwner,
    disabledRules: [...(override.disabledRules ?? base.disabledRules)],
    secretActions: { ...base.secretActions, ...override.secretActions },
    piiActions: { ...base.piiActions, ...override.piiActions },
    deniedNamespaces: [...(override.deniedNamespaces ?? base.deniedNamespaces)],
    scopeDenied: override.scopeDenied ?? base.scopeDenied,
    lowerTrustSupersede: override.lowerTrustSupersede ?? base.lowerTrustSupersede,
    promptInjection: override.promptInjection ?? base.promptInjection,
    limits: { ...base.limits, ...override.limits },
  };
  checkPolicy(policy);
  return deepFreeze(policy);
}

/** Whether `rule` is evaluated under `policy`. */
export function isRuleEnabled(policy: GovernancePolicy, rule: RuleName): boolean {
  return !policy.disabledRules.includes(rule);
}

function mergeEntries<K extends string, V>(
  base: Readonly<Partial<Record<K, V>>>,
  override: Readonly<Partial<Record<K, V | null>>> | undefined,
): Partial<Record<K, V>> {
  const merged: Partial<Record<K, V>> = { ...base };
  for (const [key, value] of Object.entries(override ?? {}) as [K, V | null | undefined][]) {
    if (value === null) Reflect.deleteProperty(merged, key);
    else if (value !== undefined) merged[key] = value;
  }
  return merged;
}

function fail(path: string, message: string): never {
  throw new PolicyError(path, message);
}

function checkFraction(path: string, value: number): void {
  if (!Number.isFinite(value) || value < 0 || value > 1) fail(path, 'must be a number from 0.0 to 1.0');
}

function checkCount(path: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) fail(path, `must be an integer of at least ${min}`);
}

function checkOneOf(path: string, value: string, allowed: readonly string[]): void {
  if (!allowed.includes(value)) fail(path, `must be one of ${allowed.join(', ')}`);
}

function checkPolicy(policy: GovernancePolicy): void {
  checkFraction('confidenceThreshold', policy.confidenceThreshold);
  checkFraction('reviewConfidenceThreshold', policy.reviewConfidenceThreshold);
  for (const [type, limit] of Object.entries<TtlLimit>(policy.ttlLimits)) {
    if (!MEMORY_TYPES.includes(type as MemoryType)) fail(`ttlLimits.${type}`, 'unknown memory type');
    if (limit.defaultTtlMs !== undefined) checkCount(`ttlLimits.${type}.defaultTtlMs`, limit.defaultTtlMs, 1);
    if (limit.maxTtlMs !== undefined) checkCount(`ttlLimits.${type}.maxTtlMs`, limit.maxTtlMs, 1);
    if (
      limit.defaultTtlMs !== undefined &&
      limit.maxTtlMs !== undefined &&
      limit.defaultTtlMs > limit.maxTtlMs
    ) {
      fail(`ttlLimits.${type}.defaultTtlMs`, 'must not exceed maxTtlMs');
    }
  }
  checkCount('maxMemoriesPerOwner', policy.maxMemoriesPerOwner, 0);
  checkCount('maxEvergreenPerOwner', policy.maxEvergreenPerOwner, 0);
  for (const [type, cap] of Object.entries<number>(policy.maxMemoriesPerOwnerByType)) {
    if (!MEMORY_TYPES.includes(type as MemoryType))
      fail(`maxMemoriesPerOwnerByType.${type}`, 'unknown memory type');
    checkCount(`maxMemoriesPerOwnerByType.${type}`, cap, 0);
  }
  for (const rule of policy.disabledRules) {
    checkOneOf('disabledRules', rule, RULE_NAMES);
    if (MANDATORY_RULES.includes(rule))
      fail('disabledRules', `rule ${rule} is mandatory and cannot be disabled`);
  }
  for (const category of Object.keys(policy.secretActions)) {
    checkOneOf('secretActions', category, SECRET_CATEGORIES);
    checkOneOf(`secretActions.${category}`, policy.secretActions[category as SecretCategory], [
      'REJECT',
      'REDACT',
    ]);
  }
  for (const category of Object.keys(policy.piiActions)) {
    checkOneOf('piiActions', category, PII_CATEGORIES);
    checkOneOf(`piiActions.${category}`, policy.piiActions[category as PiiCategory], [
      'REJECT',
      'QUARANTINE',
      'REDACT',
      'ALLOW',
    ]);
  }
  for (const namespace of policy.deniedNamespaces) {
    if (!/^[a-z0-9_.-]+\*?$/.test(namespace)) {
      fail('deniedNamespaces', `"${namespace}" is neither a namespace nor a prefix ending in *`);
    }
  }
  checkOneOf('scopeDenied', policy.scopeDenied, ['REJECT', 'NARROW_TO_SELF']);
  checkOneOf('lowerTrustSupersede', policy.lowerTrustSupersede, ['QUARANTINE', 'REJECT']);
  checkOneOf('promptInjection', policy.promptInjection, ['QUARANTINE', 'REJECT', 'ALLOW']);
  for (const [name, contract] of Object.entries(CONTRACT_LIMITS) as [keyof ContentLimits, unknown][]) {
    const value = policy.limits[name];
    if (typeof contract === 'number') {
      checkCount(`limits.${name}`, value as number, name === 'clockToleranceMs' ? 0 : 1);
      if (name !== 'clockToleranceMs' && (value as number) > contract) {
        fail(`limits.${name}`, `may only lower the contract's limit of ${contract}`);
      }
    } else {
      try {
        new RegExp(`^(?:${String(value)})$`, 'u');
      } catch {
        fail(`limits.${name}`, 'is not a valid regular expression');
      }
    }
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
