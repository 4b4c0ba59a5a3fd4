/**
 * The measurement behind DEFAULT_TOPIC_SHIFT_OPTIONS (docs/decisions/0011-boundary-judges.md).
 *
 *   npm run bench:topic-shift -- [--data ../shared/bench-data/locomo10.json] [--conversations 5]
 *     [--madial ../shared/bench-data/madial-bench/MADial-Bench-zh-dialogue.json] [--tail 50]
 *     [--windows 2,3,4] [--min-segments 2,4,6] [--out bench/out/topic-shift.json]
 *
 * Two sets with known topic boundaries, each turned into message streams without dates:
 * - LoCoMo (English): the first `--conversations` conversations (the whole set takes too long to
 *   embed for every window on 2 cores), each one's sessions concatenated; a session boundary is a
 *   topic boundary. The first speaker's turns are USER messages, the other's ASSISTANT, so, as in
 *   production, a split can only fall before the first speaker's turns (sessions that start with
 *   the other speaker have their boundary one message from the nearest split point).
 * - MADial-Bench zh (Chinese): its 160 short user/assistant dialogues, concatenated per user in
 *   file order; a dialogue boundary is a topic boundary.
 * Every stream is cut into consecutive tails of `--tail` messages (the rule-based message cap), and
 * each tail is judged alone, as ingestion will. A boundary on a tail's first message is not inside
 * the tail and is not scored. A third, control set takes every LoCoMo session of at least 8
 * messages alone: it has no labelled boundary, so every split there is counted against precision
 * (some are real topic changes inside a session).
 *
 * Scores, micro-averaged over the tails of a set: precision, recall and F1 of predicted splits,
 * where a prediction within ±2 messages of a true boundary matches it (one-to-one, nearest first),
 * and Pk (Beeferman et al. 1999; probes of k = half the mean true segment length; lower is
 * better). Topic changes inside a LoCoMo session are not labelled, so precision there is a lower
 * bound.
 *
 * A fourth check uses the hand-written two-topic conversations of
 * `services/ingestion/test/topic-fixtures.ts` (5 English and 4 Chinese topics, every ordered pair:
 * 20 + 12 tails of 16 messages, one clear shift each) and counts, per setting, the tails split
 * exactly at the shift, one round off, not at all, and the splits elsewhere.
 *
 * The default is the `window` setting with the best mean F1 (±2) over LoCoMo and MADial at a
 * minimum segment of 4 messages (two rounds, the smallest MemCell worth extracting); settings within
 * 0.01 of the best are told apart by the clear-switch check: fewest misplaced splits (one round off
 * or stray), then most exact ones, then fewest splits per control session.
 *
 * Modes: `window` is the detector (`windowTexts`: each window's messages embedded as one text);
 * `mean` embeds every message once and averages the window's vectors (cheaper, and cacheable per
 * message), for comparison. Thresholds: absolute depths, and Hearst-style relative ones (mean
 * depth of the tail + c standard deviations) with an absolute floor.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { LocalEmbedder } from '@engram/embeddings';
import {
  DEFAULT_TOPIC_SHIFT_OPTIONS,
  scoreGaps,
  selectSplits,
  splitPositions,
  windowTexts,
  type JudgedMessage,
  type JudgedRole,
} from '@engram/ingestion';
import { en, topicPairs, zh } from '../services/ingestion/test/topic-fixtures.js';

const WORKSPACE = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TOLERANCE = 2;
/** A stricter tolerance, also reported: the prediction falls at the true round boundary. */
const ROUND_TOLERANCE = 1;
const ABSOLUTE_DEPTHS = [0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16, 0.2, 0.25, 0.3];
const RELATIVE = [0, 0.5, 1];
const FLOORS = [0, 0.05, 0.1, 0.15, 0.2];
/** Settings whose mean F1 is within this of the best are compared on the clear switches. */
const F1_TIE = 0.01;

