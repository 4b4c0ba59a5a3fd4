import type { ChatModel } from '@engram/llm';
import { extractOffline } from './domain/extractors/index.js';
import type { RunExtractor } from './extraction.js';
import { createModelExtractor } from './model-extractors.js';

/** The offline extractors (no model configured): deterministic rules over the MemCell's messages. */
export const runOfflineExtractor: RunExtractor = (extractor, input) =>
  Promise.resolve({ candidates: extractOffline(input, [extractor])[extractor] });

/** The configured model's prompts (extract-v1), else the offline rules. */
export function chooseExtractor(model: ChatModel | undefined): { runExtractor: RunExtractor; model: string } {
  return model === undefined
    ? { runExtractor: runOfflineExtractor, model: '' }
    : { runExtractor: createModelExtractor(model), model: model.model };
}
