/**
 * The offline topic-shift judge: finds where the open tail of a conversation changes topic with
 * the local embedding model only (no language model), TextTiling-style (Hearst 1997).
 *
 * 1. Split points are the positions before a USER message (`splitPositions`), so a user turn is
 *    never separated from its replies.
 * 2. Every USER and ASSISTANT message with text is embedded once, alone (SYSTEM and TOOL messages
 *    take part in segment lengths but not in similarity). At each split point the `window`
 *    messages before it and the `window` after it are averaged, and the two means compared by
 *    cosine similarity.
 * 3. Each split point gets a depth score: how far its similarity lies below the peaks reached by
 *    climbing left and right while the similarity rises (left peak − s) + (right peak − s).
 * 4. A split is proposed at a local minimum of similarity whose depth is at least `minDepth`,
 *    deepest first, as long as every segment keeps at least `minSegment` messages.
 *
 * The defaults were measured on LoCoMo (English) and MADial-Bench (Chinese) with the local model
 * (`bench/topic-shift.ts`, docs/decisions/0011-boundary-judges.md). Depths are on the scale of the
 * embedder's cosine similarities: another embedder needs its own `minDepth`.
 */
import type { Embedder } from '@engram/embeddings';
import { clampNote, splitPositions, type JudgedMessage, type TopicJudgement } from './boundary-judgement.js';

/** Options of {@link detectTopicShifts}; unset fields take {@link DEFAULT_TOPIC_SHIFT_OPTIONS}. */
export interface TopicShiftOptions {
  /** Messages on each side of a split point that are averaged and compared. */
  readonly window?: number;
  /** Smallest depth score of a proposed split. */
  readonly minDepth?: number;
  /** Fewest messages in any segment (before the first split, between two, after the last). */
  readonly minSegment?: number;
  /** Cancels the embedding; the call then rejects with `signal.reason`. */
  readonly signal?: AbortSignal;
}

/** The measured defaults (see the module comment). */
export const DEFAULT_TOPIC_SHIFT_OPTIONS = {
  window: 3,
  minDepth: 0.1,
  minSegment: 4,
} as const satisfies Required<Omit<TopicShiftOptions, 'signal'>>;

/** One split point of a tail with its scores. */
export interface GapScore {
  /** Index into the tail of the first message after the split. */
  readonly position: number;
  /** Cosine similarity of the mean vectors of the windows before and after. */
  readonly similarity: number;
  /** TextTiling depth score (see {@link depthScores}). */
  readonly depth: number;
}

/**
 * TextTiling depth of every point of a similarity series: from point `i`, climb left while the
 * similarity rises and right while it rises; depth = (left peak − s[i]) + (right peak − s[i]).
 * Zero at a point higher than both neighbours; never negative.
 */
export function depthScores(similarities: readonly number[]): number[] {
  return similarities.map((s, i) => {
    let left = s;
    for (let j = i - 1; j >= 0 && (similarities[j] ?? -Infinity) >= left; j--) left = similarities[j] ?? left;
    let right = s;
    for (let j = i + 1; j < similarities.length && (similarities[j] ?? -Infinity) >= right; j++) {
      right = similarities[j] ?? right;
    }
    return left - s + (right - s);
  });
}

/**
 * Whether point `i` is a local minimum: strictly below its left neighbour and not above its right
 * one (so a flat valley counts once, at its first point). An end point compares with its one
 * neighbour; a lone point is a minimum.
 */
export function isLocalMinimum(similarities: readonly number[], i: number): boolean {
  const s = similarities[i];
  if (s === undefined) return false;
  const left = similarities[i - 1];
  const right = similarities[i + 1];
  return (left === undefined || s < left) && (right === undefined || s <= right);
}

/**
 * The splits to propose among scored split points of a tail of `messageCount` messages: local
 * minima (among `gaps`, in order) with depth ≥ `minDepth`, taken deepest first (ties: earliest)
 * when every segment they leave has at least `minSegment` messages. Returned by position.
 */
export function selectSplits(
  gaps: readonly GapScore[],
  messageCount: number,
  options: { readonly minDepth: number; readonly minSegment: number; readonly relativeDepth?: number },
): GapScore[] {
  const similarities = gaps.map((gap) => gap.similarity);
  let threshold = options.minDepth;
  if (options.relativeDepth !== undefined && gaps.length > 0) {
    const mean = gaps.reduce((sum, gap) => sum + gap.depth, 0) / gaps.length;
    const sd = Math.sqrt(gaps.reduce((sum, gap) => sum + (gap.depth - mean) ** 2, 0) / gaps.length);
    threshold = Math.max(threshold, mean + options.relativeDepth * sd);
  }
  const candidates = gaps
    .filter((gap, i) => gap.depth >= threshold && isLocalMinimum(similarities, i))
    .sort((a, b) => b.depth - a.depth || a.position - b.position);
  const chosen: GapScore[] = [];
  for (const gap of candidates) {
    let start = 0;
    let end = messageCount;
    for (const other of chosen) {
      if (other.position <= gap.position) start = Math.max(start, other.position);
      else end = Math.min(end, other.position);
    }
    if (gap.position - start >= options.minSegment && end - gap.position >= options.minSegment) {
      chosen.push(gap);
    }
  }
  return chosen.sort((a, b) => a.position - b.position);
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] ?? 0) * (b[i] ?? 0);
  return sum;
}

