/**
 * Rule `schema`: the candidate's fields are present, well formed and within the content limits for
 * its type (`memory.proto`, "Common limits" and the `Memory`/`CandidateMemory` field comments).
 * Mandatory. Field paths are the proto's, so a direct write can fail with FIELD_REQUIRED /
 * FIELD_INVALID / TIME_RANGE_INVALID naming the field.
 *
 * Besides checking, it puts the candidate in canonical form: text trimmed, a FACT's value with
 * sorted keys (so its content hash is stable), a FACT without text given one rendered from its
 * value; and it drops an evergreen hint on a type that cannot be evergreen (ADJUSTED).
 */
import type { MemoryType, Scope, SourceKind } from '@engram/store';
import type { Candidate } from '../candidate.js';
import { canonicalize, isJsonObject, jsonBytes, jsonDepth, nonJsonPath } from './json.js';
import type { ContentLimits } from './policy.js';
import { codePoints, renderFactText } from './text.js';
import type { HardRule, RejectionReason, RuleContext, RuleResult } from './types.js';

const TYPES: readonly MemoryType[] = ['FACT', 'EPISODE', 'EVENT', 'FORESIGHT', 'SUMMARY'];
const SOURCE_KINDS: readonly SourceKind[] = [
  'EXPLICIT_USER_STATEMENT',
  'INFERRED',
  'ASSISTANT',
  'DOCUMENT',
  'IMPORT',
  'SYSTEM',
];
const SCOPES: readonly Scope[] = ['SELF', 'ORG', 'PLATFORM'];
/** The contract's namespace/key alphabet; the policy's patterns narrow it. */
const IDENTIFIER = /^[a-z0-9_.-]+$/;
const METADATA_KEY = /^[a-z0-9_.-]+$/;
// BCP-47 as used here: a 2–3 letter (or 4–8 letter registered) primary subtag, then subtags of 1–8 alphanumerics.
const LANGUAGE_CODE = /^[A-Za-z]{2,8}(?:-[A-Za-z0-9]{1,8})*$/;

interface Problem {
  readonly reason: RejectionReason;
  readonly field: string;
  readonly note: string;
}

const required = (field: string, note: string): Problem => ({ reason: 'FIELD_REQUIRED', field, note });
const invalid = (field: string, note: string): Problem => ({ reason: 'FIELD_INVALID', field, note });

const isFiniteNumber = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value);

function checkIdentifier(
  field: string,
  value: string | undefined,
  max: number,
  pattern: string,
): Problem | undefined {
  if (value === undefined || value === '') return required(field, `${field} is required for a FACT`);
  if (codePoints(value) > max) return invalid(field, `${field} is longer than ${max} characters`);
  if (!IDENTIFIER.test(value) || !new RegExp(`^(?:${pattern})$`, 'u').test(value)) {
    return invalid(
      field,
      `${field} must match ${pattern === '[a-z0-9_.-]+' ? pattern : `[a-z0-9_.-]+ and ${pattern}`}`,
    );
  }
  return undefined;
}

function checkKinds(c: Candidate): Problem | undefined {
  if (!TYPES.includes(c.type)) return invalid('type', 'unknown memory type');
  if (!SOURCE_KINDS.includes(c.sourceKind)) return invalid('source_kind', 'unknown source kind');
  if (c.scopeHint !== undefined && !SCOPES.includes(c.scopeHint))
    return invalid('scope_hint', 'unknown scope');
  return undefined;
}

function checkConfidence(c: Candidate): Problem | undefined {
  if ((c.confidence as number | undefined) === undefined)
    return required('confidence', 'confidence is required');
  if (!isFiniteNumber(c.confidence) || c.confidence < 0 || c.confidence > 1) {
    return invalid('confidence', 'confidence must be a number from 0.0 to 1.0');
  }
  return undefined;
}

function checkFactFields(c: Candidate, limits: ContentLimits): Problem | undefined {
  if (c.type !== 'FACT') {
    if (c.namespace !== undefined && c.namespace !== '')
      return invalid('namespace', 'only a FACT has a namespace');
    if (c.key !== undefined && c.key !== '') return invalid('key', 'only a FACT has a key');
    if (c.value !== undefined) return invalid('value', 'only a FACT has a value');
    return undefined;
  }
  return (
    checkIdentifier('namespace', c.namespace, limits.maxNamespaceChars, limits.namespacePattern) ??
    checkIdentifier('key', c.key, limits.maxKeyChars, limits.keyPattern) ??
    checkValue(c, limits)
  );
}

