/**
 * The offline topic-shift judge: finds where the open tail of a conversation changes topic with
 * the local embedding model only (no language model), TextTiling-style (Hearst 1997).
 *
 * 1. Split points are the positions before a USER message (`splitPositions`), so a user turn is
 *    never separated from its replies.
 * 2. At each split point the texts of the `window` USER/ASSISTANT messages before it and of the
 *    `window` from it on are embedded, each window as one text, and compared by cosine similarity
 *    (SYSTEM and TOOL messages count in segment lengths but are not read).
 * 3. Each split point gets a depth score: how far its similarity lies below the peaks reached by
 *    climbing left and right while the similarity rises, (left peak − s) + (right peak − s).
 * 4. A split is proposed at a local minimum of similarity whose depth reaches the threshold —
 *    `minDepth`, raised to the tail's mean depth + `relativeDepth` standard deviations — deepest
 *    first, as long as every segment keeps at least `minSegment` messages.
 *
 * The defaults were measured on LoCoMo (English) and MADial-Bench (Chinese) with the local model
 * (`bench/topic-shift.ts`, docs/decisions/0011-boundary-judges.md). The relative threshold adapts
 * to the similarity scale of a language or an embedder; `minDepth` keeps a tail without a clear
 * shift whole.
 */
import type { Embedder } from '@engram/embeddings';
import { clampNote, splitPositions, type JudgedMessage, type TopicJudgement } from './boundary-judgement.js';

/** Options of {@link detectTopicShifts}; unset fields take {@link DEFAULT_TOPIC_SHIFT_OPTIONS}. */
export interface TopicShiftOptions {
  /** USER/ASSISTANT messages on each side of a split point embedded together and compared. */
  readonly window?: number;
  /** Smallest depth score of a proposed split (an absolute floor). */
  readonly minDepth?: number;
  /**
   * Raises the threshold to the mean depth of the tail's split points plus this many standard
   * deviations; `null` uses `minDepth` alone.
   */
  readonly relativeDepth?: number | null;
  /** Fewest messages in any segment (before the first split, between two, after the last). */
  readonly minSegment?: number;
  /**
   * Vectors of window texts already embedded (by this embedder), consulted before embedding and
   * filled after. The tail is judged again after every append and most of its windows do not
   * change, so an LRU here saves most of the embedding. Default: none.
   */
  readonly cache?: WindowVectorCache;
  /** Cancels the embedding; the call then rejects with `signal.reason`. */
  readonly signal?: AbortSignal;
}

/** A cache of window vectors by text (a `Map` fits; production wants a bounded one). */
export interface WindowVectorCache {
  get(text: string): Float32Array | undefined;
  set(text: string, vector: Float32Array): unknown;
}

/** The measured defaults (see the module comment). */
export const DEFAULT_TOPIC_SHIFT_OPTIONS = {
  window: 3,
  minDepth: 0.1,
  relativeDepth: 0.5,
  minSegment: 4,
} as const satisfies Required<Omit<TopicShiftOptions, 'signal' | 'cache'>>;

/**
 * Longest text of one window, in code points. The local model reads 512 tokens (about 500 Han
 * characters or 2,000 characters of English); a longer window is cut at its far end, away from
 * the split point, because both windows list the message nearest to the split point first.
 */
