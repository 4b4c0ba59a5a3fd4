/**
 * Retrieval-quality benchmark: ingests a dataset (bench/retrieval/README.md) into the real services
 * and scores Search by evidence recall@5/@10/@25 and NDCG@10, overall and per category, for hybrid
 * (defaults), dense-only (`text_weight: 0`) and lexical-only (`vector_weight: 0`) in the same run.
 *
 *   npm run bench:retrieval -- --dataset bench/out/locomo.dataset.json --out bench/out/locomo.retrieval.json
 *     [--top 25] [--limit-questions N] [--conversations N] [--kinds round|all] [--decay on|off]
 *     [--concurrency 4] [--wait-timeout-s 1800] [--half-life-days D] [--mmr on|off]
 *     [--candidate-multiple N] [--vector-weight W] [--text-weight W]
 *
 * `--half-life-days`, `--mmr` and `--candidate-multiple` apply to every mode; `--vector-weight` and
 * `--text-weight` replace the hybrid mode's default weights (dense-only and lexical-only keep theirs).
 * Unset flags leave the server defaults. Per-question recall is written to the JSON (`perQuestion`).
 *
 * Ingestion is `bench/lib/ingest-dataset.ts`: the all-in-one server on embedded defaults in a
 * temporary data directory (log level warn). Each conversation belongs to its user (one token per
 * user, tenant `bench`); one Engram session per dataset session; turns go through `AppendMessages`
 * in batches of at most 100 with `occur_time` = the session's `started_at` + i × 30 s, then
 * `FlushSession` (so MemCells close and extraction runs). The harness then waits until every
 * MemCell is EXTRACTED or FAILED and the index outbox is drained (`GetIndexStatus` as an admin of
 * tenant `bench`).
 *
 * Every question is searched as its conversation's user with `top_k` = --top and `reference_time` =
 * `asked_at` (or one day after the conversation's last session). A result counts for the turns it
 * derives from: a ROUND for its user and assistant messages, a MEMORY for its evidence messages
 * (message name → turn id as recorded at append time), a CHUNK for none.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { ItemKind } from '@engram/contracts/common';
import { RetrievalService, type SearchResult } from '@engram/contracts/retrieval';
import { ingestDataset, startBenchServer } from '../lib/ingest-dataset.js';
import { datasetCounts, loadDataset, type Question } from './dataset.js';
import {
  aggregate,
  bootstrapCi,
  ndcgAtK,
  pairedBootstrapCi,
  quantile,
  recallAtK,
  type ResultTurns,
  type ScoredQuestion,
} from './metrics.js';

const { values: args } = parseArgs({
  options: {
    dataset: { type: 'string' },
    out: { type: 'string' },
    top: { type: 'string', default: '25' },
    'limit-questions': { type: 'string' },
    conversations: { type: 'string' },
    kinds: { type: 'string', default: 'all' },
    decay: { type: 'string', default: 'on' },
    concurrency: { type: 'string', default: '4' },
    'wait-timeout-s': { type: 'string', default: '1800' },
    'half-life-days': { type: 'string' },
    mmr: { type: 'string' },
    'candidate-multiple': { type: 'string' },
    'vector-weight': { type: 'string' },
    'text-weight': { type: 'string' },
  },
});

const MODES = {
  hybrid: {},
  dense: { textWeight: 0 },
  lexical: { vectorWeight: 0 },
} as const;
type Mode = keyof typeof MODES;
const MODE_NAMES = Object.keys(MODES) as Mode[];
const METRICS = ['R@5', 'R@10', 'R@25', 'NDCG@10'] as const;

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** Runs `work` over `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function latency(values: number[]): { p50: number; p95: number; mean: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length);
  return {
    p50: Math.round(quantile(sorted, 0.5)),
    p95: Math.round(quantile(sorted, 0.95)),
    mean: Math.round(mean),
  };
}

async function main(): Promise<void> {
  if (args.dataset === undefined || args.out === undefined) {
    throw new Error('usage: run.ts --dataset <file> --out <file.json> [--top 25] [--limit-questions N]');
  }
  const topK = Number(args.top);
  const concurrency = Number(args.concurrency);
  const waitTimeoutMs = Number(args['wait-timeout-s']) * 1000;
  if (args.kinds !== 'round' && args.kinds !== 'all') throw new Error('--kinds must be round or all');
  if (args.decay !== 'on' && args.decay !== 'off') throw new Error('--decay must be on or off');
  const decayEnabled = args.decay === 'on';
  if (args.mmr !== undefined && args.mmr !== 'on' && args.mmr !== 'off')
    throw new Error('--mmr must be on or off');
  const num = (flag: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isFinite(n)) throw new Error(`--${flag} must be a number`);
    return n;
  };
  const sharedOptions = {
    ...(args['half-life-days'] !== undefined
      ? { halfLifeDays: num('half-life-days', args['half-life-days']) }
      : {}),
    ...(args.mmr !== undefined ? { mmrEnabled: args.mmr === 'on' } : {}),
    ...(args['candidate-multiple'] !== undefined
      ? { candidateMultiple: num('candidate-multiple', args['candidate-multiple']) }
      : {}),
  };
  const hybridWeights = {
    ...(args['vector-weight'] !== undefined
      ? { vectorWeight: num('vector-weight', args['vector-weight']) }
      : {}),
    ...(args['text-weight'] !== undefined ? { textWeight: num('text-weight', args['text-weight']) } : {}),
  };
  const modeOptions: Record<Mode, object> = {
    hybrid: { ...MODES.hybrid, ...hybridWeights },
    dense: MODES.dense,
    lexical: MODES.lexical,
  };

  const dataset = loadDataset(resolve(args.dataset));
  let conversations = dataset.conversations;
  if (args.conversations !== undefined) conversations = conversations.slice(0, Number(args.conversations));
  const kept = new Set(conversations.map((c) => c.id));
  let questions: Question[] = dataset.questions.filter((q) => kept.has(q.conversation));
  if (args['limit-questions'] !== undefined) questions = questions.slice(0, Number(args['limit-questions']));
  const counts = datasetCounts({ ...dataset, conversations, questions });
  process.stdout.write(
    `${dataset.name}: ${counts.conversations} conversations, ${counts.sessions} sessions, ${counts.turns} turns, ${counts.questions} questions\n`,
  );

  const bench = await startBenchServer('engram-retrieval-');
  const retrieval = createClient(RetrievalService, bench.transport);
  try {
    const {
      turnOfMessage,
      referenceTime,
      settled,
      appendMs,
      totalMs: ingestMs,
      memCells: cellStatus,
      index: indexKinds,
    } = await ingestDataset(bench, conversations, { waitTimeoutMs });

    // ---- Searches ----
    const userOf = new Map(conversations.map((c) => [c.id, c.user]));
    const toTurns = (result: SearchResult): ResultTurns => {
      const names =
        result.item.case === 'round'
          ? [result.item.value.userMessage, result.item.value.assistantMessage]
          : result.item.case === 'memory'
            ? (result.item.value.evidence?.messages ?? [])
            : [];
      return [...new Set(names.flatMap((n) => (turnOfMessage.has(n) ? [turnOfMessage.get(n)!] : [])))];
    };
    const ranked = new Map<string, ResultTurns[]>();
    const kindsSeen: Record<Mode, Record<string, number>> = { hybrid: {}, dense: {}, lexical: {} };
    const latencies: Record<Mode, number[]> = { hybrid: [], dense: [], lexical: [] };
    const tasks = questions.flatMap((q) => MODE_NAMES.map((mode) => ({ q, mode })));
    const searchStart = performance.now();
    let done = 0;
    await pool(tasks, concurrency, async ({ q, mode }) => {
      const auth = await bench.as(userOf.get(q.conversation)!);
      const at = q.asked_at !== undefined ? Date.parse(q.asked_at) : referenceTime.get(q.conversation)!;
      const t0 = performance.now();
      const response = await retrieval.search(
        {
          query: q.question,
          topK,
          ...(args.kinds === 'round' ? { filter: { kinds: [ItemKind.ROUND] } } : {}),
          options: {
            ...modeOptions[mode],
            ...sharedOptions,
            referenceTime: timestampFromMs(at),
            decayEnabled,
          },
        },
        auth,
      );
      latencies[mode].push(performance.now() - t0);
      for (const r of response.results.slice(0, 10)) {
        const kind = ItemKind[r.kind];
        kindsSeen[mode][kind] = (kindsSeen[mode][kind] ?? 0) + 1;
      }
      ranked.set(`${mode}|${q.id}`, response.results.map(toTurns));
      done += 1;
      if (done % 300 === 0) process.stdout.write(`  searched ${done}/${tasks.length}\n`);
    });
    const searchMs = performance.now() - searchStart;

    // ---- Metrics ----
    const perMode = {} as Record<
      Mode,
      {
        rows: ScoredQuestion[];
        agg: ReturnType<typeof aggregate>;
        ci: Record<string, { low: number; high: number }>;
      }
    >;
    for (const mode of MODE_NAMES) {
      const rows = questions.map((q) => {
        const results = ranked.get(`${mode}|${q.id}`)!;
        return {
          category: q.category,
          values: {
            'R@5': recallAtK(q.evidence, results, 5),
            'R@10': recallAtK(q.evidence, results, 10),
            'R@25': recallAtK(q.evidence, results, 25),
            'NDCG@10': ndcgAtK(q.evidence, results, 10),
          },
        };
      });
      const ci: Record<string, { low: number; high: number }> = {};
      for (const metric of ['R@5', 'R@10'] as const) {
        const interval = bootstrapCi(rows.map((r) => r.values[metric]));
        ci[metric] = { low: round3(interval.low), high: round3(interval.high) };
      }
      perMode[mode] = { rows, agg: aggregate(rows), ci };
    }
    const paired: Record<string, { mean: number; low: number; high: number }> = {};
    for (const other of ['dense', 'lexical'] as const) {
      for (const metric of ['R@5', 'R@10'] as const) {
        const interval = pairedBootstrapCi(
          perMode.hybrid.rows.map((r) => r.values[metric] ?? 0),
          perMode[other].rows.map((r) => r.values[metric] ?? 0),
        );
        paired[`hybrid-${other} ${metric}`] = {
          mean: round3(interval.mean),
          low: round3(interval.low),
          high: round3(interval.high),
        };
      }
    }

    // ---- Report ----
    const categories = Object.keys(perMode.hybrid.agg.byCategory);
    const line = (label: string, n: number, mean: Readonly<Record<string, number>>) =>
      `${label.padEnd(28)} ${String(n).padStart(5)}  ${METRICS.map((m) => (mean[m] ?? NaN).toFixed(3).padStart(7)).join(' ')}\n`;
    let table = `\n${dataset.name} (kinds ${args.kinds}, decay ${args.decay}, top ${topK})\n`;
    table += `${'mode / category'.padEnd(28)} ${'n'.padStart(5)}  ${METRICS.map((m) => m.padStart(7)).join(' ')}\n`;
    for (const mode of MODE_NAMES) {
      const { agg } = perMode[mode];
      table += line(mode, agg.overall.n, agg.overall.mean);
      if (categories.length > 1 || categories[0] !== '(none)') {
        for (const category of categories) {
          const c = agg.byCategory[category]!;
          table += line(`  ${category}`, c.n, c.mean);
        }
      }
    }
    table += '\nquery latency ms (p50 / p95):';
    for (const mode of MODE_NAMES) {
      const l = latency(latencies[mode]);
      table += ` ${mode} ${l.p50} / ${l.p95};`;
    }
    table += `\nR@10 95% CI: ${MODE_NAMES.map((m) => `${m} [${perMode[m].ci['R@10']!.low}, ${perMode[m].ci['R@10']!.high}]`).join(', ')}`;
    table += `\npaired hybrid − other: ${Object.entries(paired)
      .map(([k, v]) => `${k} ${v.mean} [${v.low}, ${v.high}]`)
      .join('; ')}`;
    table += `\ntop-10 result kinds: ${JSON.stringify(kindsSeen)}`;
    table += `\ningestion ${Math.round(ingestMs / 1000)} s (appends ${Math.round(appendMs / 1000)} s), searches ${Math.round(searchMs / 1000)} s\n`;
    process.stdout.write(table);

    const report = {
      dataset: dataset.name,
      file: args.dataset,
      machine: { cpus: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
      options: {
        top: topK,
        kinds: args.kinds,
        decayEnabled,
        concurrency,
        conversations: conversations.length,
        limitQuestions: args['limit-questions'] ?? null,
        search: sharedOptions,
        hybridWeights,
      },
      counts,
      ingestion: {
        settled,
        totalMs: Math.round(ingestMs),
        appendMs: Math.round(appendMs),
        memCells: cellStatus,
        index: indexKinds,
      },
      searchMs: Math.round(searchMs),
      modes: Object.fromEntries(
        MODE_NAMES.map((mode) => [
          mode,
          {
            overall: perMode[mode].agg.overall,
            byCategory: perMode[mode].agg.byCategory,
            ci95: perMode[mode].ci,
            latencyMs: latency(latencies[mode]),
            top10Kinds: kindsSeen[mode],
            perQuestion: perMode[mode].rows.map((r, i) => ({ id: questions[i]!.id, ...r.values })),
          },
        ]),
      ),
      pairedHybridMinus: paired,
    };
    mkdirSync(dirname(resolve(args.out)), { recursive: true });
    writeFileSync(resolve(args.out), `${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await bench.close();
  }
}

await main();
