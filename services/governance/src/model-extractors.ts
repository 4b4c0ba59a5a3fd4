/**
 * The extractors with a language model (issue 6, "Soft rules and extraction"): each run shows one
 * MemCell to a {@link ChatModel} with its extractor's prompt (`domain/prompts/`), asks for JSON
 * matching the extractor's schema, and turns the answer into candidates for the hard rules. Used in
 * place of the offline extractors when a model is configured.
 *
 * What the model is never shown: messages a "don't remember this" request covers (the offline
 * extractors' `suppressedMessageIds`), so a request the model might overlook is still honoured and
 * the text does not leave the process. Ingestion has already replaced detected secrets with
 * placeholders; the hard rules check every candidate again.
 *
 * What is never taken from the model as given: the type (the extractor's), the scope (SELF), the
 * evidence (ids must be messages of the MemCell not withheld from the model; a candidate left
 * without evidence is dropped), the excerpt (quoted from the first evidence message the user wrote,
 * else the first one), when a fact, plan or episode was said (that message's time, which a TTL hint
 * counts from), and the keys of slots the offline extractors derive from the value (`item.<slug>`,
 * `allergy.<slug>`, `language.<code>`, `relationship/<relation>[.<name>]`), so the same fact gets
 * the same `namespace/key` whichever extractor found it and the hard rules supersede one with the
 * other.
 */
import type { ChatModel } from '@engram/llm';
import type {
  Candidate,
  ExtractionInput,
  ExtractorName,
  JsonValue,
  SourceKind,
  SourceMessage,
} from './domain/candidate.js';
import { suppressedMessageIds } from './domain/extractors/forget.js';
import { NAMESPACE, allergyKey, itemKey, languageKey, relationKey } from './domain/extractors/keys.js';
import { EXCERPT_MAX_CHARS } from './domain/extractors/statements.js';
import { detectLanguage, truncate } from './domain/extractors/text.js';
import {
  extractionPrompt,
  type AnswerCandidate,
  type AnswerSourceKind,
  type AnswerValueField,
  type ExtractionAnswer,
  type PromptLanguage,
} from './domain/prompts/index.js';
import type { RunExtractor } from './extraction.js';

/** Options of {@link createModelExtractor}; defaults in {@link DEFAULT_MODEL_EXTRACTOR_OPTIONS}. */
export interface ModelExtractorOptions {
  /** Most characters of the transcript shown; a longer MemCell shows its latest messages. */
  readonly maxTranscriptChars?: number;
  /** Most characters shown of one message (its start and end are kept). */
  readonly maxMessageChars?: number;
  /** Sampling temperature. */
  readonly temperature?: number;
  /** Answers requested before giving up on invalid output (see `ChatModel.completeJson`). */
  readonly maxAttempts?: number;
}

export const DEFAULT_MODEL_EXTRACTOR_OPTIONS = {
  maxTranscriptChars: 12_000,
  maxMessageChars: 2_000,
  temperature: 0,
  maxAttempts: 3,
} as const satisfies Required<ModelExtractorOptions>;

const DAY_MS = 86_400_000;

const SOURCE_KINDS: Readonly<Record<AnswerSourceKind, SourceKind>> = {
  explicit_user_statement: 'EXPLICIT_USER_STATEMENT',
  inferred: 'INFERRED',
  assistant: 'ASSISTANT',
};

/** What the conversion of an answer needs besides the answer. */
export interface AnswerContext {
  /** The MemCell extracted. */
  readonly input: ExtractionInput;
  /**
   * Ids the candidates may cite: the MemCell's messages that were not withheld from the model (those
   * a "don't remember this" request covers are).
   */
  readonly citable: ReadonlySet<string>;
  /** The prompt's language: the fallback of a candidate's language. */
  readonly language: PromptLanguage;
  /** Provenance, recorded in each candidate's metadata. */
  readonly model: string;
  readonly promptVersion: string;
  /** Messages left out of the transcript to fit (recorded when not 0). */
  readonly omittedMessages?: number;
}

