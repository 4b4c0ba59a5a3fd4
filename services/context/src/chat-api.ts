import type { CallOptions, HandlerContext } from '@connectrpc/connect';
import { create, fromJson, toJson, type JsonValue, type MessageInitShape } from '@bufbuild/protobuf';
import {
  BuildContextResponseSchema,
  ChatAppendMode,
  FinishReason,
  type ChatRequest,
  type ChatResponseSchema,
} from '@engram/contracts/context';
import { MessageRole, SessionStatus, type Message, type MessageSchema } from '@engram/contracts/ingestion';
import type { ChatDoneEvent, ChatTurn, StreamingChatModel } from '@engram/llm';
import { parseSessionName } from '@engram/resources';
import {
  dependencyFailure,
  errors,
  forwardedCallOptions,
  requirePrincipal,
  type Principal,
} from '@engram/runtime';
import { checkRequestId, previousResult, rememberResult, requestHash, requestKeyOf } from '@engram/store';
import { buildContext, type BuildDeps } from './build-context.js';
import { chatMethodOf } from './chat-replays.js';
import { reasonOf } from './failures.js';
import type { Compactions } from './compaction-api.js';
import { checkPolicy } from './policy.js';
import type { AssembledMessage } from './domain/types.js';
import { readSession, readTail } from './session-access.js';

/** What Chat is built from: BuildContext's dependencies, the model and compaction. */
export interface ChatDeps extends BuildDeps {
  readonly chatModel?: StreamingChatModel;
  readonly compactions: Compactions;
}

type ChatEvent = MessageInitShape<typeof ChatResponseSchema>;
type Assembly = MessageInitShape<typeof BuildContextResponseSchema>;

/** The caller's credential without the call's deadline and signal: for work that outlives the stream. */
function detached(ctx: HandlerContext): CallOptions {
  const { signal: _signal, timeoutMs: _timeout, ...options } = forwardedCallOptions(ctx);
  return options;
}

/** The longest message ingestion stores (session.proto). */
const MAX_STORED_CHARS = 32_000;
const MAX_TOOL_CALLS = 32;

const FINISH_REASONS = {
  stop: FinishReason.STOP,
  length: FinishReason.LENGTH,
  tool_calls: FinishReason.TOOL_CALLS,
  content_filter: FinishReason.CONTENT_FILTER,
} as const;

/** What a completed call is remembered as, to replay it for a retry with the same request id. */
interface Recorded {
  /** The `context` event's assembly, as proto JSON. */
  readonly context: JsonValue;
  readonly model: string;
  readonly maxOutputTokens: number;
  readonly text: string;
  readonly toolCalls: readonly { id: string; name: string; argumentsJson: string }[];
  readonly finishReason: keyof typeof FINISH_REASONS;
  readonly userMessage: string;
  readonly assistantMessage: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
}

const chars = (s: string) => Array.from(s).length;

function checkGeneration(request: ChatRequest, defaultMax: number) {
  const g = request.generation;
  if (
    g?.temperature !== undefined &&
    !(Number.isFinite(g.temperature) && g.temperature >= 0 && g.temperature <= 2)
  ) {
    throw errors.fieldInvalid('generation.temperature', 'expected 0.0 to 2.0');
  }
  if (g?.topP !== undefined && !(Number.isFinite(g.topP) && g.topP > 0 && g.topP <= 1)) {
    throw errors.fieldInvalid('generation.top_p', 'expected more than 0.0 and at most 1.0');
  }
  if (g?.maxOutputTokens !== undefined && (g.maxOutputTokens < 1 || g.maxOutputTokens > 128_000)) {
    throw errors.fieldInvalid('generation.max_output_tokens', 'expected 1 to 128000');
  }
  if ((g?.stop.length ?? 0) > 4) throw errors.fieldInvalid('generation.stop', 'at most 4 sequences');
  for (const [i, stop] of (g?.stop ?? []).entries()) {
    if (chars(stop) < 1 || chars(stop) > 64)
      throw errors.fieldInvalid(`generation.stop[${i}]`, '1-64 characters');
  }
  const reserved = request.budget?.reservedOutputTokens ?? 0;
  return {
    maxOutputTokens: g?.maxOutputTokens ?? (reserved > 0 ? reserved : defaultMax),
    ...(g?.temperature !== undefined ? { temperature: g.temperature } : {}),
    ...(g?.topP !== undefined ? { topP: g.topP } : {}),
    ...(g !== undefined && g.stop.length > 0 ? { stop: g.stop } : {}),
  };
}

