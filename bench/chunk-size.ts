/**
 * The chunk-size measurement behind DEFAULT_CHUNK_SIZE (docs/decisions/0009-chunking.md).
 *
 *   node --conditions=@engram/source --import tsx bench/chunk-size.ts
 *     [--data ../shared/bench-data/locomo10.json] [--sizes 300,500,800,1200,2000] [--overlap 150]
 *     [--dense] [--out bench/out/chunk-size.json]
 *
 * Every LoCoMo session becomes a plain-text document of its turns, one paragraph per turn
 * (`speaker: text`, plus ` [image: caption]` when the turn shared an image), and is chunked with
 * `chunkText`. For each question (category 5, adversarial, excluded) the conversation's chunks —
 * all its sessions — are ranked by BM25 over the project tokenizer (`@engram/lexical`): document
 * weights from `encodeDocument` with the conversation's mean chunk length in tokens, query weights
 * from `encodeQuery`, and the IDF computed here over the conversation's chunks with Qdrant's formula
 * ln(1 + (N − n + 0.5) / (n + 0.5)). With `--dense` the chunks are also ranked by cosine similarity
 * of the local embedding model (one text per call; about 9 minutes for the five sizes on 2 cores).
 *
 * Evidence recall: the fraction of a question's evidence turns found in the retrieved chunks,
 * averaged over questions. A turn is found when one retrieved chunk's range contains the whole turn
 * (`whole`), or at least half of its code points (`half`, which credits turns cut by a chunk
 * boundary). Reported at k = 5 chunks (what context assembly injects) and, to compare sizes at equal
 * context, for the best-ranked chunks that fit in a budget of 4,000 code points (≈ 1,000 tokens).
 * Evidence ids that are malformed or point to no turn are skipped and counted; a question left
 * without evidence is not scored.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { LocalEmbedder } from '@engram/embeddings';
import { chunkText, type ChunkPiece } from '@engram/ingestion';
import { encodeDocument, encodeQuery, tokenize, type SparseVector } from '@engram/lexical';

const WORKSPACE = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const K = 5;
const BUDGET = 4000;

interface Turn {
  readonly speaker: string;
  readonly dia_id: string;
  readonly text: string;
  readonly blip_caption?: string;
}
interface Qa {
  readonly question: string;
  readonly evidence?: readonly string[];
  readonly category: number;
}
interface Sample {
  readonly sample_id?: string;
  readonly conversation: Record<string, unknown>;
  readonly qa: readonly Qa[];
}

/** A turn's place: its session document and its code-point range in it. */
interface TurnSpan {
  readonly session: number;
  readonly start: number;
  readonly end: number;
}
interface Conversation {
  readonly documents: string[];
  readonly turns: Map<string, TurnSpan>;
  readonly questions: { readonly text: string; readonly category: number; readonly evidence: TurnSpan[] }[];
}
interface Chunk {
  readonly session: number;
  readonly piece: ChunkPiece;
  readonly length: number;
}

const { values: args } = parseArgs({
  options: {
    data: { type: 'string', default: resolve(WORKSPACE, '../shared/bench-data/locomo10.json') },
    sizes: { type: 'string', default: '300,500,800,1200,2000' },
    overlap: { type: 'string', default: '150' },
    dense: { type: 'boolean', default: false },
    out: { type: 'string', default: resolve(WORKSPACE, 'bench/out/chunk-size.json') },
  },
});
const sizes = args.sizes.split(',').map(Number);
const overlap = Number(args.overlap);

// ---------------------------------------------------------------------------------------------
// Data

const skipped = { malformedIds: [] as string[], questionsWithoutEvidence: 0, category5: 0 };

function loadConversations(path: string): Conversation[] {
  const samples = JSON.parse(readFileSync(path, 'utf8')) as Sample[];
  return samples.map((sample) => {
    const documents: string[] = [];
    const turns = new Map<string, TurnSpan>();
    const sessionKeys = Object.keys(sample.conversation)
      .filter((key) => /^session_\d+$/u.test(key))
      .sort((a, b) => Number(a.slice(8)) - Number(b.slice(8)));
    for (const key of sessionKeys) {
      const session = documents.length;
      let text = '';
      for (const turn of sample.conversation[key] as Turn[]) {
        if (text !== '') text += '\n\n';
        const caption = turn.blip_caption === undefined ? '' : ` [image: ${turn.blip_caption}]`;
        const paragraph = `${turn.speaker}: ${turn.text}${caption}`;
        const start = Array.from(text).length;
        text += paragraph;
        turns.set(turn.dia_id, { session, start, end: start + Array.from(paragraph).length });
      }
      documents.push(text);
    }
    const questions: Conversation['questions'] = [];
    for (const qa of sample.qa) {
      if (qa.category === 5) {
        skipped.category5++;
        continue;
      }
      const evidence: TurnSpan[] = [];
      for (const id of qa.evidence ?? []) {
        const span = turns.get(id.trim());
        if (span === undefined) skipped.malformedIds.push(id);
        else evidence.push(span);
      }
      if (evidence.length === 0) skipped.questionsWithoutEvidence++;
      else questions.push({ text: qa.question, category: qa.category, evidence });
    }
    return { documents, turns, questions };
  });
}

