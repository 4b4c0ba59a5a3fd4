/**
 * Compaction (`CompactSession`): older turns become the rolling summary, key points and open
 * loops. Two implementations of one port: with a chat model (`model.ts`), or offline and
 * deterministic with the local embedder (`offline.ts`).
 */
export { MAX_ITEM_CHARS, MAX_ITEM_SOURCES, type CompactOptions, type Compactor } from './compactor.js';
export { conversationLanguage, type Lang } from './cues.js';
export { fitSummary, modelCompactor, type ModelCompactorOptions } from './model.js';
export { OFFLINE_COMPACTION, offlineCompactor } from './offline.js';
export {
  COMPACTION_SCHEMA_NAME,
  COMPACT_PROMPT_VERSION,
  compactionAnswerSchema,
  compactionPrompt,
  TRANSCRIPT_LIMITS,
  type CompactionAnswer,
} from './prompt.js';
