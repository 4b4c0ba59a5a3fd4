/**
 * Pure mappings between the chat-completions wire format and the Engram RPCs: a request body →
 * one `ContextService.Chat` call (and the messages to append first), the Chat stream's events →
 * `chat.completion` / `chat.completion.chunk` objects. No I/O.
 */
import { createHash } from 'node:crypto';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { z } from 'zod';
import {
  ChatAppendMode,
  FinishReason,
  ToolRendering,
  type ChatDoneEvent,
  type ChatRequestSchema,
} from '@engram/contracts/context';
import { MessageRole, type MessageSchema } from '@engram/contracts/ingestion';
import { errors } from '@engram/errors';
import { chatCompletionBodySchema, type BodyMessage, type ChatCompletionBody } from './schema.js';

/** A message to append to the session (ingestion `Message`). */
export type SessionMessage = MessageInitShape<typeof MessageSchema>;

/** What one chat-completions request asks of Chat. */
export interface ChatPlan {
  readonly model: string;
  /** The system and developer messages, joined; '' when none. */
  readonly systemPrompt: string;
  /** The newest user message: the text Chat answers (and its knowledge query). */
  readonly userMessage: string;
  /**
   * The conversation before the turn (no system messages): appended only to a session the proxy
   * creates, so an app that starts sending its history mid-conversation keeps it.
   */
  readonly history: readonly SessionMessage[];
  /** The trailing tool results of a tool-loop continuation; empty for a user turn. */
  readonly toolResults: readonly SessionMessage[];
  /** BOTH for a user turn; REPLY_AFTER_TOOLS when the request ends with tool results. */
  readonly appendMode: ChatAppendMode;
  readonly tools: MessageInitShape<typeof ChatRequestSchema>['tools'];
  readonly generation: NonNullable<MessageInitShape<typeof ChatRequestSchema>['generation']>;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  /** The session `external_id` of the conversation: see {@link conversationExternalId}. */
  readonly externalId: string;
}

/** `messages.2.content` → `messages[2].content`. */
function fieldOf(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (field, part) =>
      typeof part === 'number'
        ? `${field}[${part}]`
        : field === ''
          ? String(part)
          : `${field}.${String(part)}`,
    '',
  );
}

/** The first schema violation as INVALID_ARGUMENT FIELD_REQUIRED / FIELD_INVALID naming the field. */
function violation(error: z.ZodError): Error {
  const issue = error.issues[0];
  const field = issue === undefined || issue.path.length === 0 ? 'body' : fieldOf(issue.path);
  if (issue?.code === 'invalid_type' && issue.input === undefined) return errors.fieldRequired(field);
  return errors.fieldInvalid(field, issue?.message ?? 'does not match the chat-completions schema');
}

/** Parses a request body; throws INVALID_ARGUMENT naming the first offending field. */
export function parseChatCompletionBody(json: unknown): ChatCompletionBody {
  const parsed = chatCompletionBodySchema.safeParse(json);
  if (!parsed.success) throw violation(parsed.error);
  return parsed.data;
}

/** The text of a message's content (text parts joined by a newline). */
export function textOf(content: BodyMessage['content']): string {
  if (content === undefined || content === null) return '';
  return typeof content === 'string' ? content : content.map((part) => part.text).join('\n');
}

/** A body message as a session message; system and developer messages are not stored. */
function sessionMessageOf(message: BodyMessage): SessionMessage | undefined {
  switch (message.role) {
    case 'user':
      return {
        role: MessageRole.USER,
        content: textOf(message.content),
        ...(message.name !== undefined ? { participantName: message.name } : {}),
      };
    case 'assistant': {
      const toolCalls = (message.tool_calls ?? []).map((call) => ({
        id: call.id,
        name: call.function.name,
        argumentsJson: call.function.arguments,
      }));
      const content = textOf(message.content);
      // An empty assistant message (neither text nor calls) carries nothing to remember.
      if (content === '' && toolCalls.length === 0) return undefined;
      return { role: MessageRole.ASSISTANT, content, toolCalls };
    }
    case 'tool':
      return { role: MessageRole.TOOL, content: textOf(message.content), toolCallId: message.tool_call_id };
    default:
      return undefined;
  }
}

const isInstruction = (m: BodyMessage) => m.role === 'system' || m.role === 'developer';

/**
 * The session `external_id` of a conversation the client did not name: a hash of the system
 * prompt and the first user message, the part of a conversation every later request of the same
 * client repeats, so each turn of it lands in the same session (docs/openai-proxy.md).
 */
export function conversationExternalId(systemPrompt: string, firstUserMessage: string): string {
  const hash = createHash('sha256')
    .update(JSON.stringify([systemPrompt, firstUserMessage]))
    .digest('hex');
  return `openai-proxy:${hash.slice(0, 40)}`;
}

/**
 * What a request asks: the newest message must be a user message (a turn) or a run of tool
 * results after an assistant message with tool calls (the continuation of a tool loop, answered in
 * Chat's REPLY_AFTER_TOOLS mode); then the question is the newest user message before them.
 */
