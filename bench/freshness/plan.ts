/**
 * Pure parts of the freshness benchmark (bench/freshness.ts): the marker words (one lexical term
 * each, never seen before the run), the generated bilingual document with a marker per paragraph,
 * the choice of sample chunks whose markers prove a chunk searchable, and the delay summaries with
 * the issue #19 targets, reading a gauge from a metrics text. No I/O.
 */

import { tokenize } from '@engram/lexical';
import { percentile, type Random } from '@engram/testing';

/**
 * Letters of a marker after its prefix: consonants without s, l and y, so that no English
 * inflection rule of the stemmer (plural -s, -ed, -ing, final -y, -e, double -ll) applies and
 * the lexical tokenizer keeps the word as one term, unchanged.
 */
const MARKER_LETTERS = 'bcdfghjkmnpqrtvwxz';
const MARKER_PREFIX = 'zq';
const MARKER_BODY = 9;
/** Matches every marker in a text (markers never occur inside other words of the generated text). */
export const MARKER_PATTERN = new RegExp(`\\b${MARKER_PREFIX}[${MARKER_LETTERS}]{${MARKER_BODY}}\\b`, 'g');

/** True when the project tokenizer turns `word` into exactly that one term. */
export function isOneTerm(word: string): boolean {
  const tokens = tokenize(word);
  return tokens.length === 1 && tokens[0] === word;
}

/**
 * A source of unique markers: `next()` returns a word the lexical tokenizer keeps as one term
 * (checked with `tokenize`) and that this source has never returned before.
 */
export function markerSource(random: Random): { next: () => string } {
  const seen = new Set<string>();
  return {
    next: () => {
      for (;;) {
        let body = '';
        for (let i = 0; i < MARKER_BODY; i++)
          body += MARKER_LETTERS.charAt(Math.floor(random() * MARKER_LETTERS.length));
        const word = `${MARKER_PREFIX}${body}`;
        if (seen.has(word) || !isOneTerm(word)) continue;
        seen.add(word);
        return word;
      }
    },
  };
}

/** The distinct markers of a text, in order of first occurrence. */
export function markersIn(text: string): string[] {
  return [...new Set(text.match(MARKER_PATTERN) ?? [])];
}

// ---- The generated document ----

const EN_SUBJECTS = [
  'the ingestion team',
  'our quarterly review',
  'the storage migration',
  'the customer interview',
  'the onboarding guide',
  'the release checklist',
  'the billing dashboard',
  'the incident report',
  'the travel budget',
  'the research summary',
  'the hiring plan',
  'the support backlog',
];
const EN_VERBS = [
  'describes',
  'questions',
  'summarises',
  'revisits',
  'compares',
  'extends',
  'records',
  'clarifies',
];
const EN_OBJECTS = [
  'the latency of the nightly export',
  'how the cache behaves after a restart',
  'which regions need a second replica',
  'the cost of keeping old snapshots',
  'the order in which tickets are triaged',
  'what the pilot users asked for first',
  'the schedule of the next training',
  'why the import failed on Tuesday',
  'the agreement with the new vendor',
  'the steps to rotate the signing keys',
];
const EN_TAILS = [
  'before the end of the month.',
  'with two open questions.',
  'and proposes a smaller first step.',
  'in more detail than last time.',
  'for the teams in Lisbon and Berlin.',
  'without changing the public interface.',
];
const ZH_SUBJECTS = [
  '项目组',
  '这份报告',
  '产品经理',
  '运维同事',
  '客户代表',
  '研究小组',
  '财务部门',
  '新来的工程师',
];
const ZH_VERBS = ['讨论了', '总结了', '重新评估了', '记录了', '比较了', '补充了'];
const ZH_OBJECTS = [
  '下个季度的预算安排',
  '数据迁移的风险',
  '用户反馈的主要问题',
  '服务上线的时间表',
  '培训计划的细节',
  '供应商合同的条款',
  '夜间备份失败的原因',
  '缓存重启后的表现',
];
const ZH_TAILS = [
  '，并提出了下一步的建议。',
  '，还有两个问题没有解决。',
  '，计划在月底之前完成。',
  '，需要大家再确认一次。',
];

function englishSentence(random: Random): string {
  const at = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
  const subject = at(EN_SUBJECTS);
  return `${subject[0]!.toUpperCase()}${subject.slice(1)} ${at(EN_VERBS)} ${at(EN_OBJECTS)} ${at(EN_TAILS)}`;
}

function chineseSentence(random: Random): string {
  const at = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
  return `${at(ZH_SUBJECTS)}${at(ZH_VERBS)}${at(ZH_OBJECTS)}${at(ZH_TAILS)}`;
}

