import type { CompactionBase, CompactionMessage, CompactionResult } from '../types.js';

/** Per-call options of {@link Compactor.compact}. */
export interface CompactOptions {
  /** The most tokens the new summary may have, counted with {@link countTokens} (o200k). */
  readonly summaryMaxTokens: number;
  /** The server's model-independent token count of a text. */
  readonly countTokens: (text: string) => number;
  /** BCP-47 code of the session's language; '' or absent when unknown (then detected). */
  readonly language?: string;
  /** Cancels the call; it then rejects with `signal.reason`. */
  readonly signal?: AbortSignal;
}

/**
 * Folds compacted messages into a session's rolling summary, key points and open loops
 * (`CompactionMode` in the proto): with a chat model, or offline and deterministic.
 */
export interface Compactor {
  /** Which implementation this is (`COMPACTION_MODE_MODEL` or `COMPACTION_MODE_OFFLINE`). */
  readonly mode: 'MODEL' | 'OFFLINE';
  /**
   * Compacts `messages` (the session's messages being compacted, oldest first) on top of `base`
   * (the state before). The summary never exceeds `options.summaryMaxTokens`.
   */
  compact(
    base: CompactionBase,
    messages: readonly CompactionMessage[],
    options: CompactOptions,
  ): Promise<CompactionResult>;
}

/** Most characters of a key point's or open loop's text (the proto's limit). */
export const MAX_ITEM_CHARS = 1_000;

/** Most source message ids of one key point or open loop (the proto's limit). */
export const MAX_ITEM_SOURCES = 20;

/** `text` cut to at most `max` code points, ending in "…" when cut. */
export function truncateChars(text: string, max: number): string {
  const points = Array.from(text);
  if (points.length <= max) return text;
  return `${points.slice(0, Math.max(0, max - 1)).join('')}…`;
}

/**
 * The longest prefix of `text` (in code points, ending in "…") whose token count is at most
 * `maxTokens`; '' when not even "…" fits.
 */
export function cutToTokens(text: string, maxTokens: number, countTokens: (text: string) => number): string {
  if (countTokens(text) <= maxTokens) return text;
  const points = Array.from(text);
  let low = 0;
  let high = points.length - 1;
  let best = '';
  while (low <= high) {
    const mid = Math.floor((low + high) / 2);
    const candidate = `${points.slice(0, mid).join('').trimEnd()}…`;
    if (countTokens(candidate) <= maxTokens) {
      best = candidate;
      low = mid + 1;
    } else {
      high = mid - 1;
    }
  }
  return best;
}
