/**
 * The soft rules of extraction with a language model (blueprint §2): versioned prompt templates in
 * English and Chinese, chosen by the conversation's language; the transcript the model reads; and
 * the JSON schema of each extractor's answer. Pure: `model-extractors.ts` sends the prompt and
 * turns the answer into candidates for the hard rules.
 */
import type { z } from 'zod';
import { safeTimeZone } from '@engram/lexical';
import type { ChatMessage } from '@engram/llm';
import type { ExtractionInput, ExtractorName } from '../candidate.js';
import { conversationLanguage, type PromptLanguage } from './language.js';
import { ANSWER_SCHEMA_NAMES, answerSchema, type ExtractionAnswer } from './schemas.js';
import { PROMPT_VERSION, systemPrompt, userPrompt } from './templates.js';
import {
  DEFAULT_TRANSCRIPT_LIMITS,
  isoOffset,
  renderTranscript,
  type Transcript,
  type TranscriptLimits,
} from './transcript.js';

export { conversationLanguage, type PromptLanguage } from './language.js';
export {
  ANSWER_SCHEMAS,
  ANSWER_SCHEMA_NAMES,
  ANSWER_SOURCE_KINDS,
  MAX_ANSWER_TEXT_CHARS,
  MAX_CANDIDATES,
  MAX_TTL_DAYS,
  answerSchema,
  type AnswerCandidate,
  type AnswerSourceKind,
  type AnswerValueField,
  type ExtractionAnswer,
} from './schemas.js';
export { PROMPT_VERSION, systemPrompt, userPrompt, type TranscriptHeading } from './templates.js';
export {
  DEFAULT_TRANSCRIPT_LIMITS,
  isoLocalTime,
  isoOffset,
  localWeekday,
  renderTranscript,
  transcriptLine,
  type Transcript,
  type TranscriptLimits,
} from './transcript.js';

/** Everything one extractor's model call needs. */
export interface ExtractionPrompt {
  /** {@link PROMPT_VERSION} of the templates used. */
  readonly version: string;
  readonly language: PromptLanguage;
  /** The system prompt, then the user message holding the transcript. */
  readonly messages: readonly ChatMessage[];
  readonly schema: z.ZodType<ExtractionAnswer>;
  readonly schemaName: string;
  /** What the transcript shows and leaves out. */
  readonly transcript: Transcript;
}

/**
 * The prompt of `extractor` for the messages of `input` (all of them, in order: the caller leaves
 * out what must not be shown). The language is the conversation's (`conversationLanguage`); the
 * transcript keeps the latest messages within `limits`.
 */
export function extractionPrompt(
  extractor: ExtractorName,
  input: ExtractionInput,
  limits: TranscriptLimits = DEFAULT_TRANSCRIPT_LIMITS,
): ExtractionPrompt {
  const language = conversationLanguage(input);
  const timeZone = safeTimeZone(input.timeZone);
  const transcript = renderTranscript(input.messages, timeZone, language, limits);
  const first = input.messages[transcript.omitted];
  const heading = {
    timeZone,
    offset: isoOffset(first?.occurredAt ?? 0, timeZone),
    total: transcript.total,
    omitted: transcript.omitted,
  };
  return {
    version: PROMPT_VERSION,
    language,
    messages: [
      { role: 'system', content: systemPrompt(extractor, language) },
      { role: 'user', content: userPrompt(language, heading, transcript.text) },
    ],
    schema: answerSchema(extractor),
    schemaName: ANSWER_SCHEMA_NAMES[extractor],
    transcript,
  };
}
