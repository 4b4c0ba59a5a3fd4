/**
 * The JSON a model answers an extraction prompt with, one zod schema per extractor, each an object
 * `{ candidates: [...] }`. The schemas are sent as strict OpenAI `json_schema` response formats, so
 * every property is required (optional ones are `nullable`) and every object is closed. A FACT's
 * value, free-form JSON in a memory, is a list of `{ field, value }` pairs here: strict mode cannot
 * express an open object. Refinements the JSON Schema cannot say (a TTL needs its reason, a
 * window must not end before it starts, a FORESIGHT needs a window) are checked when the answer is
 * parsed, and a violation goes back to the model as feedback.
 */
import { z } from 'zod';
import type { ExtractorName } from '../candidate.js';

/** How the model says where a candidate comes from (the store's `SourceKind`, in lower case). */
export const ANSWER_SOURCE_KINDS = ['explicit_user_statement', 'inferred', 'assistant'] as const;
export type AnswerSourceKind = (typeof ANSWER_SOURCE_KINDS)[number];

/** Most candidates one answer may hold, per extractor (a MemCell is one segment: one episode). */
export const MAX_CANDIDATES: Readonly<Record<ExtractorName, number>> = {
  EPISODE: 1,
  EVENT: 20,
  FORESIGHT: 20,
  FACT: 30,
};

/** Longest candidate text (an episode is asked for in at most 400; the contract allows 8000). */
export const MAX_ANSWER_TEXT_CHARS = 1_000;
/** Longest TTL hint, days (the hard rules cap it further per type). */
export const MAX_TTL_DAYS = 3_650;

/** The contract's namespace/key alphabet (`[a-z0-9_.-]{1,128}`). */
const identifier = z
  .string()
  .regex(/^[a-z0-9_.-]{1,128}$/u, { error: 'must be 1–128 characters of a-z, 0-9, "_", "." and "-"' });

/** An instant with its UTC offset, e.g. `2025-03-04T15:00:00+08:00`. */
const isoTime = z.iso.datetime({
  offset: true,
  error: 'must be an ISO 8601 date-time with seconds and a UTC offset, e.g. 2025-03-04T15:00:00+08:00',
});

const valueField = z.object({
  field: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/u, { error: 'must be a field name such as style or durationDays' }),
  value: z.union([z.string().max(500), z.number(), z.boolean()]),
});

/** One field of a FACT's value (`{ field: 'style', value: 'concise' }` → `{ style: 'concise' }`). */
export type AnswerValueField = z.output<typeof valueField>;

const text = z.string().trim().min(1).max(MAX_ANSWER_TEXT_CHARS);
const sourceKind = z.enum(ANSWER_SOURCE_KINDS);
/** Extraction only proposes memories of the conversation's owner. */
const scopeHint = z.enum(['self']);
const confidence = z.number().min(0).max(1);
const evidence = z.array(z.string().min(1).max(64)).min(1).max(50);

/**
 * A candidate as any extractor's answer gives it: the fields of the other extractors are absent.
 * (The conversion in `model-extractors.ts` reads this shape.)
 */
export interface AnswerCandidate {
  readonly type: ExtractorName;
  readonly namespace?: string;
  readonly key?: string;
  readonly value?: readonly AnswerValueField[];
  readonly text: string;
  readonly source_kind: AnswerSourceKind;
  readonly scope_hint: 'self';
  readonly confidence: number;
  readonly ttl_days?: number | null;
  readonly ttl_reason?: string | null;
  readonly occurred_at?: string | null;
  readonly valid_from?: string | null;
  readonly valid_until?: string | null;
  readonly evidence_message_ids: readonly string[];
}

/** An answer: the candidates of one extractor (possibly none). */
export interface ExtractionAnswer {
  readonly candidates: readonly AnswerCandidate[];
}

interface Window {
  readonly valid_from: string | null;
  readonly valid_until: string | null;
}

function windowIssue(candidate: Window, ctx: z.RefinementCtx, required: boolean): void {
  if (required && candidate.valid_from === null && candidate.valid_until === null) {
    ctx.addIssue({
      code: 'custom',
      path: ['valid_until'],
      message: 'a FORESIGHT needs valid_from or valid_until (leave out plans without any time)',
    });
  }
  if (
    candidate.valid_from !== null &&
    candidate.valid_until !== null &&
    Date.parse(candidate.valid_until) <= Date.parse(candidate.valid_from)
  ) {
    ctx.addIssue({ code: 'custom', path: ['valid_until'], message: 'valid_until must be after valid_from' });
  }
}

const factCandidate = z
  .object({
    type: z.enum(['FACT']),
    namespace: identifier,
    key: identifier,
    value: z.array(valueField).min(1).max(16),
    text,
    source_kind: sourceKind,
    scope_hint: scopeHint,
    confidence,
    ttl_days: z.int().min(1).max(MAX_TTL_DAYS).nullable(),
    ttl_reason: z.string().trim().min(1).max(200).nullable(),
    valid_from: isoTime.nullable(),
    valid_until: isoTime.nullable(),
    evidence_message_ids: evidence,
  })
  .superRefine((candidate, ctx) => {
    if (candidate.ttl_days !== null && candidate.ttl_reason === null) {
      ctx.addIssue({ code: 'custom', path: ['ttl_reason'], message: 'ttl_days needs a ttl_reason' });
    }
    windowIssue(candidate, ctx, false);
  });

const eventCandidate = z.object({
  type: z.enum(['EVENT']),
  text,
  source_kind: sourceKind,
  scope_hint: scopeHint,
  confidence,
  occurred_at: isoTime.nullable(),
  evidence_message_ids: evidence,
});

const foresightCandidate = z
  .object({
    type: z.enum(['FORESIGHT']),
    text,
    source_kind: sourceKind,
    scope_hint: scopeHint,
    confidence,
    valid_from: isoTime.nullable(),
    valid_until: isoTime.nullable(),
    evidence_message_ids: evidence,
  })
  .superRefine((candidate, ctx) => {
    windowIssue(candidate, ctx, true);
  });

const episodeCandidate = z.object({
  type: z.enum(['EPISODE']),
  text,
  source_kind: sourceKind,
  scope_hint: scopeHint,
  confidence,
  evidence_message_ids: evidence,
});

const answer = <T extends z.ZodType>(candidate: T, max: number) =>
  z.object({ candidates: z.array(candidate).max(max) });

/** The answer schema of each extractor. */
export const ANSWER_SCHEMAS = {
  FACT: answer(factCandidate, MAX_CANDIDATES.FACT),
  EVENT: answer(eventCandidate, MAX_CANDIDATES.EVENT),
  FORESIGHT: answer(foresightCandidate, MAX_CANDIDATES.FORESIGHT),
  EPISODE: answer(episodeCandidate, MAX_CANDIDATES.EPISODE),
} as const satisfies Record<ExtractorName, z.ZodType<ExtractionAnswer>>;

/** The `response_format` schema name of each extractor (`[a-zA-Z0-9_-]{1,64}`). */
export const ANSWER_SCHEMA_NAMES: Readonly<Record<ExtractorName, string>> = {
  FACT: 'memory_extraction_fact',
  EVENT: 'memory_extraction_event',
  FORESIGHT: 'memory_extraction_foresight',
  EPISODE: 'memory_extraction_episode',
};

/** The schema an extractor's answer must match. */
export function answerSchema(extractor: ExtractorName): z.ZodType<ExtractionAnswer> {
  return ANSWER_SCHEMAS[extractor];
}
