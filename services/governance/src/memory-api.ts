import type { MessageInitShape } from '@bufbuild/protobuf';
import { durationMs, timestampFromMs, type Duration, type Timestamp } from '@bufbuild/protobuf/wkt';
import { Scope as ScopeEnum } from '@engram/contracts/common';
import {
  DecisionOutcome,
  Extractor,
  ExtractionJobState,
  ExtractorRunState,
  RuleVerdict,
  SourceKind as SourceKindEnum,
  type CandidateMemory,
  type CandidateMemorySchema,
} from '@engram/contracts/governance';
import { errors } from '@engram/runtime';
import {
  checkedTimestampMs,
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
import type { ExtractionJobState as StoredJobState } from '@engram/store';
import type { Candidate, ExtractorName, SourceKind } from './domain/candidate.js';

const ULID = '[0-9A-HJKMNP-TV-Z]{26}';
const MEM_CELL_NAME = new RegExp(`^sessions/(${ULID})/memCells/(${ULID})$`);
const JOB_NAME = new RegExp(`^extractionJobs/(${ULID})$`);
const MEMORY_NAME = new RegExp(`^memories/(${ULID})$`);

function badName(field: string, pattern: string): never {
  throw errors.invalidArgument('NAME_INVALID', `${field} must look like ${pattern}`, { field, pattern });
}

export function parseMemCellName(name: string, field = 'mem_cell'): { sessionId: string; memCellId: string } {
  if (name === '') throw errors.fieldRequired(field);
  const m = MEM_CELL_NAME.exec(name);
  if (m?.[1] === undefined || m[2] === undefined)
    return badName(field, 'sessions/{session}/memCells/{mem_cell}');
  return { sessionId: m[1], memCellId: m[2] };
}

export function parseJobName(name: string, field = 'name'): string {
  if (name === '') throw errors.fieldRequired(field);
  return JOB_NAME.exec(name)?.[1] ?? badName(field, 'extractionJobs/{extraction_job}');
}

export function parseMemoryName(name: string, field = 'name'): string {
  if (name === '') throw errors.fieldRequired(field);
  return MEMORY_NAME.exec(name)?.[1] ?? badName(field, 'memories/{memory}');
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

const ms = (t: Timestamp | undefined, field: string) =>
  t === undefined ? undefined : checkedTimestampMs(t, field);
const at = (v: number | undefined) => (v === undefined ? undefined : timestampFromMs(v));

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
  const type = MEMORY_TYPE_NAMES[c.type];
  if (type === undefined) throw errors.fieldRequired(field('type'));
  const sourceKind =
    c.sourceKind === SourceKindEnum.UNSPECIFIED ? defaults.sourceKind : SOURCE_KIND_NAMES[c.sourceKind];
  if (sourceKind === undefined) throw errors.fieldInvalid(field('source_kind'), 'unknown source kind');
  const scopeHint = c.scopeHint === ScopeEnum.UNSPECIFIED ? undefined : SCOPE_NAMES[c.scopeHint];
  if (c.scopeHint !== ScopeEnum.UNSPECIFIED && scopeHint === undefined) {
    throw errors.fieldInvalid(field('scope_hint'), 'unknown scope');
  }
  if (c.confidence === undefined) throw errors.fieldRequired(field('confidence'));
  const ttl = (d: Duration | undefined) => (d === undefined ? undefined : durationMs(d));
  return {
    type,
    ...(c.namespace !== '' ? { namespace: c.namespace } : {}),
    ...(c.key !== '' ? { key: c.key } : {}),
    ...(c.value !== undefined ? { value: c.value } : {}),
    text: c.text,
    ...(c.languageCode !== '' ? { languageCode: c.languageCode } : {}),
    sourceKind,
    ...(scopeHint !== undefined ? { scopeHint } : {}),
    ...(c.orgId !== '' ? { orgId: c.orgId } : {}),
    confidence: c.confidence,
    ...(c.ttlHint !== undefined ? { ttlHintMs: ttl(c.ttlHint) } : {}),
    ...(c.ttlReason !== '' ? { ttlReason: c.ttlReason } : {}),
    ...(c.expireTime !== undefined ? { expiresAt: ms(c.expireTime, 'expire_time') } : {}),
    ...(c.occurTime !== undefined ? { occurredAt: ms(c.occurTime, 'occur_time') } : {}),
    ...(c.validFromTime !== undefined ? { validFrom: ms(c.validFromTime, 'valid_from_time') } : {}),
    ...(c.validUntilTime !== undefined ? { validUntil: ms(c.validUntilTime, 'valid_until_time') } : {}),
    evidence: evidenceFromNames(c.evidence),
    evergreen: c.evergreen,
    metadata: { ...c.metadata },
  };
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
    ...(c.ttlHintMs !== undefined
      ? { ttlHint: { seconds: BigInt(Math.floor(c.ttlHintMs / 1000)), nanos: (c.ttlHintMs % 1000) * 1e6 } }
      : {}),
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

export { memoryMessage };
