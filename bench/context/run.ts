/**
 * Context-assembly benchmark: ingests a dataset (bench/retrieval/README.md; LoCoMo by default) into
 * the real all-in-one server (bench/lib/ingest-dataset.ts) and, for every question and token budget,
 * calls `ContextService.BuildContext` as the conversation's user. It reports the client-side latency
 * (p50/p95/p99/mean) and the evidence-in-context rate: the share of questions with at least one
 * evidence turn (or a memory derived from one) in the assembled context, and the stricter share with
 * all of them.
 *
 *   npm run bench:context -- [--dataset bench/out/locomo.dataset.json] [--out bench/out/locomo.context.json]
 *     [--budgets 1000,2000,4000] [--conversations N] [--limit-questions N]
 *     [--where last-session|new-session] [--decay on|off] [--model gpt-4o] [--repeat 3]
 *     [--warmup 20] [--wait-timeout-s 1800] [--split tune|report|all] [--knowledge JSON]
 *
 * `--split` takes the questions of the fixed tuning or report part (bench/retrieval/splits.ts) and
 * ingests only their conversations; `--knowledge` sets KnowledgeOptions fields (proto3 JSON, e.g.
 * `{"topK":8,"minScore":0.2}`) on every call, for measuring a variant beside the defaults.
 *
 * `--where last-session` (default) asks the question in the conversation's last ingested session,
 * so its uncompacted messages are RECENT_TURNS candidates; `new-session` asks it in a fresh empty
 * session of the same user (one per conversation), so only retrieved knowledge and evergreen facts
 * can carry evidence. The knowledge search always gets `reference_time` = the question's
 * `asked_at` (or one day after the conversation's last session), so each call is deterministic,
 * and `decay_enabled: false` with `--decay off`; every other request field is left to the server
 * defaults.
 *
 * What counts as evidence in the context (included trace items only):
 * - a TURN (RECENT_TURNS) whose message is an evidence turn;
 * - a ROUND (RETRIEVED_KNOWLEDGE) whose user message, or its reply (the first assistant message
 *   after it in its session, before the next user message), is an evidence turn;
 * - a MEMORY (RETRIEVED_KNOWLEDGE or EVERGREEN_FACTS) whose `evidence.messages` (governance
 *   `GetMemory`, cached) contain an evidence turn, matched by message id (governance currently
 *   returns bare message ids there rather than the `sessions/{s}/messages/{m}` names of its
 *   contract, so matching by full name would never hit);
 * - SUMMARY, KEY_POINT, OPEN_LOOP: not applicable here (no session is compacted); counted if seen.
 * The same mapping over every trace item, included or not, gives the "in candidates" rate (the
 * evidence reached assembly but the budget, threshold, top-k or duplicate rule dropped it).
 *
 * Latency: wall time of the BuildContext call over gRPC (HTTP/2 to the in-process server),
 * sequential, after `--warmup` calls; `--repeat` passes over all questions and budgets. Rates are
 * computed on the first pass; the later passes check that the included trace ids are identical.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { fromJson, type JsonObject } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import {
  ContextLayer,
  ContextService,
  KnowledgeOptionsSchema,
  TraceItemKind,
  TraceReason,
  type BuildContextResponse,
} from '@engram/contracts/context';
import { GovernanceService } from '@engram/contracts/governance';
import { IngestionService } from '@engram/contracts/ingestion';
import { quantile } from '@engram/testing';
import { ingestDataset, startBenchServer, type StoredMessage } from '../lib/ingest-dataset.js';
import { datasetCounts, loadDataset, type Question } from '../retrieval/dataset.js';
import { aggregate, bootstrapCi, type ScoredQuestion } from '../retrieval/metrics.js';
import { splitsOf } from '../retrieval/splits.js';

const { values: args } = parseArgs({
  options: {
    dataset: { type: 'string', default: 'bench/out/locomo.dataset.json' },
    out: { type: 'string', default: 'bench/out/locomo.context.json' },
    budgets: { type: 'string', default: '1000,2000,4000' },
    conversations: { type: 'string' },
    'limit-questions': { type: 'string' },
    where: { type: 'string', default: 'last-session' },
    decay: { type: 'string', default: 'on' },
    model: { type: 'string', default: 'gpt-4o' },
    repeat: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '20' },
    'wait-timeout-s': { type: 'string', default: '1800' },
    split: { type: 'string', default: 'all' },
    knowledge: { type: 'string', default: '{}' },
  },
});

/** The layers that can carry evidence, as reported. */
const CARRIERS = ['turn', 'round', 'memory', 'evergreen', 'summary'] as const;
type Carrier = (typeof CARRIERS)[number];

