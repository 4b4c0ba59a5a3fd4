/**
 * The hard rules (blueprint §2, §7; issue 6): code that decides what is written. `judge` runs the
 * ordered rules of a tenant's `GovernancePolicy` over proposed candidates and returns, per
 * candidate, the outcome, the deciding rule, the full trace and the write plan.
 */
export { HARD_RULES, judge } from './engine.js';
export { SOURCE_TRUST } from './dedupe.js';
export { detectEmails, detectPhones, type ContactFinding, type ContactType } from './pii-detectors.js';
export { contentHashOf, planMemory } from './plan.js';
export {
  CONTRACT_LIMITS,
  DEFAULT_POLICY,
  MANDATORY_RULES,
  PII_CATEGORIES,
  POLICY_RULES,
  PolicyError,
  RULE_NAMES,
  SECRET_CATEGORIES,
  isPolicyError,
  isRuleEnabled,
  resolvePolicy,
  type ContentLimits,
  type GovernancePolicy,
  type GovernancePolicyOverride,
  type InjectionAction,
  type LowerTrustAction,
  type PiiAction,
  type PiiCategory,
  type PolicyRuleInfo,
  type RuleName,
  type ScopeDeniedAction,
  type SecretAction,
  type SecretCategory,
  type TtlLimit,
} from './policy.js';
export { PLATFORM_ROLE } from './scope.js';
export { redactCandidateForRecord } from './record.js';
export type {
  Awaitable,
  DecisionOutcome,
  ExistingFact,
  HardRule,
  JudgeContext,
  Judgement,
  MemoryPlace,
  MemoryPlan,
  MemoryRef,
  RejectionReason,
  ReportedVerdict,
  RuleEvaluation,
  RuleLookups,
  RulePrincipal,
  RuleVerdict,
} from './types.js';
