import { setMaxListeners } from 'node:events';
import type { Embedder } from '@engram/embeddings';
import type { ChatModel } from '@engram/llm';
import { Worker, describeError, type Logger } from '@engram/runtime';
import { SessionRepository, inTransaction, type Store } from '@engram/store';
import type { BoundaryRules } from './domain/boundaries.js';
import type { JudgedMessage, TopicJudgement } from './domain/boundary-judgement.js';
import { detectTopicShiftsWithModel } from './domain/model-boundary.js';
import { detectTopicShifts, type WindowVectorCache } from './domain/topic-shift.js';
import type { ExtractionHandOff } from './handoff.js';

/** A judge of topic shifts inside an open tail: the language model, or the offline detector. */
export interface BoundaryJudge {
  /** MODEL_JUDGEMENT for a language model, TOPIC_SHIFT for the offline detector. */
  readonly reason: 'MODEL_JUDGEMENT' | 'TOPIC_SHIFT';
  judge(messages: readonly JudgedMessage[], signal: AbortSignal): Promise<TopicJudgement>;
}

/** A bounded least-recently-used map of window vectors (2,000 × 512 floats ≈ 4 MiB). */
class WindowLru implements WindowVectorCache {
  readonly #entries = new Map<string, Float32Array>();
  constructor(private readonly capacity: number) {}
  get(text: string): Float32Array | undefined {
    const vector = this.#entries.get(text);
    if (vector !== undefined) {
      this.#entries.delete(text);
      this.#entries.set(text, vector);
    }
    return vector;
  }
  set(text: string, vector: Float32Array): void {
    this.#entries.delete(text);
    this.#entries.set(text, vector);
    if (this.#entries.size > this.capacity) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }
}

/**
 * The offline judge: the topic-shift detector over the local embedding model. The tail is judged
 * again after every append; the cache keeps the windows that did not change from being embedded
 * again.
 */
export function offlineJudge(embedder: Embedder): BoundaryJudge {
  const cache = new WindowLru(2_000);
  return {
    reason: 'TOPIC_SHIFT',
    judge: (messages, signal) => detectTopicShifts(messages, embedder, { signal, cache }),
  };
}

/** The model judge: the configured language model decides where the conversation moved on. */
export function modelJudge(model: ChatModel): BoundaryJudge {
  return {
    reason: 'MODEL_JUDGEMENT',
    judge: (messages, signal) => detectTopicShiftsWithModel(messages, model, { signal }),
  };
}

/** The model judge where a language model is configured, else the offline detector. */
export function boundaryJudge(model: ChatModel | undefined, embedder: () => Embedder): BoundaryJudge {
  return model === undefined ? offlineJudge(embedder()) : modelJudge(model);
}

export interface SegmenterSettings {
  /** The judge looks at a tail only from this many messages on (shorter tails have no topics yet). */
  readonly minTailMessages: number;
  /** Appends to one session within this time are judged once, ms. */
  readonly debounceMs: number;
  /** How often silent sessions are looked for (TIME_GAP by silence), ms. */
  readonly sweepMs: number;
}

export const DEFAULT_SEGMENTER_SETTINGS: SegmenterSettings = {
  minTailMessages: 8,
  debounceMs: 1_000,
  sweepMs: 60_000,
};

/**
 * The asynchronous part of boundary detection (blueprint §3 flow 2), after `AppendMessages`
 * returned: a judge (model or offline topic-shift detector) proposes splits inside the open
 * tail, and a periodic sweep closes tails that have been silent for longer than the gap
 * (TIME_GAP). Each close is one transaction that re-checks that the tail has not moved since it
 * was read, so a concurrent append or flush is never undone; what is skipped is judged again
 * after the next append.
 */
export class Segmenter {
  /** The silence sweep (TIME_GAP by silence): at start, then every `sweepMs`. */
  readonly worker: Worker;
  readonly settings: SegmenterSettings;
  readonly #sessions: SessionRepository;
  readonly #pending = new Map<string, NodeJS.Timeout>();
  readonly #running = new Set<Promise<void>>();
  readonly #abort = new AbortController();

  constructor(
    private readonly deps: {
      readonly store: Store;
      readonly rules: BoundaryRules;
      readonly judge?: BoundaryJudge;
      readonly handOff?: ExtractionHandOff;
      readonly logger: Logger;
      readonly settings?: Partial<SegmenterSettings>;
    },
  ) {
    // Every running judgement listens to this one signal.
    setMaxListeners(0, this.#abort.signal);
    this.#sessions = new SessionRepository(deps.store);
    this.settings = { ...DEFAULT_SEGMENTER_SETTINGS, ...deps.settings };
    const { sweepMs } = this.settings;
    this.worker = new Worker({
      name: 'segmenter',
      logger: deps.logger,
      idleMs: sweepMs,
      // A failed sweep is tried again at the next one.
      backoff: { minMs: sweepMs, maxMs: sweepMs },
      pass: async () => {
        await this.sweepSilence();
      },
      drain: () => this.#stopJudging(),
    });
  }

  /** A session's open tail grew: judge it after the debounce. */
  tailGrew(tenantId: string, sessionId: string): void {
    if (this.deps.judge === undefined || this.#abort.signal.aborted) return;
    const key = `${tenantId}/${sessionId}`;
    const previous = this.#pending.get(key);
    if (previous !== undefined) clearTimeout(previous);
    const timer = setTimeout(() => {
      this.#pending.delete(key);
      this.#track(this.judgeSession(tenantId, sessionId));
    }, this.settings.debounceMs);
    timer.unref();
    this.#pending.set(key, timer);
  }

  /** Judges one session's open tail now and closes the cells the judge finds; returns how many. */
  async judgeSession(tenantId: string, sessionId: string): Promise<number> {
    const judge = this.deps.judge;
    if (judge === undefined) return 0;
    const session = await this.#sessions.get(tenantId, sessionId);
    if (session?.status !== 'ACTIVE') return 0;
    const tail = await this.#sessions.openTail(tenantId, sessionId);
    if (tail.length < this.settings.minTailMessages) return 0;
    const first = tail[0]?.sequence;
    const judgement = await judge.judge(
      tail.map((m) => ({ sequence: m.sequence, role: m.role, content: m.content })),
      this.#abort.signal,
    );
    const last = tail[tail.length - 1]?.sequence ?? 0;
    // The segment after the last split stays open: the conversation may go on with its topic.
    const splits = judgement.splits.filter((s) => s.afterSequence >= (first ?? 0) && s.afterSequence < last);
    if (splits.length === 0) return 0;
    const closed = await inTransaction(this.deps.store, async (trx) => {
      const current = await this.#sessions.get(tenantId, sessionId, trx);
      // The tail moved (flushed, closed by a rule, session closed): judge again later.
      if (current?.status !== 'ACTIVE' || current.openFromSequence !== first) return 0;
      for (const split of splits) {
        await this.#sessions.closeMemCell(trx, tenantId, sessionId, {
          throughSequence: split.afterSequence,
          reason: judge.reason,
          note: split.note,
        });
      }
      return splits.length;
    });
    if (closed > 0) {
      this.deps.handOff?.wake();
      this.deps.logger.debug(
        { session: `sessions/${sessionId}`, closed, reason: judge.reason },
        'topic boundaries',
      );
    }
    return closed;
  }

  /** Closes the open tails of sessions silent for longer than the gap (TIME_GAP); returns how many. */
  async sweepSilence(now = Date.now()): Promise<number> {
    const silentBefore = now - this.deps.rules.timeGapMs;
    let closed = 0;
    for (const session of await this.#sessions.silentSessions(silentBefore, 100)) {
      const done = await inTransaction(this.deps.store, async (trx) => {
        const current = await this.#sessions.get(session.tenantId, session.id, trx);
        if (
          current?.status !== 'ACTIVE' ||
          current.version !== session.version ||
          current.lastSequence < current.openFromSequence
        ) {
          return false;
        }
        await this.#sessions.closeMemCell(trx, session.tenantId, session.id, {
          throughSequence: current.lastSequence,
          reason: 'TIME_GAP',
        });
        return true;
      });
      if (done) closed += 1;
    }
    if (closed > 0) this.deps.handOff?.wake();
    return closed;
  }

  /** Cancels the debounced judgements and aborts the running ones (run once the sweep stopped). */
  async #stopJudging(): Promise<void> {
    for (const timer of this.#pending.values()) clearTimeout(timer);
    this.#pending.clear();
    this.#abort.abort(new Error('shutting down'));
    await Promise.allSettled([...this.#running]);
  }

  #track(work: Promise<unknown>): void {
    const tracked = work.then(
      () => undefined,
      (error: unknown) => {
        if (this.#abort.signal.aborted) return;
        this.deps.logger.warn(
          { err: describeError(error) },
          'boundary detection failed; the tail is judged again after the next append',
        );
      },
    );
    this.#running.add(tracked);
    void tracked.finally(() => this.#running.delete(tracked));
  }
}
