/**
 * The calls of the load benchmark and the two ways of driving them (bench/load/run.ts):
 *
 * - closed loop (`closedLoop`): N clients, each on its own HTTP/2 connections, calling back to back;
 * - open loop (`openLoop`, `--rate R`): arrivals at R per second (Poisson or fixed gaps) regardless
 *   of how the server keeps up, each call with its own deadline, at most `maxOutstanding` calls in
 *   flight (an arrival beyond that is recorded as `SHED_BY_GENERATOR`, never sent), spread over the
 *   same connections round robin — the way to drive "twice the sustainable rate".
 *
 * One call (`callOnce`) of each RPC: Search (top 10) as a seeded user drawn at random, with a query
 * text that never repeats in the run (QueryPool); AppendMessages of the next round of that slot's
 * user's conversation into the slot's session; BuildContext on that session (2,000-token budget,
 * a unique query as the user message); IngestDocument of a small document (≈ 3 chunks) of the
 * user's own content, without waiting for the index (the indexer lag is sampled separately).
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Code, ConnectError, createClient, type Client, type Transport } from '@connectrpc/connect';
import { Scope } from '@engram/contracts/common';
import { ContextService } from '@engram/contracts/context';
import { ErrorInfoSchema } from '@engram/contracts/grpc';
import { IngestionService, MessageRole } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { retryDelayOf } from '@engram/errors';
import { seededRandom } from '@engram/testing';
import { userMessages, type Corpus, type QueryPool, type UserPlan } from './corpus.js';
import { arrivalGapMs, pickRpc, type CallRecord, type Mix, type Rpc } from './report.js';
import type { Auth } from './seed.js';

/** One connection set: a transport per service (connect-node opens one HTTP/2 connection per transport). */
export interface Connection {
  readonly retrieval: Client<typeof RetrievalService>;
  readonly ingestion: Client<typeof IngestionService>;
  readonly context: Client<typeof ContextService>;
}

export function connection(transports: {
  retrieval: Transport;
  ingestion: Transport;
  context: Transport;
}): Connection {
  return {
    retrieval: createClient(RetrievalService, transports.retrieval),
    ingestion: createClient(IngestionService, transports.ingestion),
    context: createClient(ContextService, transports.context),
  };
}

/** A session of one seeded user the workload appends to and builds context on. */
export interface Slot {
  readonly plan: UserPlan;
  readonly auth: Auth;
  readonly session: string;
  /** Rounds appended so far by this run. */
  appended: number;
}

/** Per-field sums of the numeric `*Candidates` fields of Search stats (dense, lexical, merged, and any added later). */
export interface SearchTally {
  responses: number;
  results: number;
  serverElapsedMs: number;
  candidates: Record<string, number>;
}

export interface Workload {
  readonly mix: Mix;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  readonly corpus: Corpus;
  readonly plans: readonly UserPlan[];
  readonly authOf: (plan: UserPlan) => Auth;
  readonly pool: QueryPool;
  readonly slots: readonly Slot[];
  readonly connections: readonly Connection[];
  readonly seed: number;
  /** Called after each finished call; `measured` is false during the warm-up. */
  readonly record: (record: CallRecord, end: number) => void;
  readonly searchTally: SearchTally;
  /** performance.now() at which the measured window starts and the load ends. */
  readonly warmupEnd: number;
  readonly loadEnd: number;
  readonly maxRequests: number;
}

/** `OK`, or the gRPC code name with the ErrorInfo reason when there is one (`RESOURCE_EXHAUSTED/…`). */
export function outcomeOf(error: unknown): string {
  if (error instanceof ConnectError) {
    const reason = error.findDetails(ErrorInfoSchema)[0]?.reason;
    const code: string = Code[error.code];
    const name = code.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
    return reason !== undefined && reason !== '' ? `${name}/${reason}` : name;
  }
  return `CLIENT_ERROR/${error instanceof Error ? error.name : 'unknown'}`;
}

/** What one call ended with: its outcome, and the server's `google.rpc.RetryInfo` delay of a refusal. */
export interface CallOutcome {
  readonly outcome: string;
  /** RESOURCE_EXHAUSTED with a RetryInfo (OVERLOADED, RATE_LIMITED): the wait it asked for, ms. */
  readonly retryAfterMs?: number;
}

/** The RetryInfo delay of a RESOURCE_EXHAUSTED refusal, ms, if it carries one. */
export function retryAfterMs(error: unknown): number | undefined {
  if (!(error instanceof ConnectError) || error.code !== Code.ResourceExhausted) return undefined;
  return retryDelayOf(error);
}

const runId = randomBytes(4).toString('hex');
let documents = 0;

function tallySearch(tally: SearchTally, response: Awaited<ReturnType<Connection['retrieval']['search']>>) {
  const st = response.stats;
  if (st === undefined) return;
  tally.responses++;
  tally.results += response.results.length;
  tally.serverElapsedMs += Number(st.elapsed?.seconds ?? 0n) * 1000 + (st.elapsed?.nanos ?? 0) / 1e6;
  for (const [key, value] of Object.entries(st))
    if (/Candidates$/.test(key) && typeof value === 'number')
      tally.candidates[key] = (tally.candidates[key] ?? 0) + value;
}

