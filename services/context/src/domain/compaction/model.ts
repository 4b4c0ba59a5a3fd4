/**
 * Compaction with a chat model (`COMPACTION_MODE_MODEL`): one `completeJson` call with the
 * `compact-v1` prompt (`prompt.ts`). What is never taken from the model as given: message ids
 * (only ids of the compacted messages are kept, oldest first; an item whose ids were all unknown
 * is dropped), resolved loop ids (only ids of the base's open loops), the number of items, and the
 * summary's length (cut at a sentence boundary to `summaryMaxTokens`). Prompts and answers are
 * user data and are never logged.
 */
import type { ChatModel } from '@engram/llm';
import type { CompactionMessage, CompactionResult } from '../types.js';
import { MAX_ITEM_CHARS, MAX_ITEM_SOURCES, cutToTokens, truncateChars, type Compactor } from './compactor.js';
import { conversationLanguage, normalizeText, splitSentences } from './cues.js';
import {
  COMPACTION_SCHEMA_NAME,
  MAX_ANSWER_ITEMS,
  compactionAnswerSchema,
  compactionPrompt,
  type CompactionAnswer,
} from './prompt.js';

/** Options of {@link modelCompactor}. */
export interface ModelCompactorOptions {
  /** Sampling temperature. Default 0. */
  readonly temperature?: number;
  /** Answers requested before giving up on invalid output. Default: the model's (3). */
  readonly maxAttempts?: number;
}

/** The model {@link Compactor} over `model`. */
export function modelCompactor(model: ChatModel, options: ModelCompactorOptions = {}): Compactor {
  const temperature = options.temperature ?? 0;
  return {
    mode: 'MODEL',
    async compact(base, messages, compactOptions) {
      compactOptions.signal?.throwIfAborted();
      const language = conversationLanguage(compactOptions.language, messages);
      const completion = await model.completeJson({
        messages: compactionPrompt({
          language,
          previousSummary: base.summary,
          openLoops: base.openLoops,
          messages,
          summaryMaxTokens: compactOptions.summaryMaxTokens,
        }),
        schema: compactionAnswerSchema,
        schemaName: COMPACTION_SCHEMA_NAME,
        temperature,
        ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
        ...(compactOptions.signal === undefined ? {} : { signal: compactOptions.signal }),
      });
      const answer = completion.value;
      const loopIds = new Set(base.openLoops.map((loop) => loop.id));
      const knownLoops = new Set(base.openLoops.map((loop) => normalizeText(loop.text)));
      return {
        summary: fitSummary(answer.summary, compactOptions.summaryMaxTokens, compactOptions.countTokens),
        keyPoints: items(answer.key_points, messages, new Set()),
        openLoops: items(answer.open_loops, messages, knownLoops),
        resolvedOpenLoopIds: [...new Set(answer.resolved_open_loop_ids)].filter((id) => loopIds.has(id)),
        usage: completion.usage,
      };
    },
  };
}

/**
 * The items with only ids of `messages` (deduplicated, oldest first, at most 20); an item whose
 * ids were all unknown is dropped, as are repeated texts and those in `skip` (normalized).
 */
function items(
  answered: CompactionAnswer['key_points'],
  messages: readonly CompactionMessage[],
  skip: ReadonlySet<string>,
): CompactionResult['keyPoints'] {
  const order = new Map(messages.map((m, i) => [m.id, i]));
  const seen = new Set(skip);
  const out: { text: string; sourceMessageIds: string[] }[] = [];
  for (const item of answered) {
    if (out.length >= MAX_ANSWER_ITEMS) break;
    const ids = [...new Set(item.source_message_ids)].filter((id) => order.has(id));
    if (item.source_message_ids.length > 0 && ids.length === 0) continue;
    const text = truncateChars(item.text.trim(), MAX_ITEM_CHARS);
    const key = normalizeText(text);
    if (text === '' || seen.has(key)) continue;
    seen.add(key);
    ids.sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
    out.push({ text, sourceMessageIds: ids.slice(0, MAX_ITEM_SOURCES) });
  }
  return out;
}

/**
 * The summary within `maxTokens`: whole sentences from the start while they fit, or the start of
 * the first sentence when not even it fits.
 */
export function fitSummary(
  summary: string,
  maxTokens: number,
  countTokens: (text: string) => number,
): string {
  const text = summary.trim();
  if (countTokens(text) <= maxTokens) return text;
  const lines = text.split(/\r?\n/u);
  let kept = '';
  for (const [lineIndex, line] of lines.entries()) {
    for (const [sentenceIndex, sentence] of splitSentences(line).entries()) {
      const separator =
        kept === ''
          ? ''
          : sentenceIndex === 0 && lineIndex > 0
            ? '\n'
            : /[。！？；…]$/u.test(kept)
              ? ''
              : ' ';
      const next = kept + separator + sentence;
      if (countTokens(next) > maxTokens)
        return kept === '' ? cutToTokens(sentence, maxTokens, countTokens) : kept;
      kept = next;
    }
  }
  return kept;
}
