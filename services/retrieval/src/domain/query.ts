/**
 * Query understanding without a model (issue 16): what a search text says about time, read by
 * rules in English and Chinese.
 *
 * - `queryTimeWindow`: the time it names ("last May", "in 2023", "上周六"), with the project's date
 *   grammar (`findTimeMentions` of @engram/lexical), for the time-window factor of the ranking.
 * - `queryForm`: a question, a statement (a conversational message, such as the user message that
 *   BuildContext searches with) or keywords: the default weights of the two signals depend on it.
 * - `asksCurrentState`: whether it asks how things stand now ("Where do I live?", "我最喜欢什么颜色？")
 *   rather than what happened ("When did Caroline go…?") or says something ("I'm happy today"):
 *   only then does the ranking place newer statements of a subject before older ones.
 */
import { findTimeMentions } from '@engram/lexical';
import type { QueryLanguage } from './ranking.js';

/** A time named in the query: `[gte, lt)` epoch ms and the expressions that named it. */
export interface QueryTimeWindow {
  readonly gte: number;
  readonly lt: number;
  readonly expressions: readonly string[];
}

/**
 * The time a query names, resolved against `referenceTime` in UTC (a bare weekday or month is the
 * last one, since questions to a memory are mostly about the past): the span from the earliest
 * start to the latest end of the expressions found. Undefined when the query names no time.
 */
export function queryTimeWindow(
  query: string,
  language: QueryLanguage,
  referenceTime: number,
): QueryTimeWindow | undefined {
  const spans = findTimeMentions(query, language, { occurredAt: referenceTime, timeZone: 'UTC' }, 'past').map(
    (m) => ({ gte: m.from, lt: m.until, text: m.text, index: m.index }),
  );
  if (language === 'en') {
    for (const match of query.matchAll(LAST_MONTH_NAME)) {
      // chrono leaves "last May" alone: the most recent May before the reference month.
      const month = MONTHS.indexOf((match[1] ?? '').toLowerCase().slice(0, 3));
      const reference = new Date(referenceTime);
      const year = reference.getUTCFullYear() - (month < reference.getUTCMonth() ? 0 : 1);
      const index = match.index;
      if (spans.some((s) => s.index <= index && index < s.index + s.text.length)) continue;
      spans.push({ gte: Date.UTC(year, month, 1), lt: Date.UTC(year, month + 1, 1), text: match[0], index });
    }
  }
  if (spans.length === 0) return undefined;
  spans.sort((a, b) => a.index - b.index);
  return {
    gte: Math.min(...spans.map((m) => m.gte)),
    lt: Math.max(...spans.map((m) => m.lt)),
    expressions: spans.map((m) => m.text),
  };
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const LAST_MONTH_NAME =
  /\blast (january|february|march|april|may|june|july|august|september|october|november|december)\b/giu;

/** What kind of text a query is (`SearchStats.query_form`). */
export type QueryForm = 'QUESTION' | 'STATEMENT' | 'KEYWORDS';

const ZH_QUESTION_WORDS = /[吗呢]|什么|哪|谁|几|怎么|为什么|多少|是否/u;

/**
 * A question (a question mark, or a question word at the start: "when did…", "什么…吗"); else a
 * statement when it has at least five words (six CJK characters), the length of a sentence; else
 * keywords.
 */
export function queryForm(query: string, language: QueryLanguage): QueryForm {
  const text = query.trim().toLowerCase();
  if (/[?？]/u.test(text)) return 'QUESTION';
  if (language === 'zh') {
    if (ZH_QUESTION_WORDS.test(text)) return 'QUESTION';
    return (text.match(/\p{Script=Han}/gu)?.length ?? 0) >= 6 ? 'STATEMENT' : 'KEYWORDS';
  }
  if (EN_QUESTION_START.test(text)) return 'QUESTION';
  return (text.match(/\p{L}[\p{L}\p{N}'’-]*/gu)?.length ?? 0) >= 5 ? 'STATEMENT' : 'KEYWORDS';
}

const EN_QUESTION_START =
  /^(?:what|what's|whats|where|where's|when|when's|who|who's|whom|whose|which|how|why|is|are|am|do|does|did|can|could|would|should|will|was|were|have|has)\b/u;
const EN_PRESENT =
  /\b(?:is|are|am|do|does|now|currently|these days|nowadays|at the moment|right now)\b|'s\b|'re\b/u;
const EN_PAST =
  /\b(?:did|was|were|had|went|used to|ago|last|yesterday|before|earlier|ever|previously|once|first time|remember|recall|remind)\b/u;
const EN_MODAL = /\b(?:should|could|would|can|will|shall|might|must|what if)\b/u;
const EN_FIRST_PERSON = /\b(?:i|i'm|my|me|mine|we|our)\b/u;
const ZH_QUESTION = /[？?]|什么|哪|谁|几|怎么|怎样|多少|吗|呢|是否/u;
const ZH_PAST = /了|过|以前|之前|上次|曾经|当时|那时|去年|昨天|前天|记得|回忆|第一次|小时候/u;
const ZH_MODAL = /应该|可以|能不能|能否|会不会|要不要|怎么办|该不该|可不可以|能/u;
const ZH_FIRST_PERSON = /我/u;

/**
 * Whether the query asks how something of the asker's stands now ("Where do I live?", "Who is my
 * manager?", "我最喜欢什么颜色？"): a question (a question mark, a question word) in the first person,
 * without a past marker ("did", "was", "ago", "remember"; 了, 过, 以前, 记得) or a modal ("should",
 * "can", "what if"; 应该, 可以, 怎么办), and in English with a present-tense marker ("is", "do",
 * "now"). Questions about what happened, advice, plans of others and statements do not.
 */
export function asksCurrentState(query: string, language: QueryLanguage): boolean {
  const text = query.trim().toLowerCase();
  // Past markers and modals anywhere make it about something else; the first person and the
  // present must be in a question sentence of its own.
  if (language === 'zh') {
    if (ZH_PAST.test(text) || ZH_MODAL.test(text)) return false;
    return sentences(text, /[^。！？!?]+[。！？!?]?/gu).some(
      (s) => (/[？?]$/u.test(s) || /吗|呢/u.test(s)) && ZH_QUESTION.test(s) && ZH_FIRST_PERSON.test(s),
    );
  }
  if (EN_PAST.test(text) || EN_MODAL.test(text)) return false;
  return sentences(text, /[^.!?]+[.!?]?/gu).some(
    (s) => (s.endsWith('?') || EN_QUESTION_START.test(s)) && EN_FIRST_PERSON.test(s) && EN_PRESENT.test(s),
  );
}

function sentences(text: string, pattern: RegExp): string[] {
  return (text.match(pattern) ?? []).map((s) => s.trim()).filter((s) => s !== '');
}
