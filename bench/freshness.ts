/**
 * Freshness benchmark (issue #19): how soon what is written becomes searchable, on the
 * multi-process stack of bench:load (bench/load/stack.ts: the four service processes on free
 * loopback ports, a fresh MariaDB database or a SQLite file, Qdrant or the embedded index).
 *
 *   npm run bench:freshness -- [--vectors qdrant|embedded] [--store mysql|sqlite] [--doc-mib 10]
 *     [--appends 60] [--append-interval-ms 1000] [--document-append-interval-ms 5000] [--poll-ms 40]
 *     [--sample-chunks 32]
 *     [--max-wait-s 900] [--out bench/out/freshness.json] [--seed 42] [--log-level info]
 *     [--service-env KEY=VALUE …]   (extra environment of the four services: a setting under test)
 *
 * 1. Appended-message freshness. One user appends user/assistant rounds (AppendMessages), one every
 *    --append-interval-ms, each user message carrying a marker never seen before (a word the
 *    lexical tokenizer keeps as one term: bench/freshness/plan.ts); from the append's
 *    acknowledgement, a lexical-only Search (`vector_weight` 0, `text_weight` 1, kinds ROUND, the
 *    phase's session) of every marker still pending runs every --poll-ms until the round comes
 *    back by name. Half of --appends on an idle system ("idle"), half while a --doc-mib document is
 *    being indexed ("document": from the upload's first WRITING progress, when the first chunks
 *    and their outbox rows are committed, one every --document-append-interval-ms). Delays are
 *    p50/p95/p99/max per phase (nearest rank); a round not found within --max-wait-s of its ack
 *    counts as not found and ranks above every found one.
 * 2. Document freshness. The generated Markdown document (English, Chinese and mixed paragraphs,
 *    one unique marker each) streams in with StreamIngestDocument (IngestDocument accepts 4 MiB at
 *    most). From READY: --sample-chunks chunks spread over the document, the last one included,
 *    each with a marker found in that chunk alone, are polled lexically (one Search of the pending
 *    markers, kinds CHUNK, that document, every 250 ms) and for their dense vector (a chunk found
 *    lexically is dense-searchable once the Search reports no candidate without a dense vector,
 *    `SearchStats.dense_pending_candidates`; every second); GetDocument's `indexed_chunk_count`
 *    (chunks whose outbox row the indexer has applied), GetIndexStatus (CHUNK points, outbox
 *    backlog) and retrieval's `engram_index_dense_pending` gauge (points still without their dense
 *    vector, from its metrics endpoint) are sampled every second. Each is reported from READY, or
 *    as "not within --max-wait-s".
 *
 * Prints the numbers with the issue #19 target (PASS/MISS) and writes JSON (--out; the service
 * logs go to freshness-logs/load-<service>.log beside it). Exit code 0 when the run completed
 * (whatever the numbers), 1 on a failure, 130 when interrupted: a first Ctrl-C ends the probes and
 * still writes the report (marked `interrupted`), a second one stops at once. The services are
 * stopped at the end, on Ctrl-C and on errors.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createClient, type Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { IngestionService } from '@engram/contracts/ingestion';
import { mintToken } from '@engram/runtime';
import { seededRandom, type Random } from '@engram/testing';
import {
  freshnessTarget,
  generateDocument,
  histogramDelta,
  histogramSeries,
  markerSource,
  summariseDelays,
  type DelaySummary,
  type GeneratedDocument,
  type HistogramSeries,
  type TargetLine,
} from './freshness/plan.js';
import {
  AppendProbe,
  clockFrom,
  DocumentProbe,
  ErrorCounts,
  streamDocument,
  type Auth,
  type Clock,
  type StreamOutcome,
} from './freshness/probes.js';
import { loadAverage, machine } from './lib/machine.js';
import { positiveInt } from './load/report.js';
import {
  parseServiceEnv,
  repoRoot,
  startStack,
  type Stack,
  type StoreKind,
  type VectorKind,
} from './load/stack.js';

const { values: args } = parseArgs({
  options: {
    vectors: { type: 'string', default: 'qdrant' },
    store: { type: 'string', default: 'mysql' },
    'doc-mib': { type: 'string', default: '10' },
    appends: { type: 'string', default: '60' },
    'append-interval-ms': { type: 'string', default: '1000' },
    'document-append-interval-ms': { type: 'string', default: '5000' },
    'poll-ms': { type: 'string', default: '40' },
    'sample-chunks': { type: 'string', default: '32' },
    'max-wait-s': { type: 'string', default: '900' },
    out: { type: 'string', default: 'bench/out/freshness.json' },
    seed: { type: 'string', default: '42' },
    'log-level': { type: 'string', default: 'info' },
    // KEY=VALUE, repeatable: extra environment of the four services (a setting under test).
    'service-env': { type: 'string', multiple: true, default: [] },
  },
});

if (args.vectors !== 'qdrant' && args.vectors !== 'embedded')
  throw new Error('--vectors must be qdrant or embedded');
if (args.store !== 'mysql' && args.store !== 'sqlite') throw new Error('--store must be mysql or sqlite');
const docMib = Number(args['doc-mib']);
if (!Number.isFinite(docMib) || docMib <= 0 || docMib > 64) throw new Error('--doc-mib: a number in (0, 64]');
const vectors: VectorKind = args.vectors;
const store: StoreKind = args.store;
const config = {
  vectors,
  store,
  docMib,
  appends: positiveInt('appends', args.appends, 60),
  appendIntervalMs: positiveInt('append-interval-ms', args['append-interval-ms'], 1000),
  documentAppendIntervalMs: positiveInt(
    'document-append-interval-ms',
    args['document-append-interval-ms'],
    5000,
  ),
  pollMs: positiveInt('poll-ms', args['poll-ms'], 40),
  documentPollMs: 250,
  densePollMs: 1000,
  densePerRound: 4,
  progressPollMs: 1000,
  sampleChunks: positiveInt('sample-chunks', args['sample-chunks'], 32),
  maxWaitS: positiveInt('max-wait-s', args['max-wait-s'], 900),
  seed: positiveInt('seed', args.seed, 42),
  serviceEnv: parseServiceEnv(args['service-env']),
};
const outPath = resolve(repoRoot, args.out);

const log = (line: string) => process.stdout.write(`${line}\n`);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const s2 = (ms: number | null | undefined) =>
  ms === null || ms === undefined ? '-' : `${(ms / 1000).toFixed(2)} s`;
const within = (ms: number | undefined) => (ms === undefined ? `not within ${config.maxWaitS} s` : s2(ms));

interface Phase {
  readonly name: string;
  readonly probe: AppendProbe;
  readonly session: string;
}

interface PhaseResult {
  readonly name: string;
  readonly summary: DelaySummary;
  readonly appendAckMs: DelaySummary;
  readonly searchMs: DelaySummary;
  readonly records: readonly object[];
}

/**
 * Appends `count` rounds, one every `intervalMs` (from the start of the previous append), while
 * the phase's probe polls; resolves when every round is found or past the cap.
 */
