/**
 * The vocabulary of the hard rules: what a rule returns, what the engine reports per candidate,
 * and the port through which the rules read the store. Pure types; see `engine.ts` for `judge`.
 */
import type { JsonValue, MemoryType, NewMemory, Scope, SourceKind } from '@engram/store';
import type { Candidate } from '../candidate.js';
import type { GovernancePolicy, RuleName } from './policy.js';

/** What one rule says about one candidate (`engram.governance.v1.RuleVerdict` minus NOT_EVALUATED). */
export type RuleVerdict = 'PASSED' | 'ADJUSTED' | 'REJECTED' | 'QUARANTINED' | 'DUPLICATE' | 'SUPERSEDES';

/** A verdict as reported in a trace: a rule after a stop, or a disabled rule, is NOT_EVALUATED. */
export type ReportedVerdict = RuleVerdict | 'NOT_EVALUATED';

/** The outcome of judging one candidate (`engram.governance.v1.DecisionOutcome`). */
export type DecisionOutcome = 'ACCEPTED' | 'SUPERSEDED' | 'MERGED_DUPLICATE' | 'REJECTED' | 'QUARANTINED';

/**
 * Why a candidate was refused, as the `google.rpc.ErrorInfo` reason a direct write
 * (CreateMemory) fails with: `schema` problems are FIELD_REQUIRED / FIELD_INVALID /
 * TIME_RANGE_INVALID, `scope_authorization` is SCOPE_NOT_ALLOWED, `quota` is QUOTA_EXCEEDED, every
 * other rule MEMORY_REJECTED.
 */
export type RejectionReason =
  | 'FIELD_REQUIRED'
  | 'FIELD_INVALID'
  | 'TIME_RANGE_INVALID'
  | 'SCOPE_NOT_ALLOWED'
  | 'QUOTA_EXCEEDED'
  | 'MEMORY_REJECTED';

/** A memory another decision refers to: one already stored, or one planned earlier in the batch. */
export type MemoryRef =
  | { readonly kind: 'stored'; readonly id: string }
  | { readonly kind: 'planned'; readonly candidateIndex: number };

/** The ACTIVE FACT currently holding a FACT identity, as rule `dedupe_supersede` compares it. */
export interface ExistingFact {
  readonly id: string;
  readonly sourceKind: SourceKind;
  readonly confidence: number;
  readonly value?: JsonValue;
  readonly text: string;
  readonly evergreen: boolean;
}

/** The same, found by the engine either in the store or among the batch's planned writes. */
export interface FactMatch extends Omit<ExistingFact, 'id'> {
  readonly ref: MemoryRef;
}

/**
 * Where a memory lives for deduplication and FACT identity: proto `Memory.content_hash` compares
 * "within one owner, scope and org", and a FACT's identity is (owner, scope, org_id, namespace,
 * key).
 */
export interface MemoryPlace {
  readonly ownerId: string;
  readonly scope: Scope;
  /** '' unless scope is ORG. */
  readonly orgId: string;
}

/** A value or a promise of it: the store answers asynchronously, test doubles need not. */
export type Awaitable<T> = T | Promise<T>;

/**
 * The store as the rules read it, within the caller's tenant (the implementation binds the
 * tenant). Implemented by the service over `@engram/store`; every method is read-only.
 */
export interface RuleLookups {
  /**
   * The id of an ACTIVE or QUARANTINED memory at `place` whose `content_hash` is `hash`
   * (`memoryContentHash` of `@engram/store`), if any. Deduplication: nothing is written for it.
   */
  findByContentHash(hash: string, place: MemoryPlace): Awaitable<string | undefined>;
  /** The ACTIVE FACT with this identity at `place`, if any (at most one exists). */
  findActiveFact(namespace: string, key: string, place: MemoryPlace): Awaitable<ExistingFact | undefined>;
  /** How many ACTIVE memories `ownerId` has in the tenant (of `type`, when given), every scope. */
  countActive(ownerId: string, type?: MemoryType): Awaitable<number>;
  /** How many ACTIVE evergreen FACTs `ownerId` has in the tenant. */
  countActiveEvergreen(ownerId: string): Awaitable<number>;
  /**
   * The evidence references (message, MemCell or chunk ids, as given) that do not exist or are
   * not visible to the caller. Optional: without it rule `evidence` checks form only.
   */
  missingEvidence?(evidence: Candidate['evidence']): Awaitable<readonly string[]>;
}

/** The verified caller (the fields of `@engram/runtime` `Principal` the rules read). */
export interface RulePrincipal {
  readonly subject: string;
  readonly tenantId: string;
  readonly orgIds: readonly string[];
  readonly roles: readonly string[];
}

/**
 * What a judgement runs in. `extract`: candidates from governance's extractors over a MemCell
 * (always SELF-scoped to `owner`, evidence required). `propose`: a client's candidates
 * (ProposeMemories) or direct writes, scope resolved against the principal's rights.
 */
export interface JudgeContext {
  readonly principal: RulePrincipal;
  /** Whose memories these are: the caller for `propose`, the session owner for `extract`. */
  readonly owner: string;
  /** The decision time, UTC epoch ms (TTL hints count from here when there is no occurred time). */
  readonly now: number;
  readonly policy: GovernancePolicy;
  readonly lookups: RuleLookups;
  readonly mode: 'extract' | 'propose';
}

