/**
 * The wire side of `RetrievalService.Search`: request validation (search.proto and the Search
 * comment in retrieval_service.proto) and minimal mappers from stored rows to the contracts'
 * `Memory`, `Chunk`, `Document` and `Round` messages.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
import { ItemKind } from '@engram/contracts/common';
import {
  Fusion,
  Recency,
  type RoundSchema,
  type ScoreBreakdownSchema,
  type SearchOptionsSchema,
  type SearchRequest,
} from '@engram/contracts/retrieval';
import { detectLanguage } from '@engram/lexical';
import {
  MEMORY_TYPES as TYPES,
  SCOPES,
  ULID_PATTERN,
  chunkMessage,
  documentMessage,
  memoryMessage,
} from '@engram/resources';
import { errors, type Principal } from '@engram/runtime';
import type { MemoryType, MessageRecord, Scope } from '@engram/store';
import type { ItemKind as PointKind } from '@engram/vector-index';
import { asksCurrentState, queryForm, queryTimeWindow, type QueryTimeWindow } from './domain/query.js';
import {
  resolveRankingOptions,
  type Fusion as FusionName,
  type QueryForm,
  type QueryLanguage,
  type RankingOptions,
  type Recency as RecencyName,
  type ScoreBreakdown,
} from './domain/ranking.js';

/** Limits documented on SearchRequest and SearchFilter. */
export const MAX_QUERY_CHARS = 4_000;
export const DEFAULT_CANDIDATE_MULTIPLE = 4;
export const MAX_CANDIDATE_MULTIPLE = 20;
/** The reranker scores `3 × top_k` candidates by default, at most this many. */
export const MAX_RERANK_CANDIDATES = 100;
const MAX_KINDS = 3;
const MAX_MEMORY_TYPES = 5;
const MAX_NAMESPACES = 20;
const MAX_NAMESPACE_CHARS = 128;
const NAMESPACE = /^[a-z0-9_.-]+$/;
const MAX_SCOPES = 3;
const MAX_ORG_IDS = 20;
const MAX_NAMES = 50;

const SESSION_NAME = new RegExp(`^sessions/(${ULID_PATTERN})$`);
const DOCUMENT_NAME = new RegExp(`^documents/(${ULID_PATTERN})$`);

/** A validated search request: everything the handler needs, in domain terms. */
export interface SearchPlan {
  /** The query without leading and trailing whitespace. */
  readonly query: string;
  /** Ranking options with every default applied (`topK` included). */
  readonly options: RankingOptions;
  readonly candidateMultiple: number;
  /** The query's language (the date grammar; the bilingual embedder reads it itself). */
  readonly language: QueryLanguage;
  /** Question, statement or keywords: the default weights. */
  readonly form: QueryForm;
  /** The time the query names, resolved against the reference time (unset: none, or weight 0). */
  readonly window?: QueryTimeWindow;
  /** The query asks how something stands now (newer statements first). */
  readonly currentState: boolean;
  /** Whether to use the configured reranker, and on how many candidates. */
  readonly rerank: { readonly enabled: boolean; readonly candidates: number };
  /** The decay's "now" (epoch ms). */
  readonly referenceTime: number;
  readonly explain: boolean;
  readonly allowDegraded: boolean;
  readonly filter: SearchFilterPlan;
}

/** The request's narrowing filters, validated. Empty lists mean "any". */
export interface SearchFilterPlan {
  /** The kinds to search (never empty: all three when the request names none). */
  readonly kinds: readonly PointKind[];
  readonly memoryTypes: readonly MemoryType[];
  readonly namespaces: readonly string[];
  readonly minConfidence?: number;
  readonly scopes: readonly Scope[];
  /** ORG items only of these orgs (each a member org of the credential); empty: every org. */
  readonly orgIds: readonly string[];
  readonly sessionIds: readonly string[];
  readonly documentIds: readonly string[];
  /** Effective time (occur time, else create time) in [gte, lt). */
  readonly occurTime?: { readonly gte?: number; readonly lt?: number };
}

const KIND_NAMES: Partial<Record<ItemKind, PointKind>> = {
  [ItemKind.MEMORY]: 'MEMORY',
  [ItemKind.CHUNK]: 'CHUNK',
  [ItemKind.ROUND]: 'ROUND',
};
export const KIND_ENUMS: Record<PointKind, ItemKind> = {
  MEMORY: ItemKind.MEMORY,
  CHUNK: ItemKind.CHUNK,
  ROUND: ItemKind.ROUND,
};

