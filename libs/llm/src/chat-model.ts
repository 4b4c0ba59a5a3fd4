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
