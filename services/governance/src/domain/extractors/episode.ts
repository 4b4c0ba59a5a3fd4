/**
 * EPISODE extractor: an extractive summary of the MemCell. The user and assistant messages are cut
 * into sentences (Chinese `。！？` and Latin punctuation); each sentence is a bag of terms (English
 * words without stopwords, lightly stemmed; Chinese character bigrams), and its centrality is the
 * cosine similarity to the rest of the cell. The 1–3 most central sentences (by cell size), user
 * sentences slightly favoured and near-duplicates skipped, are kept in their original order with
 * who said them, within 500 characters.
 *
 * Skipped: cells with fewer than two user messages with content, and small talk (fewer than four
 * distinct content terms across the user's messages: "hey how are you" / "just wanted to chat").
 * Messages covered by a forget request are left out of the summary and of its evidence.
 */
import type { Candidate, ExtractionInput, SourceMessage } from '../candidate.js';
import { EPISODE_MAX_CHARS, candidate, userMessages } from './statements.js';
import { detectLanguage, splitSentences, truncate, type Lang } from './text.js';

const EXTRACTOR = 'offline.episode';
const MIN_USER_MESSAGES = 2;
const MIN_CONTENT_TERMS = 4;

const EN_STOPWORDS = new Set(
  (
    "a an the and or but if then so than that this these those there here it its it's i me my mine we us our you your " +
    'yours he him his she her they them their what which who whom whose when where why how all any both each few more ' +
    'most other some such no nor not only own same too very can will just don should now is are was were be been being ' +
    'have has had having do does did doing would could might must shall may am to of in on at by for with about against ' +
    'between into through during before after above below from up down out off over under again further once also ' +
    'really actually maybe well oh ok okay yes yeah yep no nope hi hey hello thanks thank please lol haha hmm um uh ' +
    'sure great good fine nice cool wow want wanted get got go going gonna like just still even much many lot lots ' +
    'thing things something anything everything one way doing chat chatting talk know think see let say said tell ' +
    "i'm i've i'll i'd you're that's what's don't can't didn't isn't sounds sound glad help today"
  ).split(/\s+/u),
);
const ZH_STOP_CHARS = new Set(
  Array.from('的了吗呢吧啊哈呀嘛哦嗯么是我你他她它们这那就也都还很太在有和与及或个一不没要会能可以好吧谢'),
);