async function runAppends(
  phase: Phase,
  count: number,
  intervalMs: number,
  next: () => string,
  random: Random,
  signal: AbortSignal,
) {
  const capMs = config.maxWaitS * 1000;
  let appended = false;
  const poller = phase.probe.poll(
    config.pollMs,
    capMs,
    () => appended && phase.probe.pending(capMs).length === 0,
    signal,
  );
  for (let i = 0; i < count && !signal.aborted; i++) {
    const started = performance.now();
    await phase.probe.append(i, next(), random);
    await sleep(Math.max(0, intervalMs - (performance.now() - started)));
  }
  appended = true;
  await poller;
}

function phaseResult(phase: Phase, readyAt?: number): PhaseResult {
  const records = phase.probe.records;
  return {
    name: phase.name,
    summary: summariseDelays(records.map((r) => (r.foundAt === undefined ? undefined : r.foundAt - r.ackAt))),
    appendAckMs: summariseDelays(records.map((r) => r.ackAt - r.sentAt)),
    searchMs: summariseDelays(phase.probe.searchMs),
    records: records.map((r) => ({
      ...r,
      delayMs: r.foundAt === undefined ? null : Math.round(r.foundAt - r.ackAt),
      ...(readyAt !== undefined ? { ackSinceReadyMs: Math.round(r.ackAt - readyAt) } : {}),
    })),
  };
}

interface DocumentResult {
  readonly bytes: number;
  readonly paragraphs: number;
  readonly generateMs: number;
  readonly stream: StreamOutcome;
  readonly chunkCount: number;
  readonly samples: DocumentProbe['samples'];
  /** From READY, ms; undefined: not within the cap. */
  readonly lexicalAllMs: number | undefined;
  readonly lexicalLastChunkMs: number | undefined;
  readonly denseAllMs: number | undefined;
  readonly indexedAllMs: number | undefined;
  /** From READY to every chunk indexed and retrieval's `engram_index_dense_pending` gauge at 0. */
  readonly denseBacklogEmptyMs: number | undefined;
  readonly progress: DocumentProbe['progress'];
}

