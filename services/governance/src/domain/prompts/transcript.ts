/**
 * The transcript a model reads: one line per message,
 * `[<message id>] <local ISO-8601 time with offset> (<weekday>) <role>: <content>`, in the
 * session's time zone, so the model resolves "tomorrow" or "下周三" against each message's own
 * time. The weekday is given because models count weekdays poorly. A long MemCell keeps its latest
 * messages within a character budget.
 */
import { offsetMinutes, safeTimeZone, toLocal } from '@engram/lexical';
import { oneLine } from '@engram/llm';
import type { SourceMessage } from '../candidate.js';
import type { PromptLanguage } from './language.js';

/** How much of a MemCell is shown; defaults in {@link DEFAULT_TRANSCRIPT_LIMITS}. */
export interface TranscriptLimits {
  /** Most characters of the whole transcript; the latest messages are kept. */
  readonly maxChars: number;
  /** Most characters shown of one message; a longer one keeps its start and end around "…". */
  readonly maxMessageChars: number;
}

export const DEFAULT_TRANSCRIPT_LIMITS: TranscriptLimits = Object.freeze({
  maxChars: 12_000,
  maxMessageChars: 2_000,
});

/** A rendered transcript and what it left out. */
export interface Transcript {
  /** The lines, oldest first, joined by `\n`. */
  readonly text: string;
  /** The ids of the messages shown, in order. */
  readonly shownIds: readonly string[];
  /** Messages given, and messages left out (the oldest) to stay within `maxChars`. */
  readonly total: number;
  readonly omitted: number;
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** `+08:00`, `-05:00`, `+00:00`: the zone's UTC offset at an instant. */
export function isoOffset(epochMs: number, timeZone: string): string {
  const minutes = offsetMinutes(epochMs, safeTimeZone(timeZone));
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

/** ISO 8601 local time with the zone's offset, to the second: `2025-03-03T09:00:00+08:00`. */
export function isoLocalTime(epochMs: number, timeZone: string): string {
  const zone = safeTimeZone(timeZone);
  const t = toLocal(epochMs, zone);
  return (
    `${pad(t.year, 4)}-${pad(t.month)}-${pad(t.day)}T${pad(t.hour)}:${pad(t.minute)}:${pad(t.second)}` +
    isoOffset(epochMs, zone)
  );
}

const WEEKDAYS: Readonly<Record<PromptLanguage, readonly string[]>> = {
  en: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'],
  zh: ['周日', '周一', '周二', '周三', '周四', '周五', '周六'],
};

/** The local weekday of an instant, abbreviated in the prompt's language. */
export function localWeekday(epochMs: number, timeZone: string, language: PromptLanguage): string {
  const t = toLocal(epochMs, safeTimeZone(timeZone));
  return WEEKDAYS[language][new Date(Date.UTC(t.year, t.month - 1, t.day)).getUTCDay()] ?? '';
}

/** One transcript line. */
export function transcriptLine(
  message: SourceMessage,
  timeZone: string,
  language: PromptLanguage,
  maxMessageChars: number,
): string {
  const role = message.role.toLowerCase();
  const name = message.participantName?.trim() ?? '';
  const who = name === '' ? role : `${role} (${oneLine(name, 40)})`;
  return (
    `[${message.id}] ${isoLocalTime(message.occurredAt, timeZone)} ` +
    `(${localWeekday(message.occurredAt, timeZone, language)}) ${who}: ${oneLine(message.content, maxMessageChars)}`
  );
}

/**
 * The transcript of `messages` (ascending by sequence): the latest lines that fit in
 * `limits.maxChars`, contiguous, and always at least the last message.
 */
export function renderTranscript(
  messages: readonly SourceMessage[],
  timeZone: string,
  language: PromptLanguage,
  limits: TranscriptLimits = DEFAULT_TRANSCRIPT_LIMITS,
): Transcript {
  const lines: string[] = [];
  const ids: string[] = [];
  let chars = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message === undefined) continue;
    const line = transcriptLine(message, timeZone, language, limits.maxMessageChars);
    const added = line.length + (lines.length === 0 ? 0 : 1);
    if (lines.length > 0 && chars + added > limits.maxChars) break;
    lines.push(line);
    ids.push(message.id);
    chars += added;
  }
  lines.reverse();
  ids.reverse();
  return {
    text: lines.join('\n'),
    shownIds: ids,
    total: messages.length,
    omitted: messages.length - lines.length,
  };
}
