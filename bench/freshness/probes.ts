/**
 * The probes of the freshness benchmark (bench/freshness.ts), each over real gRPC calls:
 * - `AppendProbe`: appends user/assistant rounds carrying a unique marker into one session and
 *   polls a lexical-only Search (`vector_weight` 0, `text_weight` 1, kinds ROUND, that session)
 *   every `pollMs` until each round comes back by name; the delay runs from the append's
 *   acknowledgement to the response of the first Search that returned it.
 * - `streamDocument`: StreamIngestDocument of the generated document (IngestDocument takes at
 *   most 4 MiB), with the times of its phases.
 * - `DocumentProbe`: after READY, the sample chunks (`spreadOrdinals`, `sampleChunks`) are polled
 *   lexically (one Search for every sample marker not yet found, kinds CHUNK, that document) and
 *   for their dense vector (the same Search's `dense_pending_candidates`, lexical-first indexing),
 *   and the indexer's progress is sampled (GetDocument's `indexed_chunk_count`, GetIndexStatus's
 *   CHUNK points and outbox backlog, retrieval's `engram_index_dense_pending` gauge).
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as wait } from 'node:timers/promises';
import { Code, ConnectError, createClient, type Client, type Transport } from '@connectrpc/connect';
import { ItemKind } from '@engram/contracts/common';
import { IngestionService, IngestPhase, MessageRole, type Document } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import type { Random } from '@engram/testing';
import { gaugeValue, roundMessages, sampleChunks, spreadOrdinals, type SampleChunk } from './plan.js';

const MIB = 1024 * 1024;
const CALL_TIMEOUT_MS = 30_000;
/** Markers per lexical Search: 100 results at most, and a marker matches exactly one item. */
const MARKERS_PER_QUERY = 100;
/** Waits `ms`, or less when the signal aborts. */
const sleep = (ms: number, signal: AbortSignal) => wait(ms, undefined, { signal }).catch(() => undefined);

/** Call options carrying a bearer token. */
export interface Auth {
  readonly headers: { authorization: string };
}

/** ms since `t0` (the generator's start), to 0.1 ms. */
export type Clock = () => number;
export const clockFrom =
  (t0: number): Clock =>
  () =>
    Math.round((performance.now() - t0) * 10) / 10;

/** Counts failed calls by `<what> <gRPC code>`. */
export class ErrorCounts {
  readonly counts: Record<string, number> = {};
  add(what: string, error: unknown): void {
    const code = error instanceof ConnectError ? Code[error.code] : 'CLIENT';
    const key = `${what} ${code}`;
    this.counts[key] = (this.counts[key] ?? 0) + 1;
  }
}

/**
 * Lexical-only search for `markers`: the names of the results, and how many of the candidates had
 * no dense vector yet (`SearchStats.dense_pending_candidates`, lexical-first indexing).
 */
async function lexicalSearch(
  retrieval: Client<typeof RetrievalService>,
  auth: Auth,
  markers: readonly string[],
  filter: { kinds: ItemKind[]; sessions?: string[]; documents?: string[] },
): Promise<{ names: Set<string>; densePending: number }> {
  const { results, stats } = await retrieval.search(
    {
      query: markers.join(' '),
      topK: MARKERS_PER_QUERY,
      filter,
      options: { vectorWeight: 0, textWeight: 1 },
    },
    { ...auth, timeoutMs: CALL_TIMEOUT_MS },
  );
  return { names: new Set(results.map((r) => r.name)), densePending: stats?.densePendingCandidates ?? 0 };
}

export interface AppendRecord {
  readonly index: number;
  readonly marker: string;
  /** Name of the round (its user message). */
  readonly round: string;
  /** When the append was sent / acknowledged, ms on the run's clock. */
  readonly sentAt: number;
  readonly ackAt: number;
  /** When the first Search returning the round answered; undefined while (or if never) found. */
  foundAt?: number;
  /** Searches that ran (were answered) after the ack and did not return the round. */
  misses: number;
}