/** The document phase: upload while appending, then the document probe until done or the cap. */
async function documentPhase(
  phase: Phase,
  transports: { ingestion: Transport; retrieval: Transport },
  auth: { user: Auth; admin: Auth },
  doc: GeneratedDocument & { generateMs: number },
  appends: { count: number; next: () => string; random: Random },
  metricsUrl: string | undefined,
  clock: Clock,
  errors: ErrorCounts,
  signal: AbortSignal,
): Promise<{ phase: PhaseResult; document: DocumentResult }> {
  // The appends start when the first chunks are committed (WRITING): from then on the indexer has
  // the document's backlog, which is what a conversational write must not wait behind.
  let writing: () => void = () => undefined;
  const writingStarted = new Promise<void>((resolve) => {
    writing = resolve;
  });
  const appending = writingStarted.then(() =>
    runAppends(phase, appends.count, config.documentAppendIntervalMs, appends.next, appends.random, signal),
  );
  const stream = await streamDocument(
    transports.ingestion,
    auth.user,
    doc.text,
    `fresh-doc-${config.seed}`,
    clock,
    signal,
    () => {
      writing();
    },
  );
  writing(); // (no WRITING progress at all: start now)
  log(
    `  READY after ${s2(stream.readyAt - stream.startAt)}: ${stream.document.chunkCount} chunks (${stream.document.name})`,
  );
  const probe = new DocumentProbe(transports, auth, stream.document, clock, errors, metricsUrl);
  await probe.chooseSample(config.sampleChunks);
  log(
    `  sample: ${probe.samples.length} chunks (ordinals ${probe.samples.map((s) => s.ordinal).join(', ')})`,
  );
  // The cap: an own timer (AbortSignal.any over AbortSignal.timeout did not fire here, Node 20).
  const cap = new AbortController();
  const capTimer = setTimeout(() => {
    cap.abort(new Error('cap'));
  }, config.maxWaitS * 1000);
  const onAbort = () => {
    cap.abort(new Error('interrupted'));
  };
  signal.addEventListener('abort', onAbort, { once: true });
  const capped = cap.signal;
  const ticker = setInterval(() => {
    const count = (key: 'lexicalAt' | 'denseAt') => probe.samples.filter((s) => s[key] !== undefined).length;
    const last = probe.progress.at(-1);
    log(
      `  +${Math.round((clock() - stream.readyAt) / 1000)} s: sample lexical ${count('lexicalAt')}/${probe.samples.length}, ` +
        `dense ${count('denseAt')}; indexed ${last?.indexedChunks ?? '?'}/${stream.document.chunkCount}, ` +
        `outbox ${last?.outboxPending ?? '?'}, dense pending ${last?.densePending ?? '?'}, ` +
        `appends found ${phase.probe.records.filter((r) => r.foundAt !== undefined).length}/${phase.probe.records.length}`,
    );
  }, 30_000);
  try {
    await Promise.all([
      probe.pollLexical(config.documentPollMs, capped),
      probe.pollDense(config.densePollMs, config.densePerRound, capped),
      probe.pollProgress(
        config.progressPollMs,
        () => probe.denseBacklogDone && probe.lexicalDone && probe.denseDone,
        capped,
      ),
      appending,
    ]);
  } finally {
    clearInterval(ticker);
    clearTimeout(capTimer);
    signal.removeEventListener('abort', onAbort);
  }
  const fromReady = (t: number | undefined) => (t === undefined ? undefined : Math.round(t - stream.readyAt));
  const latest = (key: 'lexicalAt' | 'denseAt') =>
    probe.samples.some((s) => s[key] === undefined) || probe.samples.length === 0
      ? undefined
      : Math.max(...probe.samples.map((s) => s[key]!));
  return {
    phase: phaseResult(phase, stream.readyAt),
    document: {
      bytes: doc.bytes,
      paragraphs: doc.paragraphs,
      generateMs: doc.generateMs,
      stream,
      chunkCount: stream.document.chunkCount,
      samples: probe.samples,
      lexicalAllMs: fromReady(latest('lexicalAt')),
      lexicalLastChunkMs: fromReady(probe.samples.at(-1)?.lexicalAt),
      denseAllMs: fromReady(latest('denseAt')),
      indexedAllMs: fromReady(probe.allIndexedAt),
      denseBacklogEmptyMs: fromReady(probe.denseBacklogEmptyAt),
      progress: probe.progress,
    },
  };
}

/** Retrieval's indexer pass stage times so far (none when its metrics cannot be read). */
async function passStages(metricsUrl: string | undefined): Promise<HistogramSeries[]> {
  if (metricsUrl === undefined) return [];
  try {
    const response = await fetch(metricsUrl);
    return histogramSeries(await response.text(), 'engram_index_pass_stage_seconds');
  } catch {
    return [];
  }
}

