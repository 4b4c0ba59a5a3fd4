/** The OpenAI-compatible memory proxy: `/v1/chat/completions` over Chat, `/v1/models`. */
export { errorBodyOf, openAiFailureOf, type OpenAiFailure } from './errors.js';
export {
  BUDGET_HEADER,
  OPENAI_PROXY_DEFAULT_BUDGET_TOKENS,
  OPENAI_PROXY_MAX_BODY_BYTES,
  SESSION_HEADER,
  openAiProxyHandler,
  type OpenAiProxyOptions,
  type ProxyModel,
} from './handler.js';
export { conversationExternalId, planChat, type ChatPlan } from './mapping.js';
