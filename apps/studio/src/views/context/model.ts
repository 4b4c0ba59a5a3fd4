import type { MessageInitShape } from '@bufbuild/protobuf';
import {
  ChatRole,
  ContextLayer,
  LayerStatus,
  TraceItemKind,
  TraceReason,
  type BuildContextRequestSchema,
  type BuildContextResponse,
  type TraceItem,
} from '@engram/contracts/context';
import { enumName } from '../../lib/format.js';

/** The Context builder's form, as the inputs hold it; empty fields take the server's defaults. */
export interface ContextForm {
  readonly userMessage: string;
  /** `budget.total_tokens` (required). */
  readonly totalTokens: string;
  readonly reservedOutputTokens: string;
  /** `sessions/{session}`, or empty for "none" (a preview session without history). */
  readonly session: string;
  readonly systemPrompt: string;
  readonly model: string;
  /** `knowledge.query`: search with a rewritten query instead of the user message. */
  readonly knowledgeQuery: string;
  readonly knowledgeTopK: string;
  readonly knowledgeMinScore: string;
  readonly evergreenMinConfidence: string;
  readonly strict: boolean;
}

export const DEFAULT_BUDGET = '4000';

export const EMPTY_CONTEXT_FORM: ContextForm = {
  userMessage: '',
  totalTokens: DEFAULT_BUDGET,
  reservedOutputTokens: '',
  session: '',
  systemPrompt: '',
  model: '',
  knowledgeQuery: '',
  knowledgeTopK: '',
  knowledgeMinScore: '',
  evergreenMinConfidence: '',
  strict: false,
};

export type ContextField = keyof ContextForm;

export interface BuiltContext {
  readonly request: MessageInitShape<typeof BuildContextRequestSchema>;
  /** Fields that are not numbers (or integers where one is needed): do not send. */
  readonly problems: readonly ContextField[];
}

function readNumber(
  form: ContextForm,
  field: ContextField,
  integer: boolean,
  problems: ContextField[],
): number | undefined {
  const text = String(form[field]).trim();
  if (text === '') return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || (integer && !Number.isInteger(n))) {
    problems.push(field);
    return undefined;
  }
  return n;
}

/**
 * The BuildContextRequest of a form for `session` (the chosen one, or the preview session when
 * none was chosen). Only what the user set is sent; ranges are the server's to check.
 */
export function buildContextRequest(form: ContextForm, session: string): BuiltContext {
  const problems: ContextField[] = [];
  const totalTokens = readNumber(form, 'totalTokens', true, problems);
  const reserved = readNumber(form, 'reservedOutputTokens', true, problems);
  const topK = readNumber(form, 'knowledgeTopK', true, problems);
  const minScore = readNumber(form, 'knowledgeMinScore', false, problems);
  const evergreen = readNumber(form, 'evergreenMinConfidence', false, problems);
  const knowledge = {
    ...(form.knowledgeQuery.trim() !== '' ? { query: form.knowledgeQuery } : {}),
    ...(topK !== undefined ? { topK } : {}),
    ...(minScore !== undefined ? { minScore } : {}),
  };
  const request: MessageInitShape<typeof BuildContextRequestSchema> = {
    session,
    userMessage: form.userMessage,
    budget: {
      totalTokens: totalTokens ?? 0,
      ...(reserved !== undefined ? { reservedOutputTokens: reserved } : {}),
    },
    includeTrace: true,
    ...(form.model.trim() !== '' ? { model: form.model.trim() } : {}),
    ...(form.systemPrompt !== '' ? { systemPrompt: form.systemPrompt } : {}),
    ...(Object.keys(knowledge).length > 0 ? { knowledge } : {}),
    ...(evergreen !== undefined ? { evergreenMinConfidence: evergreen } : {}),
    ...(form.strict ? { strict: true } : {}),
  };
  return { request, problems };
}

/** A layer's short name (`RETRIEVED_KNOWLEDGE`). */
export function layerName(layer: ContextLayer): string {
  return enumName(ContextLayer, layer);
}

export function roleName(role: ChatRole): string {
  return enumName(ChatRole, role).toLowerCase();
}

export function reasonName(reason: TraceReason): string {
  return enumName(TraceReason, reason);
}

export function traceKindName(kind: TraceItemKind): string {
  return enumName(TraceItemKind, kind);
}

export function statusName(status: LayerStatus): string {
  return enumName(LayerStatus, status);
}

/** One segment of the tokens-per-layer bar. */
export interface TokenSegment {
  /** A layer's name, or `OVERHEAD` for the tokens no layer owns. */
  readonly key: string;
  readonly value: number;
}

/**
 * The used tokens of every layer that used any, in assembly order, then the overhead: they add
 * up to the response's `total_tokens` (the accounting documented on BuildContextResponse).
 */
export function tokenSegments(response: BuildContextResponse): TokenSegment[] {
  const segments: TokenSegment[] = response.layers
    .filter((l) => l.usedTokens > 0)
    .map((l) => ({ key: layerName(l.layer), value: l.usedTokens }));
  if (response.overheadTokens > 0) segments.push({ key: 'OVERHEAD', value: response.overheadTokens });
  return segments;
}

export function segmentsTotal(segments: readonly TokenSegment[]): number {
  return segments.reduce((sum, s) => sum + s.value, 0);
}

/** The trace items of one layer, split into what went in and what was left out. */
export interface TraceGroup {
  readonly layer: ContextLayer;
  readonly included: readonly TraceItem[];
  readonly dropped: readonly TraceItem[];
}

/** The trace grouped by layer, in the order the layers first appear (assembly order). */
export function groupTrace(trace: readonly TraceItem[]): TraceGroup[] {
  const groups = new Map<ContextLayer, { included: TraceItem[]; dropped: TraceItem[] }>();
  for (const item of trace) {
    let group = groups.get(item.layer);
    if (group === undefined) {
      group = { included: [], dropped: [] };
      groups.set(item.layer, group);
    }
    (item.included ? group.included : group.dropped).push(item);
  }
  return [...groups.entries()].map(([layer, g]) => ({ layer, included: g.included, dropped: g.dropped }));
}

/** How many trace items were included and dropped, over all layers. */
export function traceCounts(trace: readonly TraceItem[]): { included: number; dropped: number } {
  const included = trace.filter((t) => t.included).length;
  return { included, dropped: trace.length - included };
}

/** The Studio page of a trace item, when it has one (memories, documents, session messages). */
export function traceLink(
  id: string,
): { view: string; rest: readonly string[]; query: Readonly<Record<string, string>> } | undefined {
  const parts = id.split('/');
  if (parts[0] === 'memories' && parts[1] !== undefined)
    return { view: 'memories', rest: [parts[1]], query: {} };
  if (parts[0] === 'documents' && parts[1] !== undefined)
    return { view: 'documents', rest: [parts[1]], query: {} };
  if (parts[0] === 'sessions' && parts[1] !== undefined)
    return { view: 'sessions', rest: [parts[1]], query: {} };
  return undefined;
}

/** The `external_id` of the empty session the builder uses when no session is chosen. */
export const PREVIEW_SESSION_EXTERNAL_ID = 'engram-studio-context-preview';