/** Light English stemming: "habits" → "habit", "running" → "runn" (consistent, not pretty). */
function stem(word: string): string {
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 5 && word.endsWith('ing')) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith('ed')) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/** Content terms of a text in either language. */
export function terms(text: string): string[] {
  const out: string[] = [];
  const normalized = text.normalize('NFKC').toLowerCase();
  for (const word of normalized.match(/[\p{Script=Latin}\d][\p{Script=Latin}\d'-]*/gu) ?? []) {
    if (!EN_STOPWORDS.has(word) && word.length > 1) out.push(stem(word));
  }
  for (const run of normalized.match(/\p{Script=Han}+/gu) ?? []) {
    const chars = Array.from(run);
    for (let i = 0; i + 1 < chars.length; i++) {
      const a = chars[i] ?? '';
      const b = chars[i + 1] ?? '';
      if (!ZH_STOP_CHARS.has(a) && !ZH_STOP_CHARS.has(b)) out.push(a + b);
    }
  }
  return out;
}

interface ScoredSentence {
  readonly message: SourceMessage;
  readonly text: string;
  readonly order: number;
  readonly vector: Map<string, number>;
  score: number;
}

function vectorOf(words: readonly string[]): Map<string, number> {
  const vector = new Map<string, number>();
  for (const w of words) vector.set(w, (vector.get(w) ?? 0) + 1);
  return vector;
}

function norm(vector: ReadonlyMap<string, number>): number {
  let sum = 0;
  for (const v of vector.values()) sum += v * v;
  return Math.sqrt(sum);
}

function jaccard(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): number {
  let shared = 0;
  for (const key of a.keys()) if (b.has(key)) shared++;
  const union = a.size + b.size - shared;
  return union === 0 ? 0 : shared / union;
}

function speaker(message: SourceMessage, language: Lang): string {
  if (message.participantName !== undefined && message.participantName !== '') return message.participantName;
  if (language === 'zh') return message.role === 'USER' ? '用户' : '助手';
  return message.role === 'USER' ? 'User' : 'Assistant';
}

/** The EPISODE candidate of a MemCell, or none for short cells and small talk. */
export function extractEpisode(
  input: ExtractionInput,
  suppressed: ReadonlySet<string> = new Set(),
): Candidate[] {
  const users = userMessages(input, suppressed);
  if (users.length < MIN_USER_MESSAGES) return [];
  const userTerms = new Set(users.flatMap((m) => terms(m.content)));
  if (userTerms.size < MIN_CONTENT_TERMS) return [];

  const messages = input.messages.filter(
    (m) => (m.role === 'USER' || m.role === 'ASSISTANT') && m.content.trim() !== '' && !suppressed.has(m.id),
  );
  const sentences: ScoredSentence[] = [];
  for (const message of messages) {
    for (const span of splitSentences(message.content)) {
      sentences.push({
        message,
        text: span.text,
        order: sentences.length,
        vector: vectorOf(terms(span.text)),
        score: 0,
      });
    }
  }
  const centroid = new Map<string, number>();
  for (const s of sentences) for (const [t, v] of s.vector) centroid.set(t, (centroid.get(t) ?? 0) + v);
  for (const s of sentences) {
    // Similarity to the rest of the cell: the centroid without the sentence itself.
    let dot = 0;
    let restNorm = 0;
    for (const [t, total] of centroid) {
      const rest = total - (s.vector.get(t) ?? 0);
      restNorm += rest * rest;
      dot += rest * (s.vector.get(t) ?? 0);
    }
    const denominator = norm(s.vector) * Math.sqrt(restNorm);
    // Centrality, plus information: a sentence full of content terms is informative even when it
    // shares little with the rest ("项目下周五就要上线了" after "工作压力好大").
    let score = (denominator === 0 ? 0 : dot / denominator) + 0.04 * Math.min(s.vector.size, 12);
    if (s.message.role === 'USER') score *= 1.15;
    if (/[?？]\s*$/u.test(s.text)) score *= 0.7;
    if (s.vector.size < 3) score *= 0.5;
    s.score = score;
  }
  const wanted = sentences.length <= 3 ? 1 : sentences.length <= 8 ? 2 : 3;
  const chosen: ScoredSentence[] = [];
  for (const s of [...sentences].sort((a, b) => b.score - a.score || a.order - b.order)) {
    if (chosen.length >= wanted) break;
    if (s.vector.size === 0 || chosen.some((c) => jaccard(c.vector, s.vector) > 0.5)) continue;
    chosen.push(s);
  }
  if (chosen.length === 0) return [];
  // The episode is the user's memory: keep at least one of their own sentences.
  if (!chosen.some((s) => s.message.role === 'USER')) {
    const best = [...sentences]
      .filter((s) => s.message.role === 'USER' && s.vector.size > 0)
      .sort((a, b) => b.score - a.score || a.order - b.order)[0];
    if (best !== undefined) chosen.push(best);
  }
  chosen.sort((a, b) => a.order - b.order);

  const language = majorityLanguage(users, input.languageCode);
  let text = '';
  let lastSpeaker = '';
  for (const s of chosen) {
    const who = speaker(s.message, language);
    const piece =
      who === lastSpeaker
        ? ` ${s.text}`
        : `${text === '' ? '' : ' '}${who}${language === 'zh' ? '：' : ': '}${s.text}`;
    text += piece;
    lastSpeaker = who;
  }
  text = truncate(text, EPISODE_MAX_CHARS);
  const first = messages[0] ?? users[0];
  return [
    candidate(input, messages, language, chosen[0]?.text ?? text, {
      type: 'EPISODE',
      text,
      sourceKind: 'INFERRED',
      confidence: 0.6,
      occurredAt: first?.occurredAt ?? 0,
      rule: 'episode.centrality',
      extractor: EXTRACTOR,
      extraMetadata: { sentences: String(chosen.length), of_sentences: String(sentences.length) },
    }),
  ];
}

function majorityLanguage(messages: readonly SourceMessage[], hint: string): Lang {
  let zh = 0;
  for (const m of messages) if (detectLanguage(m.content, hint) === 'zh') zh++;
  return zh * 2 >= messages.length && zh > 0 ? 'zh' : 'en';
}
