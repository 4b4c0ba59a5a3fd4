import type { MessageInitShape } from '@bufbuild/protobuf';
import {
  durationFromMs,
  durationMs,
  timestampFromMs,
  timestampMs,
  type Timestamp,
} from '@bufbuild/protobuf/wkt';
import { Scope as ScopeEnum } from '@engram/contracts/common';
import {
  DecisionOutcome,
  Extractor,
  ExtractionJobState,
  ExtractorRunState,
  MemoryOrder,
  RuleVerdict,
  SourceKind as SourceKindEnum,
  type CandidateMemory,
  type CandidateMemorySchema,
  type ListMemoriesRequest,
  type Memory,
  type MemorySchema,
} from '@engram/contracts/governance';
import {
  checkedTimestampMs,
  MEMORY_STATUS_NAMES,
  MEMORY_TYPE_NAMES,
  MEMORY_TYPES as TYPES,
  SCOPE_NAMES,
  SOURCE_KIND_NAMES,
  SCOPES,
  SOURCE_KINDS as SOURCES,
  asJsonObject,
  evidenceFromNames,
  evidenceNames,
  memoryMessage,
} from '@engram/resources';
import { errors } from '@engram/runtime';
import type { ExtractionJobState as StoredJobState, MemoryFilter, MemoryRecord } from '@engram/store';
import type { Candidate, ExtractorName, SourceKind } from './domain/candidate.js';

const MAX_REASON_CHARS = 1_000;

/** A `reason` of a request: at most 1,000 characters (FIELD_INVALID). */
export function checkReason(reason: string): void {
  if (Array.from(reason).length > MAX_REASON_CHARS) {
    throw errors.fieldInvalid('reason', `at most ${MAX_REASON_CHARS} characters`);
  }
}

/** Enum values of a repeated filter as the store's names (UNSPECIFIED or unknown: FIELD_INVALID). */
export function enumNames<E extends number, N>(
  values: readonly E[],
  table: Partial<Record<E, N>>,
  field: string,
): N[] {
  return values.map((v) => {
    const name = table[v];
    if (name === undefined) throw errors.fieldInvalid(field, 'UNSPECIFIED or unknown value');
    return name;
  });
}

export const EXTRACTORS: Record<ExtractorName, Extractor> = {
  EPISODE: Extractor.EPISODE,
  EVENT: Extractor.EVENT,
  FORESIGHT: Extractor.FORESIGHT,
  FACT: Extractor.FACT,
};
export const JOB_STATES: Record<StoredJobState, ExtractionJobState> = {
  PENDING: ExtractionJobState.PENDING,
  RUNNING: ExtractionJobState.RUNNING,
  SUCCEEDED: ExtractionJobState.SUCCEEDED,
  FAILED: ExtractionJobState.FAILED,
};
export const RUN_STATES = {
  PENDING: ExtractorRunState.PENDING,
  RUNNING: ExtractorRunState.RUNNING,
  SUCCEEDED: ExtractorRunState.SUCCEEDED,
  FAILED: ExtractorRunState.FAILED,
  SKIPPED: ExtractorRunState.SKIPPED,
} as const;
export const OUTCOMES = {
  ACCEPTED: DecisionOutcome.ACCEPTED,
  SUPERSEDED: DecisionOutcome.SUPERSEDED,
  MERGED_DUPLICATE: DecisionOutcome.MERGED_DUPLICATE,
  REJECTED: DecisionOutcome.REJECTED,
  QUARANTINED: DecisionOutcome.QUARANTINED,
} as const;
export const VERDICTS = {
  PASSED: RuleVerdict.PASSED,
  ADJUSTED: RuleVerdict.ADJUSTED,
  REJECTED: RuleVerdict.REJECTED,
  QUARANTINED: RuleVerdict.QUARANTINED,
  DUPLICATE: RuleVerdict.DUPLICATE,
  SUPERSEDES: RuleVerdict.SUPERSEDES,
  NOT_EVALUATED: RuleVerdict.NOT_EVALUATED,
} as const;

