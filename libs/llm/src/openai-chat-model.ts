import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI, { APIError } from 'openai';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import { z } from 'zod';
import { errors, type EngramError } from '@engram/errors';
import { describeOpenAIError, retryAfterMs, retryableOpenAIError } from '@engram/errors/openai';
import { modelMetrics, type Logger, type ModelMetrics } from '@engram/telemetry';
import type {
  ChatMessage,
  ChatModel,
  ChatStreamEvent,
  ChatToolCall,
  JsonCompletion,
  JsonCompletionRequest,
  ModelCatalog,
  StreamChatRequest,
  StreamingChatModel,
  UpstreamModel,
} from './chat-model.js';
import { MODEL_DEPENDENCY, modelOutputInvalid } from './errors.js';
import {
  endpointRefusal,
  finishReasonOf,
  toToolParam,
  toTurnParam,
  ToolCallAssembly,
} from './openai-chat-stream.js';

/** Options of {@link OpenAIChatModel}; defaults are filled in by its constructor. */
export interface OpenAIChatModelOptions {
  /** The API root, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`. */
  readonly baseURL: string;
  /** Sent as a bearer token. Default `none`, for local servers without authentication. */
  readonly apiKey?: string;
  /** The provider's model name. */
  readonly model: string;
  /** Timeout of one HTTP request, ms. Default 60000. */
  readonly timeoutMs?: number;
  /** Retries of a request after a 408, 409, 429 or 5xx answer, a timeout or a connection error. Default 2. */
  readonly maxRetries?: number;
  /** Backoff before the first transport retry, doubling per retry with full jitter. Default 500 ms. */
  readonly initialBackoffMs?: number;
  /** Upper bound of one backoff, including a server's `Retry-After`. Default 8000 ms. */
  readonly maxBackoffMs?: number;
  /**
   * The request parameter {@link OpenAIChatModel.streamChat} sends `maxOutputTokens` as. Default
   * `max_tokens`, which OpenAI's chat models and every common compatible server accept;
   * `max_completion_tokens` for OpenAI's reasoning models (o1, o3, …), which refuse `max_tokens`.
   */
  readonly outputTokensParameter?: 'max_tokens' | 'max_completion_tokens';
  /** Receives one debug line per answer and a warning per invalid one: counts and ids, never text. */
  readonly logger?: Logger;
}

/** Answers requested by {@link OpenAIChatModel.completeJson} when the request does not say. */
export const DEFAULT_MAX_ATTEMPTS = 3;

/** The JSON Schema sent as `response_format`; `$schema` is dropped (not every server accepts it). */
function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'output' });
  return rest;
}

/** Why an answer was rejected: `feedback` goes back to the model, `problem` to errors and logs. */
interface Rejection {
  /** Shown to the model so it can correct itself (may quote its own answer). */
  readonly feedback: string;
  /** Content-free summary for the error message and the log. */
  readonly problem: string;
}

type Parsed<T> = { ok: true; value: T } | { ok: false; rejection: Rejection };

function summarizeIssues(error: z.ZodError): string {
  const issues = error.issues.slice(0, 3).map((issue) => {
    const path = issue.path.length === 0 ? '(root)' : issue.path.map(String).join('.');
    return `${path}: ${issue.message}`;
  });
  const more = error.issues.length > 3 ? ` (+${error.issues.length - 3} more)` : '';
  return `schema mismatch: ${issues.join('; ')}${more}`;
}

