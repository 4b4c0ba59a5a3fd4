/**
 * Context assembly: the pure core of `BuildContext`. Given the candidates of every layer, it
 * computes the budgets, fills the layers, renders the chat messages and accounts for every token,
 * exactly as the comments of `engram.context.v1` (`TokenBudget`, `ContextLayer`, `TraceReason`,
 * `BuildContextResponse`) describe. No I/O, no clock: the same input gives the same output.
 */
import { injectionPatternsIn } from '@engram/redaction';
import { errors } from '@engram/runtime';
import {
  bulletLine,
  factLine,
  HEADINGS,
  knowledgeLine,
  omissionMarker,
  PROMPT_SEPARATOR,
  summaryPart,
  toolPart,
  toolResultAsText,
  unansweredCallsNote,
} from './render.js';
import {
  FILL_ORDER,
  LAYERS,
  type AssembledMessage,
  type Assembly,
  type AssemblyInput,
  type FactCandidate,
  type KnowledgeCandidate,
  type Layer,
  type LayerBudgetOverride,
  type LayerStatus,
  type LayerUsage,
  type OptionalLayer,
  type Tokenizer,
  type ToolDescription,
  type TraceItem,
  type TraceItemKind,
  type TraceReason,
  type TurnCandidate,
} from './types.js';

/** Neither the summary nor a turn is truncated below this many tokens (see `TraceReason`). */
export const MIN_TRUNCATED_TOKENS = 32;

const MAX_DETAIL_CHARS = 200;

/** The system-message sections, in assembly order (which is also their fill order). */
const SECTION_LAYERS = [
  'KEY_POINTS',
  'OPEN_LOOPS',
  'SESSION_SUMMARY',
  'EVERGREEN_FACTS',
  'RETRIEVED_KNOWLEDGE',
] as const satisfies readonly OptionalLayer[];
type SectionLayer = (typeof SECTION_LAYERS)[number];

function clip(detail: string): string {
  return detail.length <= MAX_DETAIL_CHARS ? detail : `${detail.slice(0, MAX_DETAIL_CHARS - 1)}…`;
}

function num(value: number): string {
  return String(Number(value.toFixed(4)));
}

function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function trace(
  layer: Layer,
  kind: TraceItemKind,
  id: string,
  tokens: number,
  reason: TraceReason,
  detail = '',
  extra: { score?: number; confidence?: number; injectionPatterns?: readonly string[] } = {},
): TraceItem {
  return {
    id,
    kind,
    layer,
    tokens,
    ...(extra.score === undefined ? {} : { score: extra.score }),
    ...(extra.confidence === undefined ? {} : { confidence: extra.confidence }),
    included: reason === 'INCLUDED' || reason === 'TRUNCATED',
    reason,
    detail: clip(detail),
    ...(extra.injectionPatterns === undefined || extra.injectionPatterns.length === 0
      ? {}
      : { injectionPatterns: extra.injectionPatterns }),
  };
}

/** What filling one optional layer produced. */
interface LayerFill {
  readonly status: LayerStatus;
  readonly used: number;
  readonly trace: readonly TraceItem[];
  readonly detail: string;
}

/** A filled system-message section: its rendered parts (heading first) and their tokens. */
interface SectionFill extends LayerFill {
  readonly parts: readonly string[];
}

const EMPTY_SECTION = { parts: [], used: 0, trace: [], detail: '' } as const;

/** One candidate of a list section (key points, open loops, facts, knowledge). */
interface ListCandidate {
  readonly id: string;
  readonly kind: TraceItemKind;
  readonly score?: number;
  readonly confidence?: number;
  /** The prompt-injection patterns its text matched (reported in the trace). */
  readonly injectionPatterns?: readonly string[];
  /** A reason decided before budgeting (low confidence, threshold, duplicate, top-k). */
  readonly preDrop?: { readonly reason: TraceReason; readonly detail: string };
  /** The item's rendered part, given its 1-based position among the included items. */
  readonly render: (position: number) => string;
}

interface FillContext {
  readonly budget: number;
  readonly disabled: boolean;
}

/**
 * Fills a list section. `prefix`: the first candidate that does not fit ends the layer (every
 * layer but RETRIEVED_KNOWLEDGE); otherwise it is skipped and later ones may still fit. The heading
 * is paid with the first included item.
 */
function fillList(
  layer: SectionLayer,
  candidates: readonly ListCandidate[],
  ctx: FillContext,
  tk: Tokenizer,
  prefix: boolean,
): Omit<SectionFill, 'status' | 'detail'> {
  const heading = HEADINGS[layer];
  const headingTokens = tk.count(heading);
  const parts: string[] = [];
  const items: TraceItem[] = [];
  let used = 0;
  let included = 0;
  let ended = false;
  for (const c of candidates) {
    const text = c.render(included + 1);
    const tokens = tk.count(text);
    const extra = { score: c.score, confidence: c.confidence, injectionPatterns: c.injectionPatterns };
    const add = (reason: TraceReason, detail = '') =>
      items.push(trace(layer, c.kind, c.id, tokens, reason, detail, extra));
    if (ctx.disabled) add('DROPPED_LAYER_DISABLED');
    else if (c.preDrop !== undefined) add(c.preDrop.reason, c.preDrop.detail);
    else if (ctx.budget === 0) add('DROPPED_TOTAL_BUDGET', 'the layer had no budget');
    else if (ended) add('DROPPED_LAYER_BUDGET', 'an earlier item did not fit');
    else {
      const cost = tokens + (included === 0 ? headingTokens : 0);
      if (used + cost <= ctx.budget) {
        if (included === 0) parts.push(heading);
        parts.push(text);
        included += 1;
        used += cost;
        add('INCLUDED');
      } else {
        add('DROPPED_LAYER_BUDGET', `needs ${cost} tokens, ${ctx.budget - used} left in layer`);
        if (prefix) ended = true;
      }
    }
  }
  return { parts, used, trace: items };
}

