import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampMs, type Timestamp } from '@bufbuild/protobuf/wkt';
import {
  ChatRole as ChatRoleEnum,
  ContextLayer,
  LayerStatus as LayerStatusEnum,
  ToolRendering as ToolRenderingEnum,
  TraceItemKind as TraceItemKindEnum,
  TraceReason as TraceReasonEnum,
  type BuildContextRequest,
  type BuildContextResponseSchema,
  type TokenBudget,
} from '@engram/contracts/context';
import type { Memory } from '@engram/contracts/governance';
import type { Session } from '@engram/contracts/ingestion';
import type { SearchResponse, SearchResult } from '@engram/contracts/retrieval';
import { MEMORY_TYPE_NAMES, ULID_PATTERN, parseSessionName } from '@engram/resources';
import { errors } from '@engram/runtime';
import type { SessionStateRecord } from '@engram/store';
import type { ContextSettings } from './config.js';
import {
  LAYERS,
  type Assembly,
  type FactCandidate,
  type KnowledgeCandidate,
  type LayerBudgetOverride,
  type OptionalLayer,
  type Tokenizer,
  type ToolDescription,
} from './domain/types.js';
import { checkPolicy } from './policy.js';
import type { TailStats } from './session-access.js';

/** Request limits of context_service.proto. */
export const LIMITS = {
  messageChars: 32_000,
  modelChars: 128,
  totalTokens: 2_000_000,
  tools: 128,
  toolDescriptionChars: 4_000,
  toolSchemaChars: 16_000,
  queryChars: 4_000,
  topK: 50,
} as const;

/**
 * The knowledge layer's defaults, chosen on the LoCoMo tuning split at a 2,000-token budget
 * (docs/benchmarks.md "Evidence in the context"): evidence in the context .765 with top 5 and
 * min_score 0.30 (the old values, set for the seed's decayed scores), .817 with top 8, .831 with top
 * 8 and 0.20, .848 with top 10 and 0.20 for 130 more tokens.
 */
const DEFAULT_TOP_K = 8;
const DEFAULT_MIN_SCORE = 0.2;
const DEFAULT_EVERGREEN_MIN_CONFIDENCE = 0.7;
/** A tool's name, as chat-completions APIs accept it (context_service.proto `ToolDefinition`). */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const SESSION_NAME = new RegExp(`^sessions/${ULID_PATTERN}$`);

const chars = (s: string) => Array.from(s).length;

/** The fields BuildContext and Chat share (ChatRequest fields 1–12). */
export type AssemblyRequest = Pick<
  BuildContextRequest,
  | 'session'
  | 'userMessage'
  | 'model'
  | 'budget'
  | 'systemPrompt'
  | 'tools'
  | 'toolRendering'
  | 'knowledge'
  | 'evergreenMinConfidence'
  | 'compaction'
  | 'includeTrace'
  | 'strict'
>;

/** A validated request. */
export interface CheckedRequest {
  readonly sessionId: string;
  readonly userMessage: string;
  readonly model: string;
  readonly totalTokens: number;
  readonly reservedOutputTokens: number;
  readonly layers: readonly LayerBudgetOverride[];
  readonly systemPrompt: string;
  readonly tools: readonly ToolDescription[];
  readonly toolRendering: 'PARAMETER' | 'SYSTEM_MESSAGE';
  readonly topK: number;
  readonly minScore: number;
  readonly evergreenMinConfidence: number;
  readonly thresholdTokens: number;
  readonly includeTrace: boolean;
  readonly strict: boolean;
}

const OPTIONAL_LAYERS: Readonly<Partial<Record<ContextLayer, OptionalLayer>>> = {
  [ContextLayer.TOOLS]: 'TOOLS',
  [ContextLayer.KEY_POINTS]: 'KEY_POINTS',
  [ContextLayer.OPEN_LOOPS]: 'OPEN_LOOPS',
  [ContextLayer.SESSION_SUMMARY]: 'SESSION_SUMMARY',
  [ContextLayer.EVERGREEN_FACTS]: 'EVERGREEN_FACTS',
  [ContextLayer.RETRIEVED_KNOWLEDGE]: 'RETRIEVED_KNOWLEDGE',
  [ContextLayer.RECENT_TURNS]: 'RECENT_TURNS',
};

