// Test doubles and synthetic data for the hard-rule specs (not used by the service). Secrets are
// generated at run time from a seed, and check digits computed here independently of
// `@engram/redaction`, so the source holds nothing a secret scanner would take for a real value.
import {
  memoryContentHash,
  type JsonValue,
  type MemoryType,
  type Scope,
  type SourceKind,
} from '@engram/store';
import type { Candidate } from '../candidate.js';
import { DEFAULT_POLICY, type GovernancePolicy } from './policy.js';
import type {
  ExistingFact,
  JudgeContext,
  Judgement,
  MemoryPlace,
  RuleEvaluation,
  RuleLookups,
} from './types.js';
import type { RuleName } from './policy.js';

/** 2025-01-15T10:00:00Z: the decision time of every spec. */
export const NOW = Date.UTC(2025, 0, 15, 10, 0, 0);
export const DAY = 86_400_000;

/** A well-formed ULID, distinct per `n`. */
export function testId(n: number): string {
  return `01HX${String(n).padStart(22, '0')}`;
}

/** A FACT candidate (explicit user statement, SELF, confidence 0.9) with `over` applied. */
export function fact(over: Partial<Candidate> = {}): Candidate {
  return {
    type: 'FACT',
    namespace: 'user_preference',
    key: 'answer_style',
    value: { style: 'concise' },
    text: 'The user prefers concise answers.',
    sourceKind: 'EXPLICIT_USER_STATEMENT',
    confidence: 0.9,
    evidence: { messageIds: [testId(1)] },
    ...over,
  };
}

/** An EVENT candidate with `over` applied. */
export function event(over: Partial<Candidate> = {}): Candidate {
  return {
    type: 'EVENT',
    text: 'The user moved to Hangzhou.',
    sourceKind: 'INFERRED',
    confidence: 0.8,
    evidence: { messageIds: [testId(2)] },
    ...over,
  };
}

/** A memory held by {@link FakeStore}. */
export interface StoredMemory {
  readonly id: string;
  readonly ownerId: string;
  readonly scope: Scope;
  readonly orgId: string;
  readonly type: MemoryType;
  readonly namespace: string;
  readonly key: string;
  readonly value?: JsonValue;
  readonly text: string;
  readonly sourceKind: SourceKind;
  readonly confidence: number;
  readonly evergreen: boolean;
  readonly status: 'ACTIVE' | 'QUARANTINED' | 'SUPERSEDED';
}

const samePlace = (m: StoredMemory, place: MemoryPlace) =>
  m.ownerId === place.ownerId && m.scope === place.scope && m.orgId === place.orgId;

/** The lookups port over an in-memory list, hashing like the repository does. */
export class FakeStore implements RuleLookups {
  readonly memories: StoredMemory[] = [];
  /** Evidence ids `missingEvidence` reports; set `checksEvidence` to offer that lookup at all. */
  readonly missing = new Set<string>();
  calls = 0;

  constructor(readonly checksEvidence = false) {
    if (!checksEvidence) (this as { missingEvidence?: unknown }).missingEvidence = undefined;
  }

  /** Adds a memory (default: an ACTIVE SELF FACT of `user-1`) and returns it. */
  add(over: Partial<StoredMemory> & { id: string }): StoredMemory {
    const memory: StoredMemory = {
      ownerId: 'user-1',
      scope: 'SELF',
      orgId: '',
      type: 'FACT',
      namespace: 'user_preference',
      key: 'answer_style',
      value: { style: 'detailed' },
      text: 'The user prefers detailed answers.',
      sourceKind: 'EXPLICIT_USER_STATEMENT',
      confidence: 0.9,
      evergreen: false,
      status: 'ACTIVE',
      ...over,
    };
    this.memories.push(memory);
    return memory;
  }

  /** Adds `count` ACTIVE EVENTs of `user-1`. */
  fill(count: number, type: MemoryType = 'EVENT', evergreen = false): void {
    for (let i = 0; i < count; i++) {
      this.add({
        id: `fill-${this.memories.length}`,
        type,
        namespace: '',
        key: '',
        text: `filler ${this.memories.length}`,
        evergreen,
      });
    }
  }

  findByContentHash(hash: string, place: MemoryPlace): string | undefined {
    this.calls++;
    return this.memories.find(
      (m) => m.status !== 'SUPERSEDED' && samePlace(m, place) && memoryContentHash(m) === hash,
    )?.id;
  }