function listStatus(disabled: boolean, count: number): LayerStatus {
  return disabled ? 'DISABLED' : count === 0 ? 'EMPTY' : 'OK';
}

/** Sentence ends (index just after the end), for truncating the summary. */
function sentenceEnds(text: string): number[] {
  const ends: number[] = [];
  const re = /[。！？]+|[.!?…]+["'”’)\]]*(?=\s|$)|\n/gu;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) ends.push(m.index + m[0].length);
  return ends;
}

/** Whitespace positions, the fallback cut points when not even one sentence fits. */
function wordEnds(text: string): number[] {
  const ends: number[] = [];
  const re = /\S(?=\s)/gu;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) ends.push(m.index + m[0].length);
  return ends;
}

/**
 * The longest of the cut points whose rendering fits (`fits` is monotone in practice; the result
 * is checked, so a non-monotone count can only make the cut shorter, never over budget).
 */
function longestFitting(cuts: readonly number[], fits: (cut: number) => boolean): number | undefined {
  let lo = 0;
  let hi = cuts.length - 1;
  let best: number | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const cut = cuts[mid];
    if (cut !== undefined && fits(cut)) {
      best = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  for (let i = best ?? -1; i >= 0; i--) {
    const cut = cuts[i];
    if (cut !== undefined && fits(cut)) return cut;
  }
  return undefined;
}

function fillSummary(input: AssemblyInput, ctx: FillContext, tk: Tokenizer): SectionFill {
  const text = input.summary.trim();
  if (text === '') return { ...EMPTY_SECTION, status: listStatus(ctx.disabled, 0) };
  const layer = 'SESSION_SUMMARY';
  const id = `${input.sessionName}/state/summary`;
  const part = summaryPart(text);
  const tokens = tk.count(part);
  const item = (t: number, reason: TraceReason, detail = '') => [
    trace(layer, 'SUMMARY', id, t, reason, detail),
  ];
  if (ctx.disabled)
    return { ...EMPTY_SECTION, status: 'DISABLED', trace: item(tokens, 'DROPPED_LAYER_DISABLED') };
  if (ctx.budget === 0) {
    return {
      ...EMPTY_SECTION,
      status: 'OK',
      trace: item(tokens, 'DROPPED_TOTAL_BUDGET', 'the layer had no budget'),
    };
  }
  const headingTokens = tk.count(HEADINGS.SESSION_SUMMARY);
  if (headingTokens + tokens <= ctx.budget) {
    return {
      status: 'OK',
      parts: [HEADINGS.SESSION_SUMMARY, part],
      used: headingTokens + tokens,
      trace: item(tokens, 'INCLUDED'),
      detail: '',
    };
  }
  // Keep the summary's start, cut at a sentence boundary (else a word boundary), end with `…`.
  const room = ctx.budget - headingTokens;
  const render = (cut: number) => summaryPart(`${text.slice(0, cut).trimEnd()} …`);
  const fits = (cut: number) => tk.count(render(cut)) <= room;
  const cut =
    room >= MIN_TRUNCATED_TOKENS
      ? (longestFitting(sentenceEnds(text), fits) ?? longestFitting(wordEnds(text), fits))
      : undefined;
  const truncated = cut === undefined ? undefined : render(cut);
  const kept = truncated === undefined ? 0 : tk.count(truncated);
  if (truncated === undefined || kept < MIN_TRUNCATED_TOKENS) {
    return {
      ...EMPTY_SECTION,
      status: 'OK',
      trace: item(
        tokens,
        'DROPPED_LAYER_BUDGET',
        `needs ${headingTokens + tokens} tokens, ${ctx.budget} left in layer`,
      ),
    };
  }
  return {
    status: 'OK',
    parts: [HEADINGS.SESSION_SUMMARY, truncated],
    used: headingTokens + kept,
    trace: item(kept, 'TRUNCATED', `${Math.max(tokens - kept, 0)} tokens cut`),
    detail: '',
  };
}

/** Evergreen facts by confidence (highest first), then most recently updated, then name. */
export function orderFacts(facts: readonly FactCandidate[]): FactCandidate[] {
  return [...facts].sort(
    (a, b) => b.confidence - a.confidence || b.updatedAt - a.updatedAt || compareNames(a.name, b.name),
  );
}

function factCandidates(facts: readonly FactCandidate[], minConfidence: number): ListCandidate[] {
  return orderFacts(facts).map((f) => {
    const injectionPatterns = injectionPatternsIn(f.text);
    return {
      id: f.name,
      kind: 'MEMORY',
      confidence: f.confidence,
      ...(f.confidence < minConfidence
        ? {
            preDrop: {
              reason: 'DROPPED_LOW_CONFIDENCE',
              detail: `confidence ${num(f.confidence)} < evergreen_min_confidence ${num(minConfidence)}`,
            },
          }
        : {}),
      injectionPatterns,
      render: () => factLine(f.text, injectionPatterns.length > 0),
    };
  });
}

/** Why a retrieved item duplicates something else in the context, or undefined. */
function duplicateOf(
  c: KnowledgeCandidate,
  input: AssemblyInput,
  tailNames: ReadonlySet<string>,
): string | undefined {
  if (c.kind === 'ROUND' && tailNames.has(c.name)) return `same as ${c.name} in recent turns`;
  if (c.kind === 'MEMORY') {
    if (input.summaryMemory !== '' && c.name === input.summaryMemory) {
      return `same as ${input.sessionName}/state/summary`;
    }
    const evidence = c.evidenceMessages ?? [];
    if (evidence.length > 0 && evidence.every((m) => tailNames.has(m))) {
      return `same as recent turns ${evidence.join(', ')}`;
    }
  }
  return undefined;
}

function knowledgeCandidates(
  items: readonly KnowledgeCandidate[],
  input: AssemblyInput,
  tailNames: ReadonlySet<string>,
): ListCandidate[] {
  const topK = Math.max(0, Math.floor(input.knowledgeTopK));
  const seen = new Set<string>();
  let eligible = 0;
  return items.map((c): ListCandidate => {
    let preDrop: ListCandidate['preDrop'];
    const duplicate = seen.has(c.name)
      ? `same as ${c.name} ranked earlier`
      : duplicateOf(c, input, tailNames);
    seen.add(c.name);
    if (!(c.score >= input.knowledgeMinScore)) {
      preDrop = {
        reason: 'DROPPED_BELOW_THRESHOLD',
        detail: `score ${num(c.score)} < min_score ${num(input.knowledgeMinScore)}`,
      };
    } else if (duplicate !== undefined) {
      preDrop = { reason: 'DROPPED_DUPLICATE', detail: duplicate };
    } else {
      eligible += 1;
      if (eligible > topK) preDrop = { reason: 'DROPPED_TOP_K', detail: `rank ${eligible} > top_k ${topK}` };
    }
    // Every retrieved item is checked where it is used (decision 0025): documents and chunks
    // are not judged by governance, and the detector's current patterns apply to old data too.
    const injectionPatterns = injectionPatternsIn(`${c.title ?? ''}\n${c.text}`);
    return {
      id: c.name,
      kind: c.kind,
      score: c.score,
      injectionPatterns,
      ...(c.kind === 'MEMORY' && c.confidence !== undefined ? { confidence: c.confidence } : {}),
      ...(preDrop === undefined ? {} : { preDrop }),
      render: (position) => knowledgeLine(position, c, injectionPatterns.length > 0),
    };
  });
}

/** A stored turn rendered as a chat message. */
function plainMessage(turn: TurnCandidate, content: string = turn.content): AssembledMessage {
  return { role: turn.role, content, name: turn.participantName, toolCallId: '', toolCalls: [] };
}

/** The possible renderings of a turn (see CONTEXT_LAYER_RECENT_TURNS); the first is the fullest. */
function renderings(turn: TurnCandidate): AssembledMessage[] {
  if (turn.role === 'TOOL') {
    const asText: AssembledMessage = {
      role: 'SYSTEM',
      content: toolResultAsText(turn),
      name: '',
      toolCallId: '',
      toolCalls: [],
    };
    if (turn.toolCallId === '') return [asText];
    return [
      asText,
      { role: 'TOOL', content: turn.content, name: '', toolCallId: turn.toolCallId, toolCalls: [] },
    ];
  }
  if (turn.role === 'ASSISTANT' && turn.toolCalls.length > 0) {
    const withCalls: AssembledMessage = { ...plainMessage(turn), toolCalls: turn.toolCalls };
    return [withCalls, withoutCalls(turn)];
  }
  return [plainMessage(turn)];
}

/** An assistant turn whose calls all lost their results: its content, or a note when it has none. */
function withoutCalls(turn: TurnCandidate): AssembledMessage {
  return plainMessage(turn, turn.content === '' ? unansweredCallsNote(turn) : turn.content);
}

/**
 * Renders the included tail (oldest first). A TOOL message is a CHAT_ROLE_TOOL message when it
 * answers a call of the assistant message right before it, with only such paired tool messages in
 * between; anything else (including a second answer to the same call) becomes a system message, so
 * that the result is always valid for chat-completions. An assistant message keeps only the calls
 * that got their tool message.
 */
function renderTail(tail: readonly TurnCandidate[]): AssembledMessage[] {
  const paired = new Set<number>();
  const answered = new Map<number, Set<string>>();
  for (let i = 0; i < tail.length; i++) {
    const turn = tail[i];
    if (turn?.role !== 'ASSISTANT' || turn.toolCalls.length === 0) continue;
    const callIds = new Set(turn.toolCalls.map((c) => c.id));
    const got = new Set<string>();
    for (let j = i + 1; j < tail.length; j++) {
      const next = tail[j];
      if (
        next?.role !== 'TOOL' ||
        next.toolCallId === '' ||
        !callIds.has(next.toolCallId) ||
        got.has(next.toolCallId)
      ) {
        break;
      }
      got.add(next.toolCallId);
      paired.add(j);
    }
    answered.set(i, got);
  }
  return tail.map((turn, i): AssembledMessage => {
    if (turn.role === 'TOOL') {
      return paired.has(i)
        ? { role: 'TOOL', content: turn.content, name: '', toolCallId: turn.toolCallId, toolCalls: [] }
        : { role: 'SYSTEM', content: toolResultAsText(turn), name: '', toolCallId: '', toolCalls: [] };
    }
    const got = answered.get(i);
    if (got === undefined) return plainMessage(turn);
    const kept = turn.toolCalls.filter((c) => got.has(c.id));
    return kept.length === 0 ? withoutCalls(turn) : { ...plainMessage(turn), toolCalls: kept };
  });
}

/** Index of the code-unit position `i` moved off the middle of a surrogate pair. */
function safeCut(text: string, i: number, forward: boolean): number {
  const code = text.charCodeAt(i);
  if (i > 0 && i < text.length && code >= 0xdc00 && code <= 0xdfff) return forward ? i + 1 : i - 1;
  return i;
}

/**
 * The newest turn cut to fit `budget` tokens: its start and end kept around an omission marker.
 * Returns undefined when no cut of at least {@link MIN_TRUNCATED_TOKENS} tokens fits.
 */
function truncateTurn(
  turn: TurnCandidate,
  alone: AssembledMessage,
  budget: number,
  tk: Tokenizer,
): { message: AssembledMessage; tokens: number } | undefined {
  if (budget < MIN_TRUNCATED_TOKENS) return undefined;
  const content = turn.content;
  const full = tk.count(content);
  const build = (keep: number): AssembledMessage => {
    const headEnd = safeCut(content, Math.ceil(keep / 2), false);
    const tailStart = safeCut(content, content.length - Math.floor(keep / 2), true);
    const head = content.slice(0, headEnd).trimEnd();
    const tail = content.slice(Math.max(tailStart, headEnd)).trimStart();
    const omitted = Math.max(1, full - tk.count(head) - tk.count(tail));
    const cut = `${head}\n${omissionMarker(omitted)}\n${tail}`;
    const body = turn.role === 'TOOL' ? toolResultAsText(turn, cut) : cut;
    return { ...alone, content: body };
  };
  const fits = (keep: number) => tk.countMessage(build(keep)) <= budget;
  // Characters per token of this content bound the search, so only short texts are counted.
  const ratio = content.length / Math.max(full, 1);
  const hi = Math.min(content.length - 1, Math.ceil(budget * ratio * 1.5) + 16);
  let lo = 0;
  let top = hi;
  let best: number | undefined;
  while (lo <= top) {
    const mid = (lo + top) >> 1;
    if (fits(mid)) {
      best = mid;
      lo = mid + 1;
    } else top = mid - 1;
  }
  if (best === undefined) return undefined;
  const message = build(best);
  const tokens = tk.countMessage(message);
  return tokens >= MIN_TRUNCATED_TOKENS && tokens <= budget ? { message, tokens } : undefined;
}

interface TurnsFill extends LayerFill {
  readonly messages: readonly AssembledMessage[];
  readonly messageTokens: readonly number[];
}

function fillTurns(input: AssemblyInput, ctx: FillContext, tk: Tokenizer): TurnsFill {
  const layer = 'RECENT_TURNS';
  const turns = input.turns;
  const detail =
    input.uncompactedMessageCount > turns.length
      ? `${turns.length} newest of ${input.uncompactedMessageCount} uncompacted messages considered`
      : '';
  const none = { messages: [], messageTokens: [], used: 0, detail };
  if (turns.length === 0) return { ...none, status: ctx.disabled ? 'DISABLED' : 'EMPTY', trace: [] };
  const maxCost = turns.map((t) => Math.max(...renderings(t).map((m) => tk.countMessage(m))));
  const newest = turns.length - 1;
  const last = turns[newest];
  const duplicate =
    input.renderUserMessage !== false && last?.role === 'USER' && last.content === input.userMessage
      ? newest
      : -1;

  const reasons = new Map<number, { reason: TraceReason; detail: string }>();
  let tailStart = duplicate === -1 ? turns.length : duplicate;
  let truncated: { message: AssembledMessage; tokens: number; cut: number } | undefined;
  if (!ctx.disabled && ctx.budget > 0) {
    let used = 0;
    let ended = false;
    for (let i = newest; i >= 0; i--) {
      if (i === duplicate) continue;
      const cost = maxCost[i] ?? 0;
      if (!ended && used + cost <= ctx.budget) {
        used += cost;
        tailStart = i;
        continue;
      }
      if (!ended && used === 0) {
        // The newest turn alone exceeds the budget: send it alone (its calls cannot be paired
        // then), whole if that rendering fits, else cut in the middle.
        const turn = turns[i];
        if (turn !== undefined) {
          const alone = turn.role === 'TOOL' ? renderings(turn)[0] : renderTail([turn])[0];
          const aloneTokens = alone === undefined ? Infinity : tk.countMessage(alone);
          if (alone !== undefined && aloneTokens <= ctx.budget) {
            tailStart = i;
            ended = true;
            continue;
          }
          const cut = alone === undefined ? undefined : truncateTurn(turn, alone, ctx.budget, tk);
          if (cut !== undefined) {
            truncated = { ...cut, cut: Math.max(aloneTokens - cut.tokens, 0) };
            tailStart = i;
            ended = true;
            continue;
          }
        }
      }
      reasons.set(i, {
        reason: 'DROPPED_LAYER_BUDGET',
        detail: ended
          ? 'the layer ended at a newer turn'
          : `needs ${cost} tokens, ${ctx.budget - used} left in layer`,
      });
      ended = true;
    }
  }

  const tailEnd = duplicate === -1 ? turns.length : duplicate;
  const tail = turns.slice(tailStart, tailEnd);
  const messages = truncated === undefined ? renderTail(tail) : [truncated.message];
  const messageTokens = messages.map((m) => tk.countMessage(m));
  const items: TraceItem[] = [];
  for (let i = newest; i >= 0; i--) {
    const turn = turns[i];
    if (turn === undefined) continue;
    const add = (tokens: number, reason: TraceReason, d = '') =>
      items.push(trace(layer, 'TURN', turn.name, tokens, reason, d));
    const cost = maxCost[i] ?? 0;
    if (ctx.disabled) add(cost, 'DROPPED_LAYER_DISABLED');
    else if (i === duplicate) add(cost, 'DROPPED_DUPLICATE', 'same as request/userMessage');
    else if (ctx.budget === 0) add(cost, 'DROPPED_TOTAL_BUDGET', 'the layer had no budget');
    else if (i >= tailStart && i < tailEnd) {
      const tokens = messageTokens[i - tailStart] ?? 0;
      if (truncated === undefined) add(tokens, 'INCLUDED');
      else add(tokens, 'TRUNCATED', `${truncated.cut} tokens cut`);
    } else {
      const r = reasons.get(i) ?? {
        reason: 'DROPPED_LAYER_BUDGET',
        detail: 'the layer ended at a newer turn',
      };
      add(cost, r.reason, r.detail);
    }
  }
  return {
    status: ctx.disabled ? 'DISABLED' : 'OK',
    messages,
    messageTokens,
    used: messageTokens.reduce((a, b) => a + b, 0),
    trace: items,
    detail,
  };
}

interface ToolsFill extends LayerFill {
  /** PARAMETER mode: the included tools. */
  readonly tools: readonly ToolDescription[];
  /** SYSTEM_MESSAGE mode: the tools message, if any tool was included. */
  readonly message?: AssembledMessage;
}

function fillTools(input: AssemblyInput, ctx: FillContext, tk: Tokenizer): ToolsFill {
  const layer = 'TOOLS';
  const asParameter = input.toolRendering === 'PARAMETER';
  const fixed = asParameter
    ? (tk.toolListOverheadTokens ?? 0)
    : tk.tokensPerMessage + tk.count(HEADINGS.TOOLS);
  const items: TraceItem[] = [];
  const included: ToolDescription[] = [];
  const parts: string[] = [];
  let used = 0;
  let ended = false;
  for (const tool of input.tools) {
    const part = asParameter ? '' : toolPart(tool);
    const tokens = asParameter ? tk.countToolParameter(tool) : tk.count(part);
    const add = (reason: TraceReason, detail = '') =>
      items.push(trace(layer, 'TOOL', `request/tools/${tool.name}`, tokens, reason, detail));
    if (ctx.disabled) add('DROPPED_LAYER_DISABLED');
    else if (ctx.budget === 0) add('DROPPED_TOTAL_BUDGET', 'the layer had no budget');
    else if (ended) add('DROPPED_LAYER_BUDGET', 'an earlier tool did not fit');
    else {
      const cost = tokens + (included.length === 0 ? fixed : 0);
      if (used + cost <= ctx.budget) {
        included.push(tool);
        parts.push(part);
        used += cost;
        add('INCLUDED');
      } else {
        add('DROPPED_LAYER_BUDGET', `needs ${cost} tokens, ${ctx.budget - used} left in layer`);
        ended = true;
      }
    }
  }
  const status = listStatus(ctx.disabled, input.tools.length);
  if (asParameter) return { status, used, trace: items, detail: '', tools: included };
  if (included.length === 0) return { status, used, trace: items, detail: '', tools: [] };
  const message: AssembledMessage = {
    role: 'SYSTEM',
    content: HEADINGS.TOOLS + parts.join(''),
    name: '',
    toolCallId: '',
    toolCalls: [],
  };
  return { status, used, trace: items, detail: '', tools: [], message };
}

/** The applied share of every optional layer (see `TokenBudget`). */
export function layerShares(
  defaults: Readonly<Record<OptionalLayer, number>>,
  overrides: ReadonlyMap<OptionalLayer, LayerBudgetOverride>,
): Record<OptionalLayer, number> {
  const unit = (x: number) => (Number.isFinite(x) ? Math.min(Math.max(x, 0), 1) : 0);
  let overridden = 0;
  let otherDefaults = 0;
  for (const layer of FILL_ORDER) {
    const share = overrides.get(layer)?.share;
    if (share === undefined) otherDefaults += unit(defaults[layer]);
    else overridden += unit(share);
  }
  const rest = Math.max(0, 1 - overridden);
  const shares = {} as Record<OptionalLayer, number>;
  for (const layer of FILL_ORDER) {
    const share = overrides.get(layer)?.share;
    shares[layer] =
      share === undefined
        ? otherDefaults > 0
          ? (unit(defaults[layer]) * rest) / otherDefaults
          : 0
        : unit(share);
  }
  return shares;
}

/**
 * Assembles a context (see `rpc BuildContext`). Throws `INVALID_ARGUMENT` BUDGET_TOO_SMALL when the
 * system prompt, the user message and the fixed overhead do not fit the available budget.
 *
 * The leading system message's overhead (its per-message tokens, or the blank line after the
 * system prompt) is only needed when a section will be rendered: it is reserved from the pool when
 * any section has a candidate that could be included, and counted only if a section is included,
 * so the totals always equal the returned messages.
 */
export function assemble(input: AssemblyInput): Assembly {
  const tk = input.tokenizer;
  const available = Math.max(0, Math.floor(input.budget.totalTokens - input.budget.reservedOutputTokens));
  const overrides = new Map<OptionalLayer, LayerBudgetOverride>();
  for (const o of input.budget.layers) if (!overrides.has(o.layer)) overrides.set(o.layer, o);
  const disabled = (layer: OptionalLayer): boolean =>
    overrides.get(layer)?.maxTokens === 0 ||
    (layer === 'EVERGREEN_FACTS' && input.facts.status === 'DISABLED') ||
    (layer === 'RETRIEVED_KNOWLEDGE' && input.knowledge.status === 'DISABLED');
  const candidates = sectionCandidates(input, disabled);
  const mandatory = mandatoryParts(input, candidates.sectionPossible, available);
  const shares = layerShares(input.defaultShares, overrides);
  const plan = new LayerBudgets(shares, mandatory.pool, overrides, disabled);
  const fills = fillLayers(input, candidates, plan);
  const rendered = render(input, mandatory, fills);
  const parameterTools = input.toolRendering === 'PARAMETER' ? fills.TOOLS.used : 0;
  return {
    messages: rendered.messages,
    messageTokens: rendered.messageTokens,
    tools: fills.TOOLS.tools,
    totalTokens: rendered.messageTokens.reduce((a, b) => a + b, 0) + parameterTools + tk.replyPrimingTokens,
    budgetTokens: available,
    overheadTokens: (rendered.systemMessage ? tk.tokensPerMessage : 0) + tk.replyPrimingTokens,
    layers: layerUsages(mandatory, rendered.promptUsed, fills, plan),
    trace: traceItems(mandatory, rendered.promptUsed, fills),
  };
}

/** The candidates of the system-message sections, and whether any section may be rendered. */
interface SectionCandidates {
  readonly keyPoints: readonly ListCandidate[];
  readonly openLoops: readonly ListCandidate[];
  readonly facts: readonly ListCandidate[];
  readonly knowledge: readonly ListCandidate[];
  readonly sectionPossible: boolean;
}

/** Candidates that need no budget to be judged. */
function sectionCandidates(
  input: AssemblyInput,
  disabled: (layer: OptionalLayer) => boolean,
): SectionCandidates {
  const tailNames = new Set(input.turns.map((t) => t.name));
  const facts =
    input.facts.status === 'OK' ? factCandidates(input.facts.items, input.evergreenMinConfidence) : [];
  const knowledge =
    input.knowledge.status === 'OK' ? knowledgeCandidates(input.knowledge.items, input, tailNames) : [];
  const keyPoints: ListCandidate[] = input.keyPoints.map((kp) => ({
    id: `${input.sessionName}/state/keyPoints/${kp.id}`,
    kind: 'KEY_POINT',
    render: () => bulletLine(kp.text),
  }));
  const openLoops: ListCandidate[] = input.openLoops.map((ol) => ({
    id: `${input.sessionName}/state/openLoops/${ol.id}`,
    kind: 'OPEN_LOOP',
    render: () => bulletLine(ol.text),
  }));
  const mayRender = (layer: SectionLayer, candidates: readonly ListCandidate[]) =>
    !disabled(layer) && candidates.some((c) => c.preDrop === undefined);
  const sectionPossible =
    mayRender('KEY_POINTS', keyPoints) ||
    mayRender('OPEN_LOOPS', openLoops) ||
    (!disabled('SESSION_SUMMARY') && input.summary.trim() !== '') ||
    mayRender('EVERGREEN_FACTS', facts) ||
    mayRender('RETRIEVED_KNOWLEDGE', knowledge);
  return { keyPoints, openLoops, facts, knowledge, sectionPossible };
}

/** The system prompt and the user message, their tokens, and the pool left for the optional layers. */
interface MandatoryParts {
  readonly prompt: string;
  readonly promptTokens: number;
  /** The prompt followed by the separator before the sections. */
  readonly promptWithSeparatorTokens: number;
  /** Undefined when the user message is not rendered (`renderUserMessage` false). */
  readonly userMessage: AssembledMessage | undefined;
  readonly userTokens: number;
  readonly pool: number;
}

/** Mandatory parts and the pool (BUDGET_TOO_SMALL when the mandatory parts do not fit). */
function mandatoryParts(input: AssemblyInput, sectionPossible: boolean, available: number): MandatoryParts {
  const tk = input.tokenizer;
  const prompt = input.systemPrompt;
  const promptTokens = prompt === '' ? 0 : tk.count(prompt);
  const userMessage: AssembledMessage | undefined =
    input.renderUserMessage === false
      ? undefined
      : { role: 'USER', content: input.userMessage, name: '', toolCallId: '', toolCalls: [] };
  const userTokens = userMessage === undefined ? 0 : tk.countMessage(userMessage);
  const mandatory =
    (prompt === '' ? 0 : tk.tokensPerMessage + promptTokens) + userTokens + tk.replyPrimingTokens;
  if (mandatory > available) {
    throw errors.invalidArgument(
      'BUDGET_TOO_SMALL',
      `the system prompt, the user message and the fixed overhead need ${mandatory} tokens, but the budget is ${available}`,
      { required_tokens: String(mandatory), budget_tokens: String(available) },
    );
  }
  const promptWithSeparatorTokens = prompt === '' ? 0 : tk.count(prompt + PROMPT_SEPARATOR);
  const reserve = !sectionPossible
    ? 0
    : prompt === ''
      ? tk.tokensPerMessage
      : Math.max(0, promptWithSeparatorTokens - promptTokens);
  const pool = Math.max(0, available - mandatory - reserve);
  return { prompt, promptTokens, promptWithSeparatorTokens, userMessage, userTokens, pool };
}

/**
 * The optional layers' budgets: floor(share × pool) each; the unassigned rest starts the
 * flow-over, and what a layer leaves unused flows to the next one in fill order.
 */
class LayerBudgets {
  /** floor(share × pool) of each layer. */
  readonly base = {} as Record<OptionalLayer, number>;
  /** The budget each layer was given, flow-over included. */
  readonly budgets = {} as Record<OptionalLayer, number>;
  #carry: number;

  constructor(
    readonly shares: Readonly<Record<OptionalLayer, number>>,
    pool: number,
    private readonly overrides: ReadonlyMap<OptionalLayer, LayerBudgetOverride>,
    private readonly disabled: (layer: OptionalLayer) => boolean,
  ) {
    let assigned = 0;
    for (const layer of FILL_ORDER) {
      this.base[layer] = Math.min(Math.floor(shares[layer] * pool + 1e-9), pool - assigned);
      assigned += this.base[layer];
    }
    this.#carry = pool - assigned;
  }

  /** The next layer's budget: its base plus the flow-over, within its cap. */
  budgetFor(layer: OptionalLayer): FillContext {
    const cap = this.disabled(layer) ? 0 : this.overrides.get(layer)?.maxTokens;
    const budget = Math.max(0, Math.min(this.base[layer] + this.#carry, cap ?? Infinity));
    this.budgets[layer] = budget;
    return { budget, disabled: this.disabled(layer) };
  }

  /** What the layer leaves of its base and the flow-over flows to the next one. */
  settle(layer: OptionalLayer, used: number): void {
    this.#carry = this.base[layer] + this.#carry - used;
  }
}

/** Every optional layer, filled. */
type LayerFills = Record<SectionLayer, SectionFill> & {
  readonly TOOLS: ToolsFill;
  readonly RECENT_TURNS: TurnsFill;
};

/** Fills the optional layers in fill order, each from its budget and what the earlier ones left. */
function fillLayers(input: AssemblyInput, candidates: SectionCandidates, plan: LayerBudgets): LayerFills {
  const tk = input.tokenizer;
  const tools = fillTools(input, plan.budgetFor('TOOLS'), tk);
  plan.settle('TOOLS', tools.used);
  const listFill = (
    layer: SectionLayer,
    source: { readonly status: 'OK' | 'DISABLED' | 'UNAVAILABLE'; readonly detail?: string },
    listed: readonly ListCandidate[],
    prefix: boolean,
  ): SectionFill => {
    const ctx = plan.budgetFor(layer);
    // Disabled or unreachable sources were not read: no trace items (see TraceReason).
    if (source.status === 'UNAVAILABLE' && !ctx.disabled) {
      plan.settle(layer, 0);
      return { ...EMPTY_SECTION, status: 'UNAVAILABLE', detail: clip(source.detail ?? '') };
    }
    const items = source.status === 'OK' ? listed : [];
    const fill = fillList(layer, items, ctx, tk, prefix);
    plan.settle(layer, fill.used);
    return { ...fill, status: listStatus(ctx.disabled, items.length), detail: '' };
  };
  const stateSource = { status: 'OK' } as const;
  const KEY_POINTS = listFill('KEY_POINTS', stateSource, candidates.keyPoints, true);
  const OPEN_LOOPS = listFill('OPEN_LOOPS', stateSource, candidates.openLoops, true);
  const SESSION_SUMMARY = fillSummary(input, plan.budgetFor('SESSION_SUMMARY'), tk);
  plan.settle('SESSION_SUMMARY', SESSION_SUMMARY.used);
  const EVERGREEN_FACTS = listFill('EVERGREEN_FACTS', input.facts, candidates.facts, true);
  const RETRIEVED_KNOWLEDGE = listFill('RETRIEVED_KNOWLEDGE', input.knowledge, candidates.knowledge, false);
  const RECENT_TURNS = fillTurns(input, plan.budgetFor('RECENT_TURNS'), tk);
  return {
    TOOLS: tools,
    KEY_POINTS,
    OPEN_LOOPS,
    SESSION_SUMMARY,
    EVERGREEN_FACTS,
    RETRIEVED_KNOWLEDGE,
    RECENT_TURNS,
  };
}

/** The rendered messages and their tokens. */
interface Rendered {
  readonly messages: AssembledMessage[];
  readonly messageTokens: number[];
  /** Whether a leading system message was rendered. */
  readonly systemMessage: boolean;
  /** The system prompt's tokens as rendered (with the separator when sections follow it). */
  readonly promptUsed: number;
}

/**
 * Renders the leading system message (prompt, then sections in assembly order), the turns, the
 * tools message and the user message.
 */
function render(input: AssemblyInput, mandatory: MandatoryParts, fills: LayerFills): Rendered {
  const tk = input.tokenizer;
  const { prompt } = mandatory;
  const anySection = SECTION_LAYERS.some((l) => fills[l].parts.length > 0);
  const promptUsed =
    prompt === '' ? 0 : anySection ? mandatory.promptWithSeparatorTokens : mandatory.promptTokens;
  const messages: AssembledMessage[] = [];
  const messageTokens: number[] = [];
  const systemMessage = prompt !== '' || anySection;
  if (systemMessage) {
    const content = [anySection && prompt !== '' ? prompt + PROMPT_SEPARATOR : prompt]
      .concat(SECTION_LAYERS.flatMap((l) => fills[l].parts))
      .join('');
    messages.push({ role: 'SYSTEM', content, name: '', toolCallId: '', toolCalls: [] });
    messageTokens.push(
      tk.tokensPerMessage + promptUsed + SECTION_LAYERS.reduce((a, l) => a + fills[l].used, 0),
    );
  }
  messages.push(...fills.RECENT_TURNS.messages);
  messageTokens.push(...fills.RECENT_TURNS.messageTokens);
  if (fills.TOOLS.message !== undefined) {
    messages.push(fills.TOOLS.message);
    messageTokens.push(fills.TOOLS.used);
  }
  if (mandatory.userMessage !== undefined) {
    messages.push(mandatory.userMessage);
    messageTokens.push(mandatory.userTokens);
  }
  return { messages, messageTokens, systemMessage, promptUsed };
}

/** The usage of every layer, mandatory ones included, in layer order. */
function layerUsages(
  mandatory: MandatoryParts,
  promptUsed: number,
  fills: LayerFills,
  plan: LayerBudgets,
): LayerUsage[] {
  const mandatoryUsage = (
    layer: 'SYSTEM_PROMPT' | 'USER_MESSAGE',
    used: number,
    present: boolean,
  ): LayerUsage => ({
    layer,
    status: present ? 'OK' : 'EMPTY',
    share: 0,
    baseBudgetTokens: used,
    budgetTokens: used,
    usedTokens: used,
    itemsIncluded: present ? 1 : 0,
    itemsDropped: 0,
    detail: '',
  });
  return LAYERS.map((layer) => {
    if (layer === 'SYSTEM_PROMPT') return mandatoryUsage(layer, promptUsed, mandatory.prompt !== '');
    if (layer === 'USER_MESSAGE')
      return mandatoryUsage(layer, mandatory.userTokens, mandatory.userMessage !== undefined);
    const fill: LayerFill = fills[layer];
    const included = fill.trace.filter((t) => t.included).length;
    return {
      layer,
      status: fill.status,
      share: plan.shares[layer],
      baseBudgetTokens: plan.base[layer],
      budgetTokens: plan.budgets[layer],
      usedTokens: fill.used,
      itemsIncluded: included,
      itemsDropped: fill.trace.length - included,
      detail: fill.detail,
    };
  });
}

/** The trace of every layer, in layer order. */
function traceItems(mandatory: MandatoryParts, promptUsed: number, fills: LayerFills): TraceItem[] {
  const items: TraceItem[] = [];
  for (const layer of LAYERS) {
    if (layer === 'SYSTEM_PROMPT') {
      if (mandatory.prompt !== '')
        items.push(trace(layer, 'SYSTEM_PROMPT', 'request/systemPrompt', promptUsed, 'INCLUDED'));
    } else if (layer === 'USER_MESSAGE') {
      if (mandatory.userMessage !== undefined)
        items.push(trace(layer, 'USER_MESSAGE', 'request/userMessage', mandatory.userTokens, 'INCLUDED'));
    } else items.push(...fills[layer].trace);
  }
  return items;
}