/** One call of `rpc`; resolves to its outcome (never rejects). */
export async function callOnce(
  w: Workload,
  conn: Connection,
  rpc: Rpc,
  slot: Slot,
  random: () => number,
  measured: boolean,
): Promise<CallOutcome> {
  const options = { timeoutMs: w.timeoutMs, signal: w.signal };
  try {
    if (rpc === 'search') {
      const plan = w.plans[Math.floor(random() * w.plans.length)]!;
      const response = await conn.retrieval.search(
        { query: w.pool.next(plan, random), topK: 10 },
        { ...options, ...w.authOf(plan) },
      );
      if (measured) tallySearch(w.searchTally, response);
    } else if (rpc === 'append') {
      const start = 2 * slot.plan.rounds + 2 * slot.appended++;
      const [user, assistant] = userMessages(w.corpus, slot.plan, 2, start);
      await conn.ingestion.appendMessages(
        {
          parent: slot.session,
          messages: [
            { role: MessageRole.USER, content: user!.text },
            { role: MessageRole.ASSISTANT, content: assistant!.text },
          ],
        },
        { ...options, ...slot.auth },
      );
    } else if (rpc === 'context') {
      await conn.context.buildContext(
        {
          session: slot.session,
          userMessage: w.pool.next(slot.plan, random),
          model: 'gpt-4o',
          budget: { totalTokens: 2000 },
        },
        { ...options, ...slot.auth },
      );
    } else {
      const plan = w.plans[Math.floor(random() * w.plans.length)]!;
      const n = documents++;
      const turns = userMessages(w.corpus, plan, 24, 2 * plan.rounds + 40 + (n % 50) * 24);
      const text = `# Notes ${n} of ${plan.names[0]}\n\n${turns.map((t) => t.text).join('\n\n')}\n`;
      await conn.ingestion.ingestDocument(
        {
          document: { displayName: `load-${runId}-${n}.md`, mimeType: 'text/markdown', scope: Scope.SELF },
          content: new TextEncoder().encode(text),
          requestId: `load-run-${runId}-${n}`,
        },
        { ...options, ...w.authOf(plan) },
      );
    }
    return { outcome: 'OK' };
  } catch (error) {
    const delay = retryAfterMs(error);
    return { outcome: outcomeOf(error), ...(delay === undefined ? {} : { retryAfterMs: delay }) };
  }
}

/**
 * N clients calling back to back; each client owns connection and slot `index`. A client refused
 * with a RetryInfo (the admission control's OVERLOADED) waits the delay it was given, plus up to
 * 20 % jitter, before its next call, as the CLI and the SDKs do (decision 0033); the refusal is
 * still counted as an error. A client that hammered back at once would measure its own retry storm.
 */
export async function closedLoop(
  w: Workload,
  clients: number,
): Promise<{ issued: number; warmupCalls: number }> {
  let issued = 0;
  let warmupCalls = 0;
  const aborted = () => w.signal.aborted;
  const one = async (index: number) => {
    const random = seededRandom(w.seed * 1000 + index);
    const conn = w.connections[index % w.connections.length]!;
    const slot = w.slots[index % w.slots.length]!;
    for (;;) {
      const now = performance.now();
      if (w.signal.aborted || now >= w.loadEnd) return;
      const measured = now >= w.warmupEnd;
      if (measured && issued >= w.maxRequests) return;
      if (measured) issued++;
      else warmupCalls++;
      const rpc = pickRpc(w.mix, random());
      const { outcome, retryAfterMs: delay } = await callOnce(w, conn, rpc, slot, random, measured);
      if (aborted()) return;
      const end = performance.now();
      if (measured) w.record({ rpc, ms: end - now, outcome }, end);
      if (delay !== undefined) {
        const until = Math.min(end + delay * (1 + 0.2 * random()), w.loadEnd);
        // An abort (the run's end) cuts the wait short.
        await sleep(Math.max(0, until - end), undefined, { signal: w.signal }).catch(() => undefined);
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, i) => one(i)));
  return { issued, warmupCalls };
}

/** Arrivals at `rate` per second until the end, at most `maxOutstanding` in flight. */
export async function openLoop(
  w: Workload,
  { rate, arrivals, maxOutstanding }: { rate: number; arrivals: 'poisson' | 'fixed'; maxOutstanding: number },
): Promise<{ issued: number; warmupCalls: number; shed: number }> {
  const random = seededRandom(w.seed * 7919);
  const inFlight = new Set<Promise<void>>();
  let issued = 0;
  let warmupCalls = 0;
  let shed = 0;
  let next = performance.now();
  let k = 0;
  for (;;) {
    next += arrivalGapMs(rate, arrivals, random());
    const wait = next - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const now = performance.now();
    if (w.signal.aborted || now >= w.loadEnd) break;
    const measured = now >= w.warmupEnd;
    if (measured && issued >= w.maxRequests) break;
    const rpc = pickRpc(w.mix, random());
    if (measured) issued++;
    else warmupCalls++;
    if (inFlight.size >= maxOutstanding) {
      shed++;
      if (measured) w.record({ rpc, ms: 0, outcome: 'SHED_BY_GENERATOR' }, now);
      continue;
    }
    const index = k++;
    const callRandom = seededRandom(w.seed * 1_000_003 + index);
    const p = callOnce(
      w,
      w.connections[index % w.connections.length]!,
      rpc,
      w.slots[index % w.slots.length]!,
      callRandom,
      measured,
    ).then(({ outcome }) => {
      inFlight.delete(p);
      if (w.signal.aborted) return;
      const end = performance.now();
      if (measured) w.record({ rpc, ms: end - now, outcome }, end);
    });
    inFlight.add(p);
  }
  await Promise.all(inFlight);
  return { issued, warmupCalls, shed };
}
