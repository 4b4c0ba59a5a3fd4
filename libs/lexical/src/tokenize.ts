import { stemEnglish } from './stem.js';
import { CJK_STOPWORDS, ENGLISH_STOPWORDS } from './stopwords.js';

/**
 * The version of the tokenizer's output. Stored sparse vectors are only comparable with queries
 * tokenized by the same version: bump this on any change to what `tokenize` returns (rules,
 * stopwords, stemmer, limits) and rebuild the sparse vectors of every index.
 */
export const TOKENIZER_VERSION = 1;

/** Bounds that make `tokenize` cheap and its output bounded for any input. */
export const TOKENIZER_LIMITS = {
  /** Only the first 262,144 UTF-16 code units of a text are read; the rest is ignored. */
  maxInputLength: 262_144,
  /** At most this many tokens are returned, the first ones in text order. */
  maxTokens: 16_384,
  /**
   * Longer tokens (hashes, base64, run-together garbage) are cut to this many UTF-16 code units
   * and not stemmed, so the same long string still matches itself.
   */
  maxTokenLength: 64,
} as const;

// Han, kana and Hangul letters (ー, the long vowel mark, is a Common-script letter used in
// katakana). Only letters: CJK punctuation and symbols separate runs.
const CJK_CLASS = String.raw`[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}\p{sc=Hangul}\u30FC]`;
const CJK_RUN = new RegExp(String.raw`(?:(?=\p{L})${CJK_CLASS})+`, 'gu');

// A word between CJK runs: letters, digits and combining marks, with an apostrophe between
// letters ("don't"), a dot between digits ("3.14", "192.168.0.1") or a comma before a group of
// exactly three digits ("1,000") inside it. Hyphens and underscores join words into a compound
// ("gpt-4o", "e-mail", "user_id"). Everything else separates: spaces, punctuation, @, /, :, and
// so emails and URLs fall apart into their words. Every quantifier is followed by a character
// it cannot match, so matching is linear.
const WORD = String.raw`[\p{L}\p{Nd}][\p{L}\p{Mn}\p{Mc}\p{Nd}]*`;
const JOINER = String.raw`(?:'|(?<=\p{Nd})\.(?=\p{Nd})|(?<=\p{Nd}),(?=\p{Nd}{3}(?!\p{Nd})))`;
const PART = `${WORD}(?:${JOINER}${WORD})*`;
const COMPOUND = new RegExp(`${PART}(?:[-_\u2010]${PART})*`, 'gu');
const COMPOUND_SEPARATOR = /[-_\u2010]/u;

// Apostrophe look-alikes that NFKC leaves alone: ’ ‘ and the modifier letter ʼ.
const APOSTROPHES = /[\u2018\u2019\u02BC]/gu;
// Invisible characters that would otherwise split a word: soft hyphen, zero-width (non-)joiner,
// word joiner and variation selectors (also the ideographic variation selectors after Han).
// (Alternatives rather than one class: a class holding a joiner or a selector reads as a sequence.)
const INVISIBLE = /\u00AD|\u200C|\u200D|\u2060|[\uFE00-\uFE0F]|[\u{E0100}-\u{E01EF}]/gu;

// One instance: ICU's dictionary-based segmentation for Chinese (also splits Japanese kanji/kana).
const CJK_SEGMENTER = new Intl.Segmenter('zh', { granularity: 'word' });

/**
 * Splits text into the lexical terms Engram matches on — the one tokenizer for documents,
 * memories, rounds and queries. Deterministic, never throws, output bounded by TOKENIZER_LIMITS.
 *
 * 1. NFKC (full-width "ＡＢＣ１２３" → "abc123", ligatures, circled digits), then lower case.
 * 2. CJK runs (Han, kana, Hangul): every overlapping character bigram of the run, so
 *    two-character Chinese words match however the segmenter splits, plus every word of three or
 *    more characters from `Intl.Segmenter('zh')` ("尤其是", "株式会社"). A one-character run is
 *    its own unigram unless it is a function word (的, 了, の, …). So a one-character query
 *    matches only one-character runs: "猫" alone does not find "我的猫很可爱".
 * 3. Other words (Latin, Cyrillic, Greek, …): English stopwords dropped, contractions reduced
 *    ("user's" → "user", "don't" → "do", "won't" → "will"), lower-case ASCII words stemmed lightly
 *    (plurals, -ed, -ing; see `stemEnglish`), other scripts kept as lower-cased words.
 * 4. Digits: "2024" stays; decimals and dotted numbers keep their dots ("3.14", "1.2.3");
 *    thousands separators go ("1,000" → "1000"); other commas split ("1,2" → "1", "2").
 *    Mixed letters and digits stay one token ("4o", "mp3").
 * 5. Hyphen/underscore compounds yield their parts and the parts joined: "gpt-4o" → "gpt", "4o",
 *    "gpt4o"; "e-mail" → "e", "mail", "email" — so "GPT-4o", "gpt 4o" and "gpt4o" meet.
 * 6. Emoji, symbols and punctuation are dropped; emails and URLs split into their words.
 */
