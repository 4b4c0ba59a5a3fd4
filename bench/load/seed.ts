/**
 * The seeded state of the load benchmark (bench/load/run.ts), through the real APIs of the running
 * stack: per planned user (bench/load/corpus.ts `planUsers`), in its tenant `bench` and its org,
 *
 * - one Markdown document through IngestDocument (every tenth user's ORG-scoped), not waiting for
 *   the index;
 * - one session with the user's conversation through AppendMessages (batches of 100 messages: one
 *   round per USER message), then FlushSession with `wait_for_extraction`, so governance's
 *   extractors derive memories from it (the offline extractors: no chat model is configured);
 * - memories through governance's CreateMemory (the hard rules apply; the first of every fifth
 *   user ORG-scoped);
 *
 * `parallel` users at a time. Every item is embedded and indexed by the retrieval service's own
 * indexer; seeding ends when the outbox is drained (GetIndexStatus) and the retrieval metrics'
 * `engram_index_dense_pending` (lexical-first indexing, when present) reads 0, twice in a row.
 * The counts per kind (source rows / indexed points) come from GetIndexStatus.
 *
 * The manifest (`<seed dir>/manifest.json`) records the parameters, the counts and the timings, so
 * that a later run with the same `--seed-dir` and parameters reuses the state.
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Code, ConnectError, createClient, type Transport } from '@connectrpc/connect';
import { ItemKind, Scope } from '@engram/contracts/common';
import { GovernanceService, MemoryType } from '@engram/contracts/governance';
import { IngestionService, MessageRole } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { userDocument, userMemories, userMessages, type Corpus, type UserPlan } from './corpus.js';
import { gaugeValue, seedProgress, type SeedParams } from './report.js';

/** Call options carrying a bearer token. */
export interface Auth {
  readonly headers: { authorization: string };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Calls `fn`, retrying ABORTED ("a concurrent change conflicted with this one; retry": a MariaDB
 * deadlock), UNAVAILABLE (SQLite: "database is locked" when several processes write) and
 * RESOURCE_EXHAUSTED without a quota reason (admission control) up to 8 times with a growing pause;
 * counts the retries per code in `retries`. Seeding only: the load itself never retries, it counts.
 */
async function retryConflicts<T>(fn: () => Promise<T>, retries: Record<string, number>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      const retryable =
        error instanceof ConnectError &&
        (error.code === Code.Aborted ||
          error.code === Code.Unavailable ||
          (error.code === Code.ResourceExhausted && !/quota/i.test(error.rawMessage)));
      if (!retryable || attempt >= 8) throw error;
      const name = Code[error.code];
      retries[name] = (retries[name] ?? 0) + 1;
      await sleep(200 * attempt);
    }
  }
}

export type IndexCounts = Record<string, { rows: number; points: number | undefined }>;

export interface SeedResult {
  readonly users: number;
  readonly documents: number;
  readonly messages: number;
  /** Memories written through CreateMemory (extracted ones are in `counts.MEMORY` too). `messages` and this: by the last run only when resumed; `counts` is authoritative. */
  readonly createdMemories: number;
  /** Per item kind at the end: source rows and indexed points (GetIndexStatus). */
  readonly counts: IndexCounts;
  /** Searchable items: the source rows of every kind. */
  readonly items: number;
  /** Seed calls retried, per code. */
  readonly retries: Record<string, number>;
  /** Writing (all API calls) and until the index was drained, ms (of the last run when resumed). */
  readonly writeMs: number;
  /** Seeding time over every run (an interrupted seed resumes), ms. */
  readonly ms: number;
  readonly itemsPerSecond: number;
  /** Seeding runs it took (1 unless interrupted and resumed). */
  readonly runs: number;
}

export interface Manifest {
  readonly version: 1;
  readonly params: SeedParams;
  readonly createdAt: string;
  readonly seed: SeedResult;
  /** The database and the Qdrant storage this manifest describes (stack.ts keeps them in the seed dir). */
  readonly store: string;
  readonly vectors: string;
}

export const manifestPath = (dir: string) => join(dir, 'manifest.json');
/** The parameters of a seed under way (written before the first write, so an interrupted seed can resume). */
export const paramsPath = (dir: string) => join(dir, 'params.json');
const progressPath = (dir: string) => join(dir, 'progress.jsonl');

/** Progress of an interrupted seed in `dir` (see `seedProgress`), and a logger of the users done from now on. */
export function seedJournal(dir: string): {
  readonly done: ReadonlySet<number>;
  readonly runs: number;
  readonly priorMs: number;
  readonly userDone: (user: number) => void;
  /** Marks time spent waiting for the index (so an interrupted drain still counts). */
  readonly tick: () => void;
} {
  const path = progressPath(dir);
  const progress = seedProgress(existsSync(path) ? readFileSync(path, 'utf8') : '');
  appendFileSync(path, `${JSON.stringify({ run: new Date().toISOString(), t: Date.now() })}\n`);
  return {
    ...progress,
    userDone: (user) => {
      appendFileSync(path, `${JSON.stringify({ user, t: Date.now() })}\n`);
    },
    tick: () => {
      appendFileSync(path, `${JSON.stringify({ t: Date.now() })}\n`);
    },
  };
}

