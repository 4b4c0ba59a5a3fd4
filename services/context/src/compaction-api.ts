import type { CallOptions, Client, HandlerContext } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import {
  CompactionMode,
  CompactionOutcome,
  type CompactSessionRequest,
  type CompactSessionResponseSchema,
} from '@engram/contracts/context';
import { Scope } from '@engram/contracts/common';
import {
  DecisionOutcome,
  MemoryType,
  SourceKind,
  type GovernanceService,
} from '@engram/contracts/governance';
import { MessageRole, type IngestionService, type Message, type Session } from '@engram/contracts/ingestion';
import { parseSessionName } from '@engram/resources';
import {
  dependencyFailure,
  errors,
  forwardedCallOptions,
  isEngramError,
  requirePrincipal,
  type Logger,
  type Principal,
  type ServiceCredentials,
} from '@engram/runtime';
import {
  checkRequestId,
  idempotent,
  newId,
  previousResult,
  requestKeyOf,
  SessionStateRepository,
  type KeyPoint,
  type OpenLoop,
  type SessionStateRecord,
  type Store,
} from '@engram/store';
import { repairMark, sendMark } from './build-context.js';
import { reasonOf } from './failures.js';
import { checkPolicy, type CheckedPolicy } from './policy.js';
import type { ContextSettings } from './config.js';
import { TRANSCRIPT_LIMITS, type Compactor } from './domain/compaction/index.js';
import type { CompactionMessage, CompactionResult } from './domain/types.js';
import { readSession, readTail, stateMessage, turnCandidate } from './session-access.js';
import type { SessionLocks } from './session-locks.js';
import { countO200kTokens } from './domain/tokenizer.js';

/** What CompactSession is built from. */
export interface CompactionDeps {
  readonly logger: Logger;
  readonly store: Store;
  readonly ingestion: Client<typeof IngestionService>;
  readonly governance: Client<typeof GovernanceService>;
  readonly credentials: ServiceCredentials;
  readonly settings: ContextSettings;
  readonly locks: SessionLocks;
  /** The offline compactor (the local embedding model), made at first use. */
  readonly offlineCompactor: () => Compactor;
  /** The model compactor, when a chat model is configured. */
  readonly modelCompactor?: Compactor;
  /** The configured chat model's name (reported in token usage). */
  readonly modelName?: string;
}

const METHOD = 'engram.context.v1.ContextService/CompactSession';
/** Most messages one compaction folds (the oldest of the tail); the rest wait for the next one. */
const MAX_COMPACTED_PER_CALL = 2_000;
/** Governance's `Evidence.messages` limit. */
const MAX_EVIDENCE = 100;
const MAX_ITEMS = 50;

type Response = MessageInitShape<typeof CompactSessionResponseSchema>;

/** What a committed compaction is remembered as (its request id's result). */
interface Recorded {
  readonly outcome: 'COMPACTED' | 'SKIPPED_BELOW_THRESHOLD' | 'SKIPPED_NOTHING_TO_COMPACT';
  readonly messagesCompacted: number;
  readonly summaryMemory: string;
  readonly keyPointsAdded: number;
  readonly openLoopsAdded: number;
  readonly openLoopsResolved: number;
  readonly mode: 'MODEL' | 'OFFLINE' | '';
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly model: string;
}

/**
 * Compacts sessions: `CompactSession`, and Chat's automatic compaction. Compactions of one session
 * are serialized in this process (and by the state's version across processes).
 */
export class Compactions {
  private readonly states: SessionStateRepository;

  constructor(private readonly deps: CompactionDeps) {
    this.states = new SessionStateRepository(deps.store);
  }