  findActiveFact(namespace: string, key: string, place: MemoryPlace): ExistingFact | undefined {
    this.calls++;
    const m = this.memories.find(
      (x) =>
        x.status === 'ACTIVE' &&
        x.type === 'FACT' &&
        x.namespace === namespace &&
        x.key === key &&
        samePlace(x, place),
    );
    if (m === undefined) return undefined;
    return {
      id: m.id,
      sourceKind: m.sourceKind,
      confidence: m.confidence,
      ...(m.value !== undefined ? { value: m.value } : {}),
      text: m.text,
      evergreen: m.evergreen,
    };
  }

  countActive(ownerId: string, type?: MemoryType): number {
    this.calls++;
    return this.memories.filter(
      (m) => m.ownerId === ownerId && m.status === 'ACTIVE' && (type === undefined || m.type === type),
    ).length;
  }

  countActiveEvergreen(ownerId: string): number {
    this.calls++;
    return this.memories.filter((m) => m.ownerId === ownerId && m.status === 'ACTIVE' && m.evergreen).length;
  }

  missingEvidence?(evidence: Candidate['evidence']): readonly string[] {
    const ids = [
      ...evidence.messageIds,
      ...(evidence.memCellId === undefined ? [] : [evidence.memCellId]),
      ...(evidence.chunkIds ?? []),
    ];
    return ids.filter((id) => this.missing.has(id));
  }
}

/** A judge context: `user-1` of tenant `t1`, member of `org-a`, no roles, propose mode, default policy. */
export function context(
  over: Partial<JudgeContext> & { store?: FakeStore; policy?: GovernancePolicy } = {},
): JudgeContext {
  const { store, ...rest } = over;
  return {
    principal: { subject: 'user-1', tenantId: 't1', orgIds: ['org-a'], roles: [] },
    owner: 'user-1',
    now: NOW,
    policy: DEFAULT_POLICY,
    lookups: store ?? new FakeStore(),
    mode: 'propose',
    ...rest,
  };
}

/** The evaluation of `rule` in a judgement's trace. */
export function evaluationOf(judgement: Judgement | undefined, rule: RuleName): RuleEvaluation {
  const found = judgement?.evaluations.find((e) => e.rule === rule);
  if (found === undefined) throw new Error(`no evaluation of ${rule}`);
  return found;
}

/** mulberry32: reproducible randomness for synthetic secrets. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomFrom(alphabet: string, length: number, seed: number): string {
  const next = prng(seed);
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet.charAt(Math.floor(next() * alphabet.length));
  return out;
}

/** An OpenAI-style project key (`sk-proj-` + 40 mixed-case characters). */
export function fakeApiKey(seed: number): string {
  const body = `${randomFrom('ABCDEFGHJKLMNPQRSTUVWXYZ', 10, seed)}${randomFrom('abcdefghijkmnopqrstuvwxyz', 15, seed + 1)}${randomFrom('23456789', 15, seed + 2)}`;
  return ['s', 'k-', 'proj-', body].join('');
}

/** The Luhn check digit for `partial` (the digits before it). */
function luhnDigit(partial: string): string {
  let sum = 0;
  for (let i = 0; i < partial.length; i++) {
    let digit = Number(partial.charAt(partial.length - 1 - i));
    if (i % 2 === 0) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return String((10 - (sum % 10)) % 10);
}

/** A 16-digit Visa-range number that passes Luhn. */
export function fakeCardNumber(seed: number): string {
  const partial = `4${randomFrom('0123456789', 14, seed)}`;
  return partial + luhnDigit(partial);
}

/** A Chinese resident ID number (Beijing Dongcheng, born 1990-03-07) with a valid check character. */
export function fakeResidentId(seed: number): string {
  const first17 = `11010119900307${randomFrom('0123456789', 3, seed)}`;
  const weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
  let sum = 0;
  for (let i = 0; i < 17; i++) sum += Number(first17.charAt(i)) * (weights[i] ?? 0);
  return first17 + '10X98765432'.charAt(sum % 11);
}

/** A password nobody uses, built from the seed. */
export function fakePassword(seed: number): string {
  return `${randomFrom('ABCDEFGHJKLMNPQRSTUVWXYZ', 3, seed)}${randomFrom('abcdefghijkmnopqrstuvwxyz', 4, seed + 1)}${randomFrom('23456789', 3, seed + 2)}!`;
}