/** Where the indexer's passes spent their time during the document phase, per loop and stage. */
function printPassProfile(passes: readonly HistogramSeries[]) {
  if (passes.length === 0) return;
  log('\nIndexer passes during the document phase (engram_index_pass_stage_seconds):');
  log('  loop            stage       passes   total s   mean ms');
  const sorted = [...passes].sort(
    (a, b) => `${a.labels['loop']}`.localeCompare(`${b.labels['loop']}`) || b.sum - a.sum,
  );
  for (const p of sorted) {
    log(
      `  ${String(p.labels['loop']).padEnd(15)} ${String(p.labels['stage']).padEnd(11)} ${String(p.count).padStart(6)} ${p.sum.toFixed(2).padStart(9)} ${((p.sum / p.count) * 1000).toFixed(1).padStart(9)}`,
    );
  }
}

function printReport(
  phases: readonly PhaseResult[],
  document: DocumentResult,
  target: readonly TargetLine[],
) {
  log('\nAppended round → found by a lexical Search (from the append’s ack):');
  log('  phase      appends  found  p50       p95       p99       max       append ack p50  search p50');
  for (const p of phases) {
    const s = p.summary;
    const cell = (ms: number | null) => (ms === null ? `>${config.maxWaitS} s` : s2(ms)).padEnd(10);
    log(
      `  ${p.name.padEnd(10)} ${String(s.count).padEnd(8)} ${String(s.found).padEnd(6)} ${cell(s.p50Ms)}${cell(s.p95Ms)}${cell(s.p99Ms)}${cell(s.maxMs)}` +
        `${s2(p.appendAckMs.p50Ms).padEnd(16)}${s2(p.searchMs.p50Ms)}`,
    );
  }
  const st = document.stream;
  log(
    `\nDocument: ${(document.bytes / 1024 / 1024).toFixed(2)} MiB, ${document.paragraphs} paragraphs, ${document.chunkCount} chunks`,
  );
  log(
    `  upload → first WRITING ${s2(st.firstWritingAt === undefined ? undefined : st.firstWritingAt - st.startAt)}, → READY ${s2(st.readyAt - st.startAt)}`,
  );
  log(
    `  READY → sample (${document.samples.length} chunks) all lexically searchable: ${within(document.lexicalAllMs)}`,
  );
  log(`  READY → last chunk lexically searchable: ${within(document.lexicalLastChunkMs)}`);
  log(`  READY → sample all dense-searchable: ${within(document.denseAllMs)}`);
  log(`  READY → GetDocument indexed_chunk_count = chunk_count: ${within(document.indexedAllMs)}`);
  log(
    `  READY → dense backlog empty (engram_index_dense_pending 0): ${within(document.denseBacklogEmptyMs)}`,
  );
  const drops = document.progress.filter(
    (p, i) => i > 0 && (p.indexedChunks ?? 0) < (document.progress[i - 1]!.indexedChunks ?? 0),
  );
  if (drops.length > 0)
    log(
      `  note: indexed_chunk_count went down ${drops.length} time(s) (first at +${s2(drops[0]!.t - st.readyAt)})`,
    );
  log('\nIssue #19 freshness target:');
  for (const line of target)
    log(`  ${line.pass ? 'PASS' : 'MISS'}  ${line.what}: ${line.measured} (target ${line.target})`);
}

