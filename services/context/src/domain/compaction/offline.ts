/**
 * Offline compaction (`COMPACTION_MODE_OFFLINE`): no model call, same input → same output.
 *
 * - Summary: the USER and ASSISTANT messages split into sentences (SYSTEM and TOOL messages are
 *   not conversation and are left out); the sentences are embedded as documents with the local
 *   embedder and picked by maximal marginal relevance (relevance = cosine to the centroid of all
 *   sentences, λ {@link OFFLINE_COMPACTION.mmrLambda}), then rendered in conversation order, one
 *   line per message, prefixed by the speaker. The new part is appended to the previous summary;
 *   while the whole is over budget its least relevant sentences are dropped, the previous
 *   summary's first.
 * - Key points: sentences with a decision or confirmation cue (`cues.ts`), newest first.
 * - Open loops: questions and pending items that no later message answers. A sentence answers
 *   when its {@link AnswerJudge} score reaches {@link OFFLINE_COMPACTION.answerThreshold}: a question is
 *   answered by a later message of the other role, a pending item by any later message; the
 *   answering sentence must itself state something (not a question or a pending item). Polite
 *   requests ("could you…") count as answered by any later reply of the other role.
 * - Resolution: an unresolved open loop of the base is resolved when a compacted sentence answers
 *   it by the same rule.
 */
import type { Embedder } from '@engram/embeddings';
import { tokenize } from '@engram/lexical';
import type { CompactionBase, CompactionMessage, CompactionResult } from '../types.js';
import {
  MAX_ITEM_CHARS,
  cutToTokens,
  truncateChars,
  type CompactOptions,
  type Compactor,
} from './compactor.js';
import {
  conversationLanguage,
  isDecision,
  isPending,
  isQuestion,
  isRequest,
  normalizeText,
  splitSentences,
  type Lang,
} from './cues.js';

/**
 * The tuning of offline compaction. The answer threshold was measured on the local model
 * (bge-small-zh-v1.5): in one conversation a question and its answer have cosines of 0.68–0.92,
 * but sentences merely on the same topic reach 0.60–0.80 too, so the score is relative (see
 * {@link AnswerJudge}); answers score 0.35–0.7 on it, same-topic sentences below 0.2.
 */
export const OFFLINE_COMPACTION = Object.freeze({
  /** MMR trade-off between relevance and novelty. */
  mmrLambda: 0.7,
  /** {@link AnswerJudge} score at or above which a sentence answers a question or pending item. */
  answerThreshold: 0.3,
  /** Weight of the IDF-weighted lexical overlap in that score. */
  lexicalWeight: 0.5,
  /** The cosine baseline assumed before any sentence is seen, and its weight in sentences. */
  baselinePrior: 0.55,
  baselinePriorWeight: 4,
  /** Cosine at or above which two key points or open loops are the same. */
  duplicateThreshold: 0.92,
  /** Most key points and open loops one compaction adds. */
  maxKeyPoints: 5,
  maxOpenLoops: 5,
  /** The new part of the summary keeps at most this share of the candidate sentences… */
  summarySentenceShare: 0.4,
  /** …but at least this many (budget permitting). */
  minSummarySentences: 3,
  /** Sentences with fewer lexical terms ("OK.", "好的。") carry nothing worth keeping. */
  minTerms: 2,
});

type Speaker = 'USER' | 'ASSISTANT';

/** A sentence of a compacted message. */
interface Sentence {
  readonly text: string;
  readonly key: string;
  readonly message: number;
  readonly role: Speaker;
  readonly question: boolean;
  readonly request: boolean;
  readonly pending: boolean;
  readonly decision: boolean;
  readonly informative: boolean;
}

/** A sentence of the previous summary, with the line it sits on. */
interface SummarySentence {
  readonly text: string;
  readonly line: number;
}

/** The offline {@link Compactor} over `embedder` (the local model in the embedded default). */
export function offlineCompactor(embedder: Embedder): Compactor {
  return {
    mode: 'OFFLINE',
    compact: (base, messages, options) => compactOffline(embedder, base, messages, options),
  };
}

class Vectors {
  readonly #byText = new Map<string, Float32Array>();
  readonly #terms = new Map<string, ReadonlySet<string>>();

