/**
 * The hard-rule engine: judges candidates with the ordered rules of the policy and plans the
 * writes. Pure domain logic: it reads the store only through `JudgeContext.lookups` and writes
 * nothing; the service commits the plans (blueprint §2: soft rules propose, hard rules decide).
 *
 * Evaluation of one candidate, rule by rule in {@link HARD_RULES} order:
 * - PASSED, ADJUSTED (the candidate is replaced by the rule's transformed one), SUPERSEDES:
 *   continue;
 * - QUARANTINED: continue (the later rules still check and transform it), the outcome will be
 *   QUARANTINED, decided by the first rule that held it;
 * - REJECTED, DUPLICATE: stop; every later rule is reported NOT_EVALUATED;
 * - a rule the policy disables is reported NOT_EVALUATED and skipped.
 *
 * Candidates are judged in order and each sees the effect of the earlier ones: their planned
 * writes are found by deduplication and FACT identity like stored memories (the second of two
 * FACTs with one identity supersedes the first's planned write; an exact repeat is a
 * MERGED_DUPLICATE of it), and they count against quotas.
 */
import type { MemoryType } from '@engram/store';
import type { Candidate } from '../candidate.js';
import { confidenceRule } from './confidence.js';
import { contentPieces } from './content.js';
import { dedupeRule, describeRef } from './dedupe.js';
import { deniedNamespaceRule } from './denied-namespace.js';
import { evidenceRule } from './evidence.js';
import { injectionRule } from './injection.js';
import { contentHashOf, planMemory } from './plan.js';
import { MANDATORY_RULES, isRuleEnabled, type RuleName } from './policy.js';
import { quotaRule } from './quota.js';
import { schemaRule } from './schema.js';
import { scopeRule } from './scope.js';
import { piiRule, secretRule } from './secrets.js';
import { secretCategoriesIn } from './sensitive.js';
import { truncate } from './text.js';
import { ttlRule } from './ttl.js';
import type {
  BatchView,
  FactMatch,
  HardRule,
  JudgeContext,
  Judgement,
  MemoryPlace,
  MemoryPlan,
  MemoryRef,
  RuleEvaluation,
  RuleResult,
} from './types.js';

/** Every hard rule, in evaluation order (the order of `RULE_NAMES`). */
export const HARD_RULES: readonly HardRule[] = [
  schemaRule,
  evidenceRule,
  deniedNamespaceRule,
  confidenceRule,
  scopeRule,
  secretRule,
  piiRule,
  injectionRule,
  ttlRule,
  dedupeRule,
  quotaRule,
];

const MAX_REASON_CHARS = 500;
const MAX_NOTE_CHARS = 500;

interface Planned {
  readonly candidateIndex: number;
  readonly plan: MemoryPlan;
  readonly hash: string;
  status: 'ACTIVE' | 'QUARANTINED' | 'SUPERSEDED';
}

const samePlace = (plan: MemoryPlan, place: MemoryPlace): boolean =>
  plan.ownerId === place.ownerId && plan.scope === place.scope && plan.orgId === place.orgId;

/** The store as the batch has changed it so far (see `BatchView`). */
class Batch implements BatchView {
  readonly #ctx: JudgeContext;
  readonly #planned: Planned[] = [];
  readonly #supersededStored = new Set<string>();
  #activeDelta = 0;
  readonly #typeDelta = new Map<MemoryType, number>();
  #evergreenDelta = 0;

  constructor(ctx: JudgeContext) {
    this.#ctx = ctx;
  }

