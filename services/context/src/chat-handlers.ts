import { create, toJson } from '@bufbuild/protobuf';
import type { CallOptions, HandlerContext, ServiceImpl } from '@connectrpc/connect';
import {
  BuildContextResponseSchema,
  ChatAppendMode,
  type ChatRequest,
  type ContextService,
} from '@engram/contracts/context';
import { MessageRole, SessionStatus, type Message, type Session } from '@engram/contracts/ingestion';
import type { ChatDoneEvent, StreamingChatModel } from '@engram/llm';
import {
  dependencyFailure,
  errors,
  forwardedCallOptions,
  requirePrincipal,
  type Principal,
} from '@engram/runtime';
import { previousResult, rememberResult, requestHash, requestKeyOf, type RequestKey } from '@engram/store';
import { buildContext, type BuiltContext } from './build-context.js';
import {
  chatTurns,
  checkChatRequest,
  contextEvent,
  doneEvent,
  hasReply,
  replayEvents,
  requireChatModel,
  storedChat,
  toolContinuationProblem,
  turnMessages,
  type ChatEvent,
  type CheckedChat,
  type ContextAssembly,
  type RecordedChat,
} from './chat-api.js';
import { chatMethodOf } from './chat-replays.js';
import type { Compactions } from './compactions.js';
import type { ContextDeps } from './deps.js';
import { reasonOf } from './failures.js';
import { readSession, readTail } from './session-access.js';
import { storedTextOf } from './stored-text.js';

type Impl = ServiceImpl<typeof ContextService>;

/** What a call appended: the stored messages' names ('' for none), and whether it appended any. */
interface Appended {
  readonly userMessage: string;
  readonly assistantMessage: string;
  readonly any: boolean;
}

const NOTHING_APPENDED: Appended = { userMessage: '', assistantMessage: '', any: false };

/** The caller's credential without the call's deadline and signal: for work that outlives the stream. */
function detached(ctx: HandlerContext): CallOptions {
  const { signal: _signal, timeoutMs: _timeout, ...options } = forwardedCallOptions(ctx);
  return options;
}

/** Chat: `Chat`. */
export class ChatHandlers implements Pick<Impl, 'chat'> {
  readonly #deps: ContextDeps;
  readonly #compactions: Compactions;

  constructor(deps: ContextDeps, compactions: Compactions) {
    this.#deps = deps;
    this.#compactions = compactions;
  }

  /**
   * Chat: assembles the context, streams the model's answer, appends the turn (one conditional
   * `AppendMessages`), and may compact in the background afterwards. A retry with the same request
   * id replays the recorded call.
   */
  readonly chat: Impl['chat'] = (request, ctx) => this.#chat(request, ctx);

