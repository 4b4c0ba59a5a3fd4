import type { CallOptions } from '@connectrpc/connect';
import { Scope } from '@engram/contracts/common';
import { DecisionOutcome, MemoryType, SourceKind } from '@engram/contracts/governance';
import type { Message, Session } from '@engram/contracts/ingestion';
import type { Embedder } from '@engram/embeddings';
import { dependencyFailure, errors, isEngramError, type Principal } from '@engram/runtime';
import { idempotent, newId, type SessionStateRecord } from '@engram/store';
import {
  clipSummary,
  compactionCut,
  compactionMessage,
  mergeCompaction,
  MAX_COMPACTED_PER_CALL,
  skippedCompaction,
  type RecordedCompaction,
} from './compaction-api.js';
import type { ContextDeps } from './deps.js';
import { modelCompactor, offlineCompactor, type Compactor } from './domain/compaction/index.js';
import { countO200kTokens } from './domain/tokenizer.js';
import type { CompactionResult } from './domain/types.js';
import { reasonOf } from './failures.js';
import type { CheckedPolicy } from './policy.js';
import { readMessagesAfter, readTail, repairMark, sendMark } from './session-access.js';
import { storedCompaction, storedTextOf } from './stored-text.js';

/** Governance's `Evidence.messages` limit. */
const MAX_EVIDENCE = 100;

/** Writes an attempt's new state in the transaction of its request id; resolves to what it records. */
type Write = Parameters<typeof idempotent<RecordedCompaction>>[3];

/** One compaction to run: whose session, how, and how its result commits. */
export interface CompactionJob {
  readonly principal: Principal;
  readonly session: Session;
  readonly policy: CheckedPolicy;
  readonly compactor: Compactor;
  /** Compact even when the tail is below the threshold (`CompactSession.force`). */
  readonly force: boolean;
  /** The caller's call options (credential, deadline), for every read and write of the peers. */
  readonly call: CallOptions;
  /** Commits a write, with the call's request id when it has one. */
  readonly commit: (write: Write) => Promise<RecordedCompaction>;
  /** The result of the call this one repeats, read once the session's lock is held. */
  readonly replay?: () => Promise<RecordedCompaction | undefined>;
}

/** What an attempt wrote: its record, and the summary memory the state pointed at before. */
interface Attempted {
  readonly recorded: RecordedCompaction;
  readonly previousSummaryMemory?: string | undefined;
}

/** The compacted messages of an attempt and what the compactor made of them. */
interface Folded {
  readonly compacted: readonly Message[];
  readonly result: CompactionResult;
  readonly summary: string;
  readonly through: number;
  readonly memory: { name: string; created: boolean } | undefined;
}

const sessionIdOf = (session: Session) => session.name.slice('sessions/'.length);

/**
 * Compacts sessions: `CompactSession`, and Chat's automatic compaction. Compactions of one session
 * are serialized in this process (and by the state's version across processes).
 */
export class Compactions {
  readonly #deps: ContextDeps;
  readonly #offline: () => Compactor;
  readonly #model: Compactor | undefined;

  /** `embedder`: the local embedding model of the offline compactor, called at its first use. */
  constructor(deps: ContextDeps, embedder: () => Embedder) {
    this.#deps = deps;
    let offline: Compactor | undefined;
    this.#offline = () => (offline ??= offlineCompactor(embedder()));
    this.#model = deps.chatModel === undefined ? undefined : modelCompactor(deps.chatModel);
  }

  /** The compactor of a policy's mode: MODEL needs the configured chat model, AUTO prefers it. */
  compactor(mode: CheckedPolicy['mode']): Compactor {
    if (mode === 'MODEL' && this.#model === undefined) {
      throw errors.failedPrecondition(
        'MODEL_NOT_CONFIGURED',
        'no chat model is configured: set ENGRAM_LLM_BASE_URL and ENGRAM_LLM_MODEL, or use COMPACTION_MODE_OFFLINE',
        { variable: 'ENGRAM_LLM_MODEL' },
      );
    }
    if (mode === 'OFFLINE') return this.#offline();
    return this.#model ?? this.#offline();
  }

  /**
   * Compacts a session if its tail exceeds the policy's threshold (Chat's automatic compaction),
   * with the caller's call options. Resolves to the outcome.
   */
  async compactIfDue(
    principal: Principal,
    session: Session,
    policy: CheckedPolicy,
    call: CallOptions,
  ): Promise<RecordedCompaction['outcome']> {
    const { store } = this.#deps;
    const recorded = await this.run({
      principal,
      session,
      policy,
      compactor: this.compactor(policy.mode),
      force: false,
      call,
      commit: (write) => idempotent(store, undefined, undefined, write).then((r) => r.result),
    });
    return recorded.outcome;
  }

