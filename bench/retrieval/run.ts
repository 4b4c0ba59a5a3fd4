/**
 * Retrieval-quality benchmark: ingests a dataset (bench/retrieval/README.md) into the real services
 * and scores Search by evidence recall@5/@10/@25 and NDCG@10, overall and per category, for several
 * modes side by side in the same run, on the fixed tuning and report splits (`splits.ts`):
 *
 * - `defaults`: no ranking option set (the server's defaults);
 * - `decay-off`: `decay_enabled: false`;
 * - `dense`: `text_weight: 0` (dense-only); `lexical`: `vector_weight: 0` (lexical-only);
 * - `seed`: the seed's formula (`fusion: MIN_MAX`, `recency: MULTIPLICATIVE`, `time_window_weight: 0`);
 * - any `--variant name='{"fusion":"RRF"}'` (SearchOptions fields in JSON, enums by name).
 *
 *   npm run bench:retrieval -- --dataset bench/out/locomo.dataset.json --out bench/out/locomo.retrieval.json
 *     [--split tune|report|all] [--modes defaults,decay-off,dense,lexical,seed] [--variant name=JSON]…
 *     [--top 25] [--limit-questions N] [--kinds round|all] [--concurrency 4] [--wait-timeout-s 1800]
 *
 * Every mode is compared with `defaults` by a paired bootstrap (R@5, R@10) per split. Questions
 * with `superseded` turns (the recency set) are also scored by `newer-first`: whether the newer
 * statement outranks the one it replaced. Per-question values are in the JSON (`perQuestion`).
 *
 * Ingestion is `bench/lib/ingest-dataset.ts`: the all-in-one server on embedded defaults in a
 * temporary data directory (log level warn). Each conversation belongs to its user (one token per
 * user, tenant `bench`); one Engram session per dataset session; turns go through `AppendMessages`
 * in batches of at most 100 with `occur_time` = the session's `started_at` + i × 30 s, then
 * `FlushSession` (so MemCells close and extraction runs). The harness then waits until every
 * MemCell is EXTRACTED or FAILED and the index outbox is drained (`GetIndexStatus` as an admin of
 * tenant `bench`). Only conversations with questions in the chosen split are ingested.
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
import { fromJson, type JsonObject } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { ItemKind } from '@engram/contracts/common';
import {
  RetrievalService,
  SearchOptionsSchema,
  type SearchOptions,
  type SearchResult,
} from '@engram/contracts/retrieval';
import { quantile } from '@engram/testing';
import { ingestDataset, startBenchServer } from '../lib/ingest-dataset.js';
import { datasetCounts, loadDataset, type Question } from './dataset.js';
import {
  aggregate,
  bootstrapCi,
  ndcgAtK,
  newerFirst,
  pairedBootstrapCi,
  recallAtK,
  type ResultTurns,
  type ScoredQuestion,
} from './metrics.js';
import { splitsOf, type Split } from './splits.js';

const { values: args } = parseArgs({
  options: {
    dataset: { type: 'string' },
    out: { type: 'string' },
    split: { type: 'string', default: 'all' },
    modes: { type: 'string', default: 'defaults,decay-off,dense,lexical' },
    variant: { type: 'string', multiple: true, default: [] },
    top: { type: 'string', default: '25' },
    'limit-questions': { type: 'string' },
    kinds: { type: 'string', default: 'all' },
    concurrency: { type: 'string', default: '4' },
    'wait-timeout-s': { type: 'string', default: '1800' },
  },
});

/** The standard modes: SearchOptions JSON (proto3 JSON names, enums by name). */
const STANDARD_MODES: Record<string, JsonObject> = {
  defaults: {},
  'decay-off': { decayEnabled: false },
  dense: { textWeight: 0 },
  lexical: { vectorWeight: 0 },
  seed: { fusion: 'FUSION_MIN_MAX', recency: 'RECENCY_MULTIPLICATIVE', timeWindowWeight: 0 },
};
const METRICS = ['R@5', 'R@10', 'R@25', 'NDCG@10'] as const;
const SPLITS: readonly Split[] = ['tune', 'report'];

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
    p50: Math.round(quantile(sorted, 0.5) * 10) / 10,
    p95: Math.round(quantile(sorted, 0.95) * 10) / 10,
    mean: Math.round(mean * 10) / 10,
  };
}

/** `name=JSON` of `--variant`, or a standard mode name. */
function modeOptions(): Map<string, JsonObject> {
  const modes = new Map<string, JsonObject>();
  for (const name of args.modes.split(',').filter((m) => m !== '')) {
    const options = STANDARD_MODES[name];
    if (options === undefined)
      throw new Error(`unknown mode ${name}: one of ${Object.keys(STANDARD_MODES).join(', ')}`);
    modes.set(name, options);
  }
  for (const spec of args.variant) {
    const eq = spec.indexOf('=');
    if (eq < 1) throw new Error(`--variant must be name=JSON, got ${spec}`);
    modes.set(spec.slice(0, eq), JSON.parse(spec.slice(eq + 1)) as JsonObject);
  }
  if (!modes.has('defaults')) modes.set('defaults', {});
  return modes;
}