  async *#chat(request: ChatRequest, ctx: HandlerContext): AsyncGenerator<ChatEvent> {
    const principal = requirePrincipal(ctx.values);
    const model = requireChatModel(this.#deps.chatModel);
    const checked = checkChatRequest(request, this.#deps.settings, model.model);
    const key = requestKeyOf(principal, chatMethodOf(checked.sessionId), request.requestId);
    const body = { ...request, generation: checked.generation };
    if (key !== undefined) {
      const previous = await previousResult<RecordedChat>(this.#deps.store, key, body);
      if (previous !== undefined) {
        yield* replayEvents(previous);
        return;
      }
    }

    const { modelName, generation } = checked;
    const built = await buildContext(this.#deps, { ...request, model: modelName }, ctx, modelName, {
      renderUserMessage: checked.appendMode !== ChatAppendMode.REPLY_AFTER_TOOLS,
    });
    const { session } = built;
    await this.#checkAppendable(session, built, checked.appendMode, request.userMessage, ctx);
    const context: ContextAssembly = request.includeContextMessages
      ? built.response
      : { ...built.response, messages: [], messageTokens: [], tools: [] };
    yield contextEvent(context, modelName, generation.maxOutputTokens, false);

    const done = yield* this.#stream(model, built, checked, ctx);
    // A client that went away while the model finished appends nothing.
    ctx.signal.throwIfAborted();
    // Append once, conditional on the session being as the context saw it.
    const appended = await this.#append(
      ctx,
      checked,
      request.userMessage,
      session,
      done,
      key === undefined ? undefined : `chat-${requestHash({ key, body }).slice(0, 40)}`,
    );
    const recorded: RecordedChat = {
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
    // The live stream relays what the model says; what is kept for replays is stored like messages.
    if (key !== undefined) {
      const stored = storedChat(recorded, storedTextOf(this.#deps.settings, principal.tenantId));
      await this.#record(key, body, stored, session);
    }
    const compactionStarted =
      (request.autoCompact ?? true) &&
      appended.any &&
      (await this.#compactIfDue(principal, checked, built, ctx));
    yield doneEvent(recorded, compactionStarted, false);
  }

  /**
   * A closed session takes no turn; REPLY_ONLY needs the user message to be the session's newest,
   * REPLY_AFTER_TOOLS tool results of the newest assistant message's calls after it.
   */
  async #checkAppendable(
    session: Session,
    built: BuiltContext,
    appendMode: ChatAppendMode,
    userMessage: string,
    ctx: HandlerContext,
  ): Promise<void> {
    if (appendMode !== ChatAppendMode.NONE && session.status === SessionStatus.CLOSED) {
      throw errors.failedPrecondition('SESSION_CLOSED', `${session.name} is closed`, { name: session.name });
    }
    if (appendMode === ChatAppendMode.REPLY_AFTER_TOOLS) {
      const problem = toolContinuationProblem(
        await this.#newestMessages(session.name, 100, ctx),
        userMessage,
      );
      if (problem !== undefined) {
        throw errors.failedPrecondition('STATE_CONFLICT', `append_mode REPLY_AFTER_TOOLS: ${problem}`, {
          name: session.name,
        });
      }
      return;
    }
    if (appendMode !== ChatAppendMode.REPLY_ONLY) return;
    // The tail ends at the newest message unless everything is compacted: then read that one.
    const newest = built.tail.messages.at(-1) ?? (await this.#newestMessages(session.name, 1, ctx))[0];
    if (newest === undefined || newest.role !== MessageRole.USER || newest.content !== userMessage) {
      throw errors.failedPrecondition(
        'STATE_CONFLICT',
        'append_mode REPLY_ONLY needs the session’s newest message to be the user message',
        { name: session.name },
      );
    }
  }

  /** Streams the model's answer as `delta` events; returns its final event. */
  async *#stream(
    model: StreamingChatModel,
    built: BuiltContext,
    { modelName, generation }: CheckedChat,
    ctx: HandlerContext,
  ): AsyncGenerator<ChatEvent, ChatDoneEvent> {
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
    return done;
  }

  /** Appends the turn in one `AppendMessages`, conditional on the session's last sequence. */
  async #append(
    ctx: HandlerContext,
    { appendMode, modelName }: CheckedChat,
    userMessage: string,
    session: Session,
    done: ChatDoneEvent,
    requestId: string | undefined,
  ): Promise<Appended> {
    const messages = turnMessages(appendMode, userMessage, done, modelName);
    if (messages.length === 0) return NOTHING_APPENDED;
    let stored: Message[];
    try {
      const response = await this.#deps.ingestion.appendMessages(
        {
          parent: session.name,
          messages,
          expectedLastSequence: session.lastSequence,
          ...(requestId !== undefined ? { requestId } : {}),
        },
        // Not the stream's signal: once the answer is complete, the append must not be cut short.
        detached(ctx),
      );
      stored = response.messages;
    } catch (error) {
      throw dependencyFailure('ingestion', error);
    }
    const user = appendMode === ChatAppendMode.BOTH ? stored[0] : undefined;
    const assistant = hasReply(done) ? stored.at(-1) : undefined;
    return { userMessage: user?.name ?? '', assistantMessage: assistant?.name ?? '', any: true };
  }

  /** Records the call for replay; the turn is appended, so a failure here must not fail the call. */
  async #record(key: RequestKey, body: unknown, recorded: RecordedChat, session: Session): Promise<void> {
    await rememberResult(this.#deps.store, key, body, recorded).catch((error: unknown) => {
      this.#deps.logger.warn({ session: session.name, reason: reasonOf(error) }, 'chat replay not recorded');
    });
  }

  /**
   * Starts a compaction in the background when the tail now exceeds the policy's threshold;
   * resolves to whether it did. A failed read only skips it (the next turn looks again).
   */
  async #compactIfDue(
    principal: Principal,
    { sessionId, policy }: CheckedChat,
    built: BuiltContext,
    ctx: HandlerContext,
  ): Promise<boolean> {
    const { ingestion, logger } = this.#deps;
    const call = forwardedCallOptions(ctx);
    const fresh = await readSession(ingestion, sessionId, call).catch(() => undefined);
    if (fresh === undefined) return false;
    const tail = await readTail(ingestion, fresh, built.state.compactedThroughSequence, call, 0).catch(
      () => undefined,
    );
    if (tail === undefined || tail.uncompactedTokens <= policy.thresholdTokens) return false;
    const compactionCall = detached(ctx);
    this.#deps.background.start(
      () => this.#compactions.compactIfDue(principal, fresh, policy, compactionCall),
      (error) => {
        logger.warn(
          { session: fresh.name, reason: reasonOf(error) },
          'automatic compaction failed; retried next turn',
        );
      },
    );
    return true;
  }

  /** The session's newest `count` messages, newest first. */
  async #newestMessages(sessionName: string, count: number, ctx: HandlerContext): Promise<Message[]> {
    try {
      const { messages } = await this.#deps.ingestion.listMessages(
        { parent: sessionName, pageSize: count, newestFirst: true },
        forwardedCallOptions(ctx),
      );
      return messages;
    } catch (error) {
      throw dependencyFailure('ingestion', error);
    }
  }
}