/**
 * The store as one rule sees it: the batch's earlier decisions already applied (a planned write
 * is found like a stored memory; a stored FACT superseded earlier in the batch is gone), and
 * counts for the judged owner including the batch's planned ACTIVE writes.
 */
export interface BatchView {
  findDuplicate(hash: string, place: MemoryPlace): Promise<MemoryRef | undefined>;
  findActiveFact(namespace: string, key: string, place: MemoryPlace): Promise<FactMatch | undefined>;
  countActive(type?: MemoryType): Promise<number>;
  countActiveEvergreen(): Promise<number>;
  missingEvidence(evidence: Candidate['evidence']): Promise<readonly string[] | undefined>;
}

/** What the rules before this one decided about the same candidate. */
export interface CandidateProgress {
  /** An earlier rule returned QUARANTINED: the memory will be written QUARANTINED. */
  readonly held: boolean;
  /** Rule `dedupe_supersede` found the ACTIVE FACT this candidate replaces. */
  readonly supersedes?: FactMatch;
}

/** What a rule's `evaluate` receives besides the candidate. */
export interface RuleContext extends Omit<JudgeContext, 'lookups'> {
  readonly candidateIndex: number;
  readonly batch: BatchView;
  readonly progress: CandidateProgress;
}

/** One rule's answer. */
export interface RuleResult {
  readonly verdict: RuleVerdict;
  /** For people: what the rule saw or did. Never a secret or a matched PII value. */
  readonly note?: string;
  /** The candidate field concerned (proto field path, e.g. `namespace`, `value`, `valid_until_time`). */
  readonly field?: string;
  /** The transformed candidate (ADJUSTED, and QUARANTINED/SUPERSEDES that also change it). */
  readonly candidate?: Candidate;
  /** REJECTED: the error reason a direct write fails with. Default MEMORY_REJECTED. */
  readonly reason?: RejectionReason;
  /** `ErrorInfo` metadata for the refusal or adjustment (e.g. `quota`, `limit`). */
  readonly details?: Readonly<Record<string, string>>;
  /** DUPLICATE: the identical memory. */
  readonly duplicateOf?: MemoryRef;
  /** SUPERSEDES: the ACTIVE FACT replaced. */
  readonly supersedes?: FactMatch;
}

/** A hard rule: a stable name and a judgement of one candidate. */
export interface HardRule {
  readonly name: RuleName;
  evaluate(candidate: Candidate, ctx: RuleContext): Awaitable<RuleResult>;
}

/** One step of the trace (`engram.governance.v1.RuleEvaluation`). */
export interface RuleEvaluation {
  readonly rule: RuleName;
  readonly verdict: ReportedVerdict;
  readonly note?: string;
  readonly field?: string;
  readonly details?: Readonly<Record<string, string>>;
}

/**
 * The write a decision plans: a `NewMemory` for `MemoryRepository.create`, with its status.
 * `supersedesId` is set when the replaced FACT is stored; when it is a write planned earlier in the
 * same batch, see `Judgement.supersedes` (the caller fills the id it got for that write).
 */
export type MemoryPlan = NewMemory & {
  readonly status: 'ACTIVE' | 'QUARANTINED';
  readonly statusReason: string;
};

/** What the hard rules decided about one candidate (`engram.governance.v1.Decision`). */
export interface Judgement {
  /** Position of the candidate in the judged list. */
  readonly candidateIndex: number;
  readonly outcome: DecisionOutcome;
  /**
   * REJECTED, QUARANTINED: the rule that refused or (first) held it; SUPERSEDED and
   * MERGED_DUPLICATE: `dedupe_supersede`; ACCEPTED: the last rule evaluated.
   */
  readonly decidingRule: RuleName;
  /** One sentence for people, up to 500 characters; never a secret or matched PII value. */
  readonly reason: string;
  /** REJECTED only: the error reason, field and metadata a direct write fails with. */
  readonly rejection?: {
    readonly reason: RejectionReason;
    readonly field?: string;
    readonly details?: Readonly<Record<string, string>>;
  };
  /** ACCEPTED, SUPERSEDED, QUARANTINED: the memory to write. Unset otherwise. */
  readonly memory?: MemoryPlan;
  /** `memoryContentHash` of `memory`, as the repository will store it. */
  readonly contentHash?: string;
  /** SUPERSEDED: the FACT replaced (stored, or planned earlier in the batch). */
  readonly supersedes?: MemoryRef;
  /** SUPERSEDED with a stored FACT: its id (same as `supersedes.id`). */
  readonly supersedesId?: string;
  /** MERGED_DUPLICATE: the identical memory (stored, or planned earlier in the batch). */
  readonly duplicateOf?: MemoryRef;
  /** MERGED_DUPLICATE with a stored memory: its id (same as `duplicateOf.id`). */
  readonly duplicateOfId?: string;
  /** Every rule of the policy, in order, with its verdict. */
  readonly evaluations: readonly RuleEvaluation[];
}
