import { detectLanguage } from '@engram/lexical';
import {
  checkOpen,
  checkTexts,
  normalize,
  type EmbedOptions,
  type Embedder,
  type EmbeddingKind,
  type EmbeddingResult,
} from './embedder.js';

/** How much of a query's similarity comes from the second (English) model, per query language. */
export interface BilingualMix {
  /** For queries detected as English (or any Latin-script language). In [0, 1]. */
  readonly en: number;
  /** For queries detected as Chinese. In [0, 1]; 0 skips the English model for them. */
  readonly zh: number;
}

/**
 * The measured default mix (bench/retrieval, tuning splits; docs/benchmarks.md "Recall by
 * default"): English queries take 30 % of their dense similarity from MiniLM, Chinese queries none
 * (MiniLM has no Chinese training; bge-small-zh carries Chinese and cross-lingual recall).
 */
export const DEFAULT_BILINGUAL_MIX: BilingualMix = { en: 0.3, zh: 0 };

export interface BilingualEmbedderOptions {
  /** The first model: multilingual (Chinese-first) bge-small-zh in the default setup. */
  readonly primary: Embedder;
  /** The second model: English MiniLM in the default setup. */
  readonly secondary: Embedder;
  readonly mix?: BilingualMix;
}

/**
 * Two embedding models as one vector space, so one dense vector per point and one nearest-neighbour
 * query serve both (decision 0021). A stored text is embedded by both models and the two unit
 * vectors are concatenated, each scaled by 1/√2, so the result is unit length:
 * `d = [p(d)/√2, s(d)/√2]`. A query is weighted by its language with the mix `a`:
 * `q = normalize([(1 − a)·p(q), a·s(q)])`, so that the cosine of query and stored vector is
 *
 *   `cos(q, d) = ((1 − a)·cos_p + a·cos_s) / (√2 · √((1 − a)² + a²))`,
 *
 * a fixed positive multiple of the convex combination of the two models' cosines: the ranking is
 * that of `(1 − a)·cos_p + a·cos_s`. With `a = 0` the second model is not run for the query.
 * The language is that of {@link detectLanguage} (CJK characters against Latin words).
 */
export class BilingualEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  readonly mix: BilingualMix;
  readonly #primary: Embedder;
  readonly #secondary: Embedder;
  #closed = false;

  constructor(options: BilingualEmbedderOptions) {
    this.#primary = options.primary;
    this.#secondary = options.secondary;
    this.mix = options.mix ?? DEFAULT_BILINGUAL_MIX;
    for (const [language, a] of Object.entries(this.mix)) {
      if (!(a >= 0 && a <= 1)) throw new RangeError(`mix.${language} must be in [0, 1], got ${String(a)}`);
    }
    this.model = `bilingual(${this.#primary.model}+${this.#secondary.model})`;
    this.dimensions = this.#primary.dimensions + this.#secondary.dimensions;
  }

  /** The weight of the second model for one query text. */
  mixFor(text: string): number {
    return detectLanguage(text) === 'zh' ? this.mix.zh : this.mix.en;
  }

  async embed(
    texts: readonly string[],
    kind: EmbeddingKind,
    options: EmbedOptions = {},
  ): Promise<EmbeddingResult> {
    checkOpen(this.#closed, this.model);
    checkTexts(texts);
    // A query's weight of the second model; a query whose weight is 0 does not run it at all.
    const mixes = kind === 'query' ? texts.map((text) => this.mixFor(text)) : undefined;
    const uses = texts.map((_, i) => mixes === undefined || (mixes[i] ?? 0) > 0);
    const [primary, secondary] = await Promise.all([
      this.#primary.embed(texts, kind, options),
      uses.some(Boolean)
        ? this.#secondary.embed(
            texts.filter((_, i) => uses[i]),
            kind,
            options,
          )
        : Promise.resolve(undefined),
    ]);
    const vectors: Float32Array[] = [];
    const truncated: boolean[] = [];
    let next = 0;
    primary.vectors.forEach((p, i) => {
      let s: Float32Array | undefined;
      let sTruncated = false;
      if (uses[i] === true && secondary !== undefined) {
        s = secondary.vectors[next];
        sTruncated = secondary.truncated[next] ?? false;
        next += 1;
      }
      // Documents: both halves scaled by 1/√2 (unit length); queries: weighted, then normalized.
      const a = mixes?.[i];
      const [wp, ws] = a === undefined ? [Math.SQRT1_2, Math.SQRT1_2] : [1 - a, a];
      const out = new Float32Array(this.dimensions);
      p.forEach((x, j) => (out[j] = x * wp));
      s?.forEach((x, j) => (out[p.length + j] = x * ws));
      if (a !== undefined) normalize(out);
      vectors.push(out);
      truncated.push((primary.truncated[i] ?? false) || sTruncated);
    });
    return { vectors, truncated, model: this.model, dimensions: this.dimensions };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([this.#primary.close(), this.#secondary.close()]);
  }
}