/** The key of `record` whose value is `value`, if any (reverse enum lookup). */
function keyOf<K extends string, V>(record: Record<K, V>, value: V): K | undefined {
  return (Object.keys(record) as K[]).find((k) => record[k] === value);
}

/** Distinct values, in first-seen order. */
function distinct<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

function atMost(field: string, values: readonly unknown[], max: number): void {
  if (values.length > max) throw errors.fieldInvalid(field, `at most ${String(max)} entries`);
}

/** Enum values to domain names; UNSPECIFIED or unknown values are FIELD_INVALID. */
function enumValues<E extends number, K extends string>(
  field: string,
  values: readonly E[],
  max: number,
  names: Readonly<Record<K, E>> | Readonly<Partial<Record<E, K>>>,
  reverse: boolean,
): K[] {
  atMost(field, values, max);
  return distinct(
    values.map((v) => {
      const name = reverse ? keyOf(names as Record<K, E>, v) : (names as Partial<Record<E, K>>)[v];
      if (name === undefined) throw errors.fieldInvalid(field, `unspecified or unknown value ${String(v)}`);
      return name;
    }),
  );
}

function names(field: string, values: readonly string[], pattern: RegExp, shape: string): string[] {
  atMost(field, values, MAX_NAMES);
  return distinct(
    values.map((name) => {
      const id = pattern.exec(name)?.[1];
      if (id === undefined) {
        throw errors.invalidArgument('NAME_INVALID', `${field} entries must look like ${shape}`, {
          field,
          pattern: shape,
        });
      }
      return id;
    }),
  );
}

/**
 * An optional enum option as its domain name (the generated enum's name without its prefix, e.g.
 * `FUSION_SCORE` → `SCORE`): unset or UNSPECIFIED → undefined; a value the enum lacks →
 * FIELD_INVALID.
 */
function enumOption(
  field: string,
  value: number | undefined,
  enumeration: Readonly<Record<number, string>>,
): string | undefined {
  if (value === undefined || value === 0) return undefined;
  const name = enumeration[value];
  if (name === undefined) throw errors.fieldInvalid(field, `unknown value ${String(value)}`);
  return name;
}

/** Maps a RangeError of `resolveRankingOptions` to the request field it is about. */
const OPTION_FIELDS: readonly (readonly [string, string])[] = [
  ['vectorWeight and textWeight', 'options.vector_weight'],
  ['vectorWeight', 'options.vector_weight'],
  ['textWeight', 'options.text_weight'],
  ['halfLifeDays', 'options.half_life_days'],
  ['mmrLambda', 'options.mmr_lambda'],
  ['recencyWeight', 'options.recency_weight'],
  ['timeWindowWeight', 'options.time_window_weight'],
  ['rerankWeight', 'options.rerank_weight'],
  ['coverageThreshold', 'options.coverage_threshold'],
  ['rrfK', 'options.rrf_k'],
  ['newerFirstSimilarity', 'options.newer_first_similarity'],
  ['newerFirstRelevance', 'options.newer_first_relevance'],
  ['topK', 'top_k'],
  ['minScore', 'options.min_score'],
];

function rankingOptions(request: SearchRequest, form: QueryForm): RankingOptions {
  const o = request.options;
  const fusion = enumOption('options.fusion', o?.fusion, Fusion) as FusionName | undefined;
  const recency = enumOption('options.recency', o?.recency, Recency) as RecencyName | undefined;
  try {
    return resolveRankingOptions(
      {
        vectorWeight: o?.vectorWeight,
        textWeight: o?.textWeight,
        fusion,
        rrfK: o?.rrfK,
        recency,
        recencyWeight: o?.recencyWeight,
        timeWindowWeight: o?.timeWindowWeight,
        rerankWeight: o?.rerankWeight,
        coverageThreshold: o?.coverageThreshold,
        newerFirst: o?.newerFirst,
        newerFirstSimilarity: o?.newerFirstSimilarity,
        newerFirstRelevance: o?.newerFirstRelevance,
        decayEnabled: o?.decayEnabled,
        halfLifeDays: o?.halfLifeDays,
        mmrEnabled: o?.mmrEnabled,
        mmrLambda: o?.mmrLambda,
        topK: request.topK,
        minScore: o?.minScore,
      },
      form,
    );
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    const field = OPTION_FIELDS.find(([prefix]) => error.message.startsWith(prefix))?.[1] ?? 'options';
    throw errors.fieldInvalid(field, error.message);
  }
}

/** Length in Unicode code points (a surrogate pair counts once). */
function codePoints(text: string): number {
  return text.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, '_').length;
}