async function main(): Promise<number> {
  // Own log directory: the stack names its logs load-<service>.log, and bench:load writes the same
  // names beside its own --out.
  const logDir = join(dirname(outPath), 'freshness-logs');
  mkdirSync(logDir, { recursive: true });
  const startedAt = new Date().toISOString();
  const loadBefore = loadAverage();
  const random = seededRandom(config.seed);
  const markers = markerSource(seededRandom(config.seed + 1));
  const generating = performance.now();
  const generated = generateDocument(Math.floor(config.docMib * 1024 * 1024), random, markers);
  const doc = { ...generated, generateMs: Math.round(performance.now() - generating) };
  log(
    `generated a ${(doc.bytes / 1024 / 1024).toFixed(2)} MiB document (${doc.paragraphs} paragraphs) in ${doc.generateMs} ms`,
  );

  const abort = new AbortController();
  let stack: Stack | undefined;
  const run = { interrupted: false };
  // The first signal ends the probes (the report is still written, marked interrupted); the second
  // stops the services at once.
  const onSignal = (signal: NodeJS.Signals) => {
    if (run.interrupted) {
      if (stack !== undefined) void stack.stop().finally(() => process.exit(130));
      return;
    }
    run.interrupted = true;
    log(`\n${signal}: ending the probes (again to stop at once)…`);
    abort.abort(new Error(signal));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    log(`starting the four services (${config.store}, ${config.vectors})…`);
    stack = await startStack({
      store: config.store,
      vectors: config.vectors,
      logLevel: args['log-level'],
      logDir,
      serviceEnv: config.serviceEnv,
    });
    const t0 = performance.now();
    const clock = clockFrom(t0);
    const key = { algorithm: 'HS256' as const, secret: new TextEncoder().encode(stack.secret) };
    const token = async (subject: string, roles: 'admin'[] = []): Promise<Auth> => ({
      headers: {
        authorization: `Bearer ${await mintToken({ subject, tenantId: 'bench', roles }, key, { expiresIn: '3h' })}`,
      },
    });
    const auth = { user: await token('fresh-u1'), admin: await token('fresh-admin', ['admin']) };
    const transports = {
      ingestion: createGrpcTransport({ baseUrl: stack.services.ingestion.url }),
      retrieval: createGrpcTransport({ baseUrl: stack.services.retrieval.url }),
    };
    const ingestion = createClient(IngestionService, transports.ingestion);
    const errors = new ErrorCounts();
    const newPhase = async (name: string): Promise<Phase> => {
      const { session } = await ingestion.createSession(
        { session: { displayName: `freshness ${name}` } },
        auth.user,
      );
      return {
        name,
        session: session!.name,
        probe: new AppendProbe(transports, auth.user, session!.name, clock, errors),
      };
    };

    // Warm-up (not reported): the first append and search load the models and open the connections.
    const warm = await newPhase('warm-up');
    await runAppends(warm, 2, config.appendIntervalMs, markers.next, random, abort.signal);
    log(
      `warm-up: ${warm.probe.records.map((r) => s2(r.foundAt === undefined ? undefined : r.foundAt - r.ackAt)).join(', ')}`,
    );

    const idleCount = Math.ceil(config.appends / 2);
    log(`phase idle: ${idleCount} appends, one every ${config.appendIntervalMs} ms…`);
    const idle = await newPhase('idle');
    await runAppends(idle, idleCount, config.appendIntervalMs, markers.next, random, abort.signal);
    const idleResult = phaseResult(idle);
    log(
      `  found ${idleResult.summary.found}/${idleResult.summary.count}, p50 ${s2(idleResult.summary.p50Ms)}`,
    );

    if (abort.signal.aborted) throw new Error('interrupted before the document phase');
    const documentCount = config.appends - idleCount;
    log(`phase document: streaming the document, ${documentCount} appends meanwhile…`);
    const loadBeforeDocument = loadAverage();
    const passesBefore = await passStages(stack.services.retrieval.metricsUrl);
    const { phase: documentResult, document } = await documentPhase(
      await newPhase('document'),
      transports,
      auth,
      doc,
      { count: documentCount, next: markers.next, random },
      stack.services.retrieval.metricsUrl,
      clock,
      errors,
      abort.signal,
    );
    const phases = [idleResult, documentResult];
    const target = freshnessTarget(
      phases.map((p) => ({ name: p.name, summary: p.summary })),
      document.lexicalAllMs ?? null,
      config.maxWaitS,
    );
    const passes = histogramDelta(passesBefore, await passStages(stack.services.retrieval.metricsUrl));
    printReport(phases, document, target);
    printPassProfile(passes);
    if (Object.keys(errors.counts).length > 0) log(`\nfailed calls: ${JSON.stringify(errors.counts)}`);
    const result = {
      benchmark: 'freshness',
      startedAt,
      interrupted: run.interrupted,
      machine: machine(),
      loadAverage: { before: loadBefore, beforeDocument: loadBeforeDocument, after: loadAverage() },
      config,
      stack: { store: stack.storeTarget, vectors: stack.qdrantUrl ?? 'embedded (retrieval)' },
      phases,
      document: {
        ...document,
        stream: {
          ...document.stream,
          document: { name: document.stream.document.name, chunkCount: document.stream.document.chunkCount },
        },
      },
      target: { lines: target, pass: target.every((l) => l.pass) },
      indexerPasses: passes,
      errors: errors.counts,
    };
    writeFileSync(outPath, `${JSON.stringify(result, null, 2)}\n`);
    log(`\nwrote ${outPath} (service logs: ${logDir}/load-<service>.log)`);
  } finally {
    abort.abort(new Error('done'));
    log('stopping the services…');
    await stack?.stop();
  }
  return run.interrupted ? 130 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `bench:freshness failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
