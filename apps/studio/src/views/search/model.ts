import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate, type Duration } from '@bufbuild/protobuf/wkt';
import { ItemKind } from '@engram/contracts/common';
import {
  DegradedReason,
  Fusion,
  IndexBackend,
  QueryForm,
  Recency,
  type ScoreBreakdown,
  type SearchRequestSchema,
  type SearchResult,
  type SearchStats,
} from '@engram/contracts/retrieval';
import { enumName } from '../../lib/format.js';

/**
 * The Search playground's form, as text fields (what the inputs hold). An empty field, or
 * `default` in a choice, leaves the option unset so that the server applies its own default.
 * It is also what the URL keeps (`#/search?q=…&k=…`), so that a search can be linked.
 */
export interface SearchForm {
  readonly query: string;
  readonly topK: string;
  readonly minScore: string;
  readonly vectorWeight: string;
  readonly textWeight: string;
  readonly fusion: Choice<'SCORE' | 'MIN_MAX' | 'RRF'>;
  readonly recency: Choice<'BOUNDED' | 'MULTIPLICATIVE'>;
  readonly decay: Toggle;
  readonly halfLifeDays: string;
  readonly recencyWeight: string;
  readonly mmr: Toggle;
  readonly mmrLambda: string;
  /** Item kinds to search; empty: all kinds. */
  readonly kinds: readonly SearchKind[];
  /** `datetime-local` values (local time), empty: open. */
  readonly from: string;
  readonly until: string;
  readonly allowDegraded: boolean;
}

export type Choice<T extends string> = T | 'default';
export type Toggle = 'default' | 'on' | 'off';
export type SearchKind = 'MEMORY' | 'CHUNK' | 'ROUND';
export const SEARCH_KINDS: readonly SearchKind[] = ['MEMORY', 'CHUNK', 'ROUND'];
export const FUSIONS = ['SCORE', 'MIN_MAX', 'RRF'] as const;
export const RECENCIES = ['BOUNDED', 'MULTIPLICATIVE'] as const;

export const EMPTY_FORM: SearchForm = {
  query: '',
  topK: '',
  minScore: '',
  vectorWeight: '',
  textWeight: '',
  fusion: 'default',
  recency: 'default',
  decay: 'default',
  halfLifeDays: '',
  recencyWeight: '',
  mmr: 'default',
  mmrLambda: '',
  kinds: [],
  from: '',
  until: '',
  allowDegraded: false,
};

/** URL parameter of each text field. */
const PARAMS = {
  query: 'q',
  topK: 'k',
  minScore: 'min',
  vectorWeight: 'vw',
  textWeight: 'tw',
  halfLifeDays: 'half',
  recencyWeight: 'rw',
  mmrLambda: 'lambda',
  from: 'from',
  until: 'until',
} as const satisfies Partial<Record<keyof SearchForm, string>>;

function pick<T extends string>(value: string | null, allowed: readonly T[], fallback: T): T {
  return value !== null && (allowed as readonly string[]).includes(value) ? (value as T) : fallback;
}

/** The form a URL query describes (unknown or malformed parameters are ignored). */
export function formFromQuery(params: URLSearchParams): SearchForm {
  const text = Object.fromEntries(
    Object.entries(PARAMS).map(([field, param]) => [field, params.get(param) ?? '']),
  ) as Record<keyof typeof PARAMS, string>;
  const kinds = (params.get('kinds') ?? '')
    .split(',')
    .filter((k): k is SearchKind => (SEARCH_KINDS as readonly string[]).includes(k));
  return {
    ...text,
    fusion: pick(params.get('fusion'), [...FUSIONS, 'default'], 'default'),
    recency: pick(params.get('recency'), [...RECENCIES, 'default'], 'default'),
    decay: pick(params.get('decay'), ['on', 'off', 'default'], 'default'),
    mmr: pick(params.get('mmr'), ['on', 'off', 'default'], 'default'),
    kinds: SEARCH_KINDS.filter((k) => kinds.includes(k)),
    allowDegraded: params.get('degraded') === '1',
  };
}