/** The assembled messages as chat-completions turns. */
function chatTurns(messages: readonly AssembledMessage[]): ChatTurn[] {
  return messages.map((m) => ({
    role:
      m.role === 'SYSTEM'
        ? 'system'
        : m.role === 'USER'
          ? 'user'
          : m.role === 'ASSISTANT'
            ? 'assistant'
            : 'tool',
    content: m.content,
    ...(m.name !== '' ? { name: m.name } : {}),
    ...(m.toolCallId !== '' ? { toolCallId: m.toolCallId } : {}),
    ...(m.toolCalls.length > 0 ? { toolCalls: m.toolCalls } : {}),
  }));
}

/** The events of a recorded call, marked replayed. */
function* replay(recorded: Recorded): Generator<ChatEvent> {
  yield {
    event: {
      case: 'context',
      value: {
        assembly: fromJson(BuildContextResponseSchema, recorded.context),
        model: recorded.model,
        maxOutputTokens: recorded.maxOutputTokens,
        replayed: true,
      },
    },
  };
  if (recorded.text !== '') yield { event: { case: 'delta', value: { text: recorded.text } } };
  yield {
    event: {
      case: 'done',
      value: {
        text: recorded.text,
        toolCalls: recorded.toolCalls.map((c) => ({ ...c })),
        finishReason: FINISH_REASONS[recorded.finishReason],
        userMessage: recorded.userMessage,
        assistantMessage: recorded.assistantMessage,
        tokenUsage: {
          promptTokens: BigInt(recorded.promptTokens),
          completionTokens: BigInt(recorded.completionTokens),
          calls: 1,
          model: recorded.model,
        },
        compactionStarted: false,
        replayed: true,
      },
    },
  };
}

/**
 * `Chat`: assembles the context, streams the model's answer, appends the turn (one conditional
 * `AppendMessages`), and may compact in the background afterwards.
 */
