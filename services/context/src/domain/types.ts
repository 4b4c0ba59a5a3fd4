/**
 * The vocabulary of context assembly and compaction, independent of gRPC: the RPC layer maps the
 * `engram.context.v1` messages onto these types and back. Names follow the proto enums without
 * their prefixes (`CONTEXT_LAYER_KEY_POINTS` → `KEY_POINTS`). Times are epoch milliseconds.
 */

/** The layers, in assembly order (the order their content appears in the messages). */
export const LAYERS = [
  'SYSTEM_PROMPT',
  'KEY_POINTS',
  'OPEN_LOOPS',
  'SESSION_SUMMARY',
  'EVERGREEN_FACTS',
  'RETRIEVED_KNOWLEDGE',
  'RECENT_TURNS',
  'TOOLS',
  'USER_MESSAGE',
] as const;
export type Layer = (typeof LAYERS)[number];

/** The seven layers that share the pool, in fill order (see `TokenBudget` in the proto). */
export const FILL_ORDER = [
  'TOOLS',
  'KEY_POINTS',
  'OPEN_LOOPS',
  'SESSION_SUMMARY',
  'EVERGREEN_FACTS',
  'RETRIEVED_KNOWLEDGE',
  'RECENT_TURNS',
] as const satisfies readonly Layer[];
export type OptionalLayer = (typeof FILL_ORDER)[number];

export type TraceItemKind =
  | 'SYSTEM_PROMPT'
  | 'KEY_POINT'
  | 'OPEN_LOOP'
  | 'SUMMARY'
  | 'MEMORY'
  | 'CHUNK'
  | 'ROUND'
  | 'TURN'
  | 'TOOL'
  | 'USER_MESSAGE';

export type TraceReason =
  | 'INCLUDED'
  | 'TRUNCATED'
  | 'DROPPED_LAYER_BUDGET'
  | 'DROPPED_TOTAL_BUDGET'
  | 'DROPPED_BELOW_THRESHOLD'
  | 'DROPPED_LOW_CONFIDENCE'
  | 'DROPPED_DUPLICATE'
  | 'DROPPED_TOP_K'
  | 'DROPPED_LAYER_DISABLED';

export type LayerStatus = 'OK' | 'EMPTY' | 'DISABLED' | 'UNAVAILABLE';

export type ChatRole = 'SYSTEM' | 'USER' | 'ASSISTANT' | 'TOOL';

export type ToolRendering = 'PARAMETER' | 'SYSTEM_MESSAGE';

/** A tool call made by the model (common.v1.ToolCall). */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  /** JSON text; may be empty. */
  readonly argumentsJson: string;
}

/** A client-supplied tool (context.v1.ToolDescription). */
export interface ToolDescription {
  readonly name: string;
  readonly description: string;
  /** JSON text of an object schema; empty when the tool takes no arguments. */
  readonly parametersJsonSchema: string;
}

/**
 * Counts tokens for one target model (context.v1.TokenizerInfo plus the counting functions). All
 * counts include the safety factor when the encoding is approximate.
 */
export interface Tokenizer {
  readonly model: string;
  readonly encoding: 'o200k_base' | 'cl100k_base';
  readonly approximate: boolean;
  readonly safetyFactor: number;
  readonly tokensPerMessage: number;
  readonly replyPrimingTokens: number;
  readonly contextWindowTokens: number;
  /** Tokens of a text (a rendered section), safety factor applied and rounded up. */
  count(text: string): number;
  /**
   * Tokens of one chat message as sent: tokensPerMessage + content + name (+1 when named) + its
   * tool calls (names and arguments).
   */
  countMessage(message: AssembledMessage): number;
  /** Tokens of a tool definition passed as the `tools` parameter (OpenAI cookbook formula). */
  countToolParameter(tool: ToolDescription): number;
  /**
   * Tokens the `tools` parameter adds once when it holds at least one tool, besides the
   * per-tool counts (the cookbook's `func_end`). Counted in the TOOLS layer in PARAMETER mode.
   * Unset means 0.
   */
  readonly toolListOverheadTokens?: number;
}