  /**
   * Runs a compaction under the session's lock; once it has committed, mirrors the mark on
   * ingestion's messages and deletes the summary memory the new one supersedes.
   */
  async run(job: CompactionJob): Promise<RecordedCompaction> {
    const key = `${job.principal.tenantId}/${sessionIdOf(job.session)}`;
    const { recorded, previousSummaryMemory } = await this.#deps.locks.run(key, () => this.#compact(job));
    if (recorded.outcome === 'COMPACTED') await this.#afterCommit(job, recorded, previousSummaryMemory);
    return recorded;
  }

  /** Inside the session's lock: the replayed result, else attempts until one commits. */
  async #compact(job: CompactionJob): Promise<Attempted> {
    // A retry queued behind the call it repeats gets that call's result.
    const replayed = await job.replay?.();
    if (replayed !== undefined) return { recorded: replayed };
    for (let attempt = 1; ; attempt++) {
      const attempted = await this.#attempt(job, attempt);
      if (attempted !== 'retry') return attempted;
    }
  }

  /** One attempt from the state as stored now; 'retry' when another process wrote it meanwhile. */
  async #attempt(job: CompactionJob, attempt: number): Promise<Attempted | 'retry'> {
    const { principal, session, policy, call } = job;
    const state = await this.#deps.states.get(principal.tenantId, sessionIdOf(session));
    // Re-send a committed mark ingestion has not acknowledged yet (blueprint: on the next compaction).
    repairMark(this.#deps, principal, session, state);
    const skipped = async (outcome: RecordedCompaction['outcome']): Promise<Attempted> => ({
      recorded: await job.commit(() => Promise.resolve(skippedCompaction(outcome))),
    });
    const tail = await readTail(this.#deps.ingestion, session, state.compactedThroughSequence, call, 0);
    if (!job.force && tail.uncompactedTokens <= policy.thresholdTokens)
      return skipped('SKIPPED_BELOW_THRESHOLD');
    const messages = await this.#readOldest(session, state.compactedThroughSequence, call);
    const cut = compactionCut(messages, tail.uncompactedMessageCount, policy.keepRecentTurns);
    if (cut === 0) return skipped('SKIPPED_NOTHING_TO_COMPACT');
    const folded = await this.#fold(job, state, messages.slice(0, cut));
    try {
      // (2) The new state with the moved mark, atomically with the request id.
      const recorded = await job.commit((trx) => this.#save(trx, job, state, folded));
      return { recorded, previousSummaryMemory: state.summaryMemoryId };
    } catch (error) {
      // Nothing of this attempt may stay: remove the memory it wrote (not one it merged into).
      if (folded.memory?.created === true)
        await this.#deleteMemory(folded.memory.name, 'compaction not committed', call);
      // Another process wrote the state meanwhile: compact again from what it wrote.
      if (isEngramError(error) && error.reason === 'ETAG_MISMATCH' && attempt < 3) return 'retry';
      throw error;
    }
  }

  /** Runs the compactor over the messages and writes the new summary as a SUMMARY memory. */
  async #fold(job: CompactionJob, state: SessionStateRecord, compacted: readonly Message[]): Promise<Folded> {
    const { session, call } = job;
    const unresolved = state.openLoops.filter((l) => l.resolved !== true);
    const returned = await job.compactor.compact(
      { summary: state.summary, keyPoints: state.keyPoints, openLoops: unresolved },
      compacted.map(compactionMessage),
      {
        summaryMaxTokens: job.policy.summaryMaxTokens,
        countTokens: countO200kTokens,
        language: session.languageCode,
        ...(call.signal !== undefined ? { signal: call.signal } : {}),
      },
    );
    // What comes back (from a model, or sentences of the messages) is stored like messages are.
    const result = storedCompaction(returned, storedTextOf(this.#deps.settings, job.principal.tenantId));
    const summary = clipSummary(result.summary);
    const through = Number(compacted[compacted.length - 1]?.sequence ?? 0);
    // (1) The SUMMARY memory, through governance with the caller's credential.
    const memory =
      summary === '' ? undefined : await this.#writeSummaryMemory(session, compacted, summary, through, call);
    return { compacted, result, summary, through, memory };
  }

  /** Saves the compacted state (conditional on the version read) and what the call records. */
  async #save(
    trx: Parameters<Write>[0],
    job: CompactionJob,
    state: SessionStateRecord,
    { compacted, result, summary, through, memory }: Folded,
  ): Promise<RecordedCompaction> {
    const now = Date.now();
    const next = mergeCompaction(state, result, compacted, now);
    await this.#deps.states.save(trx, job.principal.tenantId, sessionIdOf(job.session), state.version, {
      summary,
      summaryTokenCount: countO200kTokens(summary),
      keyPoints: next.keyPoints,
      openLoops: next.openLoops,
      compactedThroughSequence: through,
      summaryMemoryId: memory?.name.slice('memories/'.length) ?? state.summaryMemoryId,
      lastCompactedAt: now,
    });
    const { mode } = job.compactor;
    return {
      outcome: 'COMPACTED',
      messagesCompacted: compacted.length,
      summaryMemory: memory?.name ?? '',
      keyPointsAdded: next.keyPointsAdded,
      openLoopsAdded: next.openLoopsAdded,
      openLoopsResolved: next.openLoopsResolved,
      mode,
      promptTokens: result.usage.promptTokens,
      completionTokens: result.usage.completionTokens,
      model: mode === 'MODEL' ? (this.#deps.chatModel?.model ?? '') : 'offline',
    };
  }

  /** After a commit: (3) the mark on ingestion's messages, and the superseded summary memory. */
  async #afterCommit(
    { principal, session, call }: CompactionJob,
    recorded: RecordedCompaction,
    previousSummaryMemory: string | undefined,
  ): Promise<void> {
    const { logger, states } = this.#deps;
    logger.info(
      { session: session.name, messages: recorded.messagesCompacted, mode: recorded.mode },
      'session compacted',
    );
    // (3) Mirror the mark on ingestion's messages; a failure is repaired on the next turn.
    try {
      const state = await states.get(principal.tenantId, sessionIdOf(session));
      await sendMark(this.#deps, principal.tenantId, session.name, state);
    } catch (error) {
      logger.warn({ session: session.name, reason: reasonOf(error) }, 'compaction mark not yet acknowledged');
    }
    // The new summary memory supersedes the previous one of the session.
    if (
      previousSummaryMemory !== undefined &&
      recorded.summaryMemory !== '' &&
      `memories/${previousSummaryMemory}` !== recorded.summaryMemory
    ) {
      await this.#deleteMemory(
        `memories/${previousSummaryMemory}`,
        `superseded by ${recorded.summaryMemory}`,
        call,
      );
    }
  }

  /** The oldest uncompacted messages (at most {@link MAX_COMPACTED_PER_CALL} plus what is kept). */
  async #readOldest(session: Session, compactedThrough: number, call: CallOptions): Promise<Message[]> {
    const messages: Message[] = [];
    await readMessagesAfter(this.#deps.ingestion, session, compactedThrough, call, (page) => {
      messages.push(...page);
      return messages.length < MAX_COMPACTED_PER_CALL + 200;
    });
    return messages;
  }

  /** Deletes a summary memory through governance, best effort (a failure is logged). */
  async #deleteMemory(name: string, reason: string, call: CallOptions): Promise<void> {
    try {
      await this.#deps.governance.deleteMemory({ name, reason }, call);
    } catch (error) {
      this.#deps.logger.warn({ memory: name, reason: reasonOf(error) }, 'summary memory not deleted');
    }
  }

  async #writeSummaryMemory(
    session: Session,
    compacted: readonly Message[],
    summary: string,
    through: number,
    call: CallOptions,
  ): Promise<{ name: string; created: boolean }> {
    const last = compacted[compacted.length - 1];
    try {
      const { memory, decision } = await this.#deps.governance.createMemory(
        {
          memory: {
            type: MemoryType.SUMMARY,
            text: summary,
            scope: Scope.SELF,
            sourceKind: SourceKind.SYSTEM,
            confidence: 1,
            ...(session.languageCode !== '' ? { languageCode: session.languageCode } : {}),
            evidence: { messages: compacted.slice(-MAX_EVIDENCE).map((m) => m.name) },
            ...(last?.occurTime !== undefined ? { occurTime: last.occurTime } : {}),
            metadata: { 'engram.session': session.name, 'engram.compacted_through': String(through) },
          },
          // One id per attempt: an attempt that does not commit deletes its memory.
          requestId: `cmp-${newId()}`,
        },
        call,
      );
      if (memory === undefined || memory.name === '')
        throw errors.unavailable('governance', 'no memory returned');
      return { name: memory.name, created: decision?.outcome !== DecisionOutcome.MERGED_DUPLICATE };
    } catch (error) {
      throw dependencyFailure('governance', error);
    }
  }
}
