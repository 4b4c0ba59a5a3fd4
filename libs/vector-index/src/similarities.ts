/**
 * Pairwise cosine similarities of stored dense vectors ({@link VectorIndex.similarities}): what MMR
 * and newer-first ask of the candidates a search keeps. Two forms behind one interface: a matrix
 * the store computed (Qdrant's distance-matrix API: the scores cross the wire, not the vectors) and
 * vectors compared here, lazily, each pair once.
 */
export interface Similarities {
  /**
   * How many of the asked points have a dense vector, when at least two do (each then has a
   * similarity to every other); 0 otherwise: a single vector has nothing to be compared with.
   */
  readonly size: number;
  /** Whether the point is one of those {@link size} counts. */
  has(id: string): boolean;
  /**
   * The cosine similarity of two different points' stored (normalized) dense vectors; undefined
   * when either has none, was not asked for, or `a === b`.
   */
  of(a: string, b: string): number | undefined;
}

/**
 * The most points whose similarities Qdrant's distance-matrix API is asked for. Its answer grows
 * with the square of the points (n · (n − 1) scores), the vectors' linearly (896 numbers each for
 * the bilingual embedder): beyond this the vectors are the smaller answer, so they are read and
 * compared here. A Search keeps at most 2 · top-k · candidate multiple candidates (80 by default).
 */
export const MATRIX_MAX_POINTS = 256;

/** Similarities of no point (fewer than two asked, or none with a dense vector). */
export const NO_SIMILARITIES: Similarities = {
  size: 0,
  has: () => false,
  of: () => undefined,
};

/** A matrix of pairwise scores by position in `ids`: `scores[i * n + j]`, NaN where none was given. */
export class SimilarityMatrix implements Similarities {
  readonly #index = new Map<string, number>();
  readonly #scores: Float64Array;

  /** From Qdrant's `matrix/offsets` answer: `scores[k]` is the score of `ids[rows[k]]`, `ids[cols[k]]`. */
  constructor(
    ids: readonly string[],
    rows: readonly number[],
    cols: readonly number[],
    scores: readonly number[],
  ) {
    const n = ids.length;
    ids.forEach((id, i) => this.#index.set(id, i));
    this.#scores = new Float64Array(n * n).fill(Number.NaN);
    for (let k = 0; k < scores.length; k++) {
      const [i, j, score] = [rows[k], cols[k], scores[k]];
      if (i === undefined || j === undefined || score === undefined || i >= n || j >= n) continue;
      this.#scores[i * n + j] = score;
      // The relation is symmetric; a score answered for only one direction serves both.
      if (Number.isNaN(this.#scores[j * n + i] ?? 0)) this.#scores[j * n + i] = score;
    }
  }

  get size(): number {
    return this.#index.size;
  }

  has(id: string): boolean {
    return this.#index.has(id);
  }

  of(a: string, b: string): number | undefined {
    const i = this.#index.get(a);
    const j = this.#index.get(b);
    if (i === undefined || j === undefined || i === j) return undefined;
    const score = this.#scores[i * this.#index.size + j] ?? Number.NaN;
    return Number.isNaN(score) ? undefined : score;
  }
}

/** Similarities computed here from the vectors themselves: dot products (normalized vectors), memoized. */
export class VectorSimilarities implements Similarities {
  readonly #vectors: ReadonlyMap<string, Float32Array>;
  readonly #memo = new Map<string, number>();

  constructor(vectors: ReadonlyMap<string, Float32Array>) {
    // As a distance matrix has no row for a lone point, a lone vector is left out.
    this.#vectors = vectors.size < 2 ? new Map() : vectors;
  }

  get size(): number {
    return this.#vectors.size;
  }

  has(id: string): boolean {
    return this.#vectors.has(id);
  }

  of(a: string, b: string): number | undefined {
    if (a === b) return undefined;
    const va = this.#vectors.get(a);
    const vb = this.#vectors.get(b);
    if (va === undefined || vb === undefined) return undefined;
    const key = a < b ? `${a}\u0000${b}` : `${b}\u0000${a}`;
    let dot = this.#memo.get(key);
    if (dot === undefined) {
      if (va.length !== vb.length) {
        throw new RangeError(`dense vectors differ in dimensions: ${va.length} vs ${vb.length}`);
      }
      dot = 0;
      for (let d = 0; d < va.length; d++) dot += (va[d] ?? 0) * (vb[d] ?? 0);
      this.#memo.set(key, dot);
    }
    return dot;
  }
}