/** Validates everything that can be checked without reading data. */
export function checkAssemblyRequest(request: AssemblyRequest, settings: ContextSettings): CheckedRequest {
  const sessionId = parseSessionName(request.session, 'session');
  checkUserMessage(request.userMessage);
  if (chars(request.model) > LIMITS.modelChars)
    throw errors.fieldInvalid('model', `at most ${LIMITS.modelChars} characters`);
  const budget = checkBudget(request.budget);
  if (chars(request.systemPrompt) > LIMITS.messageChars) {
    throw errors.fieldInvalid('system_prompt', `at most ${LIMITS.messageChars} characters`);
  }
  const tools = checkTools(request.tools);
  if (
    ![ToolRenderingEnum.UNSPECIFIED, ToolRenderingEnum.PARAMETER, ToolRenderingEnum.SYSTEM_MESSAGE].includes(
      request.toolRendering,
    )
  ) {
    throw errors.fieldInvalid('tool_rendering', 'unknown value');
  }
  const knowledge = request.knowledge;
  if (knowledge !== undefined) checkKnowledge(knowledge);
  const evergreen = request.evergreenMinConfidence;
  if (evergreen !== undefined && !(Number.isFinite(evergreen) && evergreen >= 0 && evergreen <= 1)) {
    throw errors.fieldInvalid('evergreen_min_confidence', 'expected 0.0 to 1.0');
  }
  const policy = checkPolicy(request.compaction, 'compaction', settings);
  return {
    sessionId,
    userMessage: request.userMessage,
    model: request.model,
    ...budget,
    systemPrompt: request.systemPrompt,
    tools,
    toolRendering:
      request.toolRendering === ToolRenderingEnum.SYSTEM_MESSAGE ? 'SYSTEM_MESSAGE' : 'PARAMETER',
    topK: knowledge?.topK ?? DEFAULT_TOP_K,
    minScore: knowledge?.minScore ?? DEFAULT_MIN_SCORE,
    evergreenMinConfidence: evergreen ?? DEFAULT_EVERGREEN_MIN_CONFIDENCE,
    thresholdTokens: policy.thresholdTokens,
    includeTrace: request.includeTrace ?? true,
    strict: request.strict,
  };
}

function checkUserMessage(userMessage: string): void {
  if (userMessage === '') throw errors.fieldRequired('user_message');
  if (userMessage.trim() === '') throw errors.fieldInvalid('user_message', 'must not be only whitespace');
  if (chars(userMessage) > LIMITS.messageChars) {
    throw errors.fieldInvalid('user_message', `at most ${LIMITS.messageChars} characters`);
  }
}

/** The token budget: its total, the reserve for the answer and the per-layer overrides. */
function checkBudget(
  budget: TokenBudget | undefined,
): Pick<CheckedRequest, 'totalTokens' | 'reservedOutputTokens' | 'layers'> {
  if (budget === undefined || budget.totalTokens === 0) throw errors.fieldRequired('budget.total_tokens');
  if (budget.totalTokens < 1 || budget.totalTokens > LIMITS.totalTokens) {
    throw errors.fieldInvalid('budget.total_tokens', `expected 1 to ${LIMITS.totalTokens}`);
  }
  const reserved = budget.reservedOutputTokens ?? 0;
  if (reserved < 0 || reserved >= budget.totalTokens) {
    throw errors.fieldInvalid('budget.reserved_output_tokens', 'expected 0 to total_tokens − 1');
  }
  const seen = new Set<OptionalLayer>();
  let shareSum = 0;
  const layers = budget.layers.map((entry, i): LayerBudgetOverride => {
    const at = `budget.layers[${i}]`;
    if (entry.layer === ContextLayer.UNSPECIFIED) throw errors.fieldRequired(`${at}.layer`);
    const layer = OPTIONAL_LAYERS[entry.layer];
    if (layer === undefined) {
      throw errors.fieldInvalid(
        `${at}.layer`,
        'only the optional layers have budgets (SYSTEM_PROMPT and USER_MESSAGE are mandatory)',
      );
    }
    if (seen.has(layer)) throw errors.fieldInvalid(`${at}.layer`, `${layer} appears twice`);
    seen.add(layer);
    if (
      entry.share !== undefined &&
      !(Number.isFinite(entry.share) && entry.share >= 0 && entry.share <= 1)
    ) {
      throw errors.fieldInvalid(`${at}.share`, 'expected 0.0 to 1.0');
    }
    if (entry.maxTokens !== undefined && (entry.maxTokens < 0 || entry.maxTokens > LIMITS.totalTokens)) {
      throw errors.fieldInvalid(`${at}.max_tokens`, `expected 0 to ${LIMITS.totalTokens}`);
    }
    shareSum += entry.share ?? 0;
    return {
      layer,
      ...(entry.share !== undefined ? { share: entry.share } : {}),
      ...(entry.maxTokens !== undefined ? { maxTokens: entry.maxTokens } : {}),
    };
  });
  if (shareSum > 1 + 1e-9)
    throw errors.fieldInvalid('budget.layers', `the shares sum to ${shareSum.toFixed(3)}, more than 1`);
  return { totalTokens: budget.totalTokens, reservedOutputTokens: reserved, layers };
}