function parseAnswer<T>(completion: ChatCompletion, schema: z.ZodType<T>, schemaName: string): Parsed<T> {
  const choice = completion.choices[0];
  const message = choice?.message;
  if ((message?.refusal ?? '') !== '') {
    return {
      ok: false,
      rejection: {
        feedback: `You refused to answer. Answer with a JSON object matching the ${schemaName} schema.`,
        problem: 'the model refused',
      },
    };
  }
  const content = message?.content ?? '';
  if (content.trim() === '') {
    return {
      ok: false,
      rejection: {
        feedback: `Your answer was empty. Answer with a JSON object matching the ${schemaName} schema.`,
        problem: 'empty answer',
      },
    };
  }
  let json: unknown;
  try {
    json = JSON.parse(stripFence(content));
  } catch (error) {
    const cutOff = choice?.finish_reason === 'length';
    return {
      ok: false,
      rejection: {
        feedback: cutOff
          ? 'Your answer was cut off at the output limit and is not complete JSON. Answer again, more briefly.'
          : `Your answer is not valid JSON (${error instanceof Error ? error.message : 'parse error'}). ` +
            `Answer with only a JSON object matching the ${schemaName} schema.`,
        problem: cutOff ? 'answer cut off at the output limit' : 'not valid JSON',
      },
    };
  }
  const result = schema.safeParse(json);
  if (result.success) return { ok: true, value: result.data };
  return {
    ok: false,
    rejection: {
      feedback:
        `Your answer does not match the ${schemaName} schema:\n${z.prettifyError(result.error)}\n` +
        'Answer again with the corrected JSON object only.',
      problem: summarizeIssues(result.error),
    },
  };
}

/** Servers without constrained decoding sometimes wrap JSON in a Markdown fence. */
function stripFence(content: string): string {
  const match = /^\s*```(?:json)?\s*\n([\s\S]*?)\n?```\s*$/u.exec(content);
  return match?.[1] ?? content;
}

/**
 * A {@link ChatModel} and {@link StreamingChatModel} over any OpenAI-compatible
 * `/chat/completions` endpoint (OpenAI, vLLM, Ollama, LM Studio, llama.cpp server, gateways), with
 * the `openai` client.
 *
 * Answers are requested with `response_format: { type: 'json_schema', json_schema: { name,
 * strict: true, schema } }`. Transport retries are our own loop (the client's `maxRetries` is 0):
 * the client's backoff cannot be cancelled and obeys any `Retry-After`, while this loop aborts
 * with the caller's signal and caps the server's delay. Invalid answers are retried separately
 * (see {@link ChatModel.completeJson}), each retry carrying the rejected answer and its error.
 */
export class OpenAIChatModel implements ChatModel, StreamingChatModel, ModelCatalog {
  readonly model: string;
  private readonly outputTokensParameter: 'max_tokens' | 'max_completion_tokens';
  private readonly client: OpenAI;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly logger: Logger | undefined;
  /** Latency and tokens per call, in the process's Prometheus registry. */
  private readonly metrics: ModelMetrics = modelMetrics();

  constructor(options: OpenAIChatModelOptions) {
    this.model = options.model;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.maxRetries = options.maxRetries ?? 2;
    this.initialBackoffMs = options.initialBackoffMs ?? 500;
    this.maxBackoffMs = options.maxBackoffMs ?? 8000;
    this.outputTokensParameter = options.outputTokensParameter ?? 'max_tokens';
    this.logger = options.logger;
    this.client = new OpenAI({
      baseURL: options.baseURL,
      apiKey: options.apiKey ?? 'none',
      maxRetries: 0,
      // Timeouts are ours (see request); the client's own would only be a backstop.
      timeout: this.timeoutMs + 1_000,
    });
  }

  async listModels(signal?: AbortSignal): Promise<readonly UpstreamModel[] | undefined> {
    signal?.throwIfAborted();
    try {
      const models: UpstreamModel[] = [];
      for await (const model of this.client.models.list({ signal, timeout: this.timeoutMs })) {
        // Compatible servers do not all send `created` and `owned_by`.
        const { created, owned_by: ownedBy } = model as Partial<typeof model>;
        models.push({ id: model.id, created: created ?? 0, ownedBy: ownedBy ?? '' });
      }
      return models;
    } catch (error) {
      if (signal?.aborted === true) throw signal.reason;
      if (error instanceof APIError && [404, 405, 501].includes(Number(error.status))) return undefined;
      throw errors.unavailable(MODEL_DEPENDENCY, `listing the models failed: ${describeOpenAIError(error)}`, {
        cause: error,
      });
    }
  }

