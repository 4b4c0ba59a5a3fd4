import type { CallOptions, Client, HandlerContext } from '@connectrpc/connect';
import { timestampFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
import type { MessageInitShape } from '@bufbuild/protobuf';
import {
  ChatRole as ChatRoleEnum,
  ContextLayer,
  LayerStatus as LayerStatusEnum,
  ToolRendering as ToolRenderingEnum,
  TraceItemKind as TraceItemKindEnum,
  TraceReason as TraceReasonEnum,
  type BuildContextRequest,
  type BuildContextResponseSchema,
} from '@engram/contracts/context';
import { MemoryType, type GovernanceService } from '@engram/contracts/governance';
import type { IngestionService, Session } from '@engram/contracts/ingestion';
import type { RetrievalService, SearchResponse } from '@engram/contracts/retrieval';
import { MEMORY_TYPE_NAMES, parseSessionName } from '@engram/resources';
import {
  dependencyFailure,
  errors,
  forwardedCallOptions,
  isEngramError,
  requirePrincipal,
  type Logger,
  type Principal,
  type ServiceCredentials,
} from '@engram/runtime';
import { SessionStateRepository, type SessionStateRecord, type Store } from '@engram/store';
import { Code, ConnectError } from '@connectrpc/connect';
import type { ContextSettings } from './config.js';
import { checkPolicy } from './policy.js';
import { assemble } from './domain/assembly.js';
import { tokenizerFor } from './domain/tokenizer.js';
import {
  LAYERS,
  type Assembly,
  type FactCandidate,
  type KnowledgeCandidate,
  type LayerBudgetOverride,
  type OptionalLayer,
  type Source,
  type ToolDescription,
} from './domain/types.js';
import { readSession, readTail, turnCandidate, type Tail } from './session-access.js';

/** What BuildContext (and Chat) is built from. */
export interface BuildDeps {
  readonly logger: Logger;
  readonly store: Store;
  readonly ingestion: Client<typeof IngestionService>;
  readonly governance: Client<typeof GovernanceService>;
  readonly retrieval: Client<typeof RetrievalService>;
  readonly credentials: ServiceCredentials;
  readonly settings: ContextSettings;
  /** The configured chat model's name, the tokenizer default; undefined when none. */
  readonly defaultModel?: string;
}

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
const MAX_FACTS = 200;
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const SESSION_NAME = /^sessions\/[0-9A-HJKMNP-TV-Z]{26}$/;

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

/** What an assembly is made of, for Chat to reuse. */
export interface BuiltContext {
  readonly request: CheckedRequest;
  readonly session: Session;
  readonly state: SessionStateRecord;
  readonly tail: Tail;
  readonly assembly: Assembly;
  readonly response: MessageInitShape<typeof BuildContextResponseSchema>;
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
  if (request.userMessage === '') throw errors.fieldRequired('user_message');
  if (request.userMessage.trim() === '')
    throw errors.fieldInvalid('user_message', 'must not be only whitespace');
  if (chars(request.userMessage) > LIMITS.messageChars) {
    throw errors.fieldInvalid('user_message', `at most ${LIMITS.messageChars} characters`);
  }
  if (chars(request.model) > LIMITS.modelChars)
    throw errors.fieldInvalid('model', `at most ${LIMITS.modelChars} characters`);
  const budget = request.budget;
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
  if (chars(request.systemPrompt) > LIMITS.messageChars) {
    throw errors.fieldInvalid('system_prompt', `at most ${LIMITS.messageChars} characters`);
  }
  if (request.tools.length > LIMITS.tools)
    throw errors.fieldInvalid('tools', `at most ${LIMITS.tools} tools`);
  const toolNames = new Set<string>();
  const tools = request.tools.map((tool, i): ToolDescription => {
    const at = `tools[${i}]`;
    if (tool.name === '') throw errors.fieldRequired(`${at}.name`);
    if (!TOOL_NAME.test(tool.name))
      throw errors.fieldInvalid(`${at}.name`, '1-64 characters of [A-Za-z0-9_-]');
    if (toolNames.has(tool.name)) throw errors.fieldInvalid(`${at}.name`, `${tool.name} appears twice`);
    toolNames.add(tool.name);
    if (chars(tool.description) > LIMITS.toolDescriptionChars) {
      throw errors.fieldInvalid(`${at}.description`, `at most ${LIMITS.toolDescriptionChars} characters`);
    }
    if (tool.parametersJsonSchema !== '') {
      if (chars(tool.parametersJsonSchema) > LIMITS.toolSchemaChars) {
        throw errors.fieldInvalid(
          `${at}.parameters_json_schema`,
          `at most ${LIMITS.toolSchemaChars} characters`,
        );
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(tool.parametersJsonSchema);
      } catch {
        throw errors.fieldInvalid(`${at}.parameters_json_schema`, 'not valid JSON');
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
        throw errors.fieldInvalid(`${at}.parameters_json_schema`, 'must be a JSON object');
      }
    }
    return {
      name: tool.name,
      description: tool.description,
      parametersJsonSchema: tool.parametersJsonSchema,
    };
  });
  if (
    ![ToolRenderingEnum.UNSPECIFIED, ToolRenderingEnum.PARAMETER, ToolRenderingEnum.SYSTEM_MESSAGE].includes(
      request.toolRendering,
    )
  ) {
    throw errors.fieldInvalid('tool_rendering', 'unknown value');
  }
  const knowledge = request.knowledge;
  if (knowledge !== undefined) {
    if (chars(knowledge.query) > LIMITS.queryChars) {
      throw errors.fieldInvalid('knowledge.query', `at most ${LIMITS.queryChars} characters`);
    }
    if (knowledge.options?.minScore !== undefined) {
      throw errors.fieldInvalid('knowledge.options.min_score', 'must be unset; use knowledge.min_score');
    }
    if (knowledge.topK !== undefined && (knowledge.topK < 1 || knowledge.topK > LIMITS.topK)) {
      throw errors.fieldInvalid('knowledge.top_k', `expected 1 to ${LIMITS.topK}`);
    }
    if (
      knowledge.minScore !== undefined &&
      !(Number.isFinite(knowledge.minScore) && knowledge.minScore >= 0)
    ) {
      throw errors.fieldInvalid('knowledge.min_score', 'expected a finite number ≥ 0');
    }
  }
  const evergreen = request.evergreenMinConfidence;
  if (evergreen !== undefined && !(Number.isFinite(evergreen) && evergreen >= 0 && evergreen <= 1)) {
    throw errors.fieldInvalid('evergreen_min_confidence', 'expected 0.0 to 1.0');
  }
  const policy = checkPolicy(request.compaction, 'compaction', settings);
  return {
    sessionId,
    userMessage: request.userMessage,
    model: request.model,
    totalTokens: budget.totalTokens,
    reservedOutputTokens: reserved,
    layers,
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

/** The search text: the query, or the user message (its two ends when it is too long). */
function searchText(request: AssemblyRequest): string {
  const query = request.knowledge?.query ?? '';
  if (query.trim() !== '') return query;
  const text = Array.from(request.userMessage);
  if (text.length <= LIMITS.queryChars) return request.userMessage;
  return `${text.slice(0, 2_000).join('')}\n${text.slice(-2_000).join('')}`;
}

const isDisabled = (checked: CheckedRequest, layer: OptionalLayer) =>
  checked.layers.some((l) => l.layer === layer && l.maxTokens === 0);

/** Whether a failed read of a layer's source may leave the layer empty (not strict, not the caller's fault). */
function unavailable(error: Error, strict: boolean): boolean {
  if (strict) return false;
  const code = isEngramError(error) ? error.code : ConnectError.from(error).code;
  return code === Code.Unavailable;
}

/**
 * Assembles the context of one turn (BuildContext; Chat's first step). Reads the session, its
 * state and tail, the evergreen facts and the knowledge concurrently, with the caller's
 * credential, then fills the layers.
 */
export async function buildContext(
  deps: BuildDeps,
  request: AssemblyRequest,
  ctx: HandlerContext,
): Promise<BuiltContext> {
  const principal = requirePrincipal(ctx.values);
  const checked = checkAssemblyRequest(request, deps.settings);
  const call = forwardedCallOptions(ctx);
  const states = new SessionStateRepository(deps.store);
  const [session, state] = await Promise.all([
    readSession(deps.ingestion, checked.sessionId, call),
    states.get(principal.tenantId, checked.sessionId),
  ]);
  repairMark(deps, principal, session, state);

  const [tail, facts, knowledge] = await Promise.all([
    readTail(deps.ingestion, session, state.compactedThroughSequence, call),
    isDisabled(checked, 'EVERGREEN_FACTS')
      ? Promise.resolve<Source<FactCandidate>>({ status: 'DISABLED' })
      : readFacts(deps.governance, request, checked, call),
    isDisabled(checked, 'RETRIEVED_KNOWLEDGE')
      ? Promise.resolve<Awaited<ReturnType<typeof search>>>({ source: { status: 'DISABLED' } })
      : search(deps.retrieval, request, checked, call),
  ]);

  const tokenizer = tokenizerFor(checked.model !== '' ? checked.model : (deps.defaultModel ?? ''));
  const assembly = assemble({
    sessionName: session.name,
    systemPrompt: checked.systemPrompt,
    userMessage: checked.userMessage,
    tools: checked.tools,
    toolRendering: checked.toolRendering,
    keyPoints: state.keyPoints.map((k) => ({ id: k.id, text: k.text })),
    openLoops: state.openLoops.filter((l) => l.resolved !== true).map((l) => ({ id: l.id, text: l.text })),
    summary: state.summary,
    summaryMemory: state.summaryMemoryId === undefined ? '' : `memories/${state.summaryMemoryId}`,
    facts,
    knowledge: knowledge.source,
    turns: tail.messages.map(turnCandidate),
    uncompactedMessageCount: tail.uncompactedMessageCount,
    budget: {
      totalTokens: checked.totalTokens,
      reservedOutputTokens: checked.reservedOutputTokens,
      layers: checked.layers,
    },
    defaultShares: deps.settings.layerShares,
    knowledgeTopK: checked.topK,
    knowledgeMinScore: checked.minScore,
    evergreenMinConfidence: checked.evergreenMinConfidence,
    tokenizer,
  });

  const response: MessageInitShape<typeof BuildContextResponseSchema> = {
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
    trace: checked.includeTrace
      ? assembly.trace.map((t) => ({
          id: t.id,
          kind: TraceItemKindEnum[t.kind],
          layer: CONTEXT_LAYERS[t.layer],
          tokens: t.tokens,
          ...(t.score !== undefined ? { score: t.score } : {}),
          ...(t.confidence !== undefined ? { confidence: t.confidence } : {}),
          included: t.included,
          reason: TraceReasonEnum[t.reason],
          detail: t.detail,
        }))
      : [],
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
    ...(knowledge.stats !== undefined ? { knowledgeSearchStats: knowledge.stats } : {}),
  };
  return { request: checked, session, state, tail, assembly, response };
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

/**
 * Re-sends a committed compaction mark that ingestion has not acknowledged yet, in the
 * background: a failure is logged and retried on the next turn, never fails the call.
 */
export function repairMark(
  deps: Pick<BuildDeps, 'ingestion' | 'credentials' | 'store' | 'logger'>,
  principal: Principal,
  session: Session,
  state: SessionStateRecord,
): void {
  if (state.compactedThroughSequence <= state.markAcknowledgedThrough) return;
  void sendMark(deps, principal.tenantId, session.name, state).catch((error: unknown) => {
    deps.logger.warn({ session: session.name, err: String(error) }, 'compaction mark not yet acknowledged');
  });
}

/** Mirrors the state's compaction mark on ingestion's messages and records the acknowledgement. */
export async function sendMark(
  deps: Pick<BuildDeps, 'ingestion' | 'credentials' | 'store'>,
  tenantId: string,
  sessionName: string,
  state: SessionStateRecord,
): Promise<void> {
  const through = state.compactedThroughSequence;
  if (through === 0) return;
  await deps.ingestion.markMessagesCompacted(
    {
      session: sessionName,
      throughSequence: BigInt(through),
      requestId: `mark-${state.sessionId}-${through}`,
    },
    await deps.credentials.callOptions(tenantId),
  );
  await new SessionStateRepository(deps.store).acknowledgeMark(tenantId, state.sessionId, through);
}

/** The caller's evergreen facts valid now, restricted by the knowledge filter's scopes and org. */
async function readFacts(
  governance: Client<typeof GovernanceService>,
  request: AssemblyRequest,
  checked: CheckedRequest,
  call: CallOptions,
): Promise<Source<FactCandidate>> {
  const filter = request.knowledge?.filter;
  const orgIds = filter?.orgIds ?? [];
  const facts: FactCandidate[] = [];
  try {
    // One read per org asked for (ListMemories filters one org at a time), else one for all.
    for (const orgId of orgIds.length === 0 ? [''] : orgIds) {
      let pageToken = '';
      do {
        const page = await governance.listMemories(
          {
            pageSize: 500,
            pageToken,
            types: [MemoryType.FACT],
            evergreenOnly: true,
            scopes: filter?.scopes ?? [],
            orgId,
            validAt: timestampFromMs(Date.now()),
          },
          call,
        );
        for (const m of page.memories) {
          facts.push({
            name: m.name,
            text: m.text !== '' ? m.text : `${m.namespace}/${m.key}`,
            confidence: m.confidence ?? 1,
            updatedAt: m.updateTime === undefined ? 0 : timestampMs(m.updateTime),
          });
        }
        pageToken = page.nextPageToken;
      } while (pageToken !== '' && facts.length < 5_000);
    }
  } catch (error) {
    const failure = dependencyFailure('governance', error);
    if (unavailable(failure, checked.strict))
      return { status: 'UNAVAILABLE', detail: 'governance unreachable' };
    throw failure;
  }
  const unique = [...new Map(facts.map((f) => [f.name, f])).values()];
  unique.sort(
    (a, b) => b.confidence - a.confidence || b.updatedAt - a.updatedAt || (a.name < b.name ? -1 : 1),
  );
  return { status: 'OK', items: unique.slice(0, MAX_FACTS) };
}

/** One retrieval Search for the knowledge layer (degraded answers allowed). */
async function search(
  retrieval: Client<typeof RetrievalService>,
  request: AssemblyRequest,
  checked: CheckedRequest,
  call: CallOptions,
): Promise<{ source: Source<KnowledgeCandidate>; stats?: SearchResponse['stats'] }> {
  let response: SearchResponse;
  try {
    response = await retrieval.search(
      {
        query: searchText(request),
        topK: Math.min(Math.max(2 * checked.topK, 10), 100),
        ...(request.knowledge?.filter !== undefined ? { filter: request.knowledge.filter } : {}),
        ...(request.knowledge?.options !== undefined ? { options: request.knowledge.options } : {}),
        allowDegraded: true,
      },
      call,
    );
  } catch (error) {
    const failure = dependencyFailure('retrieval', error);
    if (unavailable(failure, checked.strict)) {
      return { source: { status: 'UNAVAILABLE', detail: 'retrieval unreachable' } };
    }
    throw failure;
  }
  const items = response.results.flatMap((r): KnowledgeCandidate[] => {
    switch (r.item.case) {
      case 'memory': {
        const m = r.item.value;
        // Evergreen facts have their own layer.
        if (m.evergreen) return [];
        const time = m.occurTime ?? m.createTime;
        return [
          {
            name: r.name,
            kind: 'MEMORY',
            score: r.score,
            ...(m.confidence !== undefined ? { confidence: m.confidence } : {}),
            text: m.text !== '' ? m.text : `${m.namespace}/${m.key}`,
            ...(time !== undefined ? { time: timestampMs(time) } : {}),
            evidenceMessages: m.evidence?.messages ?? [],
            memoryType: MEMORY_TYPE_NAMES[m.type] ?? 'UNSPECIFIED',
          },
        ];
      }
      case 'chunk': {
        const c = r.item.value;
        return [
          {
            name: r.name,
            kind: 'CHUNK',
            score: r.score,
            text: c.text,
            ...(c.createTime !== undefined ? { time: timestampMs(c.createTime) } : {}),
            ...(r.document !== undefined && r.document.displayName !== ''
              ? { title: r.document.displayName }
              : {}),
          },
        ];
      }
      case 'round': {
        const round = r.item.value;
        return [
          {
            name: r.name,
            kind: 'ROUND',
            score: r.score,
            text: round.text,
            ...(round.occurTime !== undefined ? { time: timestampMs(round.occurTime) } : {}),
            ...(SESSION_NAME.test(round.session)
              ? { sessionId: round.session.slice('sessions/'.length) }
              : {}),
          },
        ];
      }
      default:
        return [];
    }
  });
  return { source: { status: 'OK', items }, stats: response.stats };
}