/** The tools the caller offers the model: unique valid names, bounded texts, JSON-object schemas. */
function checkTools(tools: AssemblyRequest['tools']): ToolDescription[] {
  if (tools.length > LIMITS.tools) throw errors.fieldInvalid('tools', `at most ${LIMITS.tools} tools`);
  const toolNames = new Set<string>();
  return tools.map((tool, i): ToolDescription => {
    const at = `tools[${i}]`;
    if (tool.name === '') throw errors.fieldRequired(`${at}.name`);
    if (!TOOL_NAME.test(tool.name))
      throw errors.fieldInvalid(`${at}.name`, '1-64 characters of [A-Za-z0-9_-]');
    if (toolNames.has(tool.name)) throw errors.fieldInvalid(`${at}.name`, `${tool.name} appears twice`);
    toolNames.add(tool.name);
    if (chars(tool.description) > LIMITS.toolDescriptionChars) {
      throw errors.fieldInvalid(`${at}.description`, `at most ${LIMITS.toolDescriptionChars} characters`);
    }
    if (tool.parametersJsonSchema !== '') checkParametersSchema(tool.parametersJsonSchema, at);
    return {
      name: tool.name,
      description: tool.description,
      parametersJsonSchema: tool.parametersJsonSchema,
    };
  });
}