  async completeJson<T>(request: JsonCompletionRequest<T>): Promise<JsonCompletion<T>> {
    const { schema, schemaName, signal } = request;
    const maxAttempts = request.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
      throw errors.fieldInvalid('maxAttempts', 'must be a positive integer');
    }
    if (!/^[a-zA-Z0-9_-]{1,64}$/u.test(schemaName)) {
      throw errors.fieldInvalid('schemaName', 'must match [a-zA-Z0-9_-]{1,64}');
    }
    signal?.throwIfAborted();
    const responseFormat = {
      type: 'json_schema' as const,
      json_schema: { name: schemaName, strict: true, schema: jsonSchemaOf(schema) },
    };
    const conversation: ChatCompletionMessageParam[] = request.messages.map(toParam);
    let promptTokens = 0;
    let completionTokens = 0;
    let last: Rejection | undefined;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const started = performance.now();
      const completion = await this.request(
        {
          model: this.model,
          messages: conversation,
          response_format: responseFormat,
          ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
        },
        signal,
      );
      promptTokens += completion.usage?.prompt_tokens ?? 0;
      completionTokens += completion.usage?.completion_tokens ?? 0;
      const parsed = parseAnswer(completion, schema, schemaName);
      const line = {
        model: this.model,
        schema: schemaName,
        attempt,
        promptTokens: completion.usage?.prompt_tokens ?? 0,
        completionTokens: completion.usage?.completion_tokens ?? 0,
        durationMs: Math.round(performance.now() - started),
      };
      if (parsed.ok) {
        this.logger?.debug(line, 'model answer accepted');
        return { value: parsed.value, usage: { promptTokens, completionTokens }, attempts: attempt };
      }
      last = parsed.rejection;
      this.logger?.warn({ ...line, problem: last.problem }, 'model answer rejected');
      conversation.push(
        { role: 'assistant', content: completion.choices[0]?.message.content ?? '' },
        { role: 'user', content: last.feedback },
      );
    }
    throw modelOutputInvalid(schemaName, maxAttempts, last?.problem ?? 'no answer');
  }

  /**
   * Streams a reply (see {@link StreamingChatModel.streamChat}) with `stream: true` and
   * `stream_options.include_usage`. The reply length goes out as `max_tokens`: deprecated by
   * OpenAI in favour of `max_completion_tokens` but accepted by OpenAI's chat models and by every
   * common compatible server (vLLM, Ollama, llama.cpp, LM Studio), some of which ignore or refuse
   * the newer name; set `outputTokensParameter` for OpenAI's reasoning models, which refuse it.
   *
   * Transport retries (connection errors, timeouts, 408/409/429/5xx) happen only until the
   * endpoint has answered with a stream; a failure after that ends the iteration with UNAVAILABLE
   * and is never retried, since deltas may already have been yielded. `timeoutMs` bounds the wait
   * for the answer and then each silence between chunks (not the whole reply, which may be long).
   * A stream that ends without a finish reason (a cut connection) is a failure, not a short reply.
   * A reply with tool calls whose finish reason is `stop` (some servers) finishes `tool_calls`; one
   * cut off (`length`, `content_filter`) drops its incomplete calls.
   */
  async *streamChat(request: StreamChatRequest): AsyncGenerator<ChatStreamEvent, void, undefined> {
    const requested = request.model === '' ? undefined : request.model;
    const started = performance.now();
    // A model the client named is a label only once the endpoint has served it (bounded labels).
    let model = requested === undefined ? this.model : '(requested)';
    let outcome: 'ok' | 'error' | 'cancelled' = 'cancelled';
    try {
      for await (const event of this.streamReply(request)) {
        if (event.type === 'done') {
          outcome = 'ok';
          model = requested ?? this.model;
          this.countTokens(model, 'stream_chat', event.usage.promptTokens, event.usage.completionTokens);
        }
        yield event;
      }
    } catch (error) {
      outcome = 'error';
      throw error;
    } finally {
      this.metrics.duration.observe(
        { model, operation: 'stream_chat', outcome },
        (performance.now() - started) / 1000,
      );
    }
  }

  private countTokens(model: string, operation: string, prompt: number, completion: number): void {
    this.metrics.tokens.inc({ model, operation, kind: 'prompt' }, prompt);
    this.metrics.tokens.inc({ model, operation, kind: 'completion' }, completion);
  }

  private async *streamReply(request: StreamChatRequest): AsyncGenerator<ChatStreamEvent, void, undefined> {
    const { signal } = request;
    signal?.throwIfAborted();
    // `''` is unset too (a proto3 string field's default).
    const requestedModel = request.model === '' ? undefined : request.model;
    const model = requestedModel ?? this.model;
    const tools = (request.tools ?? []).map(toToolParam);
    const stop = request.stop ?? [];
    const body: ChatCompletionCreateParamsStreaming = {
      model,
      messages: request.messages.map(toTurnParam),
      stream: true,
      stream_options: { include_usage: true },
      ...(tools.length === 0 ? {} : { tools }),
      ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
      ...(request.topP === undefined ? {} : { top_p: request.topP }),
      ...(request.maxOutputTokens === undefined
        ? {}
        : { [this.outputTokensParameter]: request.maxOutputTokens }),
      ...(stop.length === 0 ? {} : { stop: [...stop] }),
    };
    const started = performance.now();
    const { result: stream, deadline } = await this.withTransportRetries(
      model,
      signal,
      (trySignal) => this.client.chat.completions.create(body, { signal: trySignal }),
      (error) => endpointRefusal(error, requestedModel),
    );
    let text = '';
    let deltas = 0;
    let firstDeltaMs: number | undefined;
    let finish: string | null = null;
    let usage: CompletionUsage | undefined;
    const calls = new ToolCallAssembly();
    const failed = (why: string, cause?: unknown) =>
      errors.unavailable(
        MODEL_DEPENDENCY,
        `model ${model} at ${this.client.baseURL} failed during its reply: ${why}`,
        { cause },
      );
    try {
      for await (const chunk of stream) {
        deadline.restart();
        if (chunk.usage) usage = chunk.usage;
        // One choice is asked for (no `n`); a server's extra choices are ignored.
        const choice: WireChoice | undefined = chunk.choices.find((c) => c.index === 0) ?? chunk.choices[0];
        if (choice === undefined) continue;
        for (const fragment of choice.delta?.tool_calls ?? []) calls.add(fragment);
        finish = choice.finish_reason ?? finish;
        const piece = choice.delta?.content ?? '';
        if (piece !== '') {
          text += piece;
          deltas++;
          firstDeltaMs ??= Math.round(performance.now() - started);
          yield { type: 'delta', text: piece };
        }
      }
    } catch (error) {
      if (signal?.aborted === true) throw signal.reason;
      throw failed(deadline.expired ? `no data for ${this.timeoutMs} ms` : describeOpenAIError(error), error);
    } finally {
      deadline.clear();
    }
    // The client ends the iteration quietly when its signal aborts: tell the causes apart here.
    if (signal?.aborted === true) throw signal.reason;
    if (deadline.expired) throw failed(`no data for ${this.timeoutMs} ms`);
    if (finish === null) throw failed('the stream ended before the model finished');
    let finishReason = finishReasonOf(finish);
    let toolCalls: ChatToolCall[] = [];
    if (calls.size > 0 && (finishReason === 'stop' || finishReason === 'tool_calls')) {
      try {
        toolCalls = calls.finish();
      } catch (error) {
        throw failed(error instanceof Error ? error.message : String(error), error);
      }
      finishReason = 'tool_calls';
    } else if (finishReason === 'tool_calls') {
      finishReason = 'stop'; // no call came: nothing for the caller to run
    }
    const promptTokens = usage?.prompt_tokens ?? 0;
    const completionTokens = usage?.completion_tokens ?? 0;
    this.logger?.debug(
      {
        model,
        finishReason,
        deltas,
        toolCalls: toolCalls.length,
        promptTokens,
        completionTokens,
        firstDeltaMs,
        durationMs: Math.round(performance.now() - started),
      },
      'model reply streamed',
    );
    yield { type: 'done', text, toolCalls, finishReason, usage: { promptTokens, completionTokens } };
  }

  private async request(
    body: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming,
    signal: AbortSignal | undefined,
  ): Promise<ChatCompletion> {
    const started = performance.now();
    const labels = { model: this.model, operation: 'complete_json' };
    try {
      const { result, deadline } = await this.withTransportRetries(this.model, signal, (trySignal) =>
        this.client.chat.completions.create(body, { signal: trySignal }),
      );
      deadline.clear();
      this.metrics.duration.observe({ ...labels, outcome: 'ok' }, (performance.now() - started) / 1000);
      this.countTokens(
        this.model,
        labels.operation,
        result.usage?.prompt_tokens ?? 0,
        result.usage?.completion_tokens ?? 0,
      );
      return result;
    } catch (error) {
      this.metrics.duration.observe({ ...labels, outcome: 'error' }, (performance.now() - started) / 1000);
      throw error;
    }
  }

  /**
   * Runs `call` until it succeeds, retrying retryable failures with backoff (our own loop: the
   * client's backoff cannot be cancelled and obeys any `Retry-After`). Each try gets a signal
   * that aborts with the caller's and at the try's deadline; the successful try's deadline is
   * returned still running (a stream restarts it per chunk), and the caller must clear it. A
   * failure that is not retried becomes `refine(error)` or UNAVAILABLE `DEPENDENCY_UNAVAILABLE`.
   */
  private async withTransportRetries<R>(
    model: string,
    signal: AbortSignal | undefined,
    call: (signal: AbortSignal) => Promise<R>,
    refine: (error: unknown) => EngramError | undefined = () => undefined,
  ): Promise<{ result: R; deadline: Deadline }> {
    for (let retry = 0; ; retry++) {
      // Our own timeout: the client's is reported as a plain connection error in some runtimes.
      const deadline = new Deadline(this.timeoutMs);
      try {
        const result = await call(
          signal === undefined ? deadline.signal : AbortSignal.any([signal, deadline.signal]),
        );
        return { result, deadline };
      } catch (error) {
        deadline.clear();
        if (signal?.aborted === true) throw signal.reason;
        const timedOut = deadline.expired;
        if (!timedOut && !retryableOpenAIError(error)) {
          const refined = refine(error);
          if (refined !== undefined) throw refined;
        }
        if ((!timedOut && !retryableOpenAIError(error)) || retry >= this.maxRetries) {
          const tries = retry + 1;
          const why = timedOut ? `timed out after ${this.timeoutMs} ms` : describeOpenAIError(error);
          throw errors.unavailable(
            MODEL_DEPENDENCY,
            `model ${model} at ${this.client.baseURL} failed after ${tries} ${tries === 1 ? 'try' : 'tries'}: ${why}`,
            { cause: error },
          );
        }
        const backoff = Math.random() * Math.min(this.maxBackoffMs, this.initialBackoffMs * 2 ** retry);
        const delay = Math.min(this.maxBackoffMs, retryAfterMs(error) ?? backoff);
        this.logger?.debug(
          {
            model,
            retry: retry + 1,
            delayMs: Math.round(delay),
            error: timedOut ? 'timeout' : describeOpenAIError(error),
          },
          'model request failed; retrying',
        );
        try {
          await sleep(delay, undefined, signal === undefined ? undefined : { signal });
        } catch {
          throw signal?.reason;
        }
      }
    }
  }
}

/** A streamed choice as compatible servers send it: `delta` and `finish_reason` may be missing. */
type WireChoice = Omit<ChatCompletionChunk.Choice, 'delta' | 'finish_reason'> & {
  readonly delta?: ChatCompletionChunk.Choice.Delta;
  readonly finish_reason?: string | null;
};

/** A restartable timeout: its signal aborts when `ms` pass without {@link restart}. */
class Deadline {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ms: number) {
    this.restart();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get expired(): boolean {
    return this.controller.signal.aborted;
  }

  restart(): void {
    clearTimeout(this.timer);
    if (this.expired) return;
    this.timer = setTimeout(() => {
      this.controller.abort(new DOMException(`no answer within ${this.ms} ms`, 'TimeoutError'));
    }, this.ms);
    this.timer.unref();
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

function toParam(message: ChatMessage): ChatCompletionMessageParam {
  return { role: message.role, content: message.content };
}
