/**
 * @engram/lexical: the one tokenizer for all lexical matching in Engram (documents, memories,
 * rounds, queries) and its BM25 sparse encoding for an index that applies IDF itself.
 */
export {
  BM25_DEFAULTS,
  DEFAULT_AVG_DOC_LENGTH,
  encodeDocument,
  encodeQuery,
  type DocumentEncodingOptions,
  type SparseVector,
} from './bm25.js';
export { termId } from './term-id.js';
export { TOKENIZER_LIMITS, TOKENIZER_VERSION, tokenize } from './tokenize.js';
export { detectLanguage, splitSentences, type Lang, type Span } from './sentences.js';
export { MAX_RUN, countInBoundedPieces } from './bounded-count.js';
