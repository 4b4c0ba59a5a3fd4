/**
 * Language and sentence rules shared by the offline text processing of several services
 * (governance's extractors, context's compaction): a language guess for Chinese and English, and
 * sentence splitting over Chinese and Latin punctuation. Offsets are UTF-16 indexes into the
 * original text, so excerpts quote it exactly.
 */

/** The two languages the offline rules understand. */
export type Lang = 'zh' | 'en';

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/gu;
const LATIN_WORD = /\p{Script=Latin}+/gu;

/**
 * 'zh' when CJK characters are at least as many as Latin words (a Chinese sentence with an English
 * product name stays Chinese), 'en' when there are Latin words, else the fallback (a language hint
 * such as the session's; 'en' when it is not Chinese).
 */
export function detectLanguage(text: string, fallback = ''): Lang {
  const cjk = text.match(CJK)?.length ?? 0;
  const latinWords = text.match(LATIN_WORD)?.length ?? 0;
  if (cjk > 0 && cjk >= latinWords) return 'zh';
  if (latinWords > 0) return 'en';
  return fallback.toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

/** A piece of a text with its offsets. */
export interface Span {
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

const ABBREVIATIONS = new Set([
  'mr',
  'mrs',
  'ms',
  'dr',
  'prof',
  'st',
  'vs',
  'etc',
  'e.g',
  'i.e',
  'a.m',
  'p.m',
  'u.s',
  'jr',
  'sr',
  'no',
  'approx',
  'fig',
  'inc',
  'ltd',
]);
const CLOSERS = '"\'”’」』）)]》';
const TERMINATORS = '。！？!?；;…';

/**
 * Sentences of a text: split after `。！？；!?;…` and line breaks, and after `.` unless it belongs
 * to a number ("3.5"), a word ("node.js"), an abbreviation ("Dr.") or an initial ("J. Smith");
 * closing quotes and brackets stay with their sentence. Empty pieces are dropped; offsets are
 * trimmed.
 */
export function splitSentences(text: string): Span[] {
  const spans: Span[] = [];
  let start = 0;
  const push = (end: number): void => {
    const raw = text.slice(start, end);
    const lead = raw.length - raw.trimStart().length;
    const trimmed = raw.trim();
    if (trimmed !== '')
      spans.push({ text: trimmed, start: start + lead, end: start + lead + trimmed.length });
    start = end;
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] ?? '';
    const boundary = ch === '\n' || TERMINATORS.includes(ch) || (ch === '.' && isSentenceDot(text, i));
    if (!boundary) continue;
    let end = i + 1;
    while (end < text.length && ('。！？!?.…'.includes(text[end] ?? '') || CLOSERS.includes(text[end] ?? '')))
      end++;
    push(end);
    i = end - 1;
  }
  push(text.length);
  return spans;
}

function isSentenceDot(text: string, i: number): boolean {
  const next = text[i + 1];
  // "3.5", "node.js", "v1.2": a dot followed by anything but a space or a closer is inside a word.
  if (next !== undefined && !/[\s"'”’)\]）」』》]/u.test(next)) return false;
  const word = /([\p{L}.]+)$/u.exec(text.slice(Math.max(0, i - 12), i))?.[1]?.toLowerCase() ?? '';
  if (ABBREVIATIONS.has(word)) return false;
  // A single capital initial ("J. Smith") does not end a sentence.
  if (/^\p{Lu}$/u.test(text.slice(i - 1, i)) && !/\p{L}/u.test(text[i - 2] ?? '')) return false;
  return true;
}