  /** `CompactSession`. */
  async compactSession(request: CompactSessionRequest, ctx: HandlerContext): Promise<Response> {
    const principal = requirePrincipal(ctx.values);
    const sessionId = parseSessionName(request.session, 'session');
    const policy = checkPolicy(request.policy, 'policy', this.deps.settings);
    checkRequestId(request.requestId);
    const compactor = this.compactor(policy.mode);
    const call = forwardedCallOptions(ctx);
    const session = await readSession(this.deps.ingestion, sessionId, call);
    const key = requestKeyOf(principal, METHOD, request.requestId);
    const body = { session: request.session, policy, force: request.force };
    if (key !== undefined) {
      const previous = await previousResult<Recorded>(this.deps.store, key, body);
      if (previous !== undefined) return this.present(principal, session, previous, call);
    }
    const recorded = await this.run(
      principal,
      session,
      policy,
      compactor,
      request.force,
      call,
      (write) => idempotent(this.deps.store, key, body, write).then((r) => r.result),
      () =>
        key === undefined ? Promise.resolve(undefined) : previousResult<Recorded>(this.deps.store, key, body),
    );
    return this.present(principal, session, recorded, call);
  }

  /**
   * Compacts a session if its tail exceeds the policy's threshold (Chat's automatic compaction),
   * with the caller's call options. Resolves to the outcome.
   */
  async compactIfDue(principal: Principal, session: Session, policy: CheckedPolicy, call: CallOptions) {
    const recorded = await this.run(
      principal,
      session,
      policy,
      this.compactor(policy.mode),
      false,
      call,
      (write) => idempotent(this.deps.store, undefined, undefined, write).then((r) => r.result),
    );
    return recorded.outcome;
  }

  private compactor(mode: CheckedPolicy['mode']): Compactor {
    if (mode === 'MODEL' && this.deps.modelCompactor === undefined) {
      throw errors.failedPrecondition(
        'MODEL_NOT_CONFIGURED',
        'no chat model is configured: set ENGRAM_LLM_BASE_URL and ENGRAM_LLM_MODEL, or use COMPACTION_MODE_OFFLINE',
        { variable: 'ENGRAM_LLM_MODEL' },
      );
    }
    if (mode === 'OFFLINE') return this.deps.offlineCompactor();
    return this.deps.modelCompactor ?? this.deps.offlineCompactor();
  }

