/**
 * @engram/llm: the ChatModel port and its adapter over any OpenAI-compatible chat-completions
 * endpoint. Answers are JSON checked against a zod schema; invalid ones are shown their error and
 * retried. Configured from `ENGRAM_LLM_*` (`llmEnvShape`, `chatModelFromEnv`).
 */
export type {
  ChatMessage,
  ChatModel,
  ChatUsage,
  JsonCompletion,
  JsonCompletionRequest,
} from './chat-model.js';
export { chatModelFromEnv, llmEnvShape, type LlmEnv } from './config.js';
export { MODEL_DEPENDENCY, isModelOutputInvalid, modelOutputInvalid } from './errors.js';
export { DEFAULT_MAX_ATTEMPTS, OpenAIChatModel, type OpenAIChatModelOptions } from './openai-chat-model.js';
export { describeOpenAIError, retryAfterMs, retryableOpenAIError } from './openai-errors.js';