function checkValue(c: Candidate, limits: ContentLimits): Problem | undefined {
  if (c.value === undefined || c.value === null) return required('value', 'value is required for a FACT');
  if (!isJsonObject(c.value)) return invalid('value', 'value must be a JSON object, e.g. {"value": 42}');
  const bad = nonJsonPath(c.value);
  if (bad !== undefined) return invalid('value', `${bad} is not a JSON value`);
  if (jsonDepth(c.value) > limits.maxValueDepth) {
    return invalid('value', `value is nested deeper than ${limits.maxValueDepth} levels`);
  }
  const bytes = jsonBytes(c.value);
  if (bytes > limits.maxValueBytes) {
    return invalid('value', `value is ${bytes} bytes as JSON, more than ${limits.maxValueBytes}`);
  }
  return undefined;
}

function checkText(c: Candidate, limits: ContentLimits): Problem | undefined {
  const text = typeof c.text === 'string' ? c.text.trim() : '';
  if ((c.text as unknown) !== undefined && typeof c.text !== 'string')
    return invalid('text', 'text must be a string');
  if (text === '' && c.type !== 'FACT') return required('text', `text is required for a ${c.type}`);
  const length = codePoints(text);
  if (length > limits.maxTextChars) {
    return invalid('text', `text is ${length} characters, more than ${limits.maxTextChars}`);
  }
  if (c.languageCode !== undefined && c.languageCode !== '') {
    if (c.languageCode.length > limits.maxLanguageCodeChars || !LANGUAGE_CODE.test(c.languageCode)) {
      return invalid('language_code', 'language_code must be a BCP-47 tag such as en or zh-Hans');
    }
  }
  return undefined;
}

function checkScope(c: Candidate, limits: ContentLimits): Problem | undefined {
  const orgId = c.orgId ?? '';
  if (c.scopeHint === 'ORG') {
    if (orgId === '') return required('org_id', 'org_id is required for an ORG scope');
    if (codePoints(orgId) > limits.maxOrgIdChars) {
      return invalid('org_id', `org_id is longer than ${limits.maxOrgIdChars} characters`);
    }
  } else if (orgId !== '') {
    return invalid('org_id', 'org_id is only allowed with an ORG scope');
  }
  return undefined;
}

function checkTimes(c: Candidate, ctx: RuleContext): Problem | undefined {
  const { now, policy } = ctx;
  if (c.ttlHintMs !== undefined && (!Number.isSafeInteger(c.ttlHintMs) || c.ttlHintMs <= 0)) {
    return invalid('ttl_hint', 'ttl_hint must be a positive duration');
  }
  if (c.ttlReason !== undefined && codePoints(c.ttlReason) > policy.limits.maxTtlReasonChars) {
    return invalid('ttl_reason', `ttl_reason is longer than ${policy.limits.maxTtlReasonChars} characters`);
  }
  for (const [field, value] of [
    ['expire_time', c.expiresAt],
    ['occur_time', c.occurredAt],
    ['valid_from_time', c.validFrom],
    ['valid_until_time', c.validUntil],
  ] as const) {
    if (value !== undefined && !Number.isSafeInteger(value))
      return invalid(field, `${field} is not a valid time`);
  }
  if (c.expiresAt !== undefined && c.expiresAt <= now)
    return invalid('expire_time', 'expire_time must be in the future');
  if (c.occurredAt !== undefined && c.occurredAt > now + policy.limits.clockToleranceMs) {
    return invalid('occur_time', 'occur_time is in the future');
  }
  const windowed = c.type === 'FACT' || c.type === 'FORESIGHT';
  if (!windowed && c.validFrom !== undefined)
    return invalid('valid_from_time', 'only FACT and FORESIGHT have a validity period');
  if (!windowed && c.validUntil !== undefined)
    return invalid('valid_until_time', 'only FACT and FORESIGHT have a validity period');
  if (c.validFrom !== undefined && c.validUntil !== undefined && c.validUntil <= c.validFrom) {
    return {
      reason: 'TIME_RANGE_INVALID',
      field: 'valid_until_time',
      note: 'valid_until_time must be after valid_from_time',
    };
  }
  if (c.type === 'FORESIGHT' && c.validFrom === undefined && c.validUntil === undefined) {
    return required('valid_until_time', 'a FORESIGHT needs valid_from_time or valid_until_time');
  }
  return undefined;
}

