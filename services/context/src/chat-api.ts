import { fromJson, toJson, type JsonValue, type MessageInitShape } from '@bufbuild/protobuf';
import {
  BuildContextResponseSchema,
  ChatAppendMode,
  FinishReason,
  type ChatRequest,
  type ChatResponseSchema,
} from '@engram/contracts/context';
import { MessageRole, type Message, type MessageSchema } from '@engram/contracts/ingestion';
import type { ChatDoneEvent, ChatTurn, StreamingChatModel } from '@engram/llm';
import { parseSessionName } from '@engram/resources';
import { errors } from '@engram/runtime';
import { checkRequestId } from '@engram/store';
import { TOOL_NAME } from './build-context-api.js';
import type { ContextSettings } from './config.js';
import type { AssembledMessage } from './domain/types.js';
import { checkPolicy, type CheckedPolicy } from './policy.js';
import type { StoredText } from './stored-text.js';

/** One event of the `Chat` stream. */
export type ChatEvent = MessageInitShape<typeof ChatResponseSchema>;
/** The assembly a `context` event carries. */
export type ContextAssembly = MessageInitShape<typeof BuildContextResponseSchema>;

/** The longest message ingestion stores (session.proto). */
const MAX_STORED_CHARS = 32_000;
const MAX_TOOL_CALLS = 32;
const MAX_TOOL_CALL_ID = 128;

const FINISH_REASONS = {
  stop: FinishReason.STOP,
  length: FinishReason.LENGTH,
  tool_calls: FinishReason.TOOL_CALLS,
  content_filter: FinishReason.CONTENT_FILTER,
} as const;

/** What a completed call is remembered as, to replay it for a retry with the same request id. */
export interface RecordedChat {
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

/** The configured chat model, or FAILED_PRECONDITION `MODEL_NOT_CONFIGURED`. */
export function requireChatModel(model: StreamingChatModel | undefined): StreamingChatModel {
  if (model === undefined) {
    throw errors.failedPrecondition(
      'MODEL_NOT_CONFIGURED',
      'Chat needs a chat model: set ENGRAM_LLM_BASE_URL and ENGRAM_LLM_MODEL (and ENGRAM_LLM_API_KEY if the endpoint needs one)',
      { variable: 'ENGRAM_LLM_MODEL' },
    );
  }
  return model;
}

/** The generation parameters of a call, defaults applied. */
export type Generation = ReturnType<typeof checkGeneration>;

/** A validated `Chat` request (the assembly's own fields are checked by BuildContext's rules). */
export interface CheckedChat {
  readonly sessionId: string;
  /** The model to answer with: the request's, else the configured one. */
  readonly modelName: string;
  readonly generation: Generation;
  readonly appendMode: ChatAppendMode;
  readonly policy: CheckedPolicy;
}

/** Validates what `Chat` adds to BuildContext's fields; `configuredModel` is the default model. */
export function checkChatRequest(
  request: ChatRequest,
  settings: ContextSettings,
  configuredModel: string,
): CheckedChat {
  const sessionId = parseSessionName(request.session, 'session');
  if (request.model !== '' && !settings.allowedChatModels.includes(request.model)) {
    throw errors.fieldInvalid(
      'model',
      'not among the chat models this server allows (ENGRAM_CHAT_ALLOWED_MODELS)',
    );
  }
  const modelName = request.model !== '' ? request.model : configuredModel;
  const generation = checkGeneration(request, settings.chatMaxOutputTokens);
  checkRequestId(request.requestId);
  const appendMode =
    request.appendMode === ChatAppendMode.UNSPECIFIED ? ChatAppendMode.BOTH : request.appendMode;
  const known = [
    ChatAppendMode.BOTH,
    ChatAppendMode.REPLY_ONLY,
    ChatAppendMode.NONE,
    ChatAppendMode.REPLY_AFTER_TOOLS,
  ];
  if (!known.includes(appendMode)) {
    throw errors.fieldInvalid('append_mode', 'unknown value');
  }
  const policy = checkPolicy(request.compaction, 'compaction', settings);
  return { sessionId, modelName, generation, appendMode, policy };
}

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

/** The parts of a stored message {@link toolContinuationProblem} looks at. */
type StoredTurn = Pick<Message, 'role' | 'content' | 'toolCallId' | 'toolCalls'>;

/**
 * Why a session cannot take a REPLY_AFTER_TOOLS turn for `userMessage` (undefined when it can):
 * `newestFirst` are its newest messages, newest first. It must end with one or more TOOL
 * messages, each answering a tool call of the newest ASSISTANT message before them, and the
 * newest USER message before that must be `userMessage`.
 */
export function toolContinuationProblem(
  newestFirst: readonly StoredTurn[],
  userMessage: string,
): string | undefined {
  const results = newestFirst.findIndex((m) => m.role !== MessageRole.TOOL);
  if (results === 0 || newestFirst.length === 0) return 'the session’s newest message is not a tool result';
  const assistant = results === -1 ? undefined : newestFirst[results];
  if (assistant?.role !== MessageRole.ASSISTANT || assistant.toolCalls.length === 0) {
    return 'the tool results do not follow an assistant message with tool calls';
  }
  const ids = new Set(assistant.toolCalls.map((c) => c.id));
  if (newestFirst.slice(0, results).some((m) => !ids.has(m.toolCallId))) {
    return 'a tool result does not answer a tool call of the newest assistant message';
  }
  const user = newestFirst.slice(results + 1).find((m) => m.role === MessageRole.USER);
  if (user === undefined) return 'the session has no user message before the tool calls';
  if (user.content !== userMessage) return 'user_message is not the session’s newest user message';
  return undefined;
}

/** The assembled messages as chat-completions turns. */
export function chatTurns(messages: readonly AssembledMessage[]): ChatTurn[] {
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

/** The stream's first event: the assembly the model is given. */
export function contextEvent(
  assembly: ContextAssembly,
  model: string,
  maxOutputTokens: number,
  replayed: boolean,
): ChatEvent {
  return { event: { case: 'context', value: { assembly, model, maxOutputTokens, replayed } } };
}

/** The stream's last event: the answer, what was appended, and the token usage. */
export function doneEvent(recorded: RecordedChat, compactionStarted: boolean, replayed: boolean): ChatEvent {
  return {
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
        compactionStarted,
        replayed,
      },
    },
  };
}

