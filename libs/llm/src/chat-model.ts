import type { z } from 'zod';

/** One message of a chat-completions conversation. */
export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string;
}

/** Tokens a model call consumed, as reported by the server (0 when it reports nothing). */
export interface ChatUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

/** A request for a JSON answer that must satisfy `schema`. */
export interface JsonCompletionRequest<T> {
  /** The conversation; the model answers after its last message. */
  readonly messages: readonly ChatMessage[];
  /**
   * The shape of the answer. Its JSON Schema (`z.toJSONSchema`) is sent as a strict
   * `response_format`, and the answer is parsed with it (refinements included, so a refinement can
   * reject values the JSON Schema cannot express). For `strict` on OpenAI every property must be
   * required: use `.nullable()`, not `.optional()`.
   */
  readonly schema: z.ZodType<T>;
  /** The schema's name in the request (`[a-zA-Z0-9_-]{1,64}`), e.g. `memory_extraction`. */
  readonly schemaName: string;
  /** Sampling temperature. Default: the server's. */
  readonly temperature?: number;
  /** Cancels the call; it then rejects with `signal.reason`. */
  readonly signal?: AbortSignal;
  /** Answers requested before giving up on invalid output, the first included. Default 3. */
  readonly maxAttempts?: number;
}

/** A schema-valid answer of {@link ChatModel.completeJson}. */
export interface JsonCompletion<T> {
  /** The parsed answer. */
  readonly value: T;
  /** Usage summed over every attempt (the invalid answers cost tokens too). */
  readonly usage: ChatUsage;
  /** Answers requested, 1 when the first was valid. Transport retries are not counted. */
  readonly attempts: number;
}

/**
 * The port through which Engram asks a language model for structured answers (boundary judgement,
 * memory extraction, compaction). Prompts and answers are user data: implementations never log them.
 */
export interface ChatModel {
  /** The provider's model name, e.g. `gpt-4o-mini` or `qwen2.5:7b-instruct`. */
  readonly model: string;
  /**
   * Asks for a JSON answer matching `request.schema`. An answer that is not JSON or does not match
   * is shown its error and asked again, up to `maxAttempts` answers in all.
   *
   * Rejects with an `EngramError` UNAVAILABLE `DEPENDENCY_UNAVAILABLE` (`dependency: model`) when
   * the server cannot be reached, answers with an error status or times out (after the configured
   * transport retries), and also when no attempt produced a valid answer (then with metadata
   * `failure: output_invalid`, `schema`, `attempts`; see {@link isModelOutputInvalid}). Rejects with
   * `signal.reason` when aborted.
   */
  completeJson<T>(request: JsonCompletionRequest<T>): Promise<JsonCompletion<T>>;
}

/** A tool call of an assistant message (chat-completions `tool_calls`, type `function`). */
export interface ChatToolCall {
  /** The call id chosen by the endpoint, e.g. `call_abc123`; a tool message answers it by this id. */
  readonly id: string;
  /** The called tool's name. */
  readonly name: string;
  /** The arguments as JSON text, verbatim as the model produced them (may be invalid JSON). */
  readonly argumentsJson: string;
}

/** One message of a conversation for {@link StreamingChatModel.streamChat}. */
export interface ChatTurn {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  /** The text; may be empty for an assistant message that only calls tools. */
  readonly content: string;
  /** The participant name (chat-completions `name`); ignored on tool messages. */
  readonly name?: string;
  /** For `tool` messages (required there): the id of the tool call answered. */
  readonly toolCallId?: string;
  /** For `assistant` messages: the tool calls the model made. */
  readonly toolCalls?: readonly ChatToolCall[];
}

/** A tool the model may call. */
export interface ChatTool {
  /** 1–64 characters of `[A-Za-z0-9_-]`. */
  readonly name: string;
  /** What the tool does, for the model; may be empty. */
  readonly description: string;
  /** The JSON Schema of the arguments as JSON text (a JSON object); `''`: the tool takes no arguments. */
  readonly parametersJsonSchema: string;
}