/** One paragraph: 3–6 sentences (English, Chinese or mixed), the marker inside its middle sentence. */
function paragraph(random: Random, marker: string): string {
  const language = random();
  const sentences: string[] = [];
  const count = 3 + Math.floor(random() * 4);
  for (let i = 0; i < count; i++) {
    const chinese = language < 0.3 || (language >= 0.6 && language < 0.8 && i % 2 === 1);
    sentences.push(chinese ? chineseSentence(random) : englishSentence(random));
  }
  const middle = Math.floor(count / 2);
  sentences[middle] = /[\u4e00-\u9fff]/.test(sentences[middle]!)
    ? `编号 ${marker} 的记录里，${sentences[middle]}`
    : `Reference ${marker}: ${sentences[middle]}`;
  return sentences.join(/[\u4e00-\u9fff]/.test(sentences[0]!) ? '' : ' ');
}

/**
 * One user/assistant round of the append probe. The marker is in the user message only: the index
 * text of the next round starts with the turn before its user message (this round's assistant
 * message), so a marker there would also be found in the next round.
 */
export function roundMessages(random: Random, marker: string): { user: string; assistant: string } {
  return {
    user: `Please note ${marker}: ${random() < 0.3 ? chineseSentence(random) : englishSentence(random)}`,
    assistant: `Noted. ${random() < 0.3 ? chineseSentence(random) : englishSentence(random)}`,
  };
}

export interface GeneratedDocument {
  readonly text: string;
  readonly bytes: number;
  readonly paragraphs: number;
  /** Every paragraph's marker, in document order. */
  readonly markers: readonly string[];
}

/**
 * A deterministic Markdown document of at most `targetBytes` UTF-8 bytes (stopping before the
 * paragraph that would pass it): a title, a `##` section heading every 25 paragraphs, and
 * paragraphs of English, Chinese and mixed prose, each carrying one unique marker.
 */
export function generateDocument(targetBytes: number, random: Random, markers: { next: () => string }) {
  const parts: string[] = [];
  const used: string[] = [];
  const encoder = new TextEncoder();
  let bytes = 0;
  const add = (block: string) => {
    const size = encoder.encode(`${block}\n\n`).length;
    if (bytes + size > targetBytes) return false;
    parts.push(block);
    bytes += size;
    return true;
  };
  add('# Freshness benchmark document');
  for (let p = 0; ; p++) {
    if (p % 25 === 0 && !add(`## Section ${p / 25 + 1}`)) break;
    const marker = markers.next();
    if (!add(paragraph(random, marker))) break;
    used.push(marker);
  }
  const text = `${parts.join('\n\n')}\n\n`;
  return {
    text,
    bytes: encoder.encode(text).length,
    paragraphs: used.length,
    markers: used,
  } satisfies GeneratedDocument;
}

// ---- Sample chunks ----

export interface ChunkText {
  readonly name: string;
  readonly ordinal: number;
  readonly text: string;
}

export interface SampleChunk {
  readonly name: string;
  readonly ordinal: number;
  /** A marker found in this chunk and in no other chunk of the document. */
  readonly marker: string;
}

/** `count` ordinals spread evenly over `0 … chunkCount − 1`, the first and the last included, ascending and distinct. */
export function spreadOrdinals(chunkCount: number, count: number): number[] {
  if (chunkCount < 1 || count < 1) return [];
  const n = Math.min(count, chunkCount);
  if (n === 1) return [chunkCount - 1];
  return [...new Set(Array.from({ length: n }, (_, k) => Math.round((k * (chunkCount - 1)) / (n - 1))))];
}

/**
 * The sample chunks among `chunks` (the targets and their neighbours, fetched by ordinal): for each
 * target ordinal, the first marker of that chunk that occurs in no other chunk of the list (the
 * overlap between chunks repeats a paragraph's end at the start of the next chunk, so a marker of
 * a neighbour proves nothing). Targets that are missing or have no marker of their own are
 * dropped.
 */
export function sampleChunks(chunks: readonly ChunkText[], targets: readonly number[]): SampleChunk[] {
  const occurrences = new Map<string, number>();
  const byOrdinal = new Map<number, { chunk: ChunkText; markers: string[] }>();
  for (const chunk of chunks) {
    if (byOrdinal.has(chunk.ordinal)) continue;
    const markers = markersIn(chunk.text);
    byOrdinal.set(chunk.ordinal, { chunk, markers });
    for (const m of markers) occurrences.set(m, (occurrences.get(m) ?? 0) + 1);
  }
  const out: SampleChunk[] = [];
  for (const ordinal of [...new Set(targets)].sort((a, b) => a - b)) {
    const entry = byOrdinal.get(ordinal);
    const marker = entry?.markers.find((m) => occurrences.get(m) === 1);
    if (entry !== undefined && marker !== undefined) out.push({ name: entry.chunk.name, ordinal, marker });
  }
  return out;
}

/** The value of an unlabelled gauge in a Prometheus text exposition, if present. */
export function gaugeValue(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  const value = line === undefined ? NaN : Number(line.slice(name.length + 1).trim());
  return Number.isFinite(value) ? value : undefined;
}