/** A stored message of the session (ingestion.v1.Message), a RECENT_TURNS candidate. */
export interface TurnCandidate {
  /** `sessions/{session}/messages/{message}`. */
  readonly name: string;
  readonly sequence: number;
  readonly role: ChatRole;
  readonly content: string;
  /** `participant_name`; '' when none. */
  readonly participantName: string;
  /** For TOOL messages, the call answered; '' otherwise. */
  readonly toolCallId: string;
  /** For ASSISTANT messages, the calls made. */
  readonly toolCalls: readonly ToolCall[];
}

/** A search result (retrieval.v1.SearchResult), a RETRIEVED_KNOWLEDGE candidate. */
export interface KnowledgeCandidate {
  /** The result's resource name (`memories/…`, `documents/…/chunks/…`, `sessions/…/messages/…`). */
  readonly name: string;
  readonly kind: 'MEMORY' | 'CHUNK' | 'ROUND';
  /** Retrieval's final score. */
  readonly score: number;
  /** Memories only. */
  readonly confidence?: number;
  /** The text to render (memory text, chunk text, round text). */
  readonly text: string;
  /** When it happened (occur time, else creation time), for the `[n] (kind, date)` tag. */
  readonly time?: number;
  /** For a ROUND: its session's id; for a memory: the session its evidence comes from, if one. */
  readonly sessionId?: string;
  /** For a memory: its `evidence.messages` (message resource names). */
  readonly evidenceMessages?: readonly string[];
  /** For a memory: its type (`SUMMARY` ones may duplicate the session summary). */
  readonly memoryType?: string;
  /** For a CHUNK: the document's title, when known. */
  readonly title?: string;
}

/** An evergreen FACT memory, an EVERGREEN_FACTS candidate. */
export interface FactCandidate {
  /** `memories/{memory}`. */
  readonly name: string;
  readonly text: string;
  readonly confidence: number;
  readonly updatedAt: number;
}

/** A key point or unresolved open loop of the session state. */
export interface StateItem {
  readonly id: string;
  readonly text: string;
}

/** A source that may be missing: its candidates, or why there are none. */
export type Source<T> =
  | { readonly status: 'OK'; readonly items: readonly T[] }
  | { readonly status: 'DISABLED' }
  | { readonly status: 'UNAVAILABLE'; readonly detail: string };

/** A per-layer override (context.v1.LayerBudget). */
export interface LayerBudgetOverride {
  readonly layer: OptionalLayer;
  readonly share?: number;
  readonly maxTokens?: number;
}

/** Everything the assembly needs, already validated and fetched. */
export interface AssemblyInput {
  /** `sessions/{session}`, used to build trace ids of state items. */
  readonly sessionName: string;
  /** '' when the client gave none. */
  readonly systemPrompt: string;
  readonly userMessage: string;
  /**
   * Whether `userMessage` is rendered as the last message (default true). False for Chat's
   * REPLY_AFTER_TOOLS: the user message is already the session's newest USER turn and the
   * assembly ends with the turns (the tool results); it is then only the knowledge query, the
   * USER_MESSAGE layer is EMPTY and no stored turn is dropped as its duplicate.
   */
  readonly renderUserMessage?: boolean;
  readonly tools: readonly ToolDescription[];
  readonly toolRendering: ToolRendering;
  readonly keyPoints: readonly StateItem[];
  /** Unresolved open loops only, in state order. */
  readonly openLoops: readonly StateItem[];
  /** '' when there is none. */
  readonly summary: string;
  /** The state's `summary_memory` (`memories/…`), '' when none: a retrieved copy is a duplicate. */
  readonly summaryMemory: string;
  /** Evergreen facts, as read (any order; the assembly orders them). */
  readonly facts: Source<FactCandidate>;
  /** Search results in retrieval rank order. */
  readonly knowledge: Source<KnowledgeCandidate>;
  /** The uncompacted tail considered, oldest first (at most 200 newest). */
  readonly turns: readonly TurnCandidate[];
  /** Total uncompacted messages, for the RECENT_TURNS detail when more exist than were read. */
  readonly uncompactedMessageCount: number;
  readonly budget: {
    readonly totalTokens: number;
    readonly reservedOutputTokens: number;
    readonly layers: readonly LayerBudgetOverride[];
  };
  /** Default shares of the optional layers (sum 1). */
  readonly defaultShares: Readonly<Record<OptionalLayer, number>>;
  readonly knowledgeTopK: number;
  readonly knowledgeMinScore: number;
  readonly evergreenMinConfidence: number;
  readonly tokenizer: Tokenizer;
}