/**
 * A call as its replay record stores it: the reply, its tool arguments and every message of the
 * assembly (system prompt, user message, turns, knowledge) through `stored`, like the messages
 * ingestion stores. The token counts stay those of the call (what the model was given).
 */
export function storedChat(recorded: RecordedChat, stored: StoredText): RecordedChat {
  const assembly = fromJson(BuildContextResponseSchema, recorded.context);
  for (const message of assembly.messages) {
    message.content = stored(message.content);
    for (const call of message.toolCalls) call.argumentsJson = stored(call.argumentsJson);
  }
  return {
    ...recorded,
    context: toJson(BuildContextResponseSchema, assembly),
    text: stored(recorded.text),
    toolCalls: recorded.toolCalls.map((c) => ({ ...c, argumentsJson: stored(c.argumentsJson) })),
  };
}

/** The events of a recorded call, marked replayed. */
export function* replayEvents(recorded: RecordedChat): Generator<ChatEvent> {
  const assembly = fromJson(BuildContextResponseSchema, recorded.context);
  yield contextEvent(assembly, recorded.model, recorded.maxOutputTokens, true);
  if (recorded.text !== '') yield { event: { case: 'delta', value: { text: recorded.text } } };
  yield doneEvent(recorded, false, true);
}

/** Whether the model answered anything to store (text or tool calls). */
export function hasReply(done: ChatDoneEvent): boolean {
  return done.text !== '' || done.toolCalls.length > 0;
}

/**
 * The messages a call appends: the user message (mode BOTH) and the reply, if any, cut to what
 * ingestion stores and marked `engram.truncated` when anything was cut.
 */
export function turnMessages(
  mode: ChatAppendMode,
  userMessage: string,
  done: ChatDoneEvent,
  modelName: string,
): MessageInitShape<typeof MessageSchema>[] {
  if (mode === ChatAppendMode.NONE) return [];
  const messages: MessageInitShape<typeof MessageSchema>[] = [];
  if (mode === ChatAppendMode.BOTH) messages.push({ role: MessageRole.USER, content: userMessage });
  if (hasReply(done)) {
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
  return messages;
}

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