/** One series of a histogram: its labels, its observations' sum and their count. */
export interface HistogramSeries {
  readonly labels: Readonly<Record<string, string>>;
  readonly sum: number;
  readonly count: number;
}

/** The `_sum` and `_count` of every labelled series of histogram `name` in a Prometheus text exposition. */
export function histogramSeries(text: string, name: string): HistogramSeries[] {
  const series = new Map<string, { labels: Record<string, string>; sum: number; count: number }>();
  const line = new RegExp(`^${name}_(sum|count)\\{([^}]*)\\} (\\S+)$`);
  for (const l of text.split('\n')) {
    const m = line.exec(l);
    if (m === null) continue;
    const [, part, labelText = '', valueText] = m;
    const labels = Object.fromEntries(
      [...labelText.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1]!, x[2]!]),
    );
    const entry = series.get(labelText) ?? { labels, sum: 0, count: 0 };
    entry[part === 'sum' ? 'sum' : 'count'] = Number(valueText);
    series.set(labelText, entry);
  }
  return [...series.values()];
}

/**
 * What happened between two scrapes of the same histogram: each series' sum and count in the
 * later one minus the earlier one (series with no new observation left out).
 */
export function histogramDelta(
  before: readonly HistogramSeries[],
  after: readonly HistogramSeries[],
): HistogramSeries[] {
  const key = (s: HistogramSeries) => JSON.stringify(Object.entries(s.labels).sort());
  const earlier = new Map(before.map((s) => [key(s), s]));
  return after.flatMap((s) => {
    const e = earlier.get(key(s));
    const count = s.count - (e?.count ?? 0);
    return count > 0 ? [{ labels: s.labels, sum: s.sum - (e?.sum ?? 0), count }] : [];
  });
}

// ---- Summaries ----

export interface DelaySummary {
  readonly count: number;
  /** Delays that ended (the item was found), ms. */
  readonly found: number;
  /** Items never found within the cap: counted as +∞ in the percentiles. */
  readonly notFound: number;
  readonly p50Ms: number | null;
  readonly p95Ms: number | null;
  readonly p99Ms: number | null;
  readonly maxMs: number | null;
  readonly meanFoundMs: number | null;
}

const finiteOrNull = (x: number) => (Number.isFinite(x) ? Math.round(x) : null);

/**
 * Nearest-rank percentiles of delays where `undefined` means "not found within the cap" and ranks
 * above every found delay: a percentile that falls on one is `null` (reported as "not within N s").
 */
export function summariseDelays(delays: readonly (number | undefined)[]): DelaySummary {
  const found = delays.filter((d): d is number => d !== undefined).sort((a, b) => a - b);
  const all = [...found, ...delays.filter((d) => d === undefined).map(() => Infinity)];
  const at = (p: number) => (all.length === 0 ? null : finiteOrNull(percentile(all, p)));
  return {
    count: delays.length,
    found: found.length,
    notFound: delays.length - found.length,
    p50Ms: at(50),
    p95Ms: at(95),
    p99Ms: at(99),
    maxMs: at(100),
    meanFoundMs: found.length === 0 ? null : Math.round(found.reduce((a, b) => a + b, 0) / found.length),
  };
}

export interface TargetLine {
  readonly what: string;
  readonly target: string;
  readonly measured: string;
  readonly pass: boolean;
}

const seconds = (ms: number | null, capS: number) =>
  ms === null ? `not within ${capS} s` : `${(ms / 1000).toFixed(2)} s`;

/**
 * The issue #19 freshness target: appended messages found lexically in p50 ≤ 1 s and p99 ≤ 3 s in
 * each phase, and every chunk of the document lexically searchable within 30 s of READY.
 */
export function freshnessTarget(
  phases: readonly { readonly name: string; readonly summary: DelaySummary }[],
  documentLexicalMs: number | null,
  capS: number,
): TargetLine[] {
  const lines: TargetLine[] = [];
  for (const { name, summary } of phases) {
    if (summary.count === 0) continue;
    lines.push(
      {
        what: `append → lexical hit p50 (${name})`,
        target: '≤ 1 s',
        measured: seconds(summary.p50Ms, capS),
        pass: summary.p50Ms !== null && summary.p50Ms <= 1000,
      },
      {
        what: `append → lexical hit p99 (${name})`,
        target: '≤ 3 s',
        measured: seconds(summary.p99Ms, capS),
        pass: summary.p99Ms !== null && summary.p99Ms <= 3000,
      },
    );
  }
  lines.push({
    what: 'document READY → all chunks lexically searchable',
    target: '≤ 30 s',
    measured: seconds(documentLexicalMs, capS),
    pass: documentLexicalMs !== null && documentLexicalMs <= 30_000,
  });
  return lines;
}