export async function* chat(
  deps: ChatDeps,
  request: ChatRequest,
  ctx: HandlerContext,
): AsyncGenerator<ChatEvent> {
  const principal = requirePrincipal(ctx.values);
  const model = deps.chatModel;
  if (model === undefined) {
    throw errors.failedPrecondition(
      'MODEL_NOT_CONFIGURED',
      'Chat needs a chat model: set ENGRAM_LLM_BASE_URL and ENGRAM_LLM_MODEL (and ENGRAM_LLM_API_KEY if the endpoint needs one)',
      { variable: 'ENGRAM_LLM_MODEL' },
    );
  }
  const sessionId = parseSessionName(request.session, 'session');
  if (request.model !== '' && !deps.settings.allowedChatModels.includes(request.model)) {
    throw errors.fieldInvalid(
      'model',
      'not among the chat models this server allows (ENGRAM_CHAT_ALLOWED_MODELS)',
    );
  }
  const modelName = request.model !== '' ? request.model : model.model;
  const generation = checkGeneration(request, deps.settings.chatMaxOutputTokens);
  checkRequestId(request.requestId);
  const appendMode =
    request.appendMode === ChatAppendMode.UNSPECIFIED ? ChatAppendMode.BOTH : request.appendMode;
  if (![ChatAppendMode.BOTH, ChatAppendMode.REPLY_ONLY, ChatAppendMode.NONE].includes(appendMode)) {
    throw errors.fieldInvalid('append_mode', 'unknown value');
  }
  const policy = checkPolicy(request.compaction, 'compaction', deps.settings);
  const key = requestKeyOf(principal, chatMethodOf(sessionId), request.requestId);
  const body = { ...request, generation };
  if (key !== undefined) {
    const previous = await previousResult<Recorded>(deps.store, key, body);
    if (previous !== undefined) {
      yield* replay(previous);
      return;
    }
  }

  const built = await buildContext(
    { ...deps, defaultModel: modelName },
    { ...request, model: modelName },
    ctx,
  );
  const { session } = built;
  if (appendMode !== ChatAppendMode.NONE && session.status === SessionStatus.CLOSED) {
    throw errors.failedPrecondition('SESSION_CLOSED', `${session.name} is closed`, { name: session.name });
  }
  if (appendMode === ChatAppendMode.REPLY_ONLY) {
    // The tail ends at the newest message unless everything is compacted: then read that one.
    const newest = built.tail.messages.at(-1) ?? (await newestMessage(deps, session.name, ctx));
    if (newest === undefined || newest.role !== MessageRole.USER || newest.content !== request.userMessage) {
      throw errors.failedPrecondition(
        'STATE_CONFLICT',
        'append_mode REPLY_ONLY needs the session’s newest message to be the user message',
        { name: session.name },
      );
    }
  }
  const context: Assembly = request.includeContextMessages
    ? built.response
    : { ...built.response, messages: [], messageTokens: [], tools: [] };
  yield {
    event: {
      case: 'context',
      value: { assembly: context, model: modelName, maxOutputTokens: generation.maxOutputTokens },
    },
  };

  let done: ChatDoneEvent | undefined;
  const stream = model.streamChat({
    messages: chatTurns(built.assembly.messages),
    ...(built.assembly.tools.length > 0 ? { tools: built.assembly.tools } : {}),
    ...generation,
    model: modelName,
    signal: ctx.signal,
  });
  for await (const event of stream) {
    if (event.type === 'delta') {
      if (event.text !== '') yield { event: { case: 'delta', value: { text: event.text } } };
    } else {
      done = event;
    }
  }
  if (done === undefined) throw errors.unavailable('model', 'the model stream ended without a result');

  // A client that went away while the model finished appends nothing.
  ctx.signal.throwIfAborted();
  // Append once, conditional on the session being as the context saw it.
  const appended = await append(
    deps,
    ctx,
    appendMode,
    request.userMessage,
    session.name,
    done,
    modelName,
    session.lastSequence,
    key === undefined ? undefined : `chat-${requestHash({ key, body }).slice(0, 40)}`,
  );
  const recorded: Recorded = {
    context: toJson(BuildContextResponseSchema, create(BuildContextResponseSchema, context)),
    model: modelName,
    maxOutputTokens: generation.maxOutputTokens,
    text: done.text,
    toolCalls: done.toolCalls,
    finishReason: done.finishReason,
    userMessage: appended.userMessage,
    assistantMessage: appended.assistantMessage,
    promptTokens: done.usage.promptTokens,
    completionTokens: done.usage.completionTokens,
  };
  if (key !== undefined) {
    // The turn is appended: a failure to record the replay must not report the call as failed.
    await rememberResult(deps.store, key, body, recorded).catch((error: unknown) => {
      deps.logger.warn({ session: session.name, reason: reasonOf(error) }, 'chat replay not recorded');
    });
  }

  const autoCompact = (request.autoCompact ?? true) && appended.any;
  let compactionStarted = false;
  if (autoCompact) {
    const call = forwardedCallOptions(ctx);
    const fresh = await readSession(deps.ingestion, sessionId, call).catch(() => undefined);
    if (fresh !== undefined) {
      const tail = await readTail(deps.ingestion, fresh, built.state.compactedThroughSequence, call, 0).catch(
        () => undefined,
      );
      if (tail !== undefined && tail.uncompactedTokens > policy.thresholdTokens) {
        compactionStarted = true;
        compactInBackground(deps, principal, fresh, policy, detached(ctx));
      }
    }
  }
  yield {
    event: {
      case: 'done',
      value: {
        text: done.text,
        toolCalls: done.toolCalls.map((c) => ({ ...c })),
        finishReason: FINISH_REASONS[done.finishReason],
        userMessage: appended.userMessage,
        assistantMessage: appended.assistantMessage,
        tokenUsage: {
          promptTokens: BigInt(done.usage.promptTokens),
          completionTokens: BigInt(done.usage.completionTokens),
          calls: 1,
          model: modelName,
        },
        compactionStarted,
        replayed: false,
      },
    },
  };
}

