import { extractOffline } from './domain/extractors/index.js';
import type { RunExtractor } from './extraction.js';

/** The offline extractors (no model configured): deterministic rules over the MemCell's messages. */
export const runOfflineExtractor: RunExtractor = (extractor, input) =>
  Promise.resolve({ candidates: extractOffline(input, [extractor])[extractor] });
