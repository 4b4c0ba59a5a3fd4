/** Pieces of {@link OpenAIChatModel.streamChat}: request mapping, tool-call assembly, error reading. */
import { Code } from '@connectrpc/connect';
import { APIError } from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { EngramError, errors } from '@engram/errors';
import { describeOpenAIError } from '@engram/errors/openai';
import type { ChatFinishReason, ChatTool, ChatToolCall, ChatTurn } from './chat-model.js';

/** A chat turn as a chat-completions message. */
export function toTurnParam(turn: ChatTurn, index: number): ChatCompletionMessageParam {
  const name = turn.name === undefined || turn.name === '' ? {} : { name: turn.name };
  switch (turn.role) {
    case 'system':
      return { role: 'system', content: turn.content, ...name };
    case 'user':
      return { role: 'user', content: turn.content, ...name };
    case 'assistant': {
      const calls = turn.toolCalls ?? [];
      if (calls.length === 0) return { role: 'assistant', content: turn.content, ...name };
      return {
        role: 'assistant',
        // A reply that only called tools: OpenAI wants null rather than an empty string.
        content: turn.content === '' ? null : turn.content,
        ...name,
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: 'function' as const,
          // engram.common.v1.ToolCall: empty arguments are sent as `{}`.
          function: { name: call.name, arguments: call.argumentsJson === '' ? '{}' : call.argumentsJson },
        })),
      };
    }
    case 'tool':
      if (turn.toolCallId === undefined || turn.toolCallId === '') {
        throw errors.fieldInvalid(
          `messages[${index}].tool_call_id`,
          'a tool message must name its tool call',
        );
      }
      // Chat-completions tool messages take no name.
      return { role: 'tool', content: turn.content, tool_call_id: turn.toolCallId };
  }
}

/** A tool as a chat-completions `function` tool; the schema is passed on verbatim. */
export function toToolParam(tool: ChatTool, index: number): ChatCompletionTool {
  let parameters: Record<string, unknown> = { type: 'object', properties: {} };
  if (tool.parametersJsonSchema !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(tool.parametersJsonSchema);
    } catch {
      parsed = undefined;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw errors.fieldInvalid(`tools[${index}].parameters_json_schema`, 'must be a JSON object');
    }
    parameters = parsed as Record<string, unknown>;
  }
  return {
    type: 'function',
    function: {
      name: tool.name,
      ...(tool.description === '' ? {} : { description: tool.description }),
      parameters,
    },
  };
}

/**
 * Assembles streamed tool-call fragments. OpenAI sends a call's id, type and name in its first
 * fragment and the arguments in pieces, all keyed by `index`. Tolerated variants of compatible
 * servers: the id or name repeated in every fragment, every call sent whole under index 0 (a new
 * id at a used index starts a new call), no id at all (one is made up: the contract needs one).
 */
export class ToolCallAssembly {
  private readonly calls: { id: string; name: string; argumentsJson: string }[] = [];
  private readonly byIndex = new Map<number, number>();

  add(fragment: ChatCompletionChunk.Choice.Delta.ToolCall): void {
    const index = typeof fragment.index === 'number' ? fragment.index : this.calls.length;
    const position = this.byIndex.get(index);
    let call = position === undefined ? undefined : this.calls[position];
    const id = fragment.id ?? '';
    if (call === undefined || (id !== '' && call.id !== '' && id !== call.id)) {
      call = { id: '', name: '', argumentsJson: '' };
      this.byIndex.set(index, this.calls.push(call) - 1);
    }
    if (id !== '') call.id = id;
    const name = fragment.function?.name ?? '';
    if (name !== '' && name !== call.name) call.name += name;
    call.argumentsJson += fragment.function?.arguments ?? '';
  }

  /** The calls in order; throws a description when one has no name. */
  finish(): ChatToolCall[] {
    return this.calls.map((call, position) => {
      if (call.name === '') throw new Error(`tool call #${position + 1} has no name`);
      return {
        id: call.id === '' ? `call_${position + 1}` : call.id,
        name: call.name,
        argumentsJson: call.argumentsJson,
      };
    });
  }

  get size(): number {
    return this.calls.length;
  }
}

/** The contract's finish reason; unknown values of compatible servers (`eos`, …) read as `stop`. */
export function finishReasonOf(reason: string): ChatFinishReason {
  switch (reason) {
    case 'length':
    case 'content_filter':
    case 'tool_calls':
      return reason;
    case 'function_call': // the deprecated name of tool_calls
      return 'tool_calls';
    default:
      return 'stop';
  }
}

/** How OpenAI, vLLM, llama.cpp, LM Studio and gateways word "the prompt does not fit the window". */
const CONTEXT_TOO_LONG =
  /context[_ ]length|maximum context|context window|context size|exceeds? the (?:model'?s? )?(?:maximum )?(?:context|token)|too many tokens|prompt is too long/iu;

/** Request parameters a client of `Chat` sets, by their field in `engram.context.v1.GenerationOptions`. */
const GENERATION_FIELDS: Readonly<Record<string, string>> = {
  temperature: 'generation.temperature',
  top_p: 'generation.top_p',
  stop: 'generation.stop',
  max_tokens: 'generation.max_output_tokens',
  max_completion_tokens: 'generation.max_output_tokens',
};

/**
 * The INVALID_ARGUMENT `FIELD_INVALID` error for an endpoint's refusal the caller can fix, or
 * `undefined` for a failure of the endpoint itself (then UNAVAILABLE):
 * - 400/413/422 saying the context is too long (OpenAI code `context_length_exceeded`, or the
 *   message of another server) → field `budget.total_tokens`;
 * - 404 or code `model_not_found` for a model the request named → field `model` (the configured
 *   model missing is the operator's problem, not the caller's: UNAVAILABLE);
 * - 400/422 whose `param` is a tool or a sampling parameter → field `tools` or `generation.*`.
 * Any other 4xx (401/403 bad credentials, 400 about our own request shape) is UNAVAILABLE: the
 * caller cannot fix it.
 */
export function endpointRefusal(error: unknown, requestedModel: string | undefined): EngramError | undefined {
  if (!(error instanceof APIError)) return undefined;
  // `instanceof` narrows to `APIError<any, …>`: back to the declared defaults.
  const refused = error as APIError;
  const status = refused.status;
  if (status === undefined) return undefined;
  const code = refused.code ?? '';
  const why = describeOpenAIError(refused);
  const invalid = (field: string, message: string) =>
    new EngramError(
      Code.InvalidArgument,
      'FIELD_INVALID',
      `${field} is invalid: ${message}`,
      { field },
      {
        cause: error,
      },
    );
  if (
    (status === 400 || status === 413 || status === 422) &&
    (code === 'context_length_exceeded' || CONTEXT_TOO_LONG.test(refused.message))
  ) {
    return invalid('budget.total_tokens', `the request is too long for the model (${why}); lower it`);
  }
  if (requestedModel !== undefined && (status === 404 || code === 'model_not_found')) {
    return invalid('model', `the model endpoint does not serve ${requestedModel} (${why})`);
  }
  if (status === 400 || status === 422) {
    const param = refused.param ?? '';
    const field = param.startsWith('tools') ? 'tools' : GENERATION_FIELDS[param];
    if (field !== undefined) return invalid(field, `the model endpoint refused it (${why})`);
  }
  return undefined;
}