export function planChat(body: ChatCompletionBody): ChatPlan {
  const { messages } = body;
  let end = messages.length;
  while (end > 0 && messages[end - 1]?.role === 'tool') end--;
  const continuation = end < messages.length;
  const last = messages[end - 1];
  if (continuation && (last?.role !== 'assistant' || (last.tool_calls ?? []).length === 0)) {
    throw errors.fieldInvalid(
      `messages[${end}]`,
      'tool messages must follow an assistant message with tool_calls',
    );
  }
  if (!continuation && last?.role !== 'user') {
    throw errors.fieldInvalid(
      `messages[${messages.length - 1}].role`,
      'the last message must be a user or tool message',
    );
  }
  const question = messages.slice(0, end).findLastIndex((m) => m.role === 'user');
  if (question === -1) throw errors.fieldInvalid('messages', 'no user message');
  const userMessage = textOf(messages[question]?.content);
  const conversation = messages.filter((m) => !isInstruction(m));
  const systemPrompt = messages
    .filter(isInstruction)
    .map((m) => textOf(m.content))
    .join('\n\n');
  const firstUser = conversation.find((m) => m.role === 'user');
  const stored = (list: readonly BodyMessage[]) =>
    list.flatMap((m) => {
      const message = sessionMessageOf(m);
      return message === undefined ? [] : [message];
    });
  return {
    model: body.model,
    systemPrompt,
    userMessage,
    history: stored(continuation ? messages.slice(0, end) : messages.slice(0, question)),
    toolResults: stored(messages.slice(end)),
    appendMode: continuation ? ChatAppendMode.REPLY_AFTER_TOOLS : ChatAppendMode.BOTH,
    tools: (body.tools ?? []).map((tool) => ({
      name: tool.function.name,
      description: tool.function.description ?? '',
      parametersJsonSchema:
        tool.function.parameters === undefined ? '' : JSON.stringify(tool.function.parameters),
    })),
    generation: generationOf(body),
    stream: body.stream === true,
    includeUsage: body.stream_options?.include_usage === true,
    externalId: conversationExternalId(systemPrompt, textOf(firstUser?.content)),
  };
}

/** The sampling parameters Chat has a field for (`max_completion_tokens` wins over `max_tokens`). */
function generationOf(body: ChatCompletionBody): ChatPlan['generation'] {
  const maxOutputTokens = body.max_completion_tokens ?? body.max_tokens;
  const stop = body.stop ?? undefined;
  return {
    ...(maxOutputTokens !== undefined && maxOutputTokens !== null ? { maxOutputTokens } : {}),
    ...(body.temperature !== undefined && body.temperature !== null ? { temperature: body.temperature } : {}),
    ...(body.top_p !== undefined && body.top_p !== null ? { topP: body.top_p } : {}),
    ...(stop === undefined ? {} : { stop: typeof stop === 'string' ? [stop] : stop }),
  };
}

/** The one Chat call of a request, for `session` under a context budget of `budgetTokens`. */
export function chatRequestOf(
  plan: ChatPlan,
  session: string,
  budgetTokens: number,
): MessageInitShape<typeof ChatRequestSchema> {
  return {
    session,
    userMessage: plan.userMessage,
    model: plan.model,
    budget: { totalTokens: budgetTokens },
    systemPrompt: plan.systemPrompt,
    tools: plan.tools,
    toolRendering: ToolRendering.PARAMETER,
    generation: plan.generation,
    appendMode: plan.appendMode,
    includeTrace: false,
  };
}

const FINISH_REASONS: Readonly<Partial<Record<FinishReason, string>>> = {
  [FinishReason.UNSPECIFIED]: 'stop',
  [FinishReason.STOP]: 'stop',
  [FinishReason.LENGTH]: 'length',
  [FinishReason.TOOL_CALLS]: 'tool_calls',
  [FinishReason.CONTENT_FILTER]: 'content_filter',
};

/** The OpenAI `finish_reason` of a Chat finish reason. */
export const finishReasonOf = (reason: FinishReason): string => FINISH_REASONS[reason] ?? 'stop';

/** The identity every object of one completion carries. */
export interface CompletionIdentity {
  readonly id: string;
  readonly created: number;
  readonly model: string;
}

/** The tool calls of a done event in the OpenAI shape (unchanged ids, names and arguments). */
export function toolCallsOf(done: ChatDoneEvent) {
  return done.toolCalls.map((call) => ({
    id: call.id,
    type: 'function' as const,
    function: { name: call.name, arguments: call.argumentsJson },
  }));
}

/** The usage object of a done event. */
export function usageOf(done: ChatDoneEvent) {
  const prompt = Number(done.tokenUsage?.promptTokens ?? 0n);
  const completion = Number(done.tokenUsage?.completionTokens ?? 0n);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** The non-streaming answer: a `chat.completion` object. */
export function completionOf(identity: CompletionIdentity, done: ChatDoneEvent) {
  const toolCalls = toolCallsOf(done);
  return {
    ...identity,
    object: 'chat.completion',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: done.text === '' && toolCalls.length > 0 ? null : done.text,
          refusal: null,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: finishReasonOf(done.finishReason),
      },
    ],
    usage: usageOf(done),
  };
}

/** One `chat.completion.chunk` of the single choice. */
export function chunkOf(identity: CompletionIdentity, delta: object, finishReason: string | null = null) {
  return {
    ...identity,
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

/**
 * The chunks that end a stream after the text deltas: the tool calls (each whole, with its
 * `index`), the finish reason, and the usage chunk (`choices: []`) when the client asked for it.
 */
export function closingChunksOf(identity: CompletionIdentity, done: ChatDoneEvent, includeUsage: boolean) {
  const toolCalls = toolCallsOf(done);
  return [
    ...(toolCalls.length > 0
      ? [chunkOf(identity, { tool_calls: toolCalls.map((call, index) => ({ index, ...call })) })]
      : []),
    chunkOf(identity, {}, finishReasonOf(done.finishReason)),
    ...(includeUsage
      ? [{ ...identity, object: 'chat.completion.chunk', choices: [], usage: usageOf(done) }]
      : []),
  ];
}
