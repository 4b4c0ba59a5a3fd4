/**
 * @engram/lexical: the one tokenizer for all lexical matching in Engram (documents, memories,
 * rounds, queries) and its BM25 sparse encoding for an index that applies IDF itself; sentence
 * splitting and language detection; and time expressions resolved against a reference time
 * (extraction's dates, Search's query time windows).
 */
export {
  BM25_DEFAULTS,
  DEFAULT_AVG_DOC_LENGTH,
  encodeDocument,
  encodeQuery,
  encodeQueryTerms,
  type DocumentEncodingOptions,
  type SparseVector,
} from './bm25.js';
export { termId } from './term-id.js';
export { TOKENIZER_LIMITS, TOKENIZER_VERSION, tokenize } from './tokenize.js';
export { detectLanguage, splitSentences, type Lang, type Span } from './sentences.js';
export { MAX_RUN, countInBoundedPieces } from './bounded-count.js';
export {
  REPLACED_ZH_PARSER,
  addDays,
  addMonths,
  describeMention,
  findDuration,
  findTimeMentions,
  fromLocal,
  isoWeekday,
  localDateString,
  localDateTimeString,
  mondayOf,
  offsetMinutes,
  parseNumber,
  safeTimeZone,
  toLocal,
  type CivilDate,
  type Direction,
  type Duration,
  type Granularity,
  type LocalDateTime,
  type TimeMention,
  type TimeReference,
} from './dates.js';