// ---------------------------------------------------------------------------------------------
// Ranking

/** BM25 scores of a query against every chunk of one conversation. */
class Bm25Index {
  private readonly vectors: Map<number, number>[];
  private readonly idf = new Map<number, number>();

  constructor(texts: readonly string[]) {
    const lengths = texts.map((text) => tokenize(text).length);
    const avgDocLength = Math.max(1, lengths.reduce((a, b) => a + b, 0) / Math.max(1, lengths.length));
    const encoded: SparseVector[] = texts.map((text) => encodeDocument(text, { avgDocLength }));
    this.vectors = encoded.map((v) => new Map(v.indices.map((id, i) => [id, v.values[i]!])));
    const df = new Map<number, number>();
    for (const v of encoded) for (const id of v.indices) df.set(id, (df.get(id) ?? 0) + 1);
    const n = texts.length;
    for (const [id, count] of df) this.idf.set(id, Math.log(1 + (n - count + 0.5) / (count + 0.5)));
  }

  scores(query: string): number[] {
    const q = encodeQuery(query);
    return this.vectors.map((doc) => {
      let score = 0;
      q.indices.forEach((id, i) => {
        const weight = doc.get(id);
        if (weight !== undefined) score += q.values[i]! * (this.idf.get(id) ?? 0) * weight;
      });
      return score;
    });
  }
}

/** Chunk indices by descending score, ties in document order (a stable sort). */
function rank(scores: readonly number[]): number[] {
  return scores.map((_, i) => i).sort((a, b) => scores[b]! - scores[a]! || a - b);
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}

// ---------------------------------------------------------------------------------------------
// Scoring

type Credit = 'whole' | 'half';

function found(turn: TurnSpan, chunk: Chunk, credit: Credit): boolean {
  if (chunk.session !== turn.session) return false;
  const covered = Math.min(turn.end, chunk.piece.endOffset) - Math.max(turn.start, chunk.piece.startOffset);
  const length = turn.end - turn.start;
  return credit === 'whole' ? covered === length : covered * 2 >= length;
}

function recall(evidence: readonly TurnSpan[], retrieved: readonly Chunk[], credit: Credit): number {
  const hits = evidence.filter((turn) => retrieved.some((chunk) => found(turn, chunk, credit))).length;
  return hits / evidence.length;
}

/** The best-ranked chunks whose texts fit together in `budget` code points (at least one). */
function withinBudget(ranked: readonly Chunk[], budget: number): Chunk[] {
  const taken: Chunk[] = [];
  let used = 0;
  for (const chunk of ranked) {
    if (taken.length > 0 && used + chunk.length > budget) break;
    taken.push(chunk);
    used += chunk.length;
  }
  return taken;
}

interface Scores {
  whole: number;
  half: number;
  budgetWhole: number;
  contextChars: number;
}

function emptyScores(): Scores {
  return { whole: 0, half: 0, budgetWhole: 0, contextChars: 0 };
}

function addScores(into: Scores, evidence: readonly TurnSpan[], ranked: readonly Chunk[]): void {
  const top = ranked.slice(0, K);
  into.whole += recall(evidence, top, 'whole');
  into.half += recall(evidence, top, 'half');
  into.budgetWhole += recall(evidence, withinBudget(ranked, BUDGET), 'whole');
  into.contextChars += top.reduce((sum, chunk) => sum + chunk.length, 0);
}

function mean(scores: Scores, count: number): Scores {
  return {
    whole: scores.whole / count,
    half: scores.half / count,
    budgetWhole: scores.budgetWhole / count,
    contextChars: scores.contextChars / count,
  };
}

// ---------------------------------------------------------------------------------------------

interface SizeResult {
  size: number;
  chunks: number;
  chunksPerConversation: number;
  meanChunkChars: number;
  bm25: Scores;
  bm25ByCategory: Record<number, number>;
  dense?: Scores & { seconds: number; truncated: number };
}