const { values: args } = parseArgs({
  options: {
    data: { type: 'string', default: resolve(WORKSPACE, '../shared/bench-data/locomo10.json') },
    conversations: { type: 'string', default: '5' },
    madial: {
      type: 'string',
      default: resolve(WORKSPACE, '../shared/bench-data/madial-bench/MADial-Bench-zh-dialogue.json'),
    },
    tail: { type: 'string', default: '50' },
    windows: { type: 'string', default: '2,3,4' },
    'min-segments': { type: 'string', default: '2,4,6' },
    out: { type: 'string', default: resolve(WORKSPACE, 'bench/out/topic-shift.json') },
  },
});
const numbers = (list: string) =>
  list
    .split(',')
    .filter((x) => x !== '')
    .map(Number);
const tailLength = Number(args.tail);
const windows = numbers(args.windows);
const minSegments = numbers(args['min-segments']);
const conversationCount = Number(args.conversations);

// ---------------------------------------------------------------------------------------------
// Data

interface Stream {
  readonly messages: JudgedMessage[];
  /** Positions (indexes) of the first message of every segment but the first. */
  readonly boundaries: Set<number>;
}

interface Tail {
  readonly messages: JudgedMessage[];
  readonly boundaries: number[];
}

interface LocomoTurn {
  readonly speaker: string;
  readonly text: string;
  readonly blip_caption?: string;
}
interface LocomoSample {
  readonly conversation: Record<string, unknown>;
}

function loadLocomo(path: string): Stream[] {
  const samples = JSON.parse(readFileSync(path, 'utf8')) as LocomoSample[];
  return samples.slice(0, conversationCount).map(({ conversation }) => {
    const first = conversation['speaker_a'] as string;
    const keys = Object.keys(conversation)
      .filter((key) => /^session_\d+$/u.test(key))
      .sort((a, b) => Number(a.slice(8)) - Number(b.slice(8)));
    const messages: JudgedMessage[] = [];
    const boundaries = new Set<number>();
    for (const key of keys) {
      if (messages.length > 0) boundaries.add(messages.length);
      for (const turn of conversation[key] as LocomoTurn[]) {
        const caption = turn.blip_caption === undefined ? '' : ` [image: ${turn.blip_caption}]`;
        const role: JudgedRole = turn.speaker === first ? 'USER' : 'ASSISTANT';
        messages.push({ sequence: messages.length + 1, role, content: `${turn.text}${caption}` });
      }
    }
    return { messages, boundaries };
  });
}

function loadMadial(path: string): Stream[] {
  const rows = readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as { dialogue: string[]; 'user-id': number });
  const byUser = new Map<number, Stream>();
  for (const row of rows) {
    let stream = byUser.get(row['user-id']);
    if (stream === undefined) {
      stream = { messages: [], boundaries: new Set() };
      byUser.set(row['user-id'], stream);
    }
    const { messages, boundaries } = stream;
    if (messages.length > 0) boundaries.add(messages.length);
    for (const line of row.dialogue) {
      const match = /^\s*<([^>]+)>\s*[:：]\s*"?([\s\S]*?)"?\s*$/u.exec(line);
      if (match === null) continue; // <BOD>, <EOD>
      const role: JudgedRole = match[1] === 'Assistant' ? 'ASSISTANT' : 'USER';
      messages.push({ sequence: messages.length + 1, role, content: match[2] ?? '' });
    }
  }
  return [...byUser.values()];
}

/** Every session (the segment between two boundaries) of at least `min` messages, alone. */
function sessionsOf(streams: readonly Stream[], min: number): Tail[] {
  const tails: Tail[] = [];
  for (const stream of streams) {
    const starts = [0, ...[...stream.boundaries].sort((a, b) => a - b), stream.messages.length];
    for (let i = 0; i + 1 < starts.length; i++) {
      const messages = stream.messages.slice(starts[i], starts[i + 1]);
      if (messages.length >= min) tails.push({ messages, boundaries: [] });
    }
  }
  return tails;
}