/** The URL query of a form (for `routeHash('search', [], …)`): only what differs from the defaults. */
export function formToQuery(form: SearchForm): Record<string, string | undefined> {
  const query: Record<string, string | undefined> = {};
  for (const [field, param] of Object.entries(PARAMS)) {
    const value = form[field as keyof typeof PARAMS].trim();
    if (value !== '') query[param] = field === 'query' ? form.query : value;
  }
  if (form.fusion !== 'default') query['fusion'] = form.fusion;
  if (form.recency !== 'default') query['recency'] = form.recency;
  if (form.decay !== 'default') query['decay'] = form.decay;
  if (form.mmr !== 'default') query['mmr'] = form.mmr;
  if (form.kinds.length > 0) query['kinds'] = form.kinds.join(',');
  if (form.allowDegraded) query['degraded'] = '1';
  return query;
}

/** A field whose text is not a number (or not a date). */
export type FieldProblem = keyof SearchForm;

export interface BuiltSearch {
  readonly request: MessageInitShape<typeof SearchRequestSchema>;
  /** Fields that could not be read; the request must not be sent while there are any. */
  readonly problems: readonly FieldProblem[];
}

/** A number field: `undefined` when empty (server default), NaN when not a number. */
export function parseNumber(text: string): number | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  const n = Number(trimmed);
  return Number.isFinite(n) ? n : Number.NaN;
}

function toggle(value: Toggle): boolean | undefined {
  return value === 'default' ? undefined : value === 'on';
}

function parseTime(text: string): Date | undefined | null {
  if (text.trim() === '') return undefined;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? null : date;
}

/**
 * The SearchRequest of a form: `explain` always (the playground shows the breakdown), and only
 * the options the user set; ranges are left to the server to check (its error is shown).
 */
export function buildSearchRequest(form: SearchForm): BuiltSearch {
  const problems: FieldProblem[] = [];
  const numbers: Partial<Record<FieldProblem, number>> = {};
  const numberFields = [
    'topK',
    'minScore',
    'vectorWeight',
    'textWeight',
    'halfLifeDays',
    'recencyWeight',
    'mmrLambda',
  ] as const;
  for (const field of numberFields) {
    const n = parseNumber(form[field]);
    if (n === undefined) continue;
    if (Number.isNaN(n) || (field === 'topK' && !Number.isInteger(n))) problems.push(field);
    else numbers[field] = n;
  }
  const from = parseTime(form.from);
  const until = parseTime(form.until);
  if (from === null) problems.push('from');
  if (until === null) problems.push('until');
  const options = {
    ...(numbers.vectorWeight !== undefined ? { vectorWeight: numbers.vectorWeight } : {}),
    ...(numbers.textWeight !== undefined ? { textWeight: numbers.textWeight } : {}),
    ...(toggle(form.decay) !== undefined ? { decayEnabled: toggle(form.decay) } : {}),
    ...(numbers.halfLifeDays !== undefined ? { halfLifeDays: numbers.halfLifeDays } : {}),
    ...(toggle(form.mmr) !== undefined ? { mmrEnabled: toggle(form.mmr) } : {}),
    ...(numbers.mmrLambda !== undefined ? { mmrLambda: numbers.mmrLambda } : {}),
    ...(numbers.minScore !== undefined ? { minScore: numbers.minScore } : {}),
    ...(form.fusion !== 'default' ? { fusion: Fusion[form.fusion] } : {}),
    ...(form.recency !== 'default' ? { recency: Recency[form.recency] } : {}),
    ...(numbers.recencyWeight !== undefined ? { recencyWeight: numbers.recencyWeight } : {}),
  };
  const occurTime =
    from !== undefined || until !== undefined
      ? {
          ...(from instanceof Date ? { startTime: timestampFromDate(from) } : {}),
          ...(until instanceof Date ? { endTime: timestampFromDate(until) } : {}),
        }
      : undefined;
  const filter = {
    ...(form.kinds.length > 0 ? { kinds: form.kinds.map((k) => ItemKind[k]) } : {}),
    ...(occurTime !== undefined ? { occurTime } : {}),
  };
  const request: MessageInitShape<typeof SearchRequestSchema> = {
    query: form.query,
    explain: true,
    ...(numbers.topK !== undefined ? { topK: numbers.topK } : {}),
    ...(Object.keys(filter).length > 0 ? { filter } : {}),
    ...(Object.keys(options).length > 0 ? { options } : {}),
    ...(form.allowDegraded ? { allowDegraded: true } : {}),
  };
  return { request, problems };
}