function meanCosine(a: readonly Float32Array[], b: readonly Float32Array[]): number {
  const sum = (vectors: readonly Float32Array[]) => {
    const total = new Float32Array(vectors[0]?.length ?? 0);
    for (const v of vectors) for (let i = 0; i < v.length; i++) total[i] = (total[i] ?? 0) + (v[i] ?? 0);
    return total;
  };
  const x = sum(a);
  const y = sum(b);
  const norms = Math.sqrt(dot(x, x) * dot(y, y));
  return norms === 0 ? 0 : dot(x, y) / norms;
}

/**
 * The window similarity at each of `positions`: the cosine of the mean of the (up to) `window`
 * vectors before the position and the mean of the (up to) `window` from it on; messages without a
 * vector are passed over. A position with no vector on one side gets no score (it is left out).
 */
export function windowSimilarities(
  vectors: readonly (Float32Array | undefined)[],
  positions: readonly number[],
  window: number,
): { position: number; similarity: number }[] {
  const scored: { position: number; similarity: number }[] = [];
  for (const position of positions) {
    const before: Float32Array[] = [];
    for (let i = position - 1; i >= 0 && before.length < window; i--) {
      const v = vectors[i];
      if (v !== undefined) before.push(v);
    }
    const after: Float32Array[] = [];
    for (let i = position; i < vectors.length && after.length < window; i++) {
      const v = vectors[i];
      if (v !== undefined) after.push(v);
    }
    if (before.length > 0 && after.length > 0)
      scored.push({ position, similarity: meanCosine(before, after) });
  }
  return scored;
}

/** Scores split points from their similarities (depth over the series, in position order). */
export function scoreGaps(scored: readonly { position: number; similarity: number }[]): GapScore[] {
  const depths = depthScores(scored.map((s) => s.similarity));
  return scored.map((s, i) => ({ ...s, depth: depths[i] ?? 0 }));
}

/** Whether a message takes part in similarity: a user or assistant turn with text. */
function embeddable(message: JudgedMessage): boolean {
  return (message.role === 'USER' || message.role === 'ASSISTANT') && message.content.trim() !== '';
}

/**
 * Proposes topic splits in `messages` (the open tail, ascending by sequence) with `embedder`
 * (one vector per USER/ASSISTANT message, embedded as documents). Returns no splits, without
 * embedding anything, when the tail is too short to hold two segments of `minSegment` messages.
 * Rejects as the embedder does (e.g. UNAVAILABLE for a remote one), or with `signal.reason`.
 */
export async function detectTopicShifts(
  messages: readonly JudgedMessage[],
  embedder: Embedder,
  options: TopicShiftOptions = {},
): Promise<TopicJudgement> {
  const window = options.window ?? DEFAULT_TOPIC_SHIFT_OPTIONS.window;
  const minDepth = options.minDepth ?? DEFAULT_TOPIC_SHIFT_OPTIONS.minDepth;
  const minSegment = options.minSegment ?? DEFAULT_TOPIC_SHIFT_OPTIONS.minSegment;
  if (!Number.isInteger(window) || window < 1) throw new RangeError('window must be a positive integer');
  if (!Number.isInteger(minSegment) || minSegment < 1) {
    throw new RangeError('minSegment must be a positive integer');
  }
  const positions = splitPositions(messages).filter(
    (p) => p >= minSegment && messages.length - p >= minSegment,
  );
  if (positions.length === 0) return { splits: [] };

  const indexes = messages.flatMap((m, i) => (embeddable(m) ? [i] : []));
  const { vectors } = await embedder.embed(
    indexes.map((i) => messages[i]?.content.trim() ?? ''),
    'document',
    options.signal === undefined ? {} : { signal: options.signal },
  );
  const byPosition = new Array<Float32Array | undefined>(messages.length);
  indexes.forEach((messageIndex, k) => (byPosition[messageIndex] = vectors[k]));

  // Depth is computed over every scored split point (not only those far enough from the ends),
  // so the peaks near the ends still count.
  const gaps = scoreGaps(windowSimilarities(byPosition, splitPositions(messages), window));
  const chosen = selectSplits(gaps, messages.length, { minDepth, minSegment });
  return {
    splits: chosen.map((gap) => ({
      afterSequence: messages[gap.position - 1]?.sequence ?? 0,
      score: gap.depth,
      note: clampNote(
        `topic shift: depth ${gap.depth.toFixed(2)}, similarity ${gap.similarity.toFixed(2)} ` +
          `(offline detector, window ${window})`,
      ),
    })),
  };
}
