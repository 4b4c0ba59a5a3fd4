import type { MessageInitShape } from '@bufbuild/protobuf';
import { durationFromMs, timestampFromMs } from '@bufbuild/protobuf/wkt';
import { DenialAction, MemoryType as MemoryTypeEnum, type PolicySchema } from '@engram/contracts/governance';
import type { MemoryType } from '@engram/store';
import {
  PII_CATEGORIES,
  POLICY_RULES,
  SECRET_CATEGORIES,
  isRuleEnabled,
  type GovernancePolicy,
  type PiiAction,
  type PiiCategory,
  type SecretCategory,
} from './domain/rules/policy.js';

const TYPES: Record<MemoryType, MemoryTypeEnum> = {
  FACT: MemoryTypeEnum.FACT,
  EPISODE: MemoryTypeEnum.EPISODE,
  EVENT: MemoryTypeEnum.EVENT,
  FORESIGHT: MemoryTypeEnum.FORESIGHT,
  SUMMARY: MemoryTypeEnum.SUMMARY,
};

const ACTIONS: Record<Exclude<PiiAction, 'ALLOW'>, DenialAction> = {
  REJECT: DenialAction.REJECT,
  QUARANTINE: DenialAction.QUARANTINE,
  REDACT: DenialAction.REDACT,
};

const CATEGORY_DESCRIPTIONS: Record<SecretCategory | PiiCategory, string> = {
  'secret.api_key': 'Vendor API keys and labelled high-entropy keys or secrets.',
  'secret.access_token': 'JWTs, bearer tokens, GitHub and Slack tokens.',
  'secret.private_key': 'PEM, OpenSSH and PGP private key blocks.',
  'secret.password': 'Labelled passwords, URL and Basic-auth passwords.',
  'pii.payment_card_number': 'Luhn-valid payment card numbers in a known issuer range.',
  'pii.government_id_number': 'Chinese resident ID numbers (checksum) and US social security numbers.',
  'pii.bank_account_number': 'IBANs (MOD 97 check).',
  'pii.email_address': 'Email addresses.',
  'pii.phone_number': 'Phone numbers.',
};

/**
 * The effective policy as the API's `Policy` (GetPolicy): every rule in evaluation order with
 * whether it runs and whether it is mandatory, and the denied categories with their actions
 * (categories the policy allows are left out). `updateTime` is when the configuration was loaded.
 */
export function policyMessage(
  policy: GovernancePolicy,
  updateTime: number,
): MessageInitShape<typeof PolicySchema> {
  const ttlLimits = (Object.keys(TYPES) as MemoryType[]).flatMap((type) => {
    const limit = policy.ttlLimits[type];
    return limit === undefined
      ? []
      : [
          {
            type: TYPES[type],
            ...(limit.defaultTtlMs !== undefined ? { defaultTtl: durationFromMs(limit.defaultTtlMs) } : {}),
            ...(limit.maxTtlMs !== undefined ? { maxTtl: durationFromMs(limit.maxTtlMs) } : {}),
          },
        ];
  });
  const secrets = SECRET_CATEGORIES.map((category) => ({
    category,
    action: ACTIONS[policy.secretActions[category]],
    description: CATEGORY_DESCRIPTIONS[category],
  }));
  const pii = PII_CATEGORIES.flatMap((category) => {
    const action = policy.piiActions[category];
    return action === 'ALLOW'
      ? []
      : [{ category, action: ACTIONS[action], description: CATEGORY_DESCRIPTIONS[category] }];
  });
  return {
    name: 'policy',
    confidenceThreshold: policy.confidenceThreshold,
    reviewConfidenceThreshold: policy.reviewConfidenceThreshold,
    ttlLimits,
    maxMemoriesPerOwner: BigInt(policy.maxMemoriesPerOwner),
    maxEvergreenPerOwner: policy.maxEvergreenPerOwner,
    rules: POLICY_RULES.map((rule) => ({
      name: rule.name,
      enabled: rule.mandatory || isRuleEnabled(policy, rule.name),
      mandatory: rule.mandatory,
      description: rule.description,
    })),
    deniedCategories: [...secrets, ...pii],
    updateTime: timestampFromMs(updateTime),
  };
}