function checkParametersSchema(schema: string, at: string): void {
  if (chars(schema) > LIMITS.toolSchemaChars) {
    throw errors.fieldInvalid(`${at}.parameters_json_schema`, `at most ${LIMITS.toolSchemaChars} characters`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(schema);
  } catch {
    throw errors.fieldInvalid(`${at}.parameters_json_schema`, 'not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw errors.fieldInvalid(`${at}.parameters_json_schema`, 'must be a JSON object');
  }
}

function checkKnowledge(knowledge: NonNullable<AssemblyRequest['knowledge']>): void {
  if (chars(knowledge.query) > LIMITS.queryChars) {
    throw errors.fieldInvalid('knowledge.query', `at most ${LIMITS.queryChars} characters`);
  }
  if (knowledge.options?.minScore !== undefined) {
    throw errors.fieldInvalid('knowledge.options.min_score', 'must be unset; use knowledge.min_score');
  }
  if (knowledge.topK !== undefined && (knowledge.topK < 1 || knowledge.topK > LIMITS.topK)) {
    throw errors.fieldInvalid('knowledge.top_k', `expected 1 to ${LIMITS.topK}`);
  }
  if (knowledge.minScore !== undefined && !(Number.isFinite(knowledge.minScore) && knowledge.minScore >= 0)) {
    throw errors.fieldInvalid('knowledge.min_score', 'expected a finite number ≥ 0');
  }
}

/** The search text: the query, or the user message (its two ends when it is too long). */
export function searchText(request: AssemblyRequest): string {
  const query = request.knowledge?.query ?? '';
  if (query.trim() !== '') return query;
  const text = Array.from(request.userMessage);
  if (text.length <= LIMITS.queryChars) return request.userMessage;
  return `${text.slice(0, 2_000).join('')}\n${text.slice(-2_000).join('')}`;
}

/** An evergreen FACT memory as an EVERGREEN_FACTS candidate. */
export function factCandidate(m: Memory): FactCandidate {
  return {
    name: m.name,
    text: memoryText(m),
    confidence: m.confidence ?? 1,
    updatedAt: m.updateTime === undefined ? 0 : timestampMs(m.updateTime),
  };
}

const memoryText = (m: Memory) => (m.text !== '' ? m.text : `${m.namespace}/${m.key}`);
const timeOf = (t: Timestamp | undefined) => (t !== undefined ? { time: timestampMs(t) } : {});

/** A retrieval result as RETRIEVED_KNOWLEDGE candidates (none for evergreen facts: they have their own layer). */
export function knowledgeCandidates(r: SearchResult): KnowledgeCandidate[] {
  const found = { name: r.name, score: r.score };
  switch (r.item.case) {
    case 'memory': {
      const m = r.item.value;
      if (m.evergreen) return [];
      return [
        {
          ...found,
          kind: 'MEMORY',
          ...(m.confidence !== undefined ? { confidence: m.confidence } : {}),
          text: memoryText(m),
          ...timeOf(m.occurTime ?? m.createTime),
          evidenceMessages: m.evidence?.messages ?? [],
          memoryType: MEMORY_TYPE_NAMES[m.type] ?? 'UNSPECIFIED',
        },
      ];
    }
    case 'chunk': {
      const title = r.document?.displayName ?? '';
      return [
        {
          ...found,
          kind: 'CHUNK',
          text: r.item.value.text,
          ...timeOf(r.item.value.createTime),
          ...(title !== '' ? { title } : {}),
        },
      ];
    }
    case 'round': {
      const round = r.item.value;
      const inSession = SESSION_NAME.test(round.session);
      return [
        {
          ...found,
          kind: 'ROUND',
          text: round.text,
          ...timeOf(round.occurTime),
          ...(inSession ? { sessionId: round.session.slice('sessions/'.length) } : {}),
        },
      ];
    }
    default:
      return [];
  }
}

const CHAT_ROLES = {
  SYSTEM: ChatRoleEnum.SYSTEM,
  USER: ChatRoleEnum.USER,
  ASSISTANT: ChatRoleEnum.ASSISTANT,
  TOOL: ChatRoleEnum.TOOL,
} as const;

const CONTEXT_LAYERS = Object.fromEntries(LAYERS.map((l) => [l, ContextLayer[l]])) as Record<
  (typeof LAYERS)[number],
  ContextLayer
>;

const LAYER_STATUSES = {
  OK: LayerStatusEnum.OK,
  EMPTY: LayerStatusEnum.EMPTY,
  DISABLED: LayerStatusEnum.DISABLED,
  UNAVAILABLE: LayerStatusEnum.UNAVAILABLE,
} as const;

/** What a BuildContext answer is made from. */
export interface AssembledContext {
  readonly checked: CheckedRequest;
  readonly session: Session;
  readonly state: SessionStateRecord;
  readonly tail: TailStats;
  readonly assembly: Assembly;
  readonly tokenizer: Tokenizer;
  readonly knowledgeStats: SearchResponse['stats'];
}

/** An assembly as the API's `BuildContextResponse`. */
export function buildContextResponse(
  built: AssembledContext,
): MessageInitShape<typeof BuildContextResponseSchema> {
  const { checked, session, state, tail, assembly, tokenizer } = built;
  return {
    messages: assembly.messages.map((m) => ({
      role: CHAT_ROLES[m.role],
      content: m.content,
      name: m.name,
      toolCallId: m.toolCallId,
      toolCalls: m.toolCalls.map((c) => ({ ...c })),
    })),
    messageTokens: [...assembly.messageTokens],
    tools: assembly.tools.map((t) => ({ ...t })),
    totalTokens: assembly.totalTokens,
    budgetTokens: assembly.budgetTokens,
    overheadTokens: assembly.overheadTokens,
    layers: assembly.layers.map((l) => ({
      layer: CONTEXT_LAYERS[l.layer],
      status: LAYER_STATUSES[l.status],
      share: l.share,
      baseBudgetTokens: l.baseBudgetTokens,
      budgetTokens: l.budgetTokens,
      usedTokens: l.usedTokens,
      itemsIncluded: l.itemsIncluded,
      itemsDropped: l.itemsDropped,
      detail: l.detail,
    })),
    trace: checked.includeTrace ? traceMessages(assembly) : [],
    tokenizer: {
      model: tokenizer.model,
      encoding: tokenizer.encoding,
      approximate: tokenizer.approximate,
      safetyFactor: tokenizer.safetyFactor,
      tokensPerMessage: tokenizer.tokensPerMessage,
      replyPrimingTokens: tokenizer.replyPrimingTokens,
      contextWindowTokens: tokenizer.contextWindowTokens,
    },
    compactionRecommended: tail.uncompactedTokens > checked.thresholdTokens,
    uncompactedTokens: BigInt(tail.uncompactedTokens),
    uncompactedMessageCount: BigInt(tail.uncompactedMessageCount),
    stateVersion: BigInt(state.version),
    lastSequence: session.lastSequence,
    ...(built.knowledgeStats !== undefined ? { knowledgeSearchStats: built.knowledgeStats } : {}),
  };
}

function traceMessages(assembly: Assembly) {
  return assembly.trace.map((t) => ({
    id: t.id,
    kind: TraceItemKindEnum[t.kind],
    layer: CONTEXT_LAYERS[t.layer],
    tokens: t.tokens,
    ...(t.score !== undefined ? { score: t.score } : {}),
    ...(t.confidence !== undefined ? { confidence: t.confidence } : {}),
    included: t.included,
    reason: TraceReasonEnum[t.reason],
    detail: t.detail,
    injectionSuspected: (t.injectionPatterns?.length ?? 0) > 0,
    injectionPatterns: [...(t.injectionPatterns ?? [])],
  }));
}