/** The extractors of a request: empty means all four; UNSPECIFIED or repeated is FIELD_INVALID. */
export function requestedExtractors(extractors: readonly Extractor[]): ExtractorName[] {
  if (extractors.length === 0) return ['EPISODE', 'EVENT', 'FORESIGHT', 'FACT'];
  const names = extractors.map((e) => {
    const name = (Object.keys(EXTRACTORS) as ExtractorName[]).find((k) => EXTRACTORS[k] === e);
    if (name === undefined)
      throw errors.fieldInvalid('extractors', 'EXTRACTOR_UNSPECIFIED or unknown extractor');
    return name;
  });
  if (new Set(names).size !== names.length)
    throw errors.fieldInvalid('extractors', 'an extractor is repeated');
  return names;
}

/**
 * The times of a memory: its field path (the name FIELD_INVALID gives), its field in `Memory` and
 * `CandidateMemory`, and its field in the domain's candidate.
 */
const MEMORY_TIMES = {
  expire_time: { wire: 'expireTime', field: 'expiresAt' },
  occur_time: { wire: 'occurTime', field: 'occurredAt' },
  valid_from_time: { wire: 'validFromTime', field: 'validFrom' },
  valid_until_time: { wire: 'validUntilTime', field: 'validUntil' },
} as const;
type TimePath = keyof typeof MEMORY_TIMES;
type WireTimes = { readonly [P in TimePath as (typeof MEMORY_TIMES)[P]['wire']]?: Timestamp | undefined };
type CandidateTimes = { -readonly [P in TimePath as (typeof MEMORY_TIMES)[P]['field']]?: number };

const ms = (t: Timestamp | undefined, field: string) =>
  t === undefined ? undefined : checkedTimestampMs(t, field);
const at = (v: number | undefined) => (v === undefined ? undefined : timestampFromMs(v));

/** The times set on a client's memory or candidate, each checked. */
function candidateTimes(m: WireTimes): CandidateTimes {
  const times: CandidateTimes = {};
  for (const path of Object.keys(MEMORY_TIMES) as TimePath[]) {
    const { wire, field } = MEMORY_TIMES[path];
    const t = m[wire];
    if (t !== undefined) times[field] = checkedTimestampMs(t, path);
  }
  return times;
}

/** The candidate with one time replaced by the memory's (cleared when the memory has none). */
export function withTime(c: Candidate, path: TimePath, m: WireTimes): Candidate {
  const { wire, field } = MEMORY_TIMES[path];
  return { ...c, [field]: ms(m[wire], path) };
}

/** How {@link candidateFromWire} reads a `Memory` or a `CandidateMemory`. */
interface WireReading {
  /** A field's path in errors (`memory.type`, `candidates[0].type`). */
  readonly field: (name: string) => string;
  /** The scope asked for, and the name of its field (`scope`, `scope_hint`). */
  readonly scope: ScopeEnum;
  readonly scopeField: string;
  /** The source kind UNSPECIFIED stands for. */
  readonly sourceKind: SourceKind;
  /** The confidence (read after the kinds: its FIELD_REQUIRED comes after theirs). */
  readonly confidence: () => number;
  /** Fields that follow the confidence (a candidate's TTL hint). */
  readonly extra?: Partial<Candidate>;
}

/**
 * What `Memory` and `CandidateMemory` have in common, as the domain's candidate. Only what cannot be
 * represented is refused (an unknown enum value, UNSPECIFIED type).
 */