/** One bar of a result's explanation: a signal's value out of its scale. */
export interface BreakdownRow {
  readonly key:
    'lexical' | 'dense' | 'rerank' | 'fused' | 'timeWindow' | 'relevance' | 'recency' | 'mmr' | 'final';
  readonly value: number;
  readonly max: number;
  readonly tone: 'accent' | 'lexical' | 'dense' | 'muted' | 'warn';
  /** What the bar is computed from, for the text beside it (raw score, rank, factors). */
  readonly detail: string;
}

function fixed(n: number, digits = 3): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '—';
}

/**
 * The per-signal explanation of one result as bars, in the order the score is computed:
 * lexical and dense (normalized, with raw score and rank), the reranker when it scored the item,
 * the fusion, the time-window and recency factors, the MMR penalty and the final score.
 */
export function breakdownRows(b: ScoreBreakdown): BreakdownRow[] {
  const rows: BreakdownRow[] = [
    {
      key: 'lexical',
      value: b.textNormalized,
      max: 1,
      tone: 'lexical',
      detail:
        b.textRaw === undefined
          ? '—'
          : `BM25 ${fixed(b.textRaw)} · #${String(b.lexicalRank)}${b.matchedTerms.length > 0 ? ` · ${b.matchedTerms.join(' ')}` : ''}`,
    },
    {
      key: 'dense',
      value: b.vectorNormalized,
      max: 1,
      tone: 'dense',
      detail: b.vectorRaw === undefined ? '—' : `cos ${fixed(b.vectorRaw)} · #${String(b.denseRank)}`,
    },
  ];
  if (b.rerankScore !== undefined) {
    rows.push({ key: 'rerank', value: b.rerankScore, max: 1, tone: 'accent', detail: fixed(b.rerankScore) });
  }
  rows.push(
    { key: 'fused', value: b.fused, max: 1, tone: 'accent', detail: fixed(b.fused) },
    {
      key: 'timeWindow',
      value: b.timeWindowFactor,
      max: 1,
      tone: 'muted',
      detail: `× ${fixed(b.timeWindowFactor)}`,
    },
    { key: 'relevance', value: b.relevance, max: 1, tone: 'accent', detail: fixed(b.relevance) },
    {
      key: 'recency',
      value: b.recencyMultiplier,
      max: 1,
      tone: 'muted',
      detail: `× ${fixed(b.recencyMultiplier)} · ${fixed(b.ageDays, 1)} d · decay ${fixed(b.decayFactor)}`,
    },
    {
      key: 'mmr',
      value: b.mmrPenalty,
      max: 1,
      tone: 'warn',
      detail: `− ${fixed(b.mmrPenalty)} · sim ${fixed(b.maxSimilarity)} · mmr ${fixed(b.mmrScore)}`,
    },
    { key: 'final', value: b.finalScore, max: 1, tone: 'accent', detail: fixed(b.finalScore) },
  );
  return rows;
}

/** Where a result comes from, as a Studio route (view, path, query), when it has a page. */
export interface SourceLink {
  readonly view: 'memories' | 'sessions' | 'documents';
  readonly rest: readonly string[];
  readonly query: Readonly<Record<string, string>>;
}

function segment(name: string, collection: string): string | undefined {
  const parts = name.split('/');
  const at = parts.indexOf(collection);
  return at >= 0 ? parts[at + 1] : undefined;
}

/** The Studio page of a result: the memory, the session at the round's message, the document. */
export function resultSource(result: SearchResult): SourceLink | undefined {
  const item = result.item;
  if (item.case === 'memory') {
    const id = segment(item.value.name || result.name, 'memories');
    return id !== undefined ? { view: 'memories', rest: [id], query: {} } : undefined;
  }
  if (item.case === 'round') {
    const id = segment(item.value.session || result.name, 'sessions');
    return id !== undefined
      ? { view: 'sessions', rest: [id], query: { message: String(item.value.firstSequence) } }
      : undefined;
  }
  if (item.case === 'chunk') {
    const id = segment(item.value.name || result.name, 'documents');
    return id !== undefined ? { view: 'documents', rest: [id], query: {} } : undefined;
  }
  return undefined;
}

