/**
 * @engram/embeddings: the Embedder port and its adapters. The local adapter runs BAAI/bge-small-zh-v1.5
 * (int8 ONNX) or all-MiniLM-L6-v2 (fp32 ONNX) offline from hash-verified files; the bilingual
 * embedder combines the two into one vector space (the default index embedder); the OpenAI adapter
 * talks to any OpenAI-compatible embeddings endpoint.
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
  LOCAL_MODELS,
  LOCAL_MODEL_FILES,
  DEFAULT_INFERENCE_THREADS,
  LOCAL_MODEL_NAME,
  MINILM_MODEL_NAME,
  WORKSPACE_MODEL_ROOT,
  resolveModelRoot,
  verifyLocalModel,
  type LocalModelName,
  type LocalModelSpec,
  type Pooling,
} from './local-model.js';
export {
  BilingualEmbedder,
  DEFAULT_BILINGUAL_MIX,
  type BilingualEmbedderOptions,
  type BilingualMix,
} from './bilingual-embedder.js';
export { OpenAIEmbedder, type OpenAIEmbedderOptions } from './openai-embedder.js';
export { ThreadedEmbedder, localEmbedder, type LocalEmbedderRecipe } from './threaded-embedder.js';
export { rerankerInvalid, unitScore, type RerankOptions, type Reranker } from './reranker.js';
export { HttpReranker, type HttpRerankerOptions, type RerankApi } from './http-reranker.js';
export { LocalReranker, type LocalRerankerOptions } from './local-reranker.js';