function candidateFromWire(m: Memory | CandidateMemory, how: WireReading): Candidate {
  const type = MEMORY_TYPE_NAMES[m.type];
  if (type === undefined) throw errors.fieldRequired(how.field('type'));
  const sourceKind =
    m.sourceKind === SourceKindEnum.UNSPECIFIED ? how.sourceKind : SOURCE_KIND_NAMES[m.sourceKind];
  if (sourceKind === undefined) throw errors.fieldInvalid(how.field('source_kind'), 'unknown source kind');
  const scopeHint = how.scope === ScopeEnum.UNSPECIFIED ? undefined : SCOPE_NAMES[how.scope];
  if (how.scope !== ScopeEnum.UNSPECIFIED && scopeHint === undefined) {
    throw errors.fieldInvalid(how.field(how.scopeField), 'unknown scope');
  }
  const confidence = how.confidence();
  return {
    type,
    ...(m.namespace !== '' ? { namespace: m.namespace } : {}),
    ...(m.key !== '' ? { key: m.key } : {}),
    ...(m.value !== undefined ? { value: m.value } : {}),
    text: m.text,
    ...(m.languageCode !== '' ? { languageCode: m.languageCode } : {}),
    sourceKind,
    ...(scopeHint !== undefined ? { scopeHint } : {}),
    ...(m.orgId !== '' ? { orgId: m.orgId } : {}),
    confidence,
    ...how.extra,
    ...candidateTimes(m),
    evidence: evidenceFromNames(m.evidence),
    evergreen: m.evergreen,
    metadata: { ...m.metadata },
  };
}

/** A client's `Memory` (CreateMemory) as a candidate of the hard rules. */
export function candidateFromMemory(m: Memory): Candidate {
  return candidateFromWire(m, {
    field: (name) => `memory.${name}`,
    scope: m.scope,
    scopeField: 'scope',
    sourceKind: 'EXPLICIT_USER_STATEMENT',
    confidence: () => m.confidence ?? 1,
  });
}

/**
 * A client's `CandidateMemory` as the domain's candidate. Only what cannot be represented is
 * refused here (an unknown enum value, UNSPECIFIED type); every other check is a hard rule, so it
 * is reported per candidate instead of failing the whole call.
 */
export function candidateFromMessage(
  c: CandidateMemory,
  index: number,
  defaults: { sourceKind: SourceKind },
): Candidate {
  const field = (f: string) => `candidates[${index}].${f}`;
  return candidateFromWire(c, {
    field,
    scope: c.scopeHint,
    scopeField: 'scope_hint',
    sourceKind: defaults.sourceKind,
    confidence: () => {
      if (c.confidence === undefined) throw errors.fieldRequired(field('confidence'));
      return c.confidence;
    },
    extra: {
      ...(c.ttlHint !== undefined ? { ttlHintMs: durationMs(c.ttlHint) } : {}),
      ...(c.ttlReason !== '' ? { ttlReason: c.ttlReason } : {}),
    },
  });
}