async function append(
  deps: ChatDeps,
  ctx: HandlerContext,
  mode: ChatAppendMode,
  userMessage: string,
  sessionName: string,
  done: ChatDoneEvent,
  modelName: string,
  expectedLastSequence: bigint,
  requestId: string | undefined,
): Promise<{ userMessage: string; assistantMessage: string; any: boolean }> {
  if (mode === ChatAppendMode.NONE) return { userMessage: '', assistantMessage: '', any: false };
  const messages: MessageInitShape<typeof MessageSchema>[] = [];
  if (mode === ChatAppendMode.BOTH) messages.push({ role: MessageRole.USER, content: userMessage });
  const hasReply = done.text !== '' || done.toolCalls.length > 0;
  if (hasReply) {
    const text = Array.from(done.text);
    const calls = storableToolCalls(done.toolCalls);
    const truncated = text.length > MAX_STORED_CHARS || calls.changed;
    messages.push({
      role: MessageRole.ASSISTANT,
      content: text.slice(0, MAX_STORED_CHARS).join(''),
      toolCalls: calls.calls,
      metadata: {
        'engram.model': modelName,
        'engram.finish_reason': done.finishReason,
        ...(truncated ? { 'engram.truncated': 'true' } : {}),
      },
    });
  }
  if (messages.length === 0) return { userMessage: '', assistantMessage: '', any: false };
  let stored: Message[];
  try {
    const response = await deps.ingestion.appendMessages(
      {
        parent: sessionName,
        messages,
        expectedLastSequence,
        ...(requestId !== undefined ? { requestId } : {}),
      },
      // Not the stream's signal: once the answer is complete, the append must not be cut short.
      detached(ctx),
    );
    stored = response.messages;
  } catch (error) {
    throw dependencyFailure('ingestion', error);
  }
  const user = mode === ChatAppendMode.BOTH ? stored[0] : undefined;
  const assistant = hasReply ? stored.at(-1) : undefined;
  return { userMessage: user?.name ?? '', assistantMessage: assistant?.name ?? '', any: true };
}

/** The session's newest message, if any. */
async function newestMessage(
  deps: ChatDeps,
  sessionName: string,
  ctx: HandlerContext,
): Promise<Message | undefined> {
  try {
    const { messages } = await deps.ingestion.listMessages(
      { parent: sessionName, pageSize: 1, newestFirst: true },
      forwardedCallOptions(ctx),
    );
    return messages[0];
  } catch (error) {
    throw dependencyFailure('ingestion', error);
  }
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_TOOL_CALL_ID = 128;

/**
 * The model's tool calls as ingestion stores them: at most 32, each with a valid name and id and
 * arguments of at most 32,000 characters; `changed` when anything had to be cut or left out.
 */
function storableToolCalls(calls: ChatDoneEvent['toolCalls']) {
  const ids = new Set<string>();
  const valid = calls.filter((c) => {
    const ok =
      TOOL_NAME.test(c.name) &&
      c.id.trim() !== '' &&
      Array.from(c.id).length <= MAX_TOOL_CALL_ID &&
      !ids.has(c.id);
    ids.add(c.id);
    return ok;
  });
  const kept = valid.slice(0, MAX_TOOL_CALLS).map((c) => {
    const args = Array.from(c.argumentsJson);
    return {
      id: c.id,
      name: c.name,
      argumentsJson:
        args.length > MAX_STORED_CHARS ? args.slice(0, MAX_STORED_CHARS).join('') : c.argumentsJson,
    };
  });
  const changed =
    kept.length !== calls.length || kept.some((c, i) => c.argumentsJson !== calls[i]?.argumentsJson);
  return { calls: kept, changed };
}

function compactInBackground(
  deps: ChatDeps,
  principal: Principal,
  session: Parameters<Compactions['compactIfDue']>[1],
  policy: Parameters<Compactions['compactIfDue']>[2],
  call: Parameters<Compactions['compactIfDue']>[3],
): void {
  void deps.compactions.compactIfDue(principal, session, policy, call).catch((error: unknown) => {
    deps.logger.warn(
      { session: session.name, reason: reasonOf(error) },
      'automatic compaction failed; retried next turn',
    );
  });
}