  static async of(embedder: Embedder, texts: Iterable<string>, signal?: AbortSignal): Promise<Vectors> {
    const unique = [...new Set(texts)].filter((text) => text.trim() !== '');
    const vectors = new Vectors();
    if (unique.length === 0) return vectors;
    const result = await embedder.embed(unique, 'document', signal === undefined ? {} : { signal });
    unique.forEach((text, i) => {
      const vector = result.vectors[i];
      if (vector !== undefined) vectors.#byText.set(text, vector);
    });
    return vectors;
  }

  get(text: string): Float32Array {
    const vector = this.#byText.get(text);
    if (vector === undefined) throw new Error('compaction: a sentence was not embedded');
    return vector;
  }

  terms(text: string): ReadonlySet<string> {
    let terms = this.#terms.get(text);
    if (terms === undefined) {
      terms = new Set(tokenize(text));
      this.#terms.set(text, terms);
    }
    return terms;
  }
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] ?? 0) * (b[i] ?? 0);
  return sum;
}

/**
 * Judges whether a sentence answers a question or settles a pending item. Within one conversation
 * every sentence shares its topic, so raw cosines are high everywhere (0.6–0.8 on the local
 * model); the score therefore measures what stands out:
 *
 *   score = cos(q, a) − baseline(q) + lexicalWeight · idfOverlap(q, a)
 *
 * where `baseline(q)` is the mean cosine of q to the conversation's sentences (shrunk towards
 * `baselinePrior` with the weight of `baselinePriorWeight` sentences, so short conversations are
 * stable) and `idfOverlap` is the IDF-weighted share of q's lexical terms that occur in the answer
 * (IDF over the conversation's sentences, so "billing service" said everywhere weighs little and
 * "monthly budget" much).
 */
class AnswerJudge {
  readonly #baselines = new Map<string, number>();
  readonly #df = new Map<string, number>();

  constructor(
    private readonly vectors: Vectors,
    private readonly texts: readonly string[],
  ) {
    for (const text of texts)
      for (const term of vectors.terms(text)) this.#df.set(term, (this.#df.get(term) ?? 0) + 1);
  }

  score(question: string, answer: string): number {
    const cos = dot(this.vectors.get(question), this.vectors.get(answer));
    return (
      cos - this.#baseline(question) + OFFLINE_COMPACTION.lexicalWeight * this.#overlap(question, answer)
    );
  }

  answers(question: string, answer: string): boolean {
    return this.score(question, answer) >= OFFLINE_COMPACTION.answerThreshold;
  }

  #idf(term: string): number {
    return Math.log(1 + this.texts.length / (1 + (this.#df.get(term) ?? 0)));
  }

  #overlap(question: string, answer: string): number {
    const said = this.vectors.terms(answer);
    let shared = 0;
    let total = 0;
    for (const term of this.vectors.terms(question)) {
      const weight = this.#idf(term);
      total += weight;
      if (said.has(term)) shared += weight;
    }
    return total === 0 ? 0 : shared / total;
  }

  #baseline(question: string): number {
    let baseline = this.#baselines.get(question);
    if (baseline === undefined) {
      const vector = this.vectors.get(question);
      let sum = OFFLINE_COMPACTION.baselinePrior * OFFLINE_COMPACTION.baselinePriorWeight;
      let n = OFFLINE_COMPACTION.baselinePriorWeight;
      for (const text of this.texts) {
        if (text === question) continue;
        sum += dot(vector, this.vectors.get(text));
        n++;
      }
      baseline = sum / n;
      this.#baselines.set(question, baseline);
    }
    return baseline;
  }
}

/** A sentence that states something (it may answer): not a question, not a pending item. */
function answers(sentence: Sentence): boolean {
  return sentence.informative && !sentence.question && !sentence.pending;
}

