import type { ModelCatalog, StreamingChatModel, UpstreamModel } from '@engram/llm';
import { requireChatModel } from './chat-api.js';
import type { ContextResources } from './resources.js';

/**
 * The models the OpenAI-compatible proxy lists (`GET /v1/models`): the upstream's own list, or,
 * when the upstream has no `/models` route, the chat models this server allows (the configured one
 * and `ENGRAM_CHAT_ALLOWED_MODELS`). Without a configured model it rejects like Chat does, with
 * FAILED_PRECONDITION `MODEL_NOT_CONFIGURED` naming the settings.
 */
export function listChatModels(
  resources: Pick<ContextResources, 'settings'> & {
    readonly chatModel?: (StreamingChatModel & ModelCatalog) | undefined;
  },
): (signal?: AbortSignal) => Promise<readonly UpstreamModel[]> {
  return async (signal) => {
    const model = requireChatModel(resources.chatModel);
    const listed = await resources.chatModel?.listModels(signal);
    if (listed !== undefined) return listed;
    const allowed = new Set([model.model, ...resources.settings.allowedChatModels]);
    return [...allowed].map((id) => ({ id, created: 0, ownedBy: '' }));
  };
}