/** Validates a request against the documented limits and the caller's credential. */
export function searchPlan(request: SearchRequest, principal: Principal, now: number): SearchPlan {
  const query = request.query.trim();
  if (query === '') throw errors.fieldRequired('query');
  if (codePoints(query) > MAX_QUERY_CHARS) {
    throw errors.fieldInvalid('query', `at most ${String(MAX_QUERY_CHARS)} characters`);
  }
  if (request.topK < 0 || request.topK > 100) throw errors.fieldInvalid('top_k', 'must be within 0-100');
  const language: QueryLanguage = detectLanguage(query) === 'zh' ? 'zh' : 'en';
  const form = queryForm(query, language);
  const options = rankingOptions(request, form);
  const multiple = request.options?.candidateMultiple ?? DEFAULT_CANDIDATE_MULTIPLE;
  if (multiple < 1 || multiple > MAX_CANDIDATE_MULTIPLE) {
    throw errors.fieldInvalid(
      'options.candidate_multiple',
      `must be an integer within 1-${String(MAX_CANDIDATE_MULTIPLE)}`,
    );
  }
  const rerankCandidates = request.options?.rerankCandidates;
  if (rerankCandidates !== undefined && (rerankCandidates < 1 || rerankCandidates > MAX_RERANK_CANDIDATES)) {
    throw errors.fieldInvalid(
      'options.rerank_candidates',
      `must be an integer within 1-${String(MAX_RERANK_CANDIDATES)}`,
    );
  }
  const reference = request.options?.referenceTime;
  const referenceTime = reference === undefined ? now : timestampMs(reference);
  const window = options.timeWindowWeight > 0 ? queryTimeWindow(query, language, referenceTime) : undefined;
  return {
    query,
    options,
    candidateMultiple: multiple,
    language,
    form,
    ...(window === undefined ? {} : { window }),
    currentState: asksCurrentState(query, language),
    rerank: {
      enabled: request.options?.rerankEnabled ?? true,
      candidates: Math.max(
        options.topK,
        Math.min(MAX_RERANK_CANDIDATES, rerankCandidates ?? 3 * options.topK),
      ),
    },
    referenceTime,
    explain: request.explain,
    allowDegraded: request.allowDegraded,
    filter: filterPlan(request, principal),
  };
}

function filterPlan(request: SearchRequest, principal: Principal): SearchFilterPlan {
  const f = request.filter;
  if (f === undefined) return { ...EMPTY_FILTER };
  const kinds = enumValues('filter.kinds', f.kinds, MAX_KINDS, KIND_NAMES, false);
  const memoryTypes = enumValues('filter.memory_types', f.memoryTypes, MAX_MEMORY_TYPES, TYPES, true);
  atMost('filter.namespaces', f.namespaces, MAX_NAMESPACES);
  for (const ns of f.namespaces) {
    if (ns.length > MAX_NAMESPACE_CHARS || !NAMESPACE.test(ns)) {
      throw errors.fieldInvalid('filter.namespaces', 'each up to 128 characters of [a-z0-9_.-]');
    }
  }
  if (f.minConfidence !== undefined && !(f.minConfidence >= 0 && f.minConfidence <= 1)) {
    throw errors.fieldInvalid('filter.min_confidence', 'must be within [0, 1]');
  }
  const scopes = enumValues('filter.scopes', f.scopes, MAX_SCOPES, SCOPES, true);
  if (scopes.includes('PLATFORM') && !principal.roles.includes('platform')) {
    throw errors.permissionDenied('SCOPE_NOT_ALLOWED', 'SCOPE_PLATFORM requires the "platform" role', {
      scope: 'SCOPE_PLATFORM',
    });
  }
  atMost('filter.org_ids', f.orgIds, MAX_ORG_IDS);
  for (const org of f.orgIds) {
    if (!principal.orgIds.includes(org)) {
      throw errors.permissionDenied('SCOPE_NOT_ALLOWED', 'the credential is not a member of this org', {
        org_id: org,
      });
    }
  }
  const sessionIds = names('filter.sessions', f.sessions, SESSION_NAME, 'sessions/{session}');
  const documentIds = names('filter.documents', f.documents, DOCUMENT_NAME, 'documents/{document}');
  let occurTime: SearchFilterPlan['occurTime'];
  if (f.occurTime !== undefined) {
    const gte = f.occurTime.startTime === undefined ? undefined : timestampMs(f.occurTime.startTime);
    const lt = f.occurTime.endTime === undefined ? undefined : timestampMs(f.occurTime.endTime);
    if (gte !== undefined && lt !== undefined && lt <= gte) {
      throw errors.invalidArgument('TIME_RANGE_INVALID', 'filter.occur_time must end after its start', {
        field: 'filter.occur_time',
      });
    }
    occurTime = { ...(gte === undefined ? {} : { gte }), ...(lt === undefined ? {} : { lt }) };
  }
  return {
    kinds: kinds.length === 0 ? EMPTY_FILTER.kinds : kinds,
    memoryTypes,
    namespaces: distinct(f.namespaces),
    ...(f.minConfidence === undefined ? {} : { minConfidence: f.minConfidence }),
    scopes,
    orgIds: distinct(f.orgIds),
    sessionIds,
    documentIds,
    ...(occurTime === undefined ? {} : { occurTime }),
  };
}