/** The text a result shows: the memory's text (or its fact key), the round's, the chunk's. */
export function resultText(result: SearchResult): string {
  const item = result.item;
  switch (item.case) {
    case 'memory':
      return item.value.text !== ''
        ? item.value.text
        : [item.value.namespace, item.value.key].filter((s) => s !== '').join('.');
    case 'round':
    case 'chunk':
      return item.value.text;
    default:
      return '';
  }
}

/** The kind of a result, as its short name (`MEMORY`). */
export function kindName(kind: ItemKind): string {
  return enumName(ItemKind, kind);
}

/** One figure of the search stats: a label key and its value, already as text. */
export interface StatRow {
  readonly key: string;
  readonly value: string;
}

/** A Duration in milliseconds, keeping the microseconds (`durationMs` rounds to whole ms). */
export function durationMillis(d: Duration): number {
  return Number(d.seconds) * 1000 + d.nanos / 1e6;
}

function ms(d: Duration | undefined): string | undefined {
  return d === undefined ? undefined : `${durationMillis(d).toFixed(1)} ms`;
}

/**
 * The stats of a response, as label key → value (keys are SearchStats field names, which the
 * view translates): candidate counts per signal, drops, degradation, query analysis, timings.
 * Optional facts (degradation, reranker, time window) only when present.
 */
export function statsRows(stats: SearchStats): StatRow[] {
  const rows: StatRow[] = [
    { key: 'lexicalCandidates', value: String(stats.lexicalCandidates) },
    { key: 'denseCandidates', value: String(stats.denseCandidates) },
    { key: 'mergedCandidates', value: String(stats.mergedCandidates) },
    { key: 'densePendingCandidates', value: String(stats.densePendingCandidates) },
    { key: 'driftDropped', value: String(stats.driftDropped) },
    { key: 'minScoreDropped', value: String(stats.minScoreDropped) },
  ];
  if (stats.degraded) {
    rows.push({
      key: 'degraded',
      value: [
        stats.degradedReason !== DegradedReason.UNSPECIFIED
          ? enumName(DegradedReason, stats.degradedReason)
          : '',
        stats.degradedMessage,
      ]
        .filter((s) => s !== '')
        .join(': '),
    });
  }
  rows.push(
    { key: 'queryLanguage', value: stats.queryLanguage || '—' },
    { key: 'queryForm', value: enumName(QueryForm, stats.queryForm) },
    { key: 'queryTerms', value: String(stats.queryTerms) },
  );
  if (stats.lexicalCoverage !== undefined)
    rows.push({ key: 'lexicalCoverage', value: fixed(stats.lexicalCoverage) });
  if (stats.queryTimeExpressions.length > 0) {
    rows.push({ key: 'queryTimeExpressions', value: stats.queryTimeExpressions.join(', ') });
  }
  if (stats.queryAsksCurrentState) rows.push({ key: 'queryAsksCurrentState', value: '✓' });
  const applied = stats.appliedOptions;
  if (applied !== undefined) {
    rows.push({
      key: 'appliedWeights',
      value: `${fixed(applied.vectorWeight ?? Number.NaN, 2)} / ${fixed(applied.textWeight ?? Number.NaN, 2)}`,
    });
  }
  if (stats.embeddingModel !== '') {
    rows.push(
      { key: 'embeddingModel', value: `${stats.embeddingModel} (${String(stats.embeddingDimensions)}d)` },
      { key: 'queryTokens', value: `${String(stats.queryTokens)}${stats.queryTruncated ? ' ✂' : ''}` },
    );
  }
  if (stats.rerankModel !== '') {
    rows.push({
      key: 'rerankModel',
      value: `${stats.rerankModel} (${String(stats.rerankedCandidates)}${stats.rerankElapsed !== undefined ? `, ${ms(stats.rerankElapsed) ?? ''}` : ''})`,
    });
  }
  rows.push({ key: 'indexBackend', value: enumName(IndexBackend, stats.indexBackend) });
  const elapsed = ms(stats.elapsed);
  if (elapsed !== undefined) rows.push({ key: 'elapsed', value: elapsed });
  return rows;
}

/** The stage timings of a search (`plan`, `embed`, …), in milliseconds, in the order they ran. */
export function stageTimings(stats: SearchStats): { readonly stage: string; readonly ms: number }[] {
  return stats.stages.map((s) => ({
    stage: s.stage,
    ms: s.elapsed !== undefined ? durationMillis(s.elapsed) : 0,
  }));
}