function tailsOf(streams: readonly Stream[]): Tail[] {
  const tails: Tail[] = [];
  for (const stream of streams) {
    for (let start = 0; start < stream.messages.length; start += tailLength) {
      const messages = stream.messages.slice(start, start + tailLength);
      if (messages.length < 2) continue;
      const boundaries = [...stream.boundaries]
        .filter((b) => b > start && b < start + messages.length)
        .map((b) => b - start)
        .sort((a, b) => a - b);
      tails.push({ messages, boundaries });
    }
  }
  return tails;
}

// ---------------------------------------------------------------------------------------------
// Scores

interface Counts {
  predicted: number;
  truth: number;
  matched: number;
  matchedRound: number;
  probes: number;
  probeErrors: number;
}

/** True boundaries matched one-to-one by predictions within the tolerance, nearest pairs first. */
function matches(predicted: readonly number[], truth: readonly number[], tolerance: number): number {
  const pairs: [number, number, number][] = [];
  predicted.forEach((p, i) => {
    truth.forEach((t, j) => {
      if (Math.abs(p - t) <= tolerance) pairs.push([Math.abs(p - t), i, j]);
    });
  });
  pairs.sort((a, b) => a[0] - b[0]);
  const usedP = new Set<number>();
  const usedT = new Set<number>();
  for (const [, i, j] of pairs) {
    if (usedP.has(i) || usedT.has(j)) continue;
    usedP.add(i);
    usedT.add(j);
  }
  return usedP.size;
}

/** Pk probes of one tail: messages i and i + k in the same segment or not, truth vs prediction. */
function pk(n: number, k: number, predicted: readonly number[], truth: readonly number[]) {
  const segmentOf = (boundaries: readonly number[]) => {
    const ids = new Array<number>(n).fill(0);
    let id = 0;
    for (let i = 0; i < n; i++) {
      if (boundaries.includes(i)) id++;
      ids[i] = id;
    }
    return ids;
  };
  const p = segmentOf(predicted);
  const t = segmentOf(truth);
  let probes = 0;
  let errors = 0;
  for (let i = 0; i + k < n; i++) {
    probes++;
    if ((p[i] === p[i + k]) !== (t[i] === t[i + k])) errors++;
  }
  return { probes, errors };
}

function emptyCounts(): Counts {
  return { predicted: 0, truth: 0, matched: 0, matchedRound: 0, probes: 0, probeErrors: 0 };
}

function add(counts: Counts, tail: Tail, predicted: readonly number[], k: number): void {
  counts.predicted += predicted.length;
  counts.truth += tail.boundaries.length;
  counts.matched += matches(predicted, tail.boundaries, TOLERANCE);
  counts.matchedRound += matches(predicted, tail.boundaries, ROUND_TOLERANCE);
  const probe = pk(tail.messages.length, k, predicted, tail.boundaries);
  counts.probes += probe.probes;
  counts.probeErrors += probe.errors;
}

interface Metrics {
  precision: number;
  recall: number;
  f1: number;
  /** F1 with predictions within ±1 message (the true round boundary, or next to it). */
  f1Round: number;
  pk: number;
  predicted: number;
  truth: number;
}

function metrics(c: Counts): Metrics {
  const precision = c.predicted === 0 ? 0 : c.matched / c.predicted;
  const recall = c.truth === 0 ? 0 : c.matched / c.truth;
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  const round = c.predicted + c.truth === 0 ? 0 : (2 * c.matchedRound) / (c.predicted + c.truth);
  return {
    precision,
    recall,
    f1,
    f1Round: round,
    pk: c.probeErrors / Math.max(1, c.probes),
    predicted: c.predicted,
    truth: c.truth,
  };
}

/** Half the mean true segment length (in messages) over the set's tails: the Pk probe distance. */
function probeDistance(tails: readonly Tail[]): number {
  let segments = 0;
  let messages = 0;
  for (const tail of tails) {
    segments += tail.boundaries.length + 1;
    messages += tail.messages.length;
  }
  return Math.max(1, Math.round(messages / segments / 2));
}