interface ModeRows {
  rows: (ScoredQuestion & { id: string; split: Split; newerFirst?: number })[];
}

// eslint-disable-next-line max-lines-per-function -- a benchmark script read top to bottom: its phases run in the order they are reported and share the run's state.
async function main(): Promise<void> {
  if (args.dataset === undefined || args.out === undefined) {
    throw new Error('usage: run.ts --dataset <file> --out <file.json> [--split tune|report|all] [--modes …]');
  }
  const topK = Number(args.top);
  const concurrency = Number(args.concurrency);
  const waitTimeoutMs = Number(args['wait-timeout-s']) * 1000;
  if (args.kinds !== 'round' && args.kinds !== 'all') throw new Error('--kinds must be round or all');
  if (args.split !== 'all' && args.split !== 'tune' && args.split !== 'report') {
    throw new Error('--split must be tune, report or all');
  }
  const modes = modeOptions();
  const modeNames = [...modes.keys()];
  const searchOptions = new Map<string, SearchOptions>(
    [...modes].map(([name, json]) => [name, fromJson(SearchOptionsSchema, json)]),
  );

  const dataset = loadDataset(resolve(args.dataset));
  const splitOf = splitsOf(dataset);
  let questions: Question[] = dataset.questions.filter(
    (q) => args.split === 'all' || splitOf.get(q.id) === args.split,
  );
  if (args['limit-questions'] !== undefined) questions = questions.slice(0, Number(args['limit-questions']));
  const asked = new Set(questions.map((q) => q.conversation));
  const conversations = dataset.conversations.filter((c) => asked.has(c.id));
  const counts = datasetCounts({ ...dataset, conversations, questions });
  process.stdout.write(
    `${dataset.name} (split ${args.split}): ${counts.conversations} conversations, ${counts.sessions} sessions, ${counts.turns} turns, ${counts.questions} questions\n`,
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
    const kindsSeen: Record<string, Record<string, number>> = Object.fromEntries(
      modeNames.map((m) => [m, {}]),
    );
    const latencies = Object.fromEntries(modeNames.map((m) => [m, [] as number[]]));
    const serverMs = Object.fromEntries(modeNames.map((m) => [m, [] as number[]]));
    const rerankMs = Object.fromEntries(modeNames.map((m) => [m, [] as number[]]));
    const languages: Record<string, number> = {};
    const tasks = questions.flatMap((q) => modeNames.map((mode) => ({ q, mode })));
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
          options: { ...searchOptions.get(mode)!, referenceTime: timestampFromMs(at) },
        },
        auth,
      );
      latencies[mode]!.push(performance.now() - t0);
      const elapsed = response.stats?.elapsed;
      if (elapsed !== undefined) serverMs[mode]!.push(Number(elapsed.seconds) * 1000 + elapsed.nanos / 1e6);
      const rr = response.stats?.rerankElapsed;
      if (rr !== undefined) rerankMs[mode]!.push(Number(rr.seconds) * 1000 + rr.nanos / 1e6);
      if (mode === 'defaults') {
        const language = response.stats?.queryLanguage ?? '?';
        languages[language] = (languages[language] ?? 0) + 1;
      }
      for (const r of response.results.slice(0, 10)) {
        const kind = ItemKind[r.kind];
        kindsSeen[mode]![kind] = (kindsSeen[mode]![kind] ?? 0) + 1;
      }
      ranked.set(`${mode}|${q.id}`, response.results.map(toTurns));
      done += 1;
      if (done % 500 === 0) process.stdout.write(`  searched ${done}/${tasks.length}\n`);
    });
    const searchMs = performance.now() - searchStart;

    // ---- Metrics ----
    const perMode: Record<string, ModeRows> = {};
    for (const mode of modeNames) {
      perMode[mode] = {
        rows: questions.map((q) => {
          const results = ranked.get(`${mode}|${q.id}`)!;
          return {
            id: q.id,
            split: splitOf.get(q.id)!,
            category: q.category,
            values: {
              'R@5': recallAtK(q.evidence, results, 5),
              'R@10': recallAtK(q.evidence, results, 10),
              'R@25': recallAtK(q.evidence, results, 25),
              'NDCG@10': ndcgAtK(q.evidence, results, 10),
            },
            ...(q.superseded === undefined
              ? {}
              : { newerFirst: newerFirst(q.evidence, q.superseded, results) }),
          };
        }),
      };
    }
    const splitsPresent = SPLITS.filter((sp) => questions.some((q) => splitOf.get(q.id) === sp));
    const summary: Record<string, Record<string, unknown>> = {};
    let table = `\n${dataset.name} (kinds ${args.kinds}, top ${topK})\n`;
    for (const split of splitsPresent) {
      const header = `${split} split`.padEnd(30);
      table += `\n${header} ${'n'.padStart(5)}  ${METRICS.map((m) => m.padStart(7)).join(' ')}   Δ R@10 vs defaults (paired 95 %)\n`;
      summary[split] = {};
      const base = perMode['defaults']!.rows.filter((r) => r.split === split);
      for (const mode of modeNames) {
        const rows = perMode[mode]!.rows.filter((r) => r.split === split);
        const agg = aggregate(rows);
        const ci: Record<string, { low: number; high: number }> = {};
        for (const metric of ['R@5', 'R@10'] as const) {
          const interval = bootstrapCi(rows.map((r) => r.values[metric] ?? 0));
          ci[metric] = { low: round3(interval.low), high: round3(interval.high) };
        }
        const paired: Record<string, { mean: number; low: number; high: number }> = {};
        for (const metric of ['R@5', 'R@10'] as const) {
          const d = pairedBootstrapCi(
            base.map((r) => r.values[metric] ?? 0),
            rows.map((r) => r.values[metric] ?? 0),
          );
          paired[`defaults-${mode} ${metric}`] = {
            mean: round3(d.mean),
            low: round3(d.low),
            high: round3(d.high),
          };
        }
        const newer = rows.filter((r) => r.newerFirst !== undefined);
        const newerRate =
          newer.length === 0 ? undefined : newer.reduce((a, r) => a + r.newerFirst!, 0) / newer.length;
        summary[split][mode] = {
          overall: agg.overall,
          byCategory: agg.byCategory,
          ci95: ci,
          pairedDefaultsMinus: paired,
          ...(newerRate === undefined ? {} : { newerFirst: round3(newerRate), newerFirstN: newer.length }),
        };
        const d = paired[`defaults-${mode} R@10`]!;
        table += `${mode.padEnd(30)} ${String(agg.overall.n).padStart(5)}  ${METRICS.map((m) => (agg.overall.mean[m] ?? NaN).toFixed(3).padStart(7)).join(' ')}   ${mode === 'defaults' ? '' : `${d.mean >= 0 ? '+' : ''}${d.mean.toFixed(3)} [${d.low.toFixed(3)}, ${d.high.toFixed(3)}]`}${newerRate === undefined ? '' : `   newer-first ${newerRate.toFixed(3)} (${newer.length})`}\n`;
        const categories = Object.keys(agg.byCategory);
        if (categories.length > 1) {
          for (const category of categories) {
            const c = agg.byCategory[category]!;
            table += `  ${category.padEnd(28)} ${String(c.n).padStart(5)}  ${METRICS.map((m) => (c.mean[m] ?? NaN).toFixed(3).padStart(7)).join(' ')}\n`;
          }
        }
      }
    }
    table += '\nsearch latency ms, client round trip p50 / p95 (server p50):';
    for (const mode of modeNames) {
      const l = latency(latencies[mode]!);
      table += ` ${mode} ${l.p50} / ${l.p95} (${latency(serverMs[mode]!).p50});`;
    }
    for (const mode of modeNames) {
      if (rerankMs[mode]!.length > 0)
        table += `\nrerank ms p50 / p95 (${mode}): ${latency(rerankMs[mode]!).p50} / ${latency(rerankMs[mode]!).p95}`;
    }
    table += `\nquery languages (defaults): ${JSON.stringify(languages)}`;
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
        split: args.split,
        concurrency,
        limitQuestions: args['limit-questions'] ?? null,
        modes: Object.fromEntries(modes),
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
      queryLanguages: languages,
      splits: summary,
      modes: Object.fromEntries(
        modeNames.map((mode) => [
          mode,
          {
            latencyMs: latency(latencies[mode]!),
            serverMs: latency(serverMs[mode]!),
            ...(rerankMs[mode]!.length > 0 ? { rerankMs: latency(rerankMs[mode]!) } : {}),
            top10Kinds: kindsSeen[mode],
            perQuestion: perMode[mode]!.rows.map((r) => ({
              id: r.id,
              split: r.split,
              ...r.values,
              ...(r.newerFirst === undefined ? {} : { newerFirst: r.newerFirst }),
            })),
          },
        ]),
      ),
    };
    mkdirSync(dirname(resolve(args.out)), { recursive: true });
    writeFileSync(resolve(args.out), `${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await bench.close();
  }
}

await main();