export function readManifest(dir: string): Manifest | undefined {
  const path = manifestPath(dir);
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, 'utf8')) as Manifest;
}

export function writeManifest(dir: string, manifest: Manifest): void {
  writeFileSync(manifestPath(dir), `${JSON.stringify(manifest, null, 2)}\n`);
}

export interface SeedTransports {
  readonly ingestion: Transport;
  readonly retrieval: Transport;
  readonly governance: Transport;
}

/** The index counts and backlog of tenant `bench` (GetIndexStatus as its admin). */
export async function indexState(
  transport: Transport,
  admin: Auth,
): Promise<{ counts: IndexCounts; backlog: number }> {
  const retrieval = createClient(RetrievalService, transport);
  const { indexStatus } = await retrieval.getIndexStatus({}, { ...admin, timeoutMs: 60_000 });
  const counts: IndexCounts = {};
  for (const k of indexStatus?.kinds ?? [])
    counts[ItemKind[k.kind]] = {
      rows: Number(k.sourceRows),
      points: k.indexedPoints === undefined ? undefined : Number(k.indexedPoints),
    };
  return {
    counts,
    backlog: Number(indexStatus?.outboxPending ?? 0n) + Number(indexStatus?.outboxRetrying ?? 0n),
  };
}

/**
 * Waits until the outbox is drained and `engram_index_dense_pending` (if the retrieval metrics have
 * it) is 0, twice in a row; logs the progress every 30 s.
 */
export async function waitDrained(
  transport: Transport,
  admin: Auth,
  scrapeRetrieval: () => Promise<string>,
  { timeoutMs, log, onTick }: { timeoutMs: number; log: (line: string) => void; onTick?: () => void },
): Promise<IndexCounts> {
  const start = Date.now();
  let lastLog = start;
  let drained = 0;
  // A status call that times out on a loaded machine is asked again, not fatal.
  const read = async (previous?: Awaited<ReturnType<typeof indexState>>) => {
    try {
      return await indexState(transport, admin);
    } catch (error) {
      if (!(error instanceof ConnectError) || ![Code.DeadlineExceeded, Code.Unavailable].includes(error.code))
        throw error;
      return { counts: previous?.counts ?? {}, backlog: Number.POSITIVE_INFINITY };
    }
  };
  let state = await read();
  for (;;) {
    // A failed scrape ('') proves nothing; a scrape without the gauge (no lexical-first indexing) is 0.
    const text = await scrapeRetrieval();
    const densePending = gaugeValue(text, 'engram_index_dense_pending');
    drained = state.backlog === 0 && text !== '' && (densePending ?? 0) === 0 ? drained + 1 : 0;
    if (drained >= 2) return state.counts;
    if (Date.now() - start > timeoutMs)
      throw new Error(
        `the index did not drain within ${Math.round(timeoutMs / 60_000)} min (outbox ${state.backlog}, dense pending ${densePending ?? 'n/a'})`,
      );
    if (Date.now() - lastLog >= 30_000) {
      lastLog = Date.now();
      onTick?.();
      const rows = Object.values(state.counts).reduce((a, c) => a + c.rows, 0);
      const points = Object.values(state.counts).reduce((a, c) => a + (c.points ?? 0), 0);
      log(
        `  indexing: ${points}/${rows} points, outbox ${state.backlog}, dense pending ${text === '' ? 'unknown (metrics scrape failed)' : (densePending ?? 'n/a')} (${Math.round((Date.now() - start) / 1000)} s)`,
      );
    }
    await sleep(2000);
    state = await read(state);
  }
}