async function compactOffline(
  embedder: Embedder,
  base: CompactionBase,
  messages: readonly CompactionMessage[],
  options: CompactOptions,
): Promise<CompactionResult> {
  options.signal?.throwIfAborted();
  const dialog = messages
    .filter((m): m is CompactionMessage & { role: Speaker } => m.role === 'USER' || m.role === 'ASSISTANT')
    .filter((m) => m.content.trim() !== '');
  const language = conversationLanguage(options.language, dialog);
  const sentences = dialog.flatMap((message, index) => sentencesOf(message, index));
  const previous = summarySentences(base.summary);

  const vectors = await Vectors.of(
    embedder,
    [
      ...sentences.map((s) => s.text),
      ...previous.map((s) => s.text),
      ...base.openLoops.map((l) => l.text),
      ...base.keyPoints.map((k) => k.text),
    ],
    options.signal,
  );
  options.signal?.throwIfAborted();

  const summary = foldSummary(dialog, sentences, previous, base.summary, vectors, language, options);
  const keyPoints = keyPointsOf(dialog, sentences, base, vectors);
  const judge = new AnswerJudge(
    vectors,
    sentences.filter((s) => s.informative).map((s) => s.text),
  );
  const resolvedOpenLoopIds = base.openLoops
    .filter((loop) => sentences.some((s) => answers(s) && judge.answers(loop.text, s.text)))
    .map((loop) => loop.id);
  const stillOpen = base.openLoops.filter((loop) => !resolvedOpenLoopIds.includes(loop.id));
  const openLoops = openLoopsOf(dialog, sentences, stillOpen, vectors, judge);
  return {
    summary,
    keyPoints,
    openLoops,
    resolvedOpenLoopIds,
    usage: { promptTokens: 0, completionTokens: 0 },
  };
}

function sentencesOf(message: CompactionMessage & { role: Speaker }, index: number): Sentence[] {
  return splitSentences(message.content).map((text) => {
    const question = isQuestion(text);
    return {
      text,
      key: normalizeText(text),
      message: index,
      role: message.role,
      question,
      request: question && isRequest(text),
      pending: isPending(text),
      decision: isDecision(text),
      informative: tokenize(text).length >= OFFLINE_COMPACTION.minTerms,
    };
  });
}

function summarySentences(summary: string): SummarySentence[] {
  return summary
    .split(/\r?\n/u)
    .flatMap((line, index) => splitSentences(line).map((text) => ({ text, line: index })));
}

/** Sentences joined: no space after CJK punctuation, one space otherwise. */
function joinSentences(texts: readonly string[]): string {
  let out = '';
  for (const text of texts) {
    if (out === '') out = text;
    else out += /[。！？；…：，、）」』》]$/u.test(out) ? text : ` ${text}`;
  }
  return out;
}

function speakerLabel(message: CompactionMessage, language: Lang): string {
  const name = message.participantName.trim().replace(/\s+/gu, ' ');
  if (name !== '') return language === 'zh' ? `${name}：` : `${name}: `;
  if (language === 'zh') return message.role === 'USER' ? '用户：' : '助手：';
  return message.role === 'USER' ? 'User: ' : 'Assistant: ';
}

/** The selected sentences in conversation order, one line per message, prefixed by the speaker. */
function renderNew(
  dialog: readonly CompactionMessage[],
  sentences: readonly Sentence[],
  picked: ReadonlySet<number>,
  language: Lang,
): string {
  const lines: string[] = [];
  let current = -1;
  let texts: string[] = [];
  const flush = (): void => {
    const message = dialog[current];
    if (message !== undefined && texts.length > 0)
      lines.push(speakerLabel(message, language) + joinSentences(texts));
    texts = [];
  };
  sentences.forEach((sentence, index) => {
    if (!picked.has(index)) return;
    if (sentence.message !== current) {
      flush();
      current = sentence.message;
    }
    texts.push(sentence.text);
  });
  flush();
  return lines.join('\n');
}

function renderPrevious(previous: readonly SummarySentence[], kept: ReadonlySet<number>): string {
  const lines = new Map<number, string[]>();
  previous.forEach((sentence, index) => {
    if (!kept.has(index)) return;
    const line = lines.get(sentence.line) ?? [];
    line.push(sentence.text);
    lines.set(sentence.line, line);
  });
  return [...lines.values()].map(joinSentences).join('\n');
}

function joinParts(...parts: readonly string[]): string {
  return parts.filter((part) => part !== '').join('\n');
}

/**
 * The previous summary with the most informative new sentences appended, within the budget. The
 * new part may use the budget the previous summary leaves, and at least half of it.
 */