  private async run(
    principal: Principal,
    session: Session,
    policy: CheckedPolicy,
    compactor: Compactor,
    force: boolean,
    call: CallOptions,
    commit: (write: Parameters<typeof idempotent<Recorded>>[3]) => Promise<Recorded>,
    replay: () => Promise<Recorded | undefined> = () => Promise.resolve(undefined),
  ): Promise<Recorded> {
    const { tenantId } = principal;
    const sessionId = session.name.slice('sessions/'.length);
    let previousSummaryMemory: string | undefined;
    const recorded = await this.deps.locks.run(`${tenantId}/${sessionId}`, async () => {
      // A retry queued behind the call it repeats gets that call's result.
      const replayed = await replay();
      if (replayed !== undefined) return replayed;
      for (let attempt = 1; ; attempt++) {
        const state = await this.states.get(tenantId, sessionId);
        // Re-send a committed mark ingestion has not acknowledged yet (blueprint: on the next compaction).
        repairMark(this.deps, principal, session, state);
        const skipped = (outcome: Recorded['outcome']): Promise<Recorded> =>
          commit(() => Promise.resolve(skip(outcome)));
        const tail = await readTail(this.deps.ingestion, session, state.compactedThroughSequence, call, 0);
        if (!force && tail.uncompactedTokens <= policy.thresholdTokens)
          return skipped('SKIPPED_BELOW_THRESHOLD');
        const messages = await readOldest(this.deps.ingestion, session, state.compactedThroughSequence, call);
        const cut = compactionCut(messages, tail.uncompactedMessageCount, policy.keepRecentTurns);
        if (cut === 0) return skipped('SKIPPED_NOTHING_TO_COMPACT');
        const compacted = messages.slice(0, cut);
        const unresolved = state.openLoops.filter((l) => l.resolved !== true);
        const result = await compactor.compact(
          { summary: state.summary, keyPoints: state.keyPoints, openLoops: unresolved },
          compacted.map(compactionMessage),
          {
            summaryMaxTokens: policy.summaryMaxTokens,
            countTokens: countO200kTokens,
            language: session.languageCode,
            ...(call.signal !== undefined ? { signal: call.signal } : {}),
          },
        );
        const summary = clipSummary(result.summary);
        const through = Number(compacted[compacted.length - 1]?.sequence ?? 0);
        // (1) The SUMMARY memory, through governance with the caller's credential.
        const memory =
          summary === ''
            ? undefined
            : await this.writeSummaryMemory(session, compacted, summary, through, call);
        previousSummaryMemory = state.summaryMemoryId;
        try {
          // (2) The new state with the moved mark, atomically with the request id.
          return await commit(async (trx) => {
            const now = Date.now();
            const next = merge(state, result, compacted, now);
            await this.states.save(trx, tenantId, sessionId, state.version, {
              summary,
              summaryTokenCount: countO200kTokens(summary),
              keyPoints: next.keyPoints,
              openLoops: next.openLoops,
              compactedThroughSequence: through,
              summaryMemoryId: memory?.name.slice('memories/'.length) ?? state.summaryMemoryId,
              lastCompactedAt: now,
            });
            return {
              outcome: 'COMPACTED',
              messagesCompacted: compacted.length,
              summaryMemory: memory?.name ?? '',
              keyPointsAdded: next.keyPointsAdded,
              openLoopsAdded: next.openLoopsAdded,
              openLoopsResolved: next.openLoopsResolved,
              mode: compactor.mode,
              promptTokens: result.usage.promptTokens,
              completionTokens: result.usage.completionTokens,
              model: compactor.mode === 'MODEL' ? (this.deps.modelName ?? '') : 'offline',
            } satisfies Recorded;
          });
        } catch (error) {
          // Nothing of this attempt may stay: remove the memory it wrote (not one it merged into).
          if (memory?.created === true)
            await this.deleteMemory(memory.name, 'compaction not committed', call);
          // Another process wrote the state meanwhile: compact again from what it wrote.
          if (isEngramError(error) && error.reason === 'ETAG_MISMATCH' && attempt < 3) continue;
          throw error;
        }
      }
    });
    if (recorded.outcome === 'COMPACTED') {
      this.deps.logger.info(
        { session: session.name, messages: recorded.messagesCompacted, mode: recorded.mode },
        'session compacted',
      );
      // (3) Mirror the mark on ingestion's messages; a failure is repaired on the next turn.
      try {
        await sendMark(this.deps, tenantId, session.name, await this.states.get(tenantId, sessionId));
      } catch (error) {
        this.deps.logger.warn(
          { session: session.name, reason: reasonOf(error) },
          'compaction mark not yet acknowledged',
        );
      }
      // The new summary memory supersedes the previous one of the session.
      if (
        previousSummaryMemory !== undefined &&
        recorded.summaryMemory !== '' &&
        `memories/${previousSummaryMemory}` !== recorded.summaryMemory
      ) {
        await this.deleteMemory(
          `memories/${previousSummaryMemory}`,
          `superseded by ${recorded.summaryMemory}`,
          call,
        );
      }
    }
    return recorded;
  }

  /** Deletes a summary memory through governance, best effort (a failure is logged). */
  private async deleteMemory(name: string, reason: string, call: CallOptions): Promise<void> {
    try {
      await this.deps.governance.deleteMemory({ name, reason }, call);
    } catch (error) {
      this.deps.logger.warn({ memory: name, reason: reasonOf(error) }, 'summary memory not deleted');
    }
  }