/** A request for a streamed chat reply. Unset options take the endpoint's defaults. */
export interface StreamChatRequest {
  /** The conversation; the model answers after its last message. */
  readonly messages: readonly ChatTurn[];
  /** Tools the model may call (chat-completions `tools`); none when empty. */
  readonly tools?: readonly ChatTool[];
  readonly temperature?: number;
  readonly topP?: number;
  /** Maximum tokens of the reply. */
  readonly maxOutputTokens?: number;
  /** Sequences at which the model stops; none when empty. */
  readonly stop?: readonly string[];
  /** The provider's model name to call instead of the configured {@link StreamingChatModel.model} (`''`: unset). */
  readonly model?: string;
  /** Cancels the call and closes the connection; the iteration then rejects with `signal.reason`. */
  readonly signal?: AbortSignal;
}

/** Why the model stopped (`engram.context.v1.FinishReason`). */
export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

/** A fragment of the reply text (never empty), in order. */
export interface ChatDeltaEvent {
  readonly type: 'delta';
  readonly text: string;
}

/** The last event of a stream, exactly once. */
export interface ChatDoneEvent {
  readonly type: 'done';
  /** The whole reply: the concatenation of every delta's text (may be empty). */
  readonly text: string;
  /** The tool calls the model asked for, in order; empty unless `finishReason` is `tool_calls`. */
  readonly toolCalls: ChatToolCall[];
  readonly finishReason: ChatFinishReason;
  /** As reported by the endpoint (0 when it reports nothing). */
  readonly usage: ChatUsage;
}

/** An event of {@link StreamingChatModel.streamChat}: zero or more deltas, then one done event. */
export type ChatStreamEvent = ChatDeltaEvent | ChatDoneEvent;

/**
 * The port through which Engram streams a free-text chat reply (the context service's `Chat`).
 * Separate from {@link ChatModel} so that existing implementers need not stream. Prompts and
 * answers are user data: implementations never log them.
 */
export interface StreamingChatModel {
  /** The configured model name, called unless a request names another. */
  readonly model: string;
  /**
   * Streams the reply to `request.messages`: zero or more `delta` events, then one `done` event.
   * The call starts when iteration starts; stopping the iteration early (`break`) closes the
   * connection.
   *
   * Rejects (while iterating) with `signal.reason` when aborted; with INVALID_ARGUMENT
   * `FIELD_INVALID` when the endpoint refuses the request as something the caller can change
   * (metadata `field`: `budget.total_tokens` when the conversation is too long for the model,
   * `model`, `tools` or `generation.*`); and with UNAVAILABLE `DEPENDENCY_UNAVAILABLE`
   * (`dependency: model`) for every other failure of the endpoint, including one in the middle of
   * the stream. Failures before the reply has begun may be retried by the implementation; after a
   * delta has been yielded nothing is retried.
   */
  streamChat(request: StreamChatRequest): AsyncIterable<ChatStreamEvent>;
}

/** A model the endpoint serves, as its `GET /models` lists it. */
export interface UpstreamModel {
  readonly id: string;
  /** Unix seconds; 0 when the endpoint does not say. */
  readonly created: number;
  /** '' when the endpoint does not say. */
  readonly ownedBy: string;
}

/** The models an endpoint serves (the OpenAI-compatible proxy's `GET /v1/models`). */
export interface ModelCatalog {
  /**
   * The endpoint's models (`GET /models`, every page), or `undefined` when the endpoint has no
   * such route (404, 405 or 501: not every compatible server lists its models). Rejects with
   * `signal.reason` when aborted and with UNAVAILABLE `DEPENDENCY_UNAVAILABLE` (`dependency:
   * model`) for any other failure. Not retried.
   */
  listModels(signal?: AbortSignal): Promise<readonly UpstreamModel[] | undefined>;
}
