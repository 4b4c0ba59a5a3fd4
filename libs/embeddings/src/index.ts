/**
 * @engram/embeddings: the Embedder port and its adapters. The local adapter (the default) runs
 * BAAI/bge-small-zh-v1.5 int8 ONNX offline from hash-verified files; the OpenAI adapter talks to any
 * OpenAI-compatible embeddings endpoint.
 */
export {
  normalize,
  type EmbedOptions,
  type Embedder,
  type EmbeddingKind,
  type EmbeddingResult,
} from './embedder.js';
export {
  BGE_ZH_QUERY_INSTRUCTION,
  LOCAL_DIMENSIONS,
  LOCAL_MAX_TOKENS,
  LOCAL_MODEL_ID,
  LocalEmbedder,
  type LocalEmbedderOptions,
} from './local-embedder.js';
export {
  LOCAL_MODEL_FILES,
  LOCAL_MODEL_NAME,
  WORKSPACE_MODEL_ROOT,
  resolveModelRoot,
  verifyLocalModel,
} from './local-model.js';
export { OpenAIEmbedder, type OpenAIEmbedderOptions } from './openai-embedder.js';