  private async writeSummaryMemory(
    session: Session,
    compacted: readonly Message[],
    summary: string,
    through: number,
    call: CallOptions,
  ): Promise<{ name: string; created: boolean }> {
    const last = compacted[compacted.length - 1];
    try {
      const { memory, decision } = await this.deps.governance.createMemory(
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

  private async present(
    principal: Principal,
    session: Session,
    recorded: Recorded,
    call: CallOptions,
  ): Promise<Response> {
    const sessionId = session.name.slice('sessions/'.length);
    const state = await this.states.get(principal.tenantId, sessionId);
    const fresh = await readSession(this.deps.ingestion, sessionId, call);
    const tail = await readTail(this.deps.ingestion, fresh, state.compactedThroughSequence, call, 0);
    return {
      outcome: CompactionOutcome[recorded.outcome],
      sessionState: stateMessage(state, tail),
      messagesCompacted: recorded.messagesCompacted,
      summaryMemory: recorded.summaryMemory,
      keyPointsAdded: recorded.keyPointsAdded,
      openLoopsAdded: recorded.openLoopsAdded,
      openLoopsResolved: recorded.openLoopsResolved,
      mode: recorded.mode === '' ? CompactionMode.UNSPECIFIED : CompactionMode[recorded.mode],
      tokenUsage: {
        promptTokens: BigInt(recorded.promptTokens),
        completionTokens: BigInt(recorded.completionTokens),
        calls: recorded.mode === 'MODEL' ? 1 : 0,
        model: recorded.model === '' ? 'offline' : recorded.model,
      },
    };
  }
}

/** Governance's limit on a memory's text (memory.proto), code points. */
const MAX_SUMMARY_CHARS = 8_000;

/** The summary within governance's text limit: cut at the last sentence end that fits, marked `…`. */
export function clipSummary(summary: string): string {
  const text = summary.trim();
  const points = Array.from(text);
  if (points.length <= MAX_SUMMARY_CHARS) return text;
  const head = points.slice(0, MAX_SUMMARY_CHARS - 1).join('');
  const end = Math.max(...['。', '！', '？', '. ', '! ', '? ', '\n'].map((mark) => head.lastIndexOf(mark)));
  return `${end > head.length / 2 ? head.slice(0, end + 1).trimEnd() : head}…`;
}

function skip(outcome: Recorded['outcome']): Recorded {
  return {
    outcome,
    messagesCompacted: 0,
    summaryMemory: '',
    keyPointsAdded: 0,
    openLoopsAdded: 0,
    openLoopsResolved: 0,
    mode: '',
    promptTokens: 0,
    completionTokens: 0,
    model: 'offline',
  };
}

/** The oldest uncompacted messages (at most {@link MAX_COMPACTED_PER_CALL} plus what is kept). */
async function readOldest(
  ingestion: Client<typeof IngestionService>,
  session: Session,
  compactedThrough: number,
  call: CallOptions,
): Promise<Message[]> {
  const messages: Message[] = [];
  let pageToken = '';
  try {
    do {
      const page = await ingestion.listMessages(
        {
          parent: session.name,
          fromSequence: BigInt(compactedThrough + 1),
          pageSize: 1_000,
          pageToken,
        },
        call,
      );
      messages.push(...page.messages);
      pageToken = page.nextPageToken;
    } while (pageToken !== '' && messages.length < MAX_COMPACTED_PER_CALL + 200);
  } catch (error) {
    throw dependencyFailure('ingestion', error);
  }
  return messages;
}

/**
 * How many of the oldest `messages` to compact: all but the newest `keep` of the whole tail
 * (`tailCount` messages), moved back so that a kept ASSISTANT or TOOL message keeps the USER
 * message it answers; at most {@link MAX_COMPACTED_PER_CALL}.
 */
export function compactionCut(messages: readonly Message[], tailCount: number, keep: number): number {
  let cut = Math.min(tailCount - keep, messages.length, MAX_COMPACTED_PER_CALL);
  if (cut <= 0) return 0;
  // No more than a model's transcript shows (prompt.ts): what it cannot see is left for later.
  let chars = 0;
  for (let i = 0; i < cut; i++) {
    const content = messages[i]?.content ?? '';
    chars += Math.min(content.length, TRANSCRIPT_LIMITS.maxMessageChars) + 40;
    if (chars > TRANSCRIPT_LIMITS.maxChars && i > 0) {
      cut = i;
      break;
    }
  }
  const answers = (m: Message | undefined) =>
    m !== undefined && (m.role === MessageRole.ASSISTANT || m.role === MessageRole.TOOL);
  while (cut > 0 && answers(messages[cut])) cut--;
  return cut;
}

function compactionMessage(m: Message): CompactionMessage {
  const time = m.occurTime ?? undefined;
  return {
    id: m.name.slice(m.name.lastIndexOf('/') + 1),
    sequence: Number(m.sequence),
    role: turnCandidate(m).role,
    content: m.content,
    participantName: m.participantName,
    time: time === undefined ? 0 : timestampMs(time),
  };
}

/**
 * The state's lists after a compaction: new items prepended, resolved loops marked, and at most 50
 * of each — compaction-made items removed from the end first (for open loops, resolved ones
 * first, oldest resolution first); client-made items are never removed.
 */
function merge(
  state: SessionStateRecord,
  result: CompactionResult,
  compacted: readonly Message[],
  now: number,
) {
  const known = new Set(compacted.map((m) => m.name.slice(m.name.lastIndexOf('/') + 1)));
  const item = (text: string, sources: readonly string[]) => ({
    id: newId(now),
    text: Array.from(text).slice(0, 1_000).join(''),
    sourceMessageIds: sources.filter((s) => known.has(s)).slice(0, 20),
    origin: 'COMPACTION' as const,
    createdAt: now,
    updatedAt: now,
  });
  const newKeyPoints: KeyPoint[] = result.keyPoints
    .filter((k) => k.text.trim() !== '')
    .map((k) => item(k.text, k.sourceMessageIds));
  const newLoops: OpenLoop[] = result.openLoops
    .filter((l) => l.text.trim() !== '')
    .map((l) => item(l.text, l.sourceMessageIds));
  const resolvedIds = new Set(result.resolvedOpenLoopIds);
  let openLoopsResolved = 0;
  const openLoops = state.openLoops.map((l) => {
    if (l.resolved === true || !resolvedIds.has(l.id)) return l;
    openLoopsResolved++;
    return { ...l, resolved: true, resolvedAt: now, updatedAt: now };
  });
  const keyPoints = capItems([...newKeyPoints, ...state.keyPoints], () => false);
  const loops = capItems([...newLoops, ...openLoops], (l) => l.resolved === true);
  return {
    keyPoints: keyPoints.items,
    openLoops: loops.items,
    keyPointsAdded: newKeyPoints.filter((k) => keyPoints.items.includes(k)).length,
    openLoopsAdded: newLoops.filter((l) => loops.items.includes(l)).length,
    openLoopsResolved,
  };
}

/** Keeps at most {@link MAX_ITEMS}: removes `first`-matching items (oldest resolution first), then compaction-made ones from the end. */
function capItems<T extends KeyPoint & { resolvedAt?: number }>(items: T[], first: (item: T) => boolean) {
  const result = [...items];
  const removable = (predicate: (item: T) => boolean) =>
    result
      .map((item, index) => ({ item, index }))
      .filter(({ item }) => item.origin !== 'CLIENT' && predicate(item));
  const resolved = removable(first).sort((a, b) => (a.item.resolvedAt ?? 0) - (b.item.resolvedAt ?? 0));
  for (const { item } of resolved) {
    if (result.length <= MAX_ITEMS) break;
    result.splice(result.indexOf(item), 1);
  }
  for (let i = result.length - 1; i >= 0 && result.length > MAX_ITEMS; i--) {
    if (result[i]?.origin !== 'CLIENT') result.splice(i, 1);
  }
  return { items: result };
}