export function tokenize(text: string): string[] {
  const normalized = normalize(text);
  const tokens: string[] = [];
  let cursor = 0;
  for (const match of normalized.matchAll(CJK_RUN)) {
    if (tokens.length >= TOKENIZER_LIMITS.maxTokens) break;
    addWords(normalized.slice(cursor, match.index), tokens);
    addCjkRun(match[0], tokens);
    cursor = match.index + match[0].length;
  }
  addWords(normalized.slice(cursor), tokens);
  if (tokens.length > TOKENIZER_LIMITS.maxTokens) tokens.length = TOKENIZER_LIMITS.maxTokens;
  return tokens;
}

function normalize(text: string): string {
  return cut(text, TOKENIZER_LIMITS.maxInputLength)
    .normalize('NFKC')
    .toLowerCase()
    .replace(APOSTROPHES, "'")
    .replace(INVISIBLE, '');
}

function addWords(segment: string, tokens: string[]): void {
  for (const match of segment.matchAll(COMPOUND)) {
    if (tokens.length >= TOKENIZER_LIMITS.maxTokens) return;
    const compound = match[0];
    const parts = compound.split(COMPOUND_SEPARATOR);
    for (const part of parts) addWord(part, tokens);
    if (parts.length > 1) addWord(parts.join(''), tokens);
  }
}

function addWord(raw: string, tokens: string[]): void {
  if (raw.length > TOKENIZER_LIMITS.maxTokenLength) {
    tokens.push(cut(raw, TOKENIZER_LIMITS.maxTokenLength));
    return;
  }
  const word = reduceContraction(raw).replaceAll(',', '');
  if (word === '' || ENGLISH_STOPWORDS.has(word)) return;
  const stem = stemEnglish(word);
  // A stem can itself be a stopword ("alle" → "all"): drop it too, so no stopword is ever a token.
  if (!ENGLISH_STOPWORDS.has(stem)) tokens.push(stem);
}

/** "user's" → "user", "they're" → "they", "don't" → "do", "can't" → "can", "o'brien" → "obrien". */
function reduceContraction(word: string): string {
  if (!word.includes("'")) return word;
  let base: string;
  if (word.endsWith("n't")) {
    const stem = word.slice(0, -3);
    base = IRREGULAR_NEGATIONS.get(stem) ?? stem;
  } else {
    base = word.replace(/'(?:s|re|ve|ll|d|m)$/u, '');
  }
  return base.replaceAll("'", '');
}

const IRREGULAR_NEGATIONS: ReadonlyMap<string, string> = new Map([
  ['ca', 'can'],
  ['wo', 'will'],
  ['sha', 'shall'],
]);

function addCjkRun(run: string, tokens: string[]): void {
  const chars = Array.from(run);
  if (chars.length === 1) {
    if (!CJK_STOPWORDS.has(run)) tokens.push(run);
    return;
  }
  // Walk the segmenter's words in order; each word is emitted before the bigrams that start
  // inside it, so the output follows the text. Words of one character are left out: inside a
  // longer run they are mostly pronouns and particles (我, 很, に) with little signal that the
  // bigrams around them do not carry (leaving them out cost no recall on MADial zh).
  // Two-character words are already bigrams.
  let position = 0;
  for (const { segment } of CJK_SEGMENTER.segment(run)) {
    if (tokens.length >= TOKENIZER_LIMITS.maxTokens) return;
    const start = position;
    position += Array.from(segment).length;
    if (position - start > 2) tokens.push(cut(segment, TOKENIZER_LIMITS.maxTokenLength));
    const end = Math.min(position, chars.length - 1);
    for (let i = start; i < end; i++) tokens.push(`${chars[i] ?? ''}${chars[i + 1] ?? ''}`);
  }
}

/** The first `max` UTF-16 code units, without splitting a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}