async function main(): Promise<void> {
  const conversations = loadConversations(args.data);
  const questionCount = conversations.reduce((sum, c) => sum + c.questions.length, 0);
  console.log(
    `LoCoMo: ${conversations.length} conversations, ${conversations.reduce((s, c) => s + c.documents.length, 0)} sessions, ` +
      `${questionCount} questions scored (${skipped.category5} category-5 excluded; ` +
      `${skipped.malformedIds.length} evidence ids skipped as malformed or missing: ${JSON.stringify(skipped.malformedIds)}; ` +
      `${skipped.questionsWithoutEvidence} questions left without evidence)`,
  );

  const embedder = args.dense ? new LocalEmbedder() : undefined;
  const queryVectors = new Map<string, Float32Array>();
  if (embedder !== undefined) {
    const started = performance.now();
    for (const conversation of conversations) {
      for (const question of conversation.questions) {
        if (queryVectors.has(question.text)) continue;
        const { vectors } = await embedder.embed([question.text], 'query');
        queryVectors.set(question.text, vectors[0]!);
      }
    }
    console.log(
      `embedded ${queryVectors.size} questions in ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
  }

  const results: SizeResult[] = [];
  for (const size of sizes) {
    const bm25 = emptyScores();
    const dense = emptyScores();
    const byCategory = new Map<number, { sum: number; count: number }>();
    let chunkCount = 0;
    let chunkChars = 0;
    let denseSeconds = 0;
    let truncated = 0;
    for (const conversation of conversations) {
      const chunks: Chunk[] = conversation.documents.flatMap((document, session) =>
        chunkText(document, { chunkSize: size, overlap, markdown: false }).map((piece) => ({
          session,
          piece,
          length: Array.from(piece.text).length,
        })),
      );
      chunkCount += chunks.length;
      chunkChars += chunks.reduce((sum, chunk) => sum + chunk.length, 0);
      const index = new Bm25Index(chunks.map((chunk) => chunk.piece.text));

      const chunkVectors: Float32Array[] = [];
      if (embedder !== undefined) {
        const started = performance.now();
        for (const chunk of chunks) {
          const result = await embedder.embed([chunk.piece.text], 'document');
          chunkVectors.push(result.vectors[0]!);
          if (result.truncated[0] === true) truncated++;
        }
        denseSeconds += (performance.now() - started) / 1000;
      }

      for (const question of conversation.questions) {
        const ranked = rank(index.scores(question.text)).map((i) => chunks[i]!);
        addScores(bm25, question.evidence, ranked);
        const category = byCategory.get(question.category) ?? { sum: 0, count: 0 };
        category.sum += recall(question.evidence, ranked.slice(0, K), 'whole');
        category.count++;
        byCategory.set(question.category, category);
        if (embedder !== undefined) {
          const query = queryVectors.get(question.text)!;
          const denseRanked = rank(chunkVectors.map((v) => dot(v, query))).map((i) => chunks[i]!);
          addScores(dense, question.evidence, denseRanked);
        }
      }
    }
    const result: SizeResult = {
      size,
      chunks: chunkCount,
      chunksPerConversation: chunkCount / conversations.length,
      meanChunkChars: chunkChars / chunkCount,
      bm25: mean(bm25, questionCount),
      bm25ByCategory: Object.fromEntries(
        [...byCategory]
          .sort(([a], [b]) => a - b)
          .map(([category, { sum, count }]) => [category, sum / count]),
      ),
      ...(embedder === undefined
        ? {}
        : { dense: { ...mean(dense, questionCount), seconds: Math.round(denseSeconds), truncated } }),
    };
    results.push(result);
    console.log(JSON.stringify(result));
  }
  await embedder?.close();

  const f = (x: number): string => x.toFixed(3);
  console.log(
    `\n| chunk size | chunks (per conv.) | mean chunk chars | BM25 R@${K} whole | BM25 R@${K} ≥½ | top-${K} chars | BM25 R@${BUDGET} chars |` +
      (args.dense
        ? ` dense R@${K} whole | dense R@${K} ≥½ | dense R@${BUDGET} chars | truncated for the model | embed s |`
        : ''),
  );
  console.log(`|---:|---:|---:|---:|---:|---:|---:|${args.dense ? '---:|---:|---:|---:|---:|' : ''}`);
  for (const r of results) {
    console.log(
      `| ${r.size} | ${r.chunks} (${r.chunksPerConversation.toFixed(0)}) | ${r.meanChunkChars.toFixed(0)} | ${f(r.bm25.whole)} | ` +
        `${f(r.bm25.half)} | ${r.bm25.contextChars.toFixed(0)} | ${f(r.bm25.budgetWhole)} |` +
        (r.dense === undefined
          ? ''
          : ` ${f(r.dense.whole)} | ${f(r.dense.half)} | ${f(r.dense.budgetWhole)} | ${r.dense.truncated} | ${r.dense.seconds} |`),
    );
  }
  console.log('\nBM25 R@5 (whole) by category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop):');
  for (const r of results) console.log(`  ${r.size}: ${JSON.stringify(r.bm25ByCategory)}`);

  mkdirSync(dirname(args.out), { recursive: true });
  writeFileSync(
    args.out,
    JSON.stringify({ overlap, k: K, budget: BUDGET, questions: questionCount, skipped, results }, null, 2),
  );
  console.log(`\nwrote ${args.out}`);
}

await main();