/** The append probe of one phase: one session, appends on a schedule, one poll loop. */
export class AppendProbe {
  readonly records: AppendRecord[] = [];
  readonly searchMs: number[] = [];
  readonly #ingestion: Client<typeof IngestionService>;
  readonly #retrieval: Client<typeof RetrievalService>;
  readonly #auth: Auth;
  readonly #session: string;
  readonly #clock: Clock;
  readonly #errors: ErrorCounts;

  constructor(
    transports: { ingestion: Transport; retrieval: Transport },
    auth: Auth,
    session: string,
    clock: Clock,
    errors: ErrorCounts,
  ) {
    this.#ingestion = createClient(IngestionService, transports.ingestion);
    this.#retrieval = createClient(RetrievalService, transports.retrieval);
    this.#auth = auth;
    this.#session = session;
    this.#clock = clock;
    this.#errors = errors;
  }

  /** Appends one round with `marker`; failures are counted and leave no record. */
  async append(index: number, marker: string, random: Random): Promise<void> {
    const { user, assistant } = roundMessages(random, marker);
    const sentAt = this.#clock();
    try {
      const { messages } = await this.#ingestion.appendMessages(
        {
          parent: this.#session,
          requestId: `fresh-${marker}`,
          messages: [
            { role: MessageRole.USER, content: user },
            { role: MessageRole.ASSISTANT, content: assistant },
          ],
        },
        { ...this.#auth, timeoutMs: CALL_TIMEOUT_MS },
      );
      const round = messages.find((m) => m.role === MessageRole.USER)?.name;
      if (round === undefined) throw new Error('AppendMessages returned no user message');
      this.records.push({ index, marker, round, sentAt, ackAt: this.#clock(), misses: 0 });
    } catch (error) {
      this.#errors.add('AppendMessages', error);
    }
  }

  /** Rounds appended and not found yet, not older than `capMs` since their ack. */
  pending(capMs: number): AppendRecord[] {
    const now = this.#clock();
    return this.records.filter((r) => r.foundAt === undefined && now - r.ackAt <= capMs);
  }

  /** Polls until `done()` (checked between polls) or the signal aborts. */
  async poll(pollMs: number, capMs: number, done: () => boolean, signal: AbortSignal): Promise<void> {
    while (!signal.aborted && !done()) {
      const started = performance.now();
      const pending = this.pending(capMs);
      for (let i = 0; i < pending.length; i += MARKERS_PER_QUERY) {
        const batch = pending.slice(i, i + MARKERS_PER_QUERY);
        try {
          const { names } = await lexicalSearch(
            this.#retrieval,
            this.#auth,
            batch.map((r) => r.marker),
            { kinds: [ItemKind.ROUND], sessions: [this.#session] },
          );
          const answeredAt = this.#clock();
          this.searchMs.push(performance.now() - started);
          for (const r of batch)
            if (names.has(r.round)) r.foundAt = answeredAt;
            else r.misses++;
        } catch (error) {
          this.#errors.add('Search', error);
        }
      }
      await sleep(Math.max(0, pollMs - (performance.now() - started)), signal);
    }
  }
}

export interface StreamOutcome {
  readonly document: Document;
  readonly startAt: number;
  readonly firstWritingAt: number | undefined;
  readonly readyAt: number;
  readonly progressMessages: number;
}

/** StreamIngestDocument of `text` in parts of 1 MiB; resolves at the result (READY). */
export async function streamDocument(
  transport: Transport,
  auth: Auth,
  text: string,
  requestId: string,
  clock: Clock,
  signal: AbortSignal,
  onWriting: () => void,
): Promise<StreamOutcome> {
  const ingestion = createClient(IngestionService, transport);
  const bytes = new TextEncoder().encode(text);
  async function* requests() {
    yield {
      payload: {
        case: 'header' as const,
        value: {
          document: { displayName: 'freshness.md', mimeType: 'text/markdown' },
          requestId,
          expectedSizeBytes: BigInt(bytes.length),
        },
      },
    };
    for (let offset = 0; offset < bytes.length; offset += MIB)
      yield { payload: { case: 'part' as const, value: { data: bytes.subarray(offset, offset + MIB) } } };
  }
  const startAt = clock();
  let firstWritingAt: number | undefined;
  let progressMessages = 0;
  for await (const message of ingestion.streamIngestDocument(requests(), {
    ...auth,
    timeoutMs: 300_000,
    signal,
  })) {
    if (message.event.case === 'progress') {
      progressMessages++;
      if (firstWritingAt === undefined && message.event.value.phase === IngestPhase.WRITING) {
        firstWritingAt = clock();
        onWriting();
      }
    } else if (message.event.case === 'result') {
      const document = message.event.value.document;
      if (document === undefined) throw new Error('StreamIngestDocument: a result without a document');
      return { document, startAt, firstWritingAt, readyAt: clock(), progressMessages };
    }
  }
  throw new Error('StreamIngestDocument ended without a result');
}

export interface SampleRecord extends SampleChunk {
  /** ms on the run's clock; undefined while (or if never) found. */
  lexicalAt?: number;
  denseAt?: number;
}

export interface ProgressSample {
  readonly t: number;
  readonly indexedChunks: number | undefined;
  readonly chunkPoints: number | undefined;
  readonly outboxPending: number | undefined;
  /** retrieval's `engram_index_dense_pending` gauge: points still without their dense vector. */
  readonly densePending: number | undefined;
}

/** retrieval's dense backlog from its metrics endpoint; undefined when unavailable. */
async function densePendingGauge(metricsUrl: string | undefined): Promise<number | undefined> {
  if (metricsUrl === undefined) return undefined;
  const url = metricsUrl.endsWith('/metrics') ? metricsUrl : `${metricsUrl.replace(/\/$/, '')}/metrics`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    return gaugeValue(await response.text(), 'engram_index_dense_pending');
  } catch {
    return undefined;
  }
}

/** Document freshness after READY: sample chunks found lexically and densely, indexer progress. */
export class DocumentProbe {
  readonly samples: SampleRecord[] = [];
  readonly progress: ProgressSample[] = [];
  /** First time GetDocument reported every chunk indexed. */
  allIndexedAt: number | undefined;
  /** First time, with every chunk indexed, that retrieval's dense backlog gauge read 0. */
  denseBacklogEmptyAt: number | undefined;
  readonly #ingestion: Client<typeof IngestionService>;
  readonly #retrieval: Client<typeof RetrievalService>;
  readonly #auth: { user: Auth; admin: Auth };
  readonly #document: Document;
  readonly #clock: Clock;
  readonly #errors: ErrorCounts;
  readonly #metricsUrl: string | undefined;

  constructor(
    transports: { ingestion: Transport; retrieval: Transport },
    auth: { user: Auth; admin: Auth },
    document: Document,
    clock: Clock,
    errors: ErrorCounts,
    metricsUrl: string | undefined,
  ) {
    this.#metricsUrl = metricsUrl;
    this.#ingestion = createClient(IngestionService, transports.ingestion);
    this.#retrieval = createClient(RetrievalService, transports.retrieval);
    this.#auth = auth;
    this.#document = document;
    this.#clock = clock;
    this.#errors = errors;
  }

  /** Reads the target chunks and their neighbours (ListChunks by ordinal) and picks the sample. */
  async chooseSample(count: number): Promise<void> {
    const targets = spreadOrdinals(this.#document.chunkCount, count);
    const chunks = [];
    for (const ordinal of targets) {
      const { chunks: window } = await this.#ingestion.listChunks(
        {
          parent: this.#document.name,
          fromOrdinal: Math.max(0, ordinal - 1),
          toOrdinal: ordinal + 1,
          pageSize: 3,
        },
        { ...this.#auth.user, timeoutMs: CALL_TIMEOUT_MS },
      );
      chunks.push(...window);
    }
    this.samples.push(...sampleChunks(chunks, targets));
  }

  get lexicalDone(): boolean {
    return this.samples.every((s) => s.lexicalAt !== undefined);
  }

  get denseDone(): boolean {
    return this.samples.every((s) => s.denseAt !== undefined);
  }

  get indexedDone(): boolean {
    return this.allIndexedAt !== undefined;
  }

  /** Every chunk indexed and the dense backlog empty (or the gauge not available). */
  get denseBacklogDone(): boolean {
    return this.denseBacklogEmptyAt !== undefined || (this.indexedDone && this.#metricsUrl === undefined);
  }

  /** One lexical Search for every sample marker not found yet, every `pollMs`. */
  async pollLexical(pollMs: number, signal: AbortSignal): Promise<void> {
    while (!signal.aborted && !this.lexicalDone) {
      const started = performance.now();
      const pending = this.samples.filter((s) => s.lexicalAt === undefined);
      try {
        const { names } = await this.#search(pending.map((s) => s.marker));
        const answeredAt = this.#clock();
        for (const s of pending) if (names.has(s.name)) s.lexicalAt = answeredAt;
      } catch (error) {
        this.#errors.add('Search', error);
      }
      await sleep(Math.max(0, pollMs - (performance.now() - started)), signal);
    }
  }

  /** Lexical-only search for sample markers within the document. */
  #search(markers: readonly string[]) {
    return lexicalSearch(this.#retrieval, this.#auth.user, markers, {
      kinds: [ItemKind.CHUNK],
      documents: [this.#document.name],
    });
  }

  /**
   * Dense freshness, every `pollMs`, of the sample chunks already found lexically: a chunk is
   * dense-searchable when a lexical Search returns it and reports no candidate without a dense
   * vector (`dense_pending_candidates`; markers are unique, so the candidates are the sample
   * chunks asked for). One Search of all pending markers settles the cases "all have their
   * vector" and "none has"; otherwise the earliest `perRound` are asked one by one (the dense stage
   * goes roughly in the order the points were written).
   */
  async pollDense(pollMs: number, perRound: number, signal: AbortSignal): Promise<void> {
    while (!signal.aborted && !this.denseDone) {
      const started = performance.now();
      const pending = this.samples.filter((s) => s.lexicalAt !== undefined && s.denseAt === undefined);
      try {
        if (pending.length > 0) {
          const all = await this.#search(pending.map((s) => s.marker));
          const answeredAt = this.#clock();
          const found = pending.filter((s) => all.names.has(s.name));
          if (all.densePending === 0) for (const s of found) s.denseAt = answeredAt;
          else if (all.densePending < found.length)
            for (const s of found.slice(0, perRound)) {
              const one = await this.#search([s.marker]);
              if (one.names.has(s.name) && one.densePending === 0) s.denseAt = this.#clock();
            }
        }
      } catch (error) {
        this.#errors.add('Search (dense check)', error);
      }
      await sleep(Math.max(0, pollMs - (performance.now() - started)), signal);
    }
  }

  /** GetDocument and GetIndexStatus every `pollMs` until `done()`. */
  async pollProgress(pollMs: number, done: () => boolean, signal: AbortSignal): Promise<void> {
    while (!signal.aborted && !done()) {
      const started = performance.now();
      let indexedChunks: number | undefined;
      let chunkPoints: number | undefined;
      let outboxPending: number | undefined;
      try {
        const { document } = await this.#ingestion.getDocument(
          { name: this.#document.name },
          { ...this.#auth.user, timeoutMs: CALL_TIMEOUT_MS },
        );
        indexedChunks = document?.indexedChunkCount;
        if (this.allIndexedAt === undefined && indexedChunks === this.#document.chunkCount)
          this.allIndexedAt = this.#clock();
      } catch (error) {
        this.#errors.add('GetDocument', error);
      }
      try {
        const { indexStatus } = await this.#retrieval.getIndexStatus(
          {},
          { ...this.#auth.admin, timeoutMs: CALL_TIMEOUT_MS },
        );
        const points = indexStatus?.kinds.find((k) => k.kind === ItemKind.CHUNK)?.indexedPoints;
        chunkPoints = points === undefined ? undefined : Number(points);
        outboxPending = indexStatus === undefined ? undefined : Number(indexStatus.outboxPending);
      } catch (error) {
        this.#errors.add('GetIndexStatus', error);
      }
      const densePending = await densePendingGauge(this.#metricsUrl);
      const t = this.#clock();
      if (this.denseBacklogEmptyAt === undefined && this.allIndexedAt !== undefined && densePending === 0)
        this.denseBacklogEmptyAt = t;
      this.progress.push({ t, indexedChunks, chunkPoints, outboxPending, densePending });
      await sleep(Math.max(0, pollMs - (performance.now() - started)), signal);
    }
  }
}