  async findDuplicate(hash: string, place: MemoryPlace): Promise<MemoryRef | undefined> {
    const planned = this.#planned.find(
      (p) => p.status !== 'SUPERSEDED' && p.hash === hash && samePlace(p.plan, place),
    );
    if (planned !== undefined) return { kind: 'planned', candidateIndex: planned.candidateIndex };
    const id = await this.#ctx.lookups.findByContentHash(hash, place);
    return id === undefined || this.#supersededStored.has(id) ? undefined : { kind: 'stored', id };
  }

  async findActiveFact(namespace: string, key: string, place: MemoryPlace): Promise<FactMatch | undefined> {
    const planned = this.#planned.findLast(
      (p) =>
        p.status === 'ACTIVE' &&
        p.plan.type === 'FACT' &&
        p.plan.namespace === namespace &&
        p.plan.key === key &&
        samePlace(p.plan, place),
    );
    if (planned !== undefined) {
      const { plan } = planned;
      return {
        ref: { kind: 'planned', candidateIndex: planned.candidateIndex },
        sourceKind: plan.sourceKind,
        confidence: plan.confidence,
        ...(plan.value !== undefined ? { value: plan.value } : {}),
        text: plan.text,
        evergreen: plan.evergreen,
      };
    }
    const stored = await this.#ctx.lookups.findActiveFact(namespace, key, place);
    if (stored === undefined || this.#supersededStored.has(stored.id)) return undefined;
    const { id, ...fact } = stored;
    return { ...fact, ref: { kind: 'stored', id } };
  }

  async countActive(type?: MemoryType): Promise<number> {
    const stored = await this.#ctx.lookups.countActive(this.#ctx.owner, type);
    return stored + (type === undefined ? this.#activeDelta : (this.#typeDelta.get(type) ?? 0));
  }

  async countActiveEvergreen(): Promise<number> {
    return (await this.#ctx.lookups.countActiveEvergreen(this.#ctx.owner)) + this.#evergreenDelta;
  }

  async missingEvidence(evidence: Candidate['evidence']): Promise<readonly string[] | undefined> {
    const lookups = this.#ctx.lookups;
    return lookups.missingEvidence === undefined ? undefined : await lookups.missingEvidence(evidence);
  }

  /** Applies a decision to the view the next candidates get. */
  record(judgement: Judgement, replaced: FactMatch | undefined): void {
    const plan = judgement.memory;
    if (plan === undefined || judgement.contentHash === undefined) return;
    this.#planned.push({
      candidateIndex: judgement.candidateIndex,
      plan,
      hash: judgement.contentHash,
      status: plan.status,
    });
    if (plan.status !== 'ACTIVE') return;
    if (replaced === undefined) {
      this.#activeDelta++;
      this.#typeDelta.set(plan.type, (this.#typeDelta.get(plan.type) ?? 0) + 1);
    } else if (replaced.ref.kind === 'stored') {
      this.#supersededStored.add(replaced.ref.id);
    } else {
      const ref = replaced.ref;
      const earlier = this.#planned.find((p) => p.candidateIndex === ref.candidateIndex);
      if (earlier !== undefined) earlier.status = 'SUPERSEDED';
    }
    this.#evergreenDelta += Number(plan.evergreen) - Number(replaced?.evergreen === true);
  }
}

function trace(rule: RuleName, result: RuleResult): RuleEvaluation {
  return {
    rule,
    verdict: result.verdict,
    ...(result.note !== undefined && result.note !== ''
      ? { note: truncate(result.note, MAX_NOTE_CHARS) }
      : {}),
    ...(result.field !== undefined ? { field: result.field } : {}),
    ...(result.details !== undefined ? { details: result.details } : {}),
  };
}

const sentence = (text: string): string =>
  truncate(/[.!?。]$/.test(text) ? text : `${text}.`, MAX_REASON_CHARS);

/** Where a rule stopped the evaluation, or first held the candidate. */
interface Marker {
  readonly rule: RuleName;
  readonly result: RuleResult;
}