const round3 = (x: number) => Math.round(x * 1000) / 1000;
const median = (values: readonly number[]) =>
  quantile(
    [...values].sort((a, b) => a - b),
    0.5,
  );

function latency(values: readonly number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length);
  const r = (x: number) => Math.round(x * 10) / 10;
  return {
    n: sorted.length,
    p50: r(quantile(sorted, 0.5)),
    p95: r(quantile(sorted, 0.95)),
    p99: r(quantile(sorted, 0.99)),
    mean: r(mean),
    max: r(sorted.at(-1) ?? NaN),
  };
}

/** Per question and budget: what the first pass found. */
interface Outcome {
  any: boolean;
  all: boolean;
  inCandidates: boolean;
  carriers: Set<Carrier>;
  /** Why evidence-bearing candidates were dropped (reason → count), when none was included. */
  droppedReasons: string[];
  totalTokens: number;
  layerUsed: Record<string, number>;
  layerItems: Record<string, number>;
  /** RETRIEVED_KNOWLEDGE candidates: trace reason and search score. */
  knowledge: { reason: string; score: number }[];
  included: string;
}

// eslint-disable-next-line max-lines-per-function -- a benchmark script read top to bottom: its phases run in the order they are reported and share the run's state.
async function main(): Promise<void> {
  const budgets = args.budgets.split(',').map((b) => Number(b.trim()));
  if (budgets.some((b) => !Number.isInteger(b) || b < 1)) throw new Error('--budgets: positive integers');
  if (args.where !== 'last-session' && args.where !== 'new-session')
    throw new Error('--where must be last-session or new-session');
  if (args.decay !== 'on' && args.decay !== 'off') throw new Error('--decay must be on or off');
  const decayEnabled = args.decay === 'on';
  const repeat = Number(args.repeat);
  const warmup = Number(args.warmup);
  if (!(repeat >= 1) || !(warmup >= 0)) throw new Error('--repeat ≥ 1 and --warmup ≥ 0');
  const waitTimeoutMs = Number(args['wait-timeout-s']) * 1000;

  if (args.split !== 'all' && args.split !== 'tune' && args.split !== 'report') {
    throw new Error('--split must be tune, report or all');
  }
  const knowledgeJson = JSON.parse(args.knowledge) as JsonObject;
  fromJson(KnowledgeOptionsSchema, knowledgeJson); // fails early on a bad --knowledge
  const dataset = loadDataset(resolve(args.dataset));
  const splitOf = splitsOf(dataset);
  let conversations = dataset.conversations;
  if (args.conversations !== undefined) conversations = conversations.slice(0, Number(args.conversations));
  if (args.split !== 'all') {
    const asked = new Set(
      dataset.questions.filter((q) => splitOf.get(q.id) === args.split).map((q) => q.conversation),
    );
    conversations = conversations.filter((c) => asked.has(c.id));
  }
  const kept = new Set(conversations.map((c) => c.id));
  let questions: Question[] = dataset.questions.filter(
    (q) => kept.has(q.conversation) && (args.split === 'all' || splitOf.get(q.id) === args.split),
  );
  if (args['limit-questions'] !== undefined) questions = questions.slice(0, Number(args['limit-questions']));
  const counts = datasetCounts({ ...dataset, conversations, questions });
  const loadAtStart = loadavg().map((x) => Math.round(x * 100) / 100);
  process.stdout.write(
    `${dataset.name}: ${counts.conversations} conversations, ${counts.sessions} sessions, ${counts.turns} turns, ${counts.questions} questions; load average ${loadAtStart.join(' ')}\n`,
  );

  const bench = await startBenchServer('engram-context-');
  const context = createClient(ContextService, bench.transport);
  const governance = createClient(GovernanceService, bench.transport);
  const ingestion = createClient(IngestionService, bench.transport);
  try {
    const ingested = await ingestDataset(bench, conversations, { waitTimeoutMs });
    const { turnOfMessage, referenceTime } = ingested;
    const loadAfterIngestion = loadavg().map((x) => Math.round(x * 100) / 100);

    // Message id (the last segment of its name) → turn id. Memories are matched by id: governance
    // returns `evidence.messages` as bare message ids, not `sessions/{s}/messages/{m}` names.
    const turnOfMessageId = new Map(
      [...turnOfMessage].map(([name, turn]) => [name.replace(/^.*\/messages\//, ''), turn]),
    );
    // Message name → its position, to find a round's reply.
    const position = new Map<string, { messages: readonly StoredMessage[]; index: number }>();
    for (const session of ingested.sessions) {
      session.messages.forEach((m, index) => position.set(m.name, { messages: session.messages, index }));
    }
    const roundTurns = (userMessage: string): string[] => {
      const at = position.get(userMessage);
      if (at === undefined) return [];
      // The reply: the next message when it is an assistant message (dataset turns are only user
      // or assistant, so it is the first assistant message before the next user message).
      const next = at.messages[at.index + 1];
      return next?.role === 'assistant'
        ? [at.messages[at.index]!.turnId, next.turnId]
        : [at.messages[at.index]!.turnId];
    };

    // The session each conversation's questions are asked in.
    const userOf = new Map(conversations.map((c) => [c.id, c.user]));
    const sessionOf = new Map<string, string>();
    for (const conversation of conversations) {
      if (args.where === 'last-session') {
        const last = ingested.sessions.filter((s) => s.conversation === conversation.id).at(-1)!;
        sessionOf.set(conversation.id, last.name);
      } else {
        const { session } = await ingestion.createSession(
          { session: { displayName: `${conversation.id} questions`, timeZone: 'UTC' } },
          await bench.as(conversation.user),
        );
        sessionOf.set(conversation.id, session!.name);
      }
    }

    const memoryTurns = new Map<string, Promise<string[]>>();
    const turnsOfMemory = (name: string, user: string): Promise<string[]> => {
      const key = `${user}|${name}`;
      let cached = memoryTurns.get(key);
      if (cached === undefined) {
        cached = (async () => {
          const { memory } = await governance.getMemory({ name }, await bench.as(user));
          return (memory?.evidence?.messages ?? []).flatMap((m) => {
            const turn = turnOfMessageId.get(m.replace(/^.*\/messages\//, ''));
            return turn !== undefined ? [turn] : [];
          });
        })();
        memoryTurns.set(key, cached);
      }
      return cached;
    };

    const build = async (q: Question, budget: number) => {
      const at = q.asked_at !== undefined ? Date.parse(q.asked_at) : referenceTime.get(q.conversation)!;
      const auth = await bench.as(userOf.get(q.conversation)!);
      const t0 = performance.now();
      const response = await context.buildContext(
        {
          session: sessionOf.get(q.conversation)!,
          userMessage: q.question,
          model: args.model,
          budget: { totalTokens: budget },
          knowledge: fromJson(KnowledgeOptionsSchema, {
            ...knowledgeJson,
            options: {
              ...((knowledgeJson['options'] as JsonObject | undefined) ?? {}),
              referenceTime: new Date(at).toISOString(),
              ...(decayEnabled ? {} : { decayEnabled: false }),
            },
          }),
        },
        auth,
      );
      return { response, ms: performance.now() - t0 };
    };

    const evaluate = async (q: Question, response: BuildContextResponse): Promise<Outcome> => {
      const user = userOf.get(q.conversation)!;
      const wanted = new Set(q.evidence);
      const covered = new Set<string>();
      const carriers = new Set<Carrier>();
      let inCandidates = false;
      const droppedReasons: string[] = [];
      for (const item of response.trace) {
        let turns: string[] = [];
        let carrier: Carrier | undefined;
        switch (item.kind) {
          case TraceItemKind.TURN:
            turns = turnOfMessage.has(item.id) ? [turnOfMessage.get(item.id)!] : [];
            carrier = 'turn';
            break;
          case TraceItemKind.ROUND:
            turns = roundTurns(item.id);
            carrier = 'round';
            break;
          case TraceItemKind.MEMORY:
            turns = await turnsOfMemory(item.id, user);
            carrier = item.layer === ContextLayer.EVERGREEN_FACTS ? 'evergreen' : 'memory';
            break;
          case TraceItemKind.SUMMARY:
          case TraceItemKind.KEY_POINT:
          case TraceItemKind.OPEN_LOOP:
            carrier = 'summary';
            break;
          default:
            break;
        }
        const hits = turns.filter((t) => wanted.has(t));
        if (hits.length === 0) continue;
        inCandidates = true;
        if (item.included) {
          hits.forEach((t) => covered.add(t));
          if (carrier !== undefined) carriers.add(carrier);
        } else {
          droppedReasons.push(`${carrier ?? '?'}:${TraceReason[item.reason]}`);
        }
      }
      const knowledge = response.trace
        .filter((t) => t.layer === ContextLayer.RETRIEVED_KNOWLEDGE)
        .map((t) => ({ reason: `${TraceItemKind[t.kind]} ${TraceReason[t.reason]}`, score: t.score ?? NaN }));
      const layerUsed: Record<string, number> = {};
      const layerItems: Record<string, number> = {};
      for (const layer of response.layers) {
        layerUsed[ContextLayer[layer.layer]] = layer.usedTokens;
        layerItems[ContextLayer[layer.layer]] = layer.itemsIncluded;
      }
      return {
        any: covered.size > 0,
        all: covered.size === wanted.size,
        inCandidates,
        carriers,
        droppedReasons: covered.size > 0 ? [] : droppedReasons,
        totalTokens: response.totalTokens,
        layerUsed,
        layerItems,
        knowledge,
        included: response.trace
          .filter((t) => t.included)
          .map((t) => t.id)
          .join('\n'),
      };
    };

    // ---- Warm-up ----
    for (let i = 0; i < warmup && questions.length > 0; i++) {
      await build(questions[i % questions.length]!, budgets[i % budgets.length]!);
    }

    // ---- Passes ----
    const outcomes = new Map<string, Outcome>();
    const latencies = new Map<number, number[]>(budgets.map((b) => [b, []]));
    let mismatches = 0;
    const mismatchSamples: string[] = [];
    const runStart = performance.now();
    for (let pass = 0; pass < repeat; pass++) {
      for (const q of questions) {
        for (const budget of budgets) {
          const { response, ms } = await build(q, budget);
          latencies.get(budget)!.push(ms);
          const key = `${q.id}|${budget}`;
          if (pass === 0) {
            outcomes.set(key, await evaluate(q, response));
          } else {
            const included = response.trace
              .filter((t) => t.included)
              .map((t) => t.id)
              .join('\n');
            if (included !== outcomes.get(key)!.included) {
              mismatches += 1;
              if (mismatchSamples.length < 5) mismatchSamples.push(key);
            }
          }
        }
      }
      process.stdout.write(
        `  pass ${pass + 1}/${repeat} done (${Math.round((performance.now() - runStart) / 1000)} s)\n`,
      );
    }
    const loadAtEnd = loadavg().map((x) => Math.round(x * 100) / 100);

    // ---- Metrics ----
    const perBudget = budgets.map((budget) => {
      const rows: ScoredQuestion[] = questions.map((q) => {
        const o = outcomes.get(`${q.id}|${budget}`)!;
        return {
          category: q.category,
          values: {
            any: o.any ? 1 : 0,
            all: o.all ? 1 : 0,
            candidates: o.inCandidates ? 1 : 0,
            ...Object.fromEntries(CARRIERS.map((c) => [`via ${c}`, o.carriers.has(c) ? 1 : 0])),
          },
        };
      });
      const agg = aggregate(rows);
      const ci = (metric: string) => {
        const interval = bootstrapCi(rows.map((r) => r.values[metric] ?? 0));
        return { mean: round3(interval.mean), low: round3(interval.low), high: round3(interval.high) };
      };
      const all = questions.map((q) => outcomes.get(`${q.id}|${budget}`)!);
      const layers = Object.keys(all[0]?.layerUsed ?? {});
      const dropped: Record<string, number> = {};
      for (const o of all) {
        // One count per question and reason, for questions with evidence in candidates only.
        for (const reason of new Set(o.droppedReasons)) dropped[reason] = (dropped[reason] ?? 0) + 1;
      }
      const knowledgeReasons: Record<string, number> = {};
      const scores: number[] = [];
      for (const o of all) {
        for (const k of o.knowledge) {
          knowledgeReasons[k.reason] = (knowledgeReasons[k.reason] ?? 0) + 1;
          if (Number.isFinite(k.score)) scores.push(k.score);
        }
      }
      scores.sort((a, b) => a - b);
      return {
        budget,
        n: rows.length,
        evidenceAny: ci('any'),
        evidenceAll: ci('all'),
        evidenceInCandidates: ci('candidates'),
        via: Object.fromEntries(CARRIERS.map((c) => [c, round3(agg.overall.mean[`via ${c}`] ?? 0)])),
        byCategory: Object.fromEntries(
          Object.entries(agg.byCategory).map(([category, a]) => [
            category,
            {
              n: a.n,
              any: round3(a.mean.any ?? 0),
              all: round3(a.mean.all ?? 0),
              candidates: round3(a.mean.candidates ?? 0),
            },
          ]),
        ),
        droppedEvidenceReasons: dropped,
        knowledgeCandidates: {
          perQuestionMedian: median(all.map((o) => o.knowledge.length)),
          reasons: knowledgeReasons,
          score: {
            p50: round3(quantile(scores, 0.5)),
            p90: round3(quantile(scores, 0.9)),
            max: round3(scores.at(-1) ?? NaN),
          },
        },
        latencyMs: latency(latencies.get(budget)!),
        totalTokensMedian: median(all.map((o) => o.totalTokens)),
        layerUsedTokensMedian: Object.fromEntries(
          layers.map((l) => [l, median(all.map((o) => o.layerUsed[l] ?? 0))]),
        ),
        layerItemsMedian: Object.fromEntries(
          layers.map((l) => [l, median(all.map((o) => o.layerItems[l] ?? 0))]),
        ),
        perQuestion: questions.map((q) => {
          const o = outcomes.get(`${q.id}|${budget}`)!;
          return {
            id: q.id,
            any: o.any,
            all: o.all,
            inCandidates: o.inCandidates,
            via: [...o.carriers],
            totalTokens: o.totalTokens,
          };
        }),
      };
    });

    // ---- Report ----
    const pct = (x: number) => (100 * x).toFixed(1).padStart(5);
    const short = (l: string) =>
      l.replace(
        /^(RECENT_TURNS|RETRIEVED_KNOWLEDGE|EVERGREEN_FACTS)$/,
        (m) =>
          ({ RECENT_TURNS: 'turns', RETRIEVED_KNOWLEDGE: 'knowledge', EVERGREEN_FACTS: 'evergreen' })[m]!,
      );
    let table = `\n${dataset.name} BuildContext (split ${args.split}, where ${args.where}, decay ${args.decay}, knowledge ${args.knowledge}, model ${args.model}, repeat ${repeat})\n`;
    table += `${'budget'.padStart(6)} ${'n'.padStart(5)}  ${'any %'.padStart(5)} ${'95% CI'.padStart(13)}  ${'all %'.padStart(5)}  ${'cand %'.padStart(6)}  ${'via turn/round/mem/everg'.padStart(24)}  ${'p50'.padStart(6)} ${'p95'.padStart(6)} ${'p99'.padStart(6)} ${'mean'.padStart(6)} ms  ${'tokens'.padStart(6)}\n`;
    for (const b of perBudget) {
      const ciText = `[${pct(b.evidenceAny.low).trim()}, ${pct(b.evidenceAny.high).trim()}]`;
      const via = `${pct(b.via.turn ?? 0)}/${pct(b.via.round ?? 0)}/${pct(b.via.memory ?? 0)}/${pct(b.via.evergreen ?? 0)}`;
      table += `${String(b.budget).padStart(6)} ${String(b.n).padStart(5)}  ${pct(b.evidenceAny.mean)} ${ciText.padStart(13)}  ${pct(b.evidenceAll.mean)}  ${pct(b.evidenceInCandidates.mean).padStart(6)}  ${via.padStart(24)}  ${String(b.latencyMs.p50).padStart(6)} ${String(b.latencyMs.p95).padStart(6)} ${String(b.latencyMs.p99).padStart(6)} ${String(b.latencyMs.mean).padStart(6)}     ${String(b.totalTokensMedian).padStart(6)}\n`;
    }
    table += '\nper category, evidence-in-context any % (all %):\n';
    const categories = Object.keys(perBudget[0]?.byCategory ?? {});
    for (const category of categories) {
      table += `  ${category.padEnd(14)}${perBudget
        .map((b) => {
          const c = b.byCategory[category]!;
          return ` ${b.budget}: ${pct(c.any)} (${pct(c.all).trim()}) n=${c.n}`;
        })
        .join(';')}\n`;
    }
    table += '\nmedian used tokens per layer:\n';
    for (const b of perBudget) {
      table += `  ${String(b.budget).padStart(5)}: ${Object.entries(b.layerUsedTokensMedian)
        .filter(([, v]) => v > 0)
        .map(([l, v]) => `${short(l)} ${v} (${b.layerItemsMedian[l]} items)`)
        .join(', ')}\n`;
    }
    table += '\nwhy evidence-bearing candidates were dropped (questions with none included):\n';
    for (const b of perBudget)
      table += `  ${String(b.budget).padStart(5)}: ${JSON.stringify(b.droppedEvidenceReasons)}\n`;
    table += '\nknowledge candidates (all questions): trace reasons; search score p50 / p90 / max:\n';
    for (const b of perBudget) {
      const k = b.knowledgeCandidates;
      table += `  ${String(b.budget).padStart(5)}: ${JSON.stringify(k.reasons)}; ${k.score.p50} / ${k.score.p90} / ${k.score.max}\n`;
    }
    table += `\ndeterminism: ${mismatches} of ${questions.length * budgets.length * (repeat - 1)} repeated calls differ in their included trace ids${mismatchSamples.length > 0 ? ` (e.g. ${mismatchSamples.join(', ')})` : ''}`;
    table += `\ningestion ${Math.round(ingested.totalMs / 1000)} s (appends ${Math.round(ingested.appendMs / 1000)} s), BuildContext passes ${Math.round((performance.now() - runStart) / 1000)} s; load average start ${loadAtStart.join(' ')}, after ingestion ${loadAfterIngestion.join(' ')}, end ${loadAtEnd.join(' ')}\n`;
    process.stdout.write(table);

    const report = {
      dataset: dataset.name,
      file: args.dataset,
      date: new Date().toISOString(),
      machine: {
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? 'unknown',
        memoryGiB: Math.round(totalmem() / 2 ** 30),
        platform: `${platform()} ${release()}`,
        node: process.version,
        loadAverage: { start: loadAtStart, afterIngestion: loadAfterIngestion, end: loadAtEnd },
      },
      config: {
        budgets,
        where: args.where,
        decayEnabled,
        model: args.model,
        repeat,
        warmup,
        conversations: conversations.length,
        limitQuestions: args['limit-questions'] ?? null,
        split: args.split,
        knowledge: JSON.parse(args.knowledge) as unknown,
      },
      counts,
      ingestion: {
        settled: ingested.settled,
        totalMs: Math.round(ingested.totalMs),
        appendMs: Math.round(ingested.appendMs),
        memCells: ingested.memCells,
        index: ingested.index,
      },
      determinism: { mismatches, samples: mismatchSamples },
      budgets: perBudget,
    };
    mkdirSync(dirname(resolve(args.out)), { recursive: true });
    writeFileSync(resolve(args.out), `${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await bench.close();
  }
}

await main();