export const MAX_WINDOW_CHARS = 2000;

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
 * The depth a split needs: `minDepth`, raised to mean + `relativeDepth` × standard deviation of
 * `depths` (population) when `relativeDepth` is not null (Hearst's cutoff, with a floor).
 */
export function depthThreshold(
  depths: readonly number[],
  minDepth: number,
  relativeDepth: number | null,
): number {
  if (relativeDepth === null || depths.length === 0) return minDepth;
  const mean = depths.reduce((sum, d) => sum + d, 0) / depths.length;
  const sd = Math.sqrt(depths.reduce((sum, d) => sum + (d - mean) ** 2, 0) / depths.length);
  return Math.max(minDepth, mean + relativeDepth * sd);
}

/**
 * The splits to propose among scored split points of a tail of `messageCount` messages: local
 * minima (among `gaps`, in order) whose depth reaches {@link depthThreshold}, taken deepest first
 * (ties: earliest) when every segment they leave has at least `minSegment` messages. Returned by
 * position.
 */
export function selectSplits(
  gaps: readonly GapScore[],
  messageCount: number,
  options: { readonly minDepth: number; readonly minSegment: number; readonly relativeDepth?: number | null },
): GapScore[] {
  const similarities = gaps.map((gap) => gap.similarity);
  const threshold = depthThreshold(
    gaps.map((gap) => gap.depth),
    options.minDepth,
    options.relativeDepth ?? null,
  );
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

/** Whether a message is read: a user or assistant turn with text. */
function readable(message: JudgedMessage): boolean {
  return (message.role === 'USER' || message.role === 'ASSISTANT') && message.content.trim() !== '';
}

function joinWindow(contents: readonly string[]): string {
  const points = Array.from(contents.join('\n'));
  return points.length <= MAX_WINDOW_CHARS ? points.join('') : points.slice(0, MAX_WINDOW_CHARS).join('');
}

/**
 * The two texts compared at each of `positions`: the (up to) `window` readable messages before
 * the position, nearest first, and the (up to) `window` from it on, one per line, each cut to
 * {@link MAX_WINDOW_CHARS}. A position without a readable message on one side is left out.
 */
export function windowTexts(
  messages: readonly JudgedMessage[],
  positions: readonly number[],
  window: number,
): { position: number; before: string; after: string }[] {
  const texts: { position: number; before: string; after: string }[] = [];
  for (const position of positions) {
    const before: string[] = [];
    for (let i = position - 1; i >= 0 && before.length < window; i--) {
      const message = messages[i];
      if (message !== undefined && readable(message)) before.push(message.content.trim());
    }
    const after: string[] = [];
    for (let i = position; i < messages.length && after.length < window; i++) {
      const message = messages[i];
      if (message !== undefined && readable(message)) after.push(message.content.trim());
    }
    if (before.length > 0 && after.length > 0) {
      texts.push({ position, before: joinWindow(before), after: joinWindow(after) });
    }
  }
  return texts;
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    dot += x * y;
    aa += x * x;
    bb += y * y;
  }
  return aa === 0 || bb === 0 ? 0 : dot / Math.sqrt(aa * bb);
}

/** Scores split points from their similarities (depth over the series, in position order). */
export function scoreGaps(scored: readonly { position: number; similarity: number }[]): GapScore[] {
  const depths = depthScores(scored.map((s) => s.similarity));
  return scored.map((s, i) => ({ ...s, depth: depths[i] ?? 0 }));
}

/**
 * Proposes topic splits in `messages` (the open tail, ascending by sequence) with `embedder`
 * (window texts embedded as documents: each distinct text not in `cache` once, in one call). Returns no splits,
 * without embedding anything, when no split point leaves `minSegment` messages on both sides.
 * Rejects as the embedder does (e.g. UNAVAILABLE for a remote one), with `signal.reason` when
 * aborted, and with a `RangeError` for options out of range.
 */
export async function detectTopicShifts(
  messages: readonly JudgedMessage[],
  embedder: Embedder,
  options: TopicShiftOptions = {},
): Promise<TopicJudgement> {
  const window = options.window ?? DEFAULT_TOPIC_SHIFT_OPTIONS.window;
  const minDepth = options.minDepth ?? DEFAULT_TOPIC_SHIFT_OPTIONS.minDepth;
  const relativeDepth =
    options.relativeDepth === undefined ? DEFAULT_TOPIC_SHIFT_OPTIONS.relativeDepth : options.relativeDepth;
  const minSegment = options.minSegment ?? DEFAULT_TOPIC_SHIFT_OPTIONS.minSegment;
  if (!Number.isInteger(window) || window < 1) throw new RangeError('window must be a positive integer');
  if (!Number.isInteger(minSegment) || minSegment < 1) {
    throw new RangeError('minSegment must be a positive integer');
  }
  if (!Number.isFinite(minDepth)) throw new RangeError('minDepth must be a finite number');
  const positions = splitPositions(messages);
  if (!positions.some((p) => p >= minSegment && messages.length - p >= minSegment)) return { splits: [] };

  // Depth is computed over every split point (not only those far enough from the ends), so the
  // similarity peaks near the ends still count.
  const windows = windowTexts(messages, positions, window);
  const vectorOf = new Map<string, Float32Array>();
  const missing: string[] = [];
  for (const text of new Set(windows.flatMap((w) => [w.before, w.after]))) {
    const cached = options.cache?.get(text);
    if (cached === undefined) missing.push(text);
    else vectorOf.set(text, cached);
  }
  if (missing.length > 0) {
    const { vectors } = await embedder.embed(
      missing,
      'document',
      options.signal === undefined ? {} : { signal: options.signal },
    );
    missing.forEach((text, i) => {
      const vector = vectors[i];
      if (vector === undefined) return;
      vectorOf.set(text, vector);
      options.cache?.set(text, vector);
    });
  }
  options.signal?.throwIfAborted();
  const scored = windows.flatMap(({ position, before, after }) => {
    const a = vectorOf.get(before);
    const b = vectorOf.get(after);
    return a === undefined || b === undefined ? [] : [{ position, similarity: cosine(a, b) }];
  });
  const chosen = selectSplits(scoreGaps(scored), messages.length, { minDepth, relativeDepth, minSegment });
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
