/**
 * ONNX Runtime intra-op threads of the local models, side by side (decision 0042):
 *
 *   npm run bench:onnx-threads [-- --threads 1,0 --queries 300 --passages 100 --rounds 5
 *     --data ../shared/bench-data --out bench/out/onnx-threads.json]
 *
 * One bilingual embedder (bge-small-zh-v1.5 + all-MiniLM-L6-v2, what Search and the indexer run) per
 * thread count in this one process, `0` being ORT's default (a pool of one thread per core that
 * spins between inferences). Queries are LoCoMo questions and MADial zh lines, passages are four
 * consecutive LoCoMo turns or MADial zh lines (~100–200 tokens, like the index's round texts); every
 * text is embedded once by each embedder, one text per call, the embedders taking turns by rounds so
 * that both see the same machine. Per text: wall time, and the process's CPU time (every thread of
 * it: the pool's spinning counts), so the CPU per embedding is what a busy server pays for it.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { localEmbedder, resolveModelRoot, type Embedder } from '@engram/embeddings';
import { percentile } from '@engram/testing';
import { gitCommit, loadAverage, machine } from './lib/machine.js';
import { loadCorpus } from './load/corpus.js';

const { values: args } = parseArgs({
  options: {
    threads: { type: 'string', default: '1,0' },
    queries: { type: 'string', default: '300' },
    passages: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '5' },
    data: { type: 'string', default: '../shared/bench-data' },
    out: { type: 'string', default: 'bench/out/onnx-threads.json' },
  },
});

function count(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: a positive integer`);
  return n;
}
const threadCounts = args.threads.split(',').map((t) => {
  const n = Number(t);
  if (!Number.isInteger(n) || n < 0 || n > 64) throw new Error('--threads: integers 0–64, e.g. 1,0');
  return n;
});
const queryCount = count('queries', args.queries);
const passageCount = count('passages', args.passages);
const rounds = count('rounds', args.rounds);

const corpus = loadCorpus(resolve(args.data));
const enQuestions = corpus.en.flatMap((c) => c.questions);
const zhLines = corpus.zhDialogues.flat();
const enTurns = corpus.en.flatMap((c) => c.turns);
/** Every fifth text Chinese, as in the load benchmark's users. */
const queries = Array.from({ length: queryCount }, (_, i) =>
  i % 5 === 4 ? zhLines[(i * 7) % zhLines.length]! : enQuestions[(i * 13) % enQuestions.length]!,
);
const passages = Array.from({ length: passageCount }, (_, i) => {
  const source = i % 5 === 4 ? zhLines : enTurns;
  const start = (i * 41) % (source.length - 4);
  return source.slice(start, start + 4).join('\n');
});

interface Sample {
  readonly wallMs: number;
  readonly cpuMs: number;
}

async function timed(embedder: Embedder, text: string, kind: 'query' | 'document'): Promise<Sample> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  await embedder.embed([text], kind);
  const wallMs = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { wallMs, cpuMs: (used.user + used.system) / 1000 };
}

function summary(samples: readonly Sample[]) {
  const wall = samples.map((s) => s.wallMs).sort((a, b) => a - b);
  const cpu = samples.map((s) => s.cpuMs).sort((a, b) => a - b);
  const totalWall = wall.reduce((a, b) => a + b, 0);
  const totalCpu = cpu.reduce((a, b) => a + b, 0);
  const r = (x: number) => Math.round(x * 100) / 100;
  return {
    texts: samples.length,
    textsPerSecond: r((samples.length / totalWall) * 1000),
    wallMs: { p50: r(percentile(wall, 50)), p95: r(percentile(wall, 95)), p99: r(percentile(wall, 99)) },
    cpuMsPerText: { mean: r(totalCpu / samples.length), p50: r(percentile(cpu, 50)) },
  };
}

const startedAt = new Date().toISOString();
const loadBefore = loadAverage();
console.log(
  `bench:onnx-threads — threads ${threadCounts.join(', ')}; ${queries.length} queries, ${passages.length} passages, ` +
    `${rounds} rounds; load average ${loadBefore.join(' / ')}`,
);
const embedders = threadCounts.map((threads) =>
  localEmbedder({ kind: 'bilingual', modelRoot: resolveModelRoot(process.env['ENGRAM_MODEL_DIR']), threads }),
);
const samples = threadCounts.map(() => ({ query: [] as Sample[], passage: [] as Sample[] }));
// Warm-up: load every session and run a few texts through each.
for (const embedder of embedders)
  for (const text of [...queries.slice(0, 10), ...passages.slice(0, 5)])
    await embedder.embed([text], 'document');
for (let round = 0; round < rounds; round++) {
  const q = queries.slice(
    Math.floor((round * queries.length) / rounds),
    Math.floor(((round + 1) * queries.length) / rounds),
  );
  const p = passages.slice(
    Math.floor((round * passages.length) / rounds),
    Math.floor(((round + 1) * passages.length) / rounds),
  );
  // Alternate which embedder goes first, and let the other's pool settle before each turn.
  const order =
    round % 2 === 0 ? embedders.map((_, i) => i) : embedders.map((_, i) => embedders.length - 1 - i);
  for (const i of order) {
    await sleep(50);
    for (const text of q) samples[i]!.query.push(await timed(embedders[i]!, text, 'query'));
    for (const text of p) samples[i]!.passage.push(await timed(embedders[i]!, text, 'document'));
  }
}
await Promise.all(embedders.map((e) => e.close()));

const results = threadCounts.map((threads, i) => ({
  threads,
  query: summary(samples[i]!.query),
  passage: summary(samples[i]!.passage),
}));
console.log('\nthreads  texts     texts/s  wall p50  wall p95  wall p99  CPU ms/text (mean)');
for (const r of results) {
  for (const kind of ['query', 'passage'] as const) {
    const s = r[kind];
    console.log(
      `${String(r.threads === 0 ? '0 (ORT)' : r.threads).padEnd(8)} ${kind.padEnd(8)} ${String(s.textsPerSecond).padStart(8)} ` +
        `${String(s.wallMs.p50).padStart(9)} ${String(s.wallMs.p95).padStart(9)} ${String(s.wallMs.p99).padStart(9)} ` +
        String(s.cpuMsPerText.mean).padStart(10),
    );
  }
}
const loadAfter = loadAverage();
console.log(`load average after: ${loadAfter.join(' / ')}`);
const out = resolve(args.out);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify({ startedAt, commit: gitCommit(), machine: machine(), loadBefore, loadAfter, results }, null, 2)}\n`,
);
console.log(`wrote ${out}`);