// ---------------------------------------------------------------------------------------------

type Mode = 'window' | 'mean';
type Scored = { position: number; similarity: number }[];

interface SetData {
  readonly name: string;
  readonly tails: Tail[];
  readonly k: number;
  /** Per mode and window: per tail, the similarity at each split point. */
  readonly scored: Map<string, Scored[]>;
}

interface Threshold {
  readonly minDepth: number;
  readonly relativeDepth: number | null;
}

interface Row {
  set: string;
  mode: Mode | 'baseline';
  window: number;
  threshold: Threshold | null;
  minSegment: number;
  metrics: Metrics;
}

function readable(message: JudgedMessage): boolean {
  return (message.role === 'USER' || message.role === 'ASSISTANT') && message.content.trim() !== '';
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}

/** The `mean` mode: cosine of the mean vectors of the windows (vectors are unit length). */
function meanSimilarities(
  tail: Tail,
  vectors: readonly (Float32Array | undefined)[],
  window: number,
): Scored {
  const scored: Scored = [];
  for (const position of splitPositions(tail.messages)) {
    const before = vectors
      .slice(0, position)
      .filter((v) => v !== undefined)
      .slice(-window);
    const after = vectors
      .slice(position)
      .filter((v) => v !== undefined)
      .slice(0, window);
    if (before.length === 0 || after.length === 0) continue;
    const sum = (list: Float32Array[]) => {
      const total = new Float32Array(list[0]!.length);
      for (const v of list) for (let i = 0; i < v.length; i++) total[i]! += v[i]!;
      return total;
    };
    const a = sum(before);
    const b = sum(after);
    scored.push({ position, similarity: dot(a, b) / Math.sqrt(dot(a, a) * dot(b, b)) });
  }
  return scored;
}

const thresholds: Threshold[] = [
  ...ABSOLUTE_DEPTHS.map((minDepth) => ({ minDepth, relativeDepth: null })),
  ...RELATIVE.flatMap((relativeDepth) => FLOORS.map((minDepth) => ({ minDepth, relativeDepth }))),
];

function describeThreshold(t: Threshold | null): string {
  if (t === null) return '–';
  if (t.relativeDepth === null) return String(t.minDepth);
  return `mean + ${t.relativeDepth} sd, ≥ ${t.minDepth}`;
}