function foldSummary(
  dialog: readonly CompactionMessage[],
  sentences: readonly Sentence[],
  previous: readonly SummarySentence[],
  previousText: string,
  vectors: Vectors,
  language: Lang,
  options: CompactOptions,
): string {
  const max = Math.max(0, Math.floor(options.summaryMaxTokens));
  const count = options.countTokens;

  // Candidates: informative sentences, the first occurrence of each.
  const seen = new Set<string>();
  const candidates: number[] = [];
  sentences.forEach((sentence, index) => {
    if (!sentence.informative || seen.has(sentence.key)) return;
    seen.add(sentence.key);
    candidates.push(index);
  });

  const centroid = centroidOf([
    ...candidates.map((i) => vectors.get(sentences[i]?.text ?? '')),
    ...previous.map((s) => vectors.get(s.text)),
  ]);
  const relevance = (text: string): number => (centroid === undefined ? 0 : dot(vectors.get(text), centroid));

  const previousTrimmed = previousText.trim();
  const newBudget = Math.max(Math.floor(max / 2), max - count(previousTrimmed));
  const limit = Math.max(
    OFFLINE_COMPACTION.minSummarySentences,
    Math.ceil(candidates.length * OFFLINE_COMPACTION.summarySentenceShare),
  );
  const picked = pickByMmr(
    candidates,
    sentences,
    vectors,
    relevance,
    limit,
    (set) => count(renderNew(dialog, sentences, set, language)) <= newBudget,
  );

  // Fold: drop the least relevant sentences, the previous summary's first, until it fits.
  const newPart = (): string => renderNew(dialog, sentences, picked, language);
  const keptPrevious = new Set(previous.map((_, i) => i));
  let previousPart = previousTrimmed;
  let summary = joinParts(previousPart, newPart());
  const byRelevance = (texts: readonly { index: number; text: string }[]) =>
    [...texts].sort((a, b) => relevance(a.text) - relevance(b.text) || a.index - b.index);
  const previousOrder = byRelevance(previous.map((s, index) => ({ index, text: s.text })));
  const newOrder = byRelevance([...picked].map((index) => ({ index, text: sentences[index]?.text ?? '' })));
  // What is kept when not even one whole sentence fits: the start of the most relevant one.
  const best = [...candidates].sort(
    (a, b) => relevance(sentences[b]?.text ?? '') - relevance(sentences[a]?.text ?? '') || a - b,
  )[0];
  const mostRelevant =
    best !== undefined
      ? renderNew(dialog, sentences, new Set([best]), language)
      : (previousOrder.at(-1)?.text ?? '');
  while (count(summary) > max && previousOrder.length > 0) {
    const victim = previousOrder.shift();
    if (victim === undefined) break;
    keptPrevious.delete(victim.index);
    previousPart = renderPrevious(previous, keptPrevious);
    summary = joinParts(previousPart, newPart());
  }
  while (count(summary) > max && newOrder.length > 0) {
    const victim = newOrder.shift();
    if (victim === undefined) break;
    picked.delete(victim.index);
    summary = joinParts(previousPart, newPart());
  }
  if (count(summary) > max) summary = '';
  // Everything dropped although there was something to say (a single sentence over the budget):
  // keep the start of the most relevant one.
  if (summary === '' && mostRelevant !== '') summary = cutToTokens(mostRelevant, max, count);
  return summary;
}

function centroidOf(vectors: readonly Float32Array[]): Float32Array | undefined {
  const first = vectors[0];
  if (first === undefined) return undefined;
  const sum = new Float32Array(first.length);
  for (const vector of vectors)
    for (let i = 0; i < sum.length; i++) sum[i] = (sum[i] ?? 0) + (vector[i] ?? 0);
  let norm = 0;
  for (const x of sum) norm += x * x;
  if (norm === 0) return undefined;
  const scale = 1 / Math.sqrt(norm);
  for (let i = 0; i < sum.length; i++) sum[i] = (sum[i] ?? 0) * scale;
  return sum;
}

/**
 * Greedy MMR: repeatedly the candidate with the best λ·relevance − (1−λ)·(max cosine to those
 * picked), ties to the earlier sentence; a candidate that would break `fits` is skipped. Stops at
 * `limit` sentences or when none is left.
 */