/** One returned chat message (context.v1.ChatMessage). */
export interface AssembledMessage {
  readonly role: ChatRole;
  readonly content: string;
  /** '' when none. */
  readonly name: string;
  /** '' unless role is TOOL. */
  readonly toolCallId: string;
  readonly toolCalls: readonly ToolCall[];
}

/** context.v1.LayerUsage. */
export interface LayerUsage {
  readonly layer: Layer;
  readonly status: LayerStatus;
  readonly share: number;
  readonly baseBudgetTokens: number;
  readonly budgetTokens: number;
  readonly usedTokens: number;
  readonly itemsIncluded: number;
  readonly itemsDropped: number;
  readonly detail: string;
}

/** context.v1.TraceItem. */
export interface TraceItem {
  readonly id: string;
  readonly kind: TraceItemKind;
  readonly layer: Layer;
  readonly tokens: number;
  readonly score?: number;
  readonly confidence?: number;
  readonly included: boolean;
  readonly reason: TraceReason;
  readonly detail: string;
  /**
   * The prompt-injection patterns the candidate's text matched (`@engram/redaction`
   * `injectionPatternsIn`), table order; absent when none matched or the layer is not checked.
   */
  readonly injectionPatterns?: readonly string[];
}

/** The result of an assembly (context.v1.BuildContextResponse minus the session fields). */
export interface Assembly {
  readonly messages: readonly AssembledMessage[];
  /** Parallel to `messages`, per-message overhead included. */
  readonly messageTokens: readonly number[];
  /** Included tools in PARAMETER mode, request order; empty otherwise. */
  readonly tools: readonly ToolDescription[];
  readonly totalTokens: number;
  readonly budgetTokens: number;
  readonly overheadTokens: number;
  /** All nine layers, in assembly order. */
  readonly layers: readonly LayerUsage[];
  /** Grouped by layer in assembly order; within a layer, in consideration order. */
  readonly trace: readonly TraceItem[];
}

/** A stored message as compaction sees it. */
export interface CompactionMessage {
  /** The message id (ULID), without the session prefix. */
  readonly id: string;
  readonly sequence: number;
  readonly role: ChatRole;
  readonly content: string;
  readonly participantName: string;
  /** Occur time, else the append time. */
  readonly time: number;
}

/** What a compaction starts from: the state before it. */
export interface CompactionBase {
  readonly summary: string;
  readonly keyPoints: readonly StateItem[];
  /** Unresolved open loops (candidates for resolution). */
  readonly openLoops: readonly StateItem[];
}

/** What a compaction produces; the caller merges it into the state. */
export interface CompactionResult {
  /** The new rolling summary (previous summary updated with the compacted messages). */
  readonly summary: string;
  /** New key points, most important first. `sourceMessageIds` are message ids of the input. */
  readonly keyPoints: readonly { readonly text: string; readonly sourceMessageIds: readonly string[] }[];
  /** New open loops, most important first. */
  readonly openLoops: readonly { readonly text: string; readonly sourceMessageIds: readonly string[] }[];
  /** Ids of `CompactionBase.openLoops` that the compacted messages answer. */
  readonly resolvedOpenLoopIds: readonly string[];
  /** Model tokens spent; zero offline. */
  readonly usage: { readonly promptTokens: number; readonly completionTokens: number };
}