/** Judges one candidate against the batch so far. */
async function judgeOne(
  candidate: Candidate,
  candidateIndex: number,
  ctx: JudgeContext,
  batch: Batch,
): Promise<{ judgement: Judgement; replaced?: FactMatch }> {
  const { lookups: _lookups, ...base } = ctx;
  const evaluations: RuleEvaluation[] = [];
  let current = candidate;
  let stop: Marker | undefined;
  let held: Marker | undefined;
  let supersedes: FactMatch | undefined;
  let last: RuleName = 'schema';
  const adjustedBy: RuleName[] = [];

  for (const rule of HARD_RULES) {
    if (stop !== undefined) {
      evaluations.push({ rule: rule.name, verdict: 'NOT_EVALUATED' });
      continue;
    }
    if (!MANDATORY_RULES.includes(rule.name) && !isRuleEnabled(ctx.policy, rule.name)) {
      evaluations.push({ rule: rule.name, verdict: 'NOT_EVALUATED', note: 'disabled by the policy' });
      continue;
    }
    const result = await rule.evaluate(current, {
      ...base,
      candidateIndex,
      batch,
      progress: { held: held !== undefined, ...(supersedes !== undefined ? { supersedes } : {}) },
    });
    evaluations.push(trace(rule.name, result));
    last = rule.name;
    if (result.candidate !== undefined) current = result.candidate;
    switch (result.verdict) {
      case 'REJECTED':
      case 'DUPLICATE':
        stop = { rule: rule.name, result };
        break;
      case 'QUARANTINED':
        held ??= { rule: rule.name, result };
        break;
      case 'SUPERSEDES':
        supersedes = result.supersedes;
        break;
      case 'ADJUSTED':
        adjustedBy.push(rule.name);
        break;
      case 'PASSED':
        break;
    }
  }

  const common = { candidateIndex, evaluations };
  if (stop !== undefined) {
    const { rule, result } = stop;
    const note = result.note ?? '';
    if (result.verdict === 'DUPLICATE' && result.duplicateOf !== undefined) {
      return {
        judgement: {
          ...common,
          outcome: 'MERGED_DUPLICATE',
          decidingRule: rule,
          reason: sentence(`Duplicate of ${describeRef(result.duplicateOf)}; nothing written`),
          duplicateOf: result.duplicateOf,
          ...(result.duplicateOf.kind === 'stored' ? { duplicateOfId: result.duplicateOf.id } : {}),
        },
      };
    }
    return {
      judgement: {
        ...common,
        outcome: 'REJECTED',
        decidingRule: rule,
        reason: sentence(`Rejected by ${rule}: ${note}`),
        rejection: {
          reason: result.reason ?? 'MEMORY_REJECTED',
          ...(result.field !== undefined ? { field: result.field } : {}),
          ...(result.details !== undefined ? { details: result.details } : {}),
        },
      },
    };
  }

  // The rules guarantee it; this keeps a bug in a rule (or a new one) from ever storing a secret.
  if (contentPieces(current).some((piece) => secretCategoriesIn(piece.text).size > 0)) {
    return {
      judgement: {
        ...common,
        outcome: 'REJECTED',
        decidingRule: 'secret_denial',
        reason: sentence('Rejected by secret_denial: a secret remained after the rules ran'),
        rejection: { reason: 'MEMORY_REJECTED' },
      },
    };
  }

  const contentHash = contentHashOf(current);
  if (held !== undefined) {
    const note = held.result.note ?? '';
    return {
      judgement: {
        ...common,
        outcome: 'QUARANTINED',
        decidingRule: held.rule,
        reason: sentence(`Quarantined by ${held.rule}: ${note}; held for review`),
        memory: planMemory(
          current,
          ctx,
          'QUARANTINED',
          truncate(`${held.rule}: ${note}`, MAX_NOTE_CHARS),
          undefined,
        ),
        contentHash,
      },
    };
  }
  const adjusted = adjustedBy.length > 0 ? ` (adjusted by ${adjustedBy.join(', ')})` : '';
  if (supersedes !== undefined) {
    const storedId = supersedes.ref.kind === 'stored' ? supersedes.ref.id : undefined;
    return {
      judgement: {
        ...common,
        outcome: 'SUPERSEDED',
        decidingRule: 'dedupe_supersede',
        reason: sentence(`Accepted${adjusted}; supersedes ${describeRef(supersedes.ref)}`),
        memory: planMemory(current, ctx, 'ACTIVE', '', storedId),
        contentHash,
        supersedes: supersedes.ref,
        ...(storedId !== undefined ? { supersedesId: storedId } : {}),
      },
      replaced: supersedes,
    };
  }
  return {
    judgement: {
      ...common,
      outcome: 'ACCEPTED',
      decidingRule: last,
      reason: sentence(`Accepted${adjusted}`),
      memory: planMemory(current, ctx, 'ACTIVE', '', undefined),
      contentHash,
    },
  };
}

/**
 * Judges `candidates` in order with the hard rules of `ctx.policy`, each seeing the decisions on
 * the earlier ones, and returns one judgement per candidate, in order. Writes nothing; rejects
 * only when a lookup fails (a refused candidate is a REJECTED judgement, never an error).
 */
export async function judge(candidates: readonly Candidate[], ctx: JudgeContext): Promise<Judgement[]> {
  const batch = new Batch(ctx);
  const judgements: Judgement[] = [];
  for (const [index, candidate] of candidates.entries()) {
    const { judgement, replaced } = await judgeOne(candidate, index, ctx, batch);
    batch.record(judgement, replaced);
    judgements.push(judgement);
  }
  return judgements;
}