/** The filter of a request that names none: every kind, no narrowing. */
export const EMPTY_FILTER: SearchFilterPlan = {
  kinds: ['MEMORY', 'CHUNK', 'ROUND'],
  memoryTypes: [],
  namespaces: [],
  scopes: [],
  orgIds: [],
  sessionIds: [],
  documentIds: [],
};

/** The effective options echoed in `SearchStats.applied_options`. */
export function appliedOptions(
  options: RankingOptions,
  candidateMultiple: number,
  referenceTime: number,
  rerank: { readonly enabled: boolean; readonly candidates: number },
): MessageInitShape<typeof SearchOptionsSchema> {
  return {
    vectorWeight: options.vectorWeight,
    textWeight: options.textWeight,
    fusion: Fusion[options.fusion],
    rrfK: options.rrfK,
    recency: Recency[options.recency],
    recencyWeight: options.recencyWeight,
    timeWindowWeight: options.timeWindowWeight,
    rerankEnabled: rerank.enabled,
    rerankCandidates: rerank.candidates,
    rerankWeight: options.rerankWeight,
    coverageThreshold: options.coverageThreshold,
    newerFirst: options.newerFirst,
    newerFirstSimilarity: options.newerFirstSimilarity,
    newerFirstRelevance: options.newerFirstRelevance,
    decayEnabled: options.decayEnabled,
    halfLifeDays: options.halfLifeDays,
    referenceTime: timestampFromMs(referenceTime),
    mmrEnabled: options.mmrEnabled,
    mmrLambda: options.mmrLambda,
    candidateMultiple,
    minScore: options.minScore,
  };
}

/** A ranking breakdown as the API's `ScoreBreakdown`. */
export function breakdownMessage(
  b: ScoreBreakdown,
  matchedTerms: readonly string[],
): MessageInitShape<typeof ScoreBreakdownSchema> {
  return {
    ...(b.vectorRaw === undefined ? {} : { vectorRaw: b.vectorRaw }),
    vectorNormalized: b.vectorNormalized,
    denseRank: b.denseRank,
    ...(b.textRaw === undefined ? {} : { textRaw: b.textRaw }),
    textNormalized: b.textNormalized,
    lexicalRank: b.lexicalRank,
    matchedTerms: [...matchedTerms],
    fused: b.fused,
    ...(b.rerankScore === undefined ? {} : { rerankScore: b.rerankScore }),
    timeWindowFactor: b.timeWindowFactor,
    relevance: b.relevance,
    recencyMultiplier: b.recencyMultiplier,
    ageDays: b.ageDays,
    decayFactor: b.decayFactor,
    maxSimilarity: b.maxSimilarity,
    supersedes: b.supersedes ?? '',
    mmrPenalty: b.mmrPenalty,
    mmrScore: b.mmrScore,
    finalScore: b.finalScore,
  };
}

/** The text of a round: the user content, then — if answered — `\n\n` and the reply's content. */
export function roundText(user: MessageRecord, reply: MessageRecord | undefined): string {
  return reply === undefined ? user.content : `${user.content}\n\n${reply.content}`;
}

/** A round (a user message and its first reply) as the API's `Round`. */
export function roundMessage(
  user: MessageRecord,
  reply: MessageRecord | undefined,
): MessageInitShape<typeof RoundSchema> {
  const session = `sessions/${user.sessionId}`;
  return {
    session,
    userMessage: `${session}/messages/${user.id}`,
    assistantMessage: reply === undefined ? '' : `${session}/messages/${reply.id}`,
    firstSequence: BigInt(user.sequence),
    lastSequence: BigInt(reply?.sequence ?? user.sequence),
    text: roundText(user, reply),
    occurTime: timestampFromMs(user.occurredAt),
  };
}

export { chunkMessage, documentMessage, memoryMessage };