function checkMetadata(c: Candidate, limits: ContentLimits): Problem | undefined {
  const entries = Object.entries(c.metadata ?? {});
  if (entries.length > limits.maxMetadataEntries) {
    return invalid(
      'metadata',
      `metadata has ${entries.length} entries, more than ${limits.maxMetadataEntries}`,
    );
  }
  for (const [key, value] of entries) {
    if (key === '' || codePoints(key) > limits.maxMetadataKeyChars || !METADATA_KEY.test(key)) {
      return invalid(
        'metadata',
        `metadata keys must be 1–${limits.maxMetadataKeyChars} characters matching [a-z0-9_.-]+`,
      );
    }
    if (typeof value !== 'string' || codePoints(value) > limits.maxMetadataValueChars) {
      return invalid(
        'metadata',
        `metadata values must be strings of at most ${limits.maxMetadataValueChars} characters`,
      );
    }
  }
  return undefined;
}

function checkEvidenceSize(c: Candidate, limits: ContentLimits): Problem | undefined {
  if (typeof c.evidence !== 'object' || !Array.isArray(c.evidence.messageIds)) {
    return required('evidence', 'evidence must list its message ids (possibly none)');
  }
  if (c.evidence.messageIds.length > limits.maxEvidenceRefs) {
    return invalid('evidence.messages', `more than ${limits.maxEvidenceRefs} evidence messages`);
  }
  if ((c.evidence.chunkIds?.length ?? 0) > limits.maxEvidenceRefs) {
    return invalid('evidence.chunks', `more than ${limits.maxEvidenceRefs} evidence chunks`);
  }
  if (c.evidence.excerpt !== undefined && codePoints(c.evidence.excerpt) > limits.maxExcerptChars) {
    return invalid(
      'evidence.excerpt',
      `evidence.excerpt is longer than ${limits.maxExcerptChars} characters`,
    );
  }
  return undefined;
}

/** The first problem of the candidate, in field order; undefined when it is well formed. */
export function schemaProblem(c: Candidate, ctx: RuleContext): Problem | undefined {
  const limits = ctx.policy.limits;
  return (
    checkKinds(c) ??
    checkConfidence(c) ??
    checkFactFields(c, limits) ??
    checkText(c, limits) ??
    checkScope(c, limits) ??
    checkTimes(c, ctx) ??
    checkMetadata(c, limits) ??
    checkEvidenceSize(c, limits)
  );
}

export const schemaRule: HardRule = {
  name: 'schema',
  evaluate(candidate, ctx): RuleResult {
    const problem = schemaProblem(candidate, ctx);
    if (problem !== undefined) {
      return { verdict: 'REJECTED', reason: problem.reason, field: problem.field, note: problem.note };
    }
    const notes: string[] = [];
    let text = typeof candidate.text === 'string' ? candidate.text.trim() : '';
    let value = candidate.value;
    if (candidate.type === 'FACT' && value !== undefined) {
      value = canonicalize(value);
      if (text === '') {
        text = renderFactText(
          candidate.namespace ?? '',
          candidate.key ?? '',
          value,
          ctx.policy.limits.maxTextChars,
        );
        notes.push('text rendered from the value');
      }
    }
    const dropEvergreen = candidate.evergreen === true && candidate.type !== 'FACT';
    if (dropEvergreen)
      notes.push(`evergreen hint dropped: only a FACT can be evergreen, not a ${candidate.type}`);
    const transformed: Candidate = {
      ...candidate,
      text,
      ...(value !== undefined ? { value } : {}),
      ...(dropEvergreen ? { evergreen: false } : {}),
    };
    return {
      verdict: dropEvergreen ? 'ADJUSTED' : 'PASSED',
      ...(notes.length > 0 ? { note: notes.join('; ') } : {}),
      ...(dropEvergreen ? { field: 'evergreen' } : {}),
      candidate: transformed,
    };
  },
};