/** ListMemories' filters, checked, as the store's filter (`now` decides what has expired). */
export function memoryFilterOf(request: ListMemoriesRequest, now: number): MemoryFilter {
  if (request.session !== '') {
    throw errors.fieldInvalid('session', 'this filter is not supported by this server version yet');
  }
  if (request.order !== MemoryOrder.UNSPECIFIED && request.order !== MemoryOrder.CREATE_TIME_DESC) {
    throw errors.fieldInvalid(
      'order',
      'only MEMORY_ORDER_CREATE_TIME_DESC is supported by this server version',
    );
  }
  if (request.namespaces.length > 50) throw errors.fieldInvalid('namespaces', 'at most 50 values');
  if (request.keys.length > 50) throw errors.fieldInvalid('keys', 'at most 50 values');
  if (request.minConfidence !== undefined && !(request.minConfidence >= 0 && request.minConfidence <= 1)) {
    throw errors.fieldInvalid('min_confidence', 'range 0.0–1.0');
  }
  const types = enumNames(request.types, MEMORY_TYPE_NAMES, 'types');
  const statuses = enumNames(request.statuses, MEMORY_STATUS_NAMES, 'statuses');
  const scopes = enumNames(request.scopes, SCOPE_NAMES, 'scopes');
  const sourceKinds = enumNames(request.sourceKinds, SOURCE_KIND_NAMES, 'source_kinds');
  const occurred = timeRange(request.occurTime, 'occur_time');
  const created = timeRange(request.createTime, 'create_time');
  return {
    ...(types.length > 0 ? { types } : {}),
    ...(statuses.length > 0 ? { statuses } : {}),
    ...(request.namespaces.length > 0 ? { namespaces: request.namespaces } : {}),
    ...(request.keys.length > 0 ? { keys: request.keys } : {}),
    ...(scopes.length > 0 ? { scopes } : {}),
    ...(request.orgId !== '' ? { orgId: request.orgId } : {}),
    ...(request.owner !== '' ? { ownerId: request.owner } : {}),
    ...(request.evergreenOnly ? { evergreenOnly: true } : {}),
    ...(sourceKinds.length > 0 ? { sourceKinds } : {}),
    ...(request.minConfidence !== undefined ? { minConfidence: request.minConfidence } : {}),
    ...(occurred.from !== undefined ? { occurredFrom: occurred.from } : {}),
    ...(occurred.before !== undefined ? { occurredBefore: occurred.before } : {}),
    ...(created.from !== undefined ? { createdFrom: created.from } : {}),
    ...(created.before !== undefined ? { createdBefore: created.before } : {}),
    ...(request.validAt !== undefined ? { validAt: timestampMs(request.validAt) } : {}),
    now,
  };
}

/** A filter's time range, in epoch ms; one that ends at or before its start is TIME_RANGE_INVALID. */
function timeRange(r: ListMemoriesRequest['occurTime'], field: string) {
  const from = r?.startTime === undefined ? undefined : timestampMs(r.startTime);
  const before = r?.endTime === undefined ? undefined : timestampMs(r.endTime);
  if (from !== undefined && before !== undefined && before <= from) {
    throw errors.invalidArgument('TIME_RANGE_INVALID', `${field} ends at or before its start`, { field });
  }
  return { from, before };
}

/** A domain candidate as the API's `CandidateMemory` (evidence names need the session). */
export function candidateMessage(
  c: Candidate,
  sessionId: string | undefined,
): MessageInitShape<typeof CandidateMemorySchema> {
  const value = asJsonObject(c.value);
  return {
    type: TYPES[c.type],
    namespace: c.namespace ?? '',
    key: c.key ?? '',
    ...(value !== undefined ? { value } : {}),
    text: c.text,
    languageCode: c.languageCode ?? '',
    sourceKind: SOURCES[c.sourceKind],
    scopeHint: c.scopeHint === undefined ? ScopeEnum.UNSPECIFIED : SCOPES[c.scopeHint],
    orgId: c.orgId ?? '',
    confidence: c.confidence,
    ...(c.ttlHintMs !== undefined ? { ttlHint: durationFromMs(c.ttlHintMs) } : {}),
    ttlReason: c.ttlReason ?? '',
    ...(c.expiresAt !== undefined ? { expireTime: at(c.expiresAt) } : {}),
    ...(c.occurredAt !== undefined ? { occurTime: at(c.occurredAt) } : {}),
    ...(c.validFrom !== undefined ? { validFromTime: at(c.validFrom) } : {}),
    ...(c.validUntil !== undefined ? { validUntilTime: at(c.validUntil) } : {}),
    evidence: evidenceNames({
      ...c.evidence,
      chunkIds: c.evidence.chunkIds ?? [],
      ...(c.evidence.sessionId === undefined && sessionId !== undefined ? { sessionId } : {}),
    }),
    evergreen: c.evergreen ?? false,
    metadata: { ...c.metadata },
  };
}

/** A memory that was never stored (validate_only) as the API's `Memory`: no name, etag or version. */
export function unsavedMessage(record: MemoryRecord): MessageInitShape<typeof MemorySchema> {
  return { ...memoryMessage(record), name: '', etag: '', version: 0n };
}

export { memoryMessage };