// eslint-disable-next-line max-lines-per-function -- a benchmark script read top to bottom: its phases run in the order they are reported and share the run's state.
async function main(): Promise<void> {
  const embedder = new LocalEmbedder();
  await embedder.load();
  const cache = new Map<string, Float32Array>();
  let embedSeconds = 0;
  let truncated = 0;
  const embed = async (text: string): Promise<Float32Array> => {
    const hit = cache.get(text);
    if (hit !== undefined) return hit;
    const started = performance.now();
    const result = await embedder.embed([text], 'document');
    embedSeconds += (performance.now() - started) / 1000;
    if (result.truncated[0] === true) truncated++;
    cache.set(text, result.vectors[0]!);
    return result.vectors[0]!;
  };

  const locomo = loadLocomo(args.data);
  const madial = loadMadial(args.madial);
  const sources: [string, Tail[]][] = [
    [`LoCoMo en (${locomo.length} conv.)`, tailsOf(locomo)],
    ['MADial zh', tailsOf(madial)],
    ['LoCoMo single sessions', sessionsOf(locomo, 8)],
  ];
  const sets: SetData[] = [];
  for (const [name, tails] of sources) {
    const started = performance.now();
    const scored = new Map<string, Scored[]>();
    const vectors: (Float32Array | undefined)[][] = [];
    for (const tail of tails) {
      const row: (Float32Array | undefined)[] = [];
      for (const m of tail.messages) row.push(readable(m) ? await embed(m.content.trim()) : undefined);
      vectors.push(row);
    }
    for (const window of windows) {
      scored.set(
        `mean/${window}`,
        tails.map((tail, i) => meanSimilarities(tail, vectors[i]!, window)),
      );
      const perTail: Scored[] = [];
      for (const tail of tails) {
        const list: Scored = [];
        for (const { position, before, after } of windowTexts(
          tail.messages,
          splitPositions(tail.messages),
          window,
        )) {
          list.push({ position, similarity: dot(await embed(before), await embed(after)) });
        }
        perTail.push(list);
      }
      scored.set(`window/${window}`, perTail);
    }
    const messages = tails.reduce((sum, tail) => sum + tail.messages.length, 0);
    const boundaries = tails.reduce((sum, tail) => sum + tail.boundaries.length, 0);
    console.log(
      `${name}: ${tails.length} tails, ${messages} messages, ${boundaries} boundaries inside tails; ` +
        `${((performance.now() - started) / 1000).toFixed(0)} s (cache: ${cache.size} texts)`,
    );
    const k = name.includes('single') ? (sets[0]?.k ?? 1) : probeDistance(tails);
    sets.push({ name, tails, k, scored });
  }
  // The clear-switch check: window mode only, every ordered pair of hand-written topics.
  const clear = new Map<string, Map<number, Scored[]>>();
  for (const [language, topics] of [
    ['en', en],
    ['zh', zh],
  ] as const) {
    const byWindow = new Map<number, Scored[]>();
    for (const window of windows) {
      const perTail: Scored[] = [];
      for (const { messages } of topicPairs(topics)) {
        const list: Scored = [];
        for (const { position, before, after } of windowTexts(messages, splitPositions(messages), window)) {
          list.push({ position, similarity: dot(await embed(before), await embed(after)) });
        }
        perTail.push(list);
      }
      byWindow.set(window, perTail);
    }
    clear.set(language, byWindow);
  }
  await embedder.close();

  /** Clear-switch outcome of one setting in one language: `exact/near/none` tails, and stray splits. */
  const clearSwitches = (language: 'en' | 'zh', window: number, threshold: Threshold, minSegment: number) => {
    let exact = 0;
    let near = 0;
    let none = 0;
    let stray = 0;
    for (const scored of clear.get(language)?.get(window) ?? []) {
      const at = selectSplits(scoreGaps(scored), 16, { ...threshold, minSegment }).map((g) => g.position);
      if (at.includes(8)) exact++;
      else if (at.some((p) => Math.abs(p - 8) === 2)) near++;
      else if (at.length === 0) none++;
      stray += at.filter((p) => Math.abs(p - 8) > 2).length;
    }
    const tails = clear.get(language)?.get(window)?.length ?? 0;
    return { exact, near, none, stray, tails, text: `${exact}/${near}/${none}/${stray} of ${tails}` };
  };

  const rows: Row[] = [];
  for (const set of sets) {
    // Baselines: no split; a split at every split point that leaves 4-message segments.
    for (const every of [false, true]) {
      const counts = emptyCounts();
      for (const tail of set.tails) {
        const predicted: number[] = [];
        if (every) {
          for (const p of splitPositions(tail.messages)) {
            if (p - (predicted.at(-1) ?? 0) >= 4 && tail.messages.length - p >= 4) predicted.push(p);
          }
        }
        add(counts, tail, predicted, set.k);
      }
      rows.push({
        set: set.name,
        mode: 'baseline',
        window: 0,
        threshold: every ? { minDepth: 0, relativeDepth: null } : null,
        minSegment: every ? 4 : 0,
        metrics: metrics(counts),
      });
    }
    for (const [key, perTail] of set.scored) {
      const [mode, window] = key.split('/') as [Mode, string];
      const gaps = perTail.map(scoreGaps);
      for (const threshold of thresholds) {
        for (const minSegment of minSegments) {
          const counts = emptyCounts();
          set.tails.forEach((tail, i) => {
            const predicted = selectSplits(gaps[i]!, tail.messages.length, { ...threshold, minSegment });
            add(
              counts,
              tail,
              predicted.map((g) => g.position),
              set.k,
            );
          });
          rows.push({
            set: set.name,
            mode,
            window: Number(window),
            threshold,
            minSegment,
            metrics: metrics(counts),
          });
        }
      }
    }
  }

  const f = (x: number) => x.toFixed(3);
  const header =
    '| set | mode | window | threshold | min segment | predicted / true | precision | recall | F1 | F1 ±1 | Pk |\n' +
    '|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|';
  const line = (r: Row) =>
    `| ${r.set} | ${r.mode} | ${r.window || '–'} | ${describeThreshold(r.threshold)} | ${r.minSegment || '–'} | ` +
    `${r.metrics.predicted} / ${r.metrics.truth} | ${f(r.metrics.precision)} | ${f(r.metrics.recall)} | ` +
    `${f(r.metrics.f1)} | ${f(r.metrics.f1Round)} | ${f(r.metrics.pk)} |`;
  const same = (a: Row, b: Row) =>
    a.mode === b.mode &&
    a.window === b.window &&
    a.minSegment === b.minSegment &&
    a.threshold?.minDepth === b.threshold?.minDepth &&
    a.threshold?.relativeDepth === b.threshold?.relativeDepth;
  const [first, second, control] = sets as [SetData, SetData, SetData];
  const labelled = [first, second];

  for (const set of labelled) {
    console.log(`\n${set.name}: Pk probe k = ${set.k}; best F1 per mode, window and threshold kind`);
    console.log(header);
    const ofSet = rows.filter((r) => r.set === set.name);
    for (const r of ofSet.filter((r) => r.mode === 'baseline')) console.log(line(r));
    const best = new Map<string, Row>();
    for (const r of ofSet.filter((r) => r.mode !== 'baseline')) {
      const key = `${r.mode}/${r.window}/${r.threshold?.relativeDepth === null ? 'absolute' : 'relative'}`;
      const current = best.get(key);
      if (current === undefined || r.metrics.f1 > current.metrics.f1) best.set(key, r);
    }
    for (const r of best.values()) console.log(line(r));
  }

  // The selection: window mode at min segment 4 by mean F1 (±2) over the two labelled sets, with
  // F1 ±1, the control set and the clear switches beside it.
  const ranked = rows
    .filter((r) => r.set === first.name && r.mode === 'window' && r.minSegment === 4)
    .map((r) => {
      const other = rows.find((o) => o.set === second.name && same(o, r))!;
      const single = rows.find((o) => o.set === control.name && same(o, r))!;
      return {
        r,
        other,
        f1: (r.metrics.f1 + other.metrics.f1) / 2,
        controlSplits: single.metrics.predicted / control.tails.length,
        en: clearSwitches('en', r.window, r.threshold!, r.minSegment),
        zh: clearSwitches('zh', r.window, r.threshold!, r.minSegment),
      };
    })
    .sort((a, b) => b.f1 - a.f1);
  const best = ranked[0]?.f1 ?? 0;
  console.log(
    '\nwindow mode at min segment 4, by mean F1 over LoCoMo and MADial (top 12). Clear switches: ' +
      'exact / one round off / none / stray splits, of the tails.',
  );
  console.log(
    '| window | threshold | mean F1 | LoCoMo F1 (±1) | LoCoMo Pk | MADial F1 (±1) | MADial Pk | splits per control session | clear switches en | clear switches zh |\n' +
      '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const e of ranked.slice(0, 12)) {
    console.log(
      `| ${e.r.window} | ${describeThreshold(e.r.threshold)} | ${f(e.f1)}${best - e.f1 <= F1_TIE ? ' *' : ''} | ` +
        `${f(e.r.metrics.f1)} (${f(e.r.metrics.f1Round)}) | ${f(e.r.metrics.pk)} | ` +
        `${f(e.other.metrics.f1)} (${f(e.other.metrics.f1Round)}) | ${f(e.other.metrics.pk)} | ` +
        `${e.controlSplits.toFixed(2)} | ${e.en.text} | ${e.zh.text} |`,
    );
  }
  const tied = ranked.filter((e) => best - e.f1 <= F1_TIE);
  // Misplaced splits first (one round off or stray: they cut two MemCells wrongly, while a missed
  // shift leaves one cell with two topics), then exact splits, then splits per control session.
  const misplaced = (e: (typeof ranked)[number]) => e.en.near + e.zh.near + e.en.stray + e.zh.stray;
  const chosen = [...tied].sort(
    (a, b) =>
      misplaced(a) - misplaced(b) ||
      b.en.exact + b.zh.exact - (a.en.exact + a.zh.exact) ||
      a.controlSplits - b.controlSplits,
  )[0];
  if (chosen !== undefined) {
    console.log(
      `\n* within ${F1_TIE} of the best mean F1; of these the clear switches (fewest misplaced, most exact) pick window ${chosen.r.window}, ` +
        `threshold ${describeThreshold(chosen.r.threshold)}, min segment 4.`,
    );
  }

  const d = DEFAULT_TOPIC_SHIFT_OPTIONS;
  const isDefault = (r: Row) =>
    r.mode === 'window' &&
    r.window === d.window &&
    r.minSegment === d.minSegment &&
    r.threshold?.minDepth === d.minDepth &&
    r.threshold.relativeDepth === d.relativeDepth;
  console.log(
    `\ndefaults (window ${d.window}, threshold mean + ${d.relativeDepth} sd ≥ ${d.minDepth}, min segment ${d.minSegment}), ` +
      'and the mean mode with the same settings:',
  );
  console.log(header);
  for (const r of rows.filter(
    (r) => isDefault(r) || (r.mode === 'mean' && isDefault({ ...r, mode: 'window' })),
  )) {
    console.log(line(r));
  }
  const defaultThreshold = { minDepth: d.minDepth, relativeDepth: d.relativeDepth };
  console.log(
    `clear switches (exact / one round off / none / stray): en ${clearSwitches('en', d.window, defaultThreshold, d.minSegment).text}, ` +
      `zh ${clearSwitches('zh', d.window, defaultThreshold, d.minSegment).text}`,
  );
  console.log(
    `\nwindow mode at min segment ${d.minSegment}: F1 ±2 (±1) on LoCoMo / on MADial / splits per control session`,
  );
  console.log(`| threshold | ${windows.join(' | ')} |\n|---|${windows.map(() => '---:|').join('')}`);
  for (const threshold of thresholds) {
    const cells = windows.map((window) => {
      const pick = (set: SetData) =>
        rows.find(
          (r) =>
            r.set === set.name &&
            r.mode === 'window' &&
            r.window === window &&
            r.minSegment === d.minSegment &&
            r.threshold?.minDepth === threshold.minDepth &&
            r.threshold.relativeDepth === threshold.relativeDepth,
        )!.metrics;
      const [a, b] = [pick(first), pick(second)];
      const splits = (pick(control).predicted / control.tails.length).toFixed(2);
      return `${f(a.f1)} (${f(a.f1Round)}) / ${f(b.f1)} (${f(b.f1Round)}) / ${splits}`;
    });
    console.log(`| ${describeThreshold(threshold)} | ${cells.join(' | ')} |`);
  }
  console.log(
    `\nembedded ${cache.size} distinct texts in ${embedSeconds.toFixed(0)} s ` +
      `(${(cache.size / embedSeconds).toFixed(0)}/s), ${truncated} truncated by the model`,
  );

  mkdirSync(dirname(args.out), { recursive: true });
  writeFileSync(
    args.out,
    JSON.stringify(
      {
        tail: tailLength,
        tolerance: TOLERANCE,
        roundTolerance: ROUND_TOLERANCE,
        conversations: conversationCount,
        embedded: cache.size,
        embedSeconds,
        truncated,
        sets: sets.map((s) => ({ name: s.name, tails: s.tails.length, k: s.k })),
        defaults: d,
        rows,
      },
      null,
      2,
    ),
  );
  console.log(`\nwrote ${args.out}`);
}

await main();
