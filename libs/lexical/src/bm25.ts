import { termId } from './term-id.js';
import { tokenize } from './tokenize.js';

/**
 * A sparse vector: strictly increasing term ids (uint32, from `termId`) and their positive
 * weights. Structurally the same as the VectorIndex port's `SparseVector`.
 */
export interface SparseVector {
  indices: number[];
  values: number[];
}

/**
 * The average document length (in tokens) that BM25 normalizes against when the caller gives
 * none. 32 sits between Engram's short items and its long ones: memories are a sentence or two
 * (10–30 tokens), conversation rounds a few dozen, document chunks a few hundred. Measured with
 * `tokenize` on the bench data: a LoCoMo turn averages 14 tokens, a MADial memory 25 (zh) and 12
 * (en); using 32 instead of those exact means changed recall@10 by less than 0.01 on each.
 *
 * Document weights are stored in the index, so one collection must use one value throughout. A
 * caller that wants a corpus statistic computes the mean of `tokenize(text).length` over the
 * items it indexes, records it with the collection, and passes it as `avgDocLength` to every
 * `encodeDocument` call for that collection (a reindex is the time to recompute it).
 */
export const DEFAULT_AVG_DOC_LENGTH = 32;

/** BM25 parameters for `encodeDocument`. */
export interface DocumentEncodingOptions {
  /** Term-frequency saturation, 0 to 100. Default 1.2. */
  readonly k1?: number;
  /** Length normalization, 0 (none) to 1 (full). Default 0.75. */
  readonly b?: number;
  /** Average document length in tokens, ≥ 1. Default DEFAULT_AVG_DOC_LENGTH. */
  readonly avgDocLength?: number;
}

/** The documented defaults, filled in one place. */
export const BM25_DEFAULTS: Required<DocumentEncodingOptions> = {
  k1: 1.2,
  b: 0.75,
  avgDocLength: DEFAULT_AVG_DOC_LENGTH,
};

/**
 * The document side of BM25: for each term, the saturated, length-normalized term frequency
 * tf·(k1+1) / (tf + k1·(1 − b + b·len/avgDocLength)), where len is the number of tokens. The
 * index multiplies it by the term's IDF (Qdrant's IDF modifier) and by the query weight. Tokens
 * whose ids collide count as one term. An empty or token-free text gives an empty vector.
 *
 * @throws RangeError when an option is out of range (k1 outside [0, 100], b outside [0, 1],
 *   avgDocLength below 1 or not finite). The bounds keep every weight positive and finite.
 */
export function encodeDocument(text: string, options: DocumentEncodingOptions = {}): SparseVector {
  const { k1, b, avgDocLength } = resolveOptions(options);
  const tokens = tokenize(text);
  const frequencies = countByTermId(tokens);
  const lengthNorm = k1 * (1 - b + (b * tokens.length) / avgDocLength);
  return toSparseVector(frequencies, (tf) => (tf * (k1 + 1)) / (tf + lengthNorm));
}

/**
 * The query side of BM25: weight 1 per distinct term, as in classic BM25, which ignores query term
 * frequency (a repeated word or a CJK word that is also a bigram does not count twice). Distinct
 * tokens whose ids collide add up. The IDF comes from the index.
 */
export function encodeQuery(text: string): SparseVector {
  return encodeQueryTerms(new Set(tokenize(text)));
}

/**
 * {@link encodeQuery} of a query already tokenized: `terms` are its distinct tokens (`new
 * Set(tokenize(text))`), so a caller that needs the tokens too (Search's matched terms) tokenizes
 * the query once. `encodeQueryTerms(new Set(tokenize(t)))` equals `encodeQuery(t)`.
 */
export function encodeQueryTerms(terms: Iterable<string>): SparseVector {
  return toSparseVector(countByTermId(terms), (count) => count);
}

function resolveOptions(options: DocumentEncodingOptions): Required<DocumentEncodingOptions> {
  const k1 = options.k1 ?? BM25_DEFAULTS.k1;
  const b = options.b ?? BM25_DEFAULTS.b;
  const avgDocLength = options.avgDocLength ?? BM25_DEFAULTS.avgDocLength;
  // Negated comparisons so that NaN fails them too.
  if (!(k1 >= 0 && k1 <= 100)) throw new RangeError(`k1 must be within [0, 100], got ${k1}`);
  if (!(b >= 0 && b <= 1)) throw new RangeError(`b must be within [0, 1], got ${b}`);
  if (!(avgDocLength >= 1 && Number.isFinite(avgDocLength))) {
    throw new RangeError(`avgDocLength must be a finite number ≥ 1, got ${avgDocLength}`);
  }
  return { k1, b, avgDocLength };
}

function countByTermId(tokens: Iterable<string>): Map<number, number> {
  const counts = new Map<number, number>();
  for (const token of tokens) {
    const id = termId(token);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

function toSparseVector(counts: Map<number, number>, weight: (count: number) => number): SparseVector {
  const indices = [...counts.keys()].sort((x, y) => x - y);
  return { indices, values: indices.map((id) => weight(counts.get(id) ?? 0)) };
}