function pickByMmr(
  candidates: readonly number[],
  sentences: readonly Sentence[],
  vectors: Vectors,
  relevance: (text: string) => number,
  limit: number,
  fits: (picked: ReadonlySet<number>) => boolean,
): Set<number> {
  const lambda = OFFLINE_COMPACTION.mmrLambda;
  const picked = new Set<number>();
  const remaining = [...candidates];
  const redundancy = new Map<number, number>(remaining.map((i) => [i, 0]));
  while (picked.size < limit && remaining.length > 0) {
    let bestAt = -1;
    let bestScore = -Infinity;
    remaining.forEach((index, at) => {
      const text = sentences[index]?.text ?? '';
      const score = lambda * relevance(text) - (1 - lambda) * (redundancy.get(index) ?? 0);
      if (score > bestScore) {
        bestScore = score;
        bestAt = at;
      }
    });
    const [chosen] = remaining.splice(bestAt, 1);
    if (chosen === undefined) break;
    picked.add(chosen);
    if (!fits(picked)) {
      picked.delete(chosen);
      continue;
    }
    const chosenVector = vectors.get(sentences[chosen]?.text ?? '');
    for (const index of remaining) {
      const similarity = dot(vectors.get(sentences[index]?.text ?? ''), chosenVector);
      if (similarity > (redundancy.get(index) ?? 0)) redundancy.set(index, similarity);
    }
  }
  return picked;
}

/** Whether `text` repeats one of `others` (same normalized text or near-identical vector). */
function duplicates(vectors: Vectors, text: string, others: readonly string[]): boolean {
  const key = normalizeText(text);
  return others.some(
    (other) =>
      normalizeText(other) === key ||
      dot(vectors.get(text), vectors.get(other)) >= OFFLINE_COMPACTION.duplicateThreshold,
  );
}

function keyPointsOf(
  dialog: readonly CompactionMessage[],
  sentences: readonly Sentence[],
  base: CompactionBase,
  vectors: Vectors,
): CompactionResult['keyPoints'] {
  const known = base.keyPoints.map((k) => k.text);
  return newestItems(
    dialog,
    sentences,
    { known, vectors, max: OFFLINE_COMPACTION.maxKeyPoints },
    (sentence) => sentence.decision && sentence.informative,
  );
}

function openLoopsOf(
  dialog: readonly CompactionMessage[],
  sentences: readonly Sentence[],
  stillOpen: CompactionBase['openLoops'],
  vectors: Vectors,
  judge: AnswerJudge,
): CompactionResult['openLoops'] {
  const known = stillOpen.map((l) => l.text);
  return newestItems(
    dialog,
    sentences,
    { known, vectors, max: OFFLINE_COMPACTION.maxOpenLoops },
    (sentence) =>
      sentence.informative &&
      (sentence.question || sentence.pending) &&
      !(sentence.decision && !sentence.question) &&
      !isAnswered(sentence, sentences, judge),
  );
}

/**
 * The newest sentences `accept` takes that repeat nothing `known` (nor each other), at most `max`,
 * newest first, as items citing their message.
 */
function newestItems(
  dialog: readonly CompactionMessage[],
  sentences: readonly Sentence[],
  { known, vectors, max }: { known: string[]; vectors: Vectors; max: number },
  accept: (sentence: Sentence) => boolean,
): { text: string; sourceMessageIds: string[] }[] {
  const chosen: { text: string; sourceMessageIds: string[] }[] = [];
  for (let i = sentences.length - 1; i >= 0; i--) {
    if (chosen.length >= max) break;
    const sentence = sentences[i];
    if (sentence === undefined || !accept(sentence)) continue;
    if (duplicates(vectors, sentence.text, known)) continue;
    known.push(sentence.text);
    chosen.push({
      text: truncateChars(sentence.text, MAX_ITEM_CHARS),
      sourceMessageIds: [dialog[sentence.message]?.id ?? ''],
    });
  }
  return chosen;
}

/** Whether a later message answers a question (the other role) or settles a pending item (anyone). */
function isAnswered(loop: Sentence, sentences: readonly Sentence[], judge: AnswerJudge): boolean {
  const later = sentences.filter((s) => s.message > loop.message);
  if (loop.question) {
    const replies = later.filter((s) => s.role !== loop.role);
    if (loop.request) return replies.length > 0;
    return replies.some((s) => answers(s) && judge.answers(loop.text, s.text));
  }
  return later.some((s) => answers(s) && judge.answers(loop.text, s.text));
}