/** Seeds every planned user (`parallel` at a time) and waits for the index to drain. */
export async function seedUsers(
  transports: SeedTransports,
  corpus: Corpus,
  plans: readonly UserPlan[],
  options: {
    readonly authOf: (plan: UserPlan) => Auth;
    readonly admin: Auth;
    readonly parallel: number;
    readonly scrapeRetrieval: () => Promise<string>;
    readonly drainTimeoutMs: number;
    readonly log: (line: string) => void;
    /** An interrupted seed's progress (`seedJournal`): users already written are skipped. */
    readonly journal?: ReturnType<typeof seedJournal>;
  },
): Promise<SeedResult> {
  const start = Date.now();
  const ingestion = createClient(IngestionService, transports.ingestion);
  const governance = createClient(GovernanceService, transports.governance);
  let messages = 0;
  let createdMemories = 0;
  const retries: Record<string, number> = {};
  const long = { timeoutMs: 300_000 }; // the services' maximum deadline
  const one = async (plan: UserPlan) => {
    const auth = options.authOf(plan);
    const u = plan.index;
    await retryConflicts(
      () =>
        ingestion.ingestDocument(
          {
            document: {
              displayName: `journal-${u}.md`,
              mimeType: 'text/markdown',
              ...(plan.documentOrgScoped ? { scope: Scope.ORG, orgId: plan.org } : {}),
            },
            content: new TextEncoder().encode(userDocument(corpus, plan)),
            requestId: `load-doc-${u}`,
          },
          { ...auth, ...long },
        ),
      retries,
    );
    const { session } = await retryConflicts(
      () => ingestion.createSession({ session: { displayName: `history ${u}` } }, auth),
      retries,
    );
    const turns = userMessages(corpus, plan).map((m) => ({
      role: m.role === 'user' ? MessageRole.USER : MessageRole.ASSISTANT,
      content: m.text,
    }));
    // Request ids from the session's id: a resumed user gets a new session and writes it again.
    const sessionId = session!.name.slice(session!.name.indexOf('/') + 1);
    for (let b = 0; b < turns.length; b += 100) {
      await retryConflicts(
        () =>
          ingestion.appendMessages(
            { parent: session!.name, messages: turns.slice(b, b + 100), requestId: `seed-${sessionId}-${b}` },
            { ...auth, ...long },
          ),
        retries,
      );
    }
    messages += turns.length;
    await retryConflicts(
      () =>
        ingestion.flushSession(
          {
            name: session!.name,
            reason: 'load seed',
            waitForExtraction: true,
            requestId: `flush-${sessionId}`,
          },
          { ...auth, ...long },
        ),
      retries,
    );
    const texts = userMemories(corpus, plan);
    for (const [i, text] of texts.entries()) {
      await retryConflicts(
        () =>
          governance.createMemory(
            {
              memory: {
                type: MemoryType.EVENT,
                text,
                ...(i === 0 && plan.firstMemoryOrgScoped ? { scope: Scope.ORG, orgId: plan.org } : {}),
              },
              requestId: `load-mem-${u}-${i}`,
            },
            { ...auth, ...long },
          ),
        retries,
      );
      createdMemories++;
    }
  };
  const journal = options.journal;
  const todo = plans.filter((p) => journal?.done.has(p.index) !== true);
  if (journal !== undefined && todo.length < plans.length)
    options.log(
      `  resuming: ${plans.length - todo.length} users written by ${journal.runs} earlier run(s), ${todo.length} to go`,
    );
  let next = 0;
  let done = plans.length - todo.length;
  let lastLog = Date.now();
  const worker = async () => {
    for (;;) {
      const plan = todo[next++];
      if (plan === undefined) return;
      await one(plan);
      journal?.userDone(plan.index);
      done++;
      if (Date.now() - lastLog >= 30_000 || done === plans.length) {
        lastLog = Date.now();
        const s = (Date.now() - start) / 1000;
        options.log(
          `  written: ${done}/${plans.length} users, ${messages} messages, ${done} documents, ${createdMemories} memories (${Math.round(s)} s)`,
        );
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.parallel) }, worker));
  const writeMs = Date.now() - start;
  const counts = await waitDrained(transports.retrieval, options.admin, options.scrapeRetrieval, {
    timeoutMs: options.drainTimeoutMs,
    log: options.log,
    ...(journal !== undefined ? { onTick: journal.tick } : {}),
  });
  const ms = Date.now() - start + (journal?.priorMs ?? 0);
  const items = Object.values(counts).reduce((a, c) => a + c.rows, 0);
  return {
    users: plans.length,
    documents: plans.length,
    messages,
    createdMemories,
    counts,
    items,
    retries,
    writeMs,
    ms,
    itemsPerSecond: Math.round((items / (ms / 1000)) * 10) / 10,
    runs: (journal?.runs ?? 0) + 1,
  };
}

/** One session per slot (as the slot's user) with one seeded round, for AppendMessages and BuildContext. */
export async function slotSessions(
  transport: Transport,
  plans: readonly UserPlan[],
  authOf: (plan: UserPlan) => Auth,
  retries: Record<string, number> = {},
): Promise<string[]> {
  const ingestion = createClient(IngestionService, transport);
  const names: string[] = [];
  for (const [c, plan] of plans.entries()) {
    const auth = authOf(plan);
    const { session } = await retryConflicts(
      () => ingestion.createSession({ session: { displayName: `load slot ${c}` } }, auth),
      retries,
    );
    const zh = plan.lang === 'zh';
    const user = zh ? '我们接着聊吧。' : "Let's pick up where we left off.";
    const assistant = zh ? '好的，你想聊什么？' : 'Sure, what would you like to talk about?';
    await retryConflicts(
      () =>
        ingestion.appendMessages(
          {
            parent: session!.name,
            messages: [
              { role: MessageRole.USER, content: user },
              { role: MessageRole.ASSISTANT, content: assistant },
            ],
          },
          auth,
        ),
      retries,
    );
    names.push(session!.name);
  }
  return names;
}
