/**
 * @engram/llm: the ChatModel and StreamingChatModel ports and their adapter over any
 * OpenAI-compatible chat-completions endpoint. JSON answers are checked against a zod schema;
 * invalid ones are shown their error and retried. Chat replies stream as text deltas and a done
 * event with tool calls, finish reason and usage. Configured from `ENGRAM_LLM_*` (`llmEnvShape`, `chatModelFromEnv`).
 */
export type {
  ChatDeltaEvent,
  ChatDoneEvent,
  ChatFinishReason,
  ChatMessage,
  ChatModel,
  ChatStreamEvent,
  ChatTool,
  ChatToolCall,
  ChatTurn,
  ChatUsage,
  JsonCompletion,
  JsonCompletionRequest,
  ModelCatalog,
  StreamChatRequest,
  StreamingChatModel,
  UpstreamModel,
} from './chat-model.js';
export { chatModelFromEnv, llmEnvShape, type LlmEnv } from './config.js';
export { MODEL_DEPENDENCY, isModelOutputInvalid, modelOutputInvalid } from './errors.js';
export { DEFAULT_MAX_ATTEMPTS, OpenAIChatModel, type OpenAIChatModelOptions } from './openai-chat-model.js';
export { oneLine } from './transcript.js';
