/**
 * The text rules of offline compaction, in Chinese and English: which language a conversation is
 * in, how a message splits into sentences, and which sentences are decisions (key points),
 * questions or pending items (open loops). Pure and deterministic.
 */

import { detectLanguage, splitSentences as splitSpans, type Lang } from '@engram/lexical';

export { detectLanguage, type Lang };

/**
 * The language compaction writes in: `zh` for a BCP-47 code starting with `zh`, `en` for any other
 * non-empty code; without one, detected from what the user said (everything when the user said
 * nothing).
 */
export function conversationLanguage(
  code: string | undefined,
  messages: readonly { readonly role: string; readonly content: string }[],
): Lang {
  const normalized = (code ?? '').trim().toLowerCase();
  if (normalized !== '') return normalized === 'zh' || normalized.startsWith('zh-') ? 'zh' : 'en';
  const users = messages.filter((m) => m.role === 'USER');
  return detectLanguage((users.length > 0 ? users : messages).map((m) => m.content).join('\n'));
}

/** The sentences of a text, trimmed, empty ones dropped (see `@engram/lexical`). */
export function splitSentences(text: string): string[] {
  return splitSpans(text).map((span) => span.text);
}

/** NFKC, straight apostrophes, collapsed spaces, lower case: what the cue patterns run on. */
export function normalizeText(text: string): string {
  return text
    .normalize('NFKC')
    .replace(/[‘’`´]/gu, "'")
    .replace(/[“”]/gu, '"')
    .replace(/\s+/gu, ' ')
    .trim()
    .toLowerCase();
}

/**
 * English decision and confirmation phrases: a choice made or a conclusion agreed by the speakers
 * ("we decided", "let's go with", "confirmed", "from now on").
 */
export const EN_DECISION_CUES: readonly string[] = [
  'we decided',
  "we've decided",
  'we have decided',
  'i decided',
  "i've decided",
  'decided to',
  'decision is',
  'final decision',
  "let's go with",
  'lets go with',
  "let's use",
  "let's stick with",
  'we will go with',
  "we'll go with",
  "we're going with",
  'we are going with',
  'we will use',
  "we'll use",
  'we settled on',
  'settled on',
  'agreed',
  'we agree',
  'confirmed',
  'i confirm',
  'it is settled',
  "it's settled",
  'from now on',
  'going forward',
  'the plan is',
  'in conclusion',
  'the conclusion is',
  'sounds good, let',
];

/** Chinese decision and confirmation words ("决定", "确定", "就用", "定了", "同意", "确认", "以后"). */
export const ZH_DECISION_CUES: readonly string[] = [
  '决定',
  '确定',
  '就用',
  '定了',
  '同意',
  '确认',
  '以后',
  '今后',
  '从现在开始',
  '那就',
  '就这么定',
  '就这样',
  '说好了',
  '敲定',
  '定下来',
  '结论是',
  '最终方案',
  '采用',
];

const EN_DECISION = new RegExp(
  `(?:^|[^\\p{L}])(?:${EN_DECISION_CUES.map(escape).join('|')})(?![\\p{L}])`,
  'u',
);
const ZH_DECISION = new RegExp(ZH_DECISION_CUES.map(escape).join('|'), 'u');
// Negated or still-open decisions are not key points: "not decided yet", "haven't agreed",
// "不确定", "还没决定", "未确认", "以后再说" (that one is pending, see PENDING).
const EN_NEGATED =
  /\b(?:not|never|haven't|hasn't|havent|hasnt|didn't|didnt|isn't|wasn't|aren't|no)\s+(?:yet\s+|been\s+|really\s+|fully\s+)?(?:decided|confirmed|agreed|settled)\b|\bundecided\b|\bunconfirmed\b|\bif we (?:decide|agree)\b/u;
const ZH_NEGATED =
  /(?:不|没|未|没有|还没|尚未|无法|待)(?:有)?(?:决定|确定|确认|同意|定)|以后再|回头再|要不要|是否确定|能不能确认|请确认|帮我确认|不采用/u;

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/gu, '\\$&');
}

/**
 * Whether a sentence states a decision or a confirmed conclusion: a decision cue of either
 * language, not negated and not a question.
 */
export function isDecision(sentence: string): boolean {
  if (isQuestion(sentence)) return false;
  const text = normalizeText(sentence);
  const cue = EN_DECISION.test(text) || ZH_DECISION.test(text);
  return cue && !EN_NEGATED.test(text) && !ZH_NEGATED.test(text);
}

const EN_QUESTION_START =
  /^(?:(?:hey|hi|hello|so|ok|okay|and|but|also|oh|well|btw|um|uh)[,!]?\s+)*(?:(?:what|where|when|why|who|whom|whose|which|how)(?:'s|'re|'d|\s+(?:is|are|was|were|do|does|did|can|could|would|will|should|much|many|long|often|about|if|kind|time|way|happens)\b)|which\s+\p{L}+\s+(?:should|do|does|did|is|are|can|could|will|would)\b|(?:do|does|did|is|are|was|were|can|could|would|will|should|shall|may|have|has|had|am)\s+(?:you|i|we|they|he|she|it|there|this|that|my|your|our)\b)/u;
// A Chinese question without a question mark: a question word or particle ending the sentence.
const ZH_QUESTION_END =
  /(?:什么|为什么|怎么|怎么办|怎样|如何|哪|哪里|哪个|谁|多少|几点|几号|是不是|有没有|能不能|可不可以|要不要|会不会|是否|吗|么|呢)[\s。.!！~～]*$/u;
const ZH_QUESTION_WORDS = /(?:为什么|怎么办|怎么样|是否|如何|哪里|哪个|多少)/u;

/**
 * Whether a sentence asks: it ends with `?`/`？`, starts like an English question ("which…",
 * "should we…"), ends with a Chinese question word or particle (吗/呢/什么/怎么/是否…) or contains
 * a Chinese interrogative (为什么/是否/如何/哪个/多少…).
 */
export function isQuestion(sentence: string): boolean {
  if (/[?？]\s*["'”’)）」』]*\s*$/u.test(sentence)) return true;
  const text = normalizeText(sentence);
  return EN_QUESTION_START.test(text) || ZH_QUESTION_END.test(text) || ZH_QUESTION_WORDS.test(text);
}

/** "Can you…", "could you…", "能不能帮我…", "请…": a request rather than an open question. */
export function isRequest(sentence: string): boolean {
  const text = normalizeText(sentence);
  return (
    /^(?:(?:please|so|ok|okay|and|also),?\s+)?(?:can|could|would|will)\s+you\b/u.test(text) ||
    /^(?:请|麻烦|能不能帮|能否帮|可以帮|可不可以帮|帮我)/u.test(text)
  );
}

/** English phrases of an item left pending ("TODO", "I'll get back to you", "still need to"). */
export const EN_PENDING_CUES: readonly string[] = [
  'todo',
  'to do:',
  "i'll get back",
  'i will get back',
  "we'll get back",
  'get back to you',
  "i'll check",
  'i will check',
  "i'll look into",
  'i will look into',
  'still need to',
  'still have to',
  'not yet',
  'pending',
  'tbd',
  'to be decided',
  'to be confirmed',
  'decide later',
  'discuss later',
  'check later',
  'revisit',
  'follow up',
  'follow-up',
  "haven't decided",
  'not decided',
];

/** Chinese words of an item left pending ("待定", "回头", "还没", "稍后"). */
export const ZH_PENDING_CUES: readonly string[] = [
  '待定',
  '待确认',
  '回头',
  '还没',
  '尚未',
  '稍后',
  '晚点',
  '之后再',
  '以后再',
  '再看看',
  '再说',
  '再确认',
  '再定',
  '跟进',
  '待办',
];

const EN_PENDING = new RegExp(`(?:^|[^\\p{L}])(?:${EN_PENDING_CUES.map(escape).join('|')})(?![\\p{L}])`, 'u');
const ZH_PENDING = new RegExp(ZH_PENDING_CUES.map(escape).join('|'), 'u');

/** Whether a sentence leaves an item pending ("TODO", "I'll get back to you", "待定", "回头再说"). */
export function isPending(sentence: string): boolean {
  const text = normalizeText(sentence);
  return EN_PENDING.test(text) || ZH_PENDING.test(text);
}