/** Epoch ms of an ISO-8601 time with offset; undefined for null or an unreadable time. */
function epochMs(iso: string | null | undefined): number | undefined {
  if (iso === null || iso === undefined) return undefined;
  const ms = Date.parse(iso);
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** `[{ field, value }]` → `{ field: value }` (a repeated field keeps its last value). */
function valueObject(fields: readonly AnswerValueField[]): Record<string, JsonValue> {
  const value: Record<string, JsonValue> = {};
  for (const { field, value: v } of fields) value[field] = typeof v === 'string' ? v.trim() : v;
  return value;
}

function stringField(value: Readonly<Record<string, JsonValue>>, name: string): string | undefined {
  const v = value[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * The slot of a FACT as the offline extractors name it. The keys derived from the value (an item, an
 * allergen, a language, a relation and name) are recomputed with `extractors/keys.ts`, so "茶" and
 * "tea" share `item.tea` and a Chinese name gets the same `zh-…` slug; other keys are the model's.
 * A relation is lower-cased in the value too.
 */
export function canonicalSlot(
  namespace: string,
  key: string,
  value: Record<string, JsonValue>,
): { namespace: string; key: string; value: Record<string, JsonValue> } {
  if (namespace === NAMESPACE.preference && key.startsWith('item.')) {
    const item = stringField(value, 'item');
    if (item !== undefined) return { namespace, key: itemKey(item), value };
  }
  if (namespace === NAMESPACE.profile && key.startsWith('allergy.')) {
    const allergen = stringField(value, 'allergen');
    if (allergen !== undefined) return { namespace, key: allergyKey(allergen), value };
  }
  if (namespace === NAMESPACE.profile && key.startsWith('language.')) {
    const language = stringField(value, 'language');
    if (language !== undefined) return { namespace, key: languageKey(language), value };
  }
  if (namespace === NAMESPACE.relationship) {
    const relation = stringField(value, 'relation')?.toLowerCase();
    if (relation !== undefined && /^[a-z]+$/u.test(relation)) {
      return {
        namespace,
        key: relationKey(relation, stringField(value, 'name')),
        value: { ...value, relation },
      };
    }
  }
  return { namespace, key, value };
}

/** The cited messages that may be cited, once each, in MemCell order. */
function evidenceOf(
  candidate: AnswerCandidate,
  context: AnswerContext,
  order: ReadonlyMap<string, SourceMessage>,
): SourceMessage[] {
  const cited = new Set(candidate.evidence_message_ids.filter((id) => context.citable.has(id)));
  return [...order.values()].filter((m) => cited.has(m.id));
}

/** The fields only some types have, from the answer. */
function typedFields(
  extractor: ExtractorName,
  candidate: AnswerCandidate,
  saidAt: number,
): Partial<Candidate> & { occurredAt: number } {
  switch (extractor) {
    case 'FACT': {
      const slot = canonicalSlot(
        candidate.namespace ?? '',
        candidate.key ?? '',
        valueObject(candidate.value ?? []),
      );
      const validFrom = epochMs(candidate.valid_from);
      const validUntil = epochMs(candidate.valid_until);
      const ttlDays = candidate.ttl_days ?? undefined;
      return {
        ...slot,
        occurredAt: saidAt,
        ...(ttlDays === undefined
          ? {}
          : { ttlHintMs: ttlDays * DAY_MS, ttlReason: candidate.ttl_reason ?? `${ttlDays} days` }),
        ...(validFrom === undefined ? {} : { validFrom }),
        ...(validUntil === undefined ? {} : { validUntil }),
      };
    }
    case 'FORESIGHT': {
      const validFrom = epochMs(candidate.valid_from);
      const validUntil = epochMs(candidate.valid_until);
      return {
        occurredAt: saidAt,
        ...(validFrom === undefined ? {} : { validFrom }),
        ...(validUntil === undefined ? {} : { validUntil }),
      };
    }
    case 'EVENT':
      return { occurredAt: epochMs(candidate.occurred_at) ?? saidAt };
    case 'EPISODE':
      return { occurredAt: saidAt };
  }
}

/**
 * The candidates of a model's answer to `extractor`'s prompt. Each gets the extractor's type, scope
 * hint SELF, the source kind in the store's terms, a confidence rounded to two decimals, a language
 * (its text's, else the prompt's), evidence limited to `context.citable` in MemCell order (no
 * evidence left: dropped) with the MemCell id and an excerpt of the first evidence message the user
 * wrote, else the first (at most 200 characters), times in epoch ms, a TTL hint in ms, and metadata
 * naming the extractor, the model and the prompt version. A FACT gets its canonical slot
 * (`canonicalSlot`); a slot given twice keeps the later candidate.
 */
export function candidatesFromAnswer(
  extractor: ExtractorName,
  answer: ExtractionAnswer,
  context: AnswerContext,
): Candidate[] {
  const order = new Map(context.input.messages.map((m) => [m.id, m]));
  const metadata: Record<string, string> = {
    extractor: `model.${extractor.toLowerCase()}`,
    model: truncate(context.model, 200),
    prompt_version: context.promptVersion,
    ...((context.omittedMessages ?? 0) > 0 ? { omitted_messages: String(context.omittedMessages) } : {}),
  };
  const out: Candidate[] = [];
  // A FACT slot given twice keeps the later candidate, in the later place (as the offline FACT
  // extractor does).
  const bySlot = new Map<string, Candidate>();
  for (const answered of answer.candidates) {
    const evidence = evidenceOf(answered, context, order);
    // What the user said is what a memory rests on: quote and date it when it is cited.
    const first = evidence.find((m) => m.role === 'USER') ?? evidence[0];
    if (first === undefined) continue;
    const text = answered.text.trim();
    const candidate: Candidate = {
      type: extractor,
      text,
      languageCode: detectLanguage(text, context.language),
      sourceKind: SOURCE_KINDS[answered.source_kind],
      scopeHint: 'SELF',
      confidence: Math.round(Math.min(1, Math.max(0, answered.confidence)) * 100) / 100,
      ...typedFields(extractor, answered, first.occurredAt),
      evidence: {
        messageIds: evidence.map((m) => m.id),
        memCellId: context.input.memCellId,
        excerpt: truncate(first.content.trim(), EXCERPT_MAX_CHARS),
      },
      metadata: { ...metadata },
    };
    if (extractor === 'FACT') {
      const slot = `${candidate.namespace ?? ''}/${candidate.key ?? ''}`;
      bySlot.delete(slot);
      bySlot.set(slot, candidate);
    } else {
      out.push(candidate);
    }
  }
  return extractor === 'FACT' ? [...bySlot.values()] : out;
}

/** The messages a model may see: with content, and not covered by a "don't remember this" request. */
export function showableMessages(input: ExtractionInput): SourceMessage[] {
  const suppressed = suppressedMessageIds(input);
  return input.messages.filter((m) => m.content.trim() !== '' && !suppressed.has(m.id));
}

function checkOptions(options: Required<ModelExtractorOptions>): void {
  const { maxTranscriptChars, maxMessageChars, maxAttempts, temperature } = options;
  if (!Number.isInteger(maxMessageChars) || maxMessageChars < 100) {
    throw new RangeError('maxMessageChars must be an integer of at least 100');
  }
  if (!Number.isInteger(maxTranscriptChars) || maxTranscriptChars < maxMessageChars) {
    throw new RangeError('maxTranscriptChars must be an integer of at least maxMessageChars');
  }
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new RangeError('maxAttempts must be a positive integer');
  }
  if (!Number.isFinite(temperature) || temperature < 0 || temperature > 2) {
    throw new RangeError('temperature must be from 0 to 2');
  }
}

/**
 * A {@link RunExtractor} that asks `model`: one `completeJson` call per extractor run (temperature
 * 0 by default), with the extractor's prompt in the conversation's language and its answer schema.
 * A MemCell with nothing the user said (after leaving out what they asked not to remember) gives no
 * candidates without calling the model (usage with 0 calls). Usage: the tokens of every attempt,
 * `calls` = answers requested, `model` = `model.model`.
 *
 * Rejects as `ChatModel.completeJson` does, which makes the run FAILED: UNAVAILABLE
 * `DEPENDENCY_UNAVAILABLE` (`dependency: model`) when the model cannot be reached, errs or times
 * out after its transport retries, or gives no valid answer in `maxAttempts` (`failure:
 * output_invalid`); `signal.reason` when the job is cancelled. Throws a RangeError at creation for
 * invalid options.
 */
export function createModelExtractor(model: ChatModel, options: ModelExtractorOptions = {}): RunExtractor {
  const defaults = DEFAULT_MODEL_EXTRACTOR_OPTIONS;
  const settings: Required<ModelExtractorOptions> = {
    maxTranscriptChars: options.maxTranscriptChars ?? defaults.maxTranscriptChars,
    maxMessageChars: options.maxMessageChars ?? defaults.maxMessageChars,
    temperature: options.temperature ?? defaults.temperature,
    maxAttempts: options.maxAttempts ?? defaults.maxAttempts,
  };
  checkOptions(settings);
  const limits = { maxChars: settings.maxTranscriptChars, maxMessageChars: settings.maxMessageChars };

  return async (extractor, input, signal) => {
    const shown = showableMessages(input);
    if (!shown.some((m) => m.role === 'USER')) {
      return {
        candidates: [],
        usage: { promptTokens: 0, completionTokens: 0, calls: 0, model: model.model },
      };
    }
    const prompt = extractionPrompt(extractor, { ...input, messages: shown }, limits);
    const { value, usage, attempts } = await model.completeJson({
      messages: prompt.messages,
      schema: prompt.schema,
      schemaName: prompt.schemaName,
      temperature: settings.temperature,
      maxAttempts: settings.maxAttempts,
      signal,
    });
    const candidates = candidatesFromAnswer(extractor, value, {
      input,
      citable: new Set(shown.map((m) => m.id)),
      language: prompt.language,
      model: model.model,
      promptVersion: prompt.version,
      omittedMessages: prompt.transcript.omitted,
    });
    return {
      candidates,
      usage: {
        promptTokens: usage.promptTokens,
        completionTokens: usage.completionTokens,
        calls: attempts,
        model: model.model,
      },
    };
  };
}
