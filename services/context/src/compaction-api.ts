import { createHash } from 'node:crypto';
import type { CallOptions, Client, HandlerContext } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import {
  CompactionMode,
  CompactionOutcome,
  type CompactSessionRequest,
  type CompactSessionResponseSchema,
  type CompactionPolicy,
} from '@engram/contracts/context';
import { Scope } from '@engram/contracts/common';
import { MemoryType, SourceKind, type GovernanceService } from '@engram/contracts/governance';
import { MessageRole, type IngestionService, type Message, type Session } from '@engram/contracts/ingestion';
import { parseSessionName } from '@engram/resources';
import {
  dependencyFailure,
  errors,
  forwardedCallOptions,
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
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { checkCompactionPolicy, sendMark } from './build-context.js';
import type { ContextSettings } from './config.js';
import type { Compactor } from './domain/compaction/index.js';
import type { CompactionMessage, CompactionResult } from './domain/types.js';
import { readSession, readTail, stateMessage, turnCandidate } from './session-access.js';
import type { SessionLocks } from './session-locks.js';

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

/** A compaction's policy with every field set, and the mode asked for. */
export interface CheckedPolicy {
  readonly thresholdTokens: number;
  readonly keepRecentTurns: number;
  readonly summaryMaxTokens: number;
  readonly mode: 'AUTO' | 'MODEL' | 'OFFLINE';
}

/** Validates a compaction policy (defaults applied). */
export function checkPolicy(
  policy: CompactionPolicy | undefined,
  field: string,
  settings: ContextSettings,
): CheckedPolicy {
  const sizes = checkCompactionPolicy(policy, field, settings.compaction);
  const mode = policy?.mode ?? CompactionMode.UNSPECIFIED;
  const modes: Partial<Record<CompactionMode, CheckedPolicy['mode']>> = {
    [CompactionMode.UNSPECIFIED]: 'AUTO',
    [CompactionMode.AUTO]: 'AUTO',
    [CompactionMode.MODEL]: 'MODEL',
    [CompactionMode.OFFLINE]: 'OFFLINE',
  };
  const checked = modes[mode];
  if (checked === undefined) throw errors.fieldInvalid(`${field}.mode`, 'unknown value');
  return { ...sizes, mode: checked };
}

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
    const recorded = await this.run(principal, session, policy, compactor, request.force, call, (write) =>
      idempotent(this.deps.store, key, body, write).then((r) => r.result),
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
  ): Promise<Recorded> {
    const { tenantId } = principal;
    const sessionId = session.name.slice('sessions/'.length);
    let previousSummaryMemory: string | undefined;
    const recorded = await this.deps.locks.run(`${tenantId}/${sessionId}`, async () => {
      const state = await this.states.get(tenantId, sessionId);
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
          countTokens,
          language: session.languageCode,
          ...(call.signal !== undefined ? { signal: call.signal } : {}),
        },
      );
      const through = Number(compacted[compacted.length - 1]?.sequence ?? 0);
      // (1) The SUMMARY memory, through governance with the caller's credential.
      const memory = await this.writeSummaryMemory(session, compacted, result.summary, through, call);
      previousSummaryMemory = state.summaryMemoryId;
      // (2) The new state with the moved mark, atomically with the request id.
      return commit(async (trx) => {
        const now = Date.now();
        const next = merge(state, result, compacted, now);
        await this.states.save(trx, tenantId, sessionId, state.version, {
          summary: result.summary,
          summaryTokenCount: countTokens(result.summary),
          keyPoints: next.keyPoints,
          openLoops: next.openLoops,
          compactedThroughSequence: through,
          summaryMemoryId: memory.slice('memories/'.length),
          lastCompactedAt: now,
        });
        return {
          outcome: 'COMPACTED',
          messagesCompacted: compacted.length,
          summaryMemory: memory,
          keyPointsAdded: next.keyPointsAdded,
          openLoopsAdded: next.openLoopsAdded,
          openLoopsResolved: next.openLoopsResolved,
          mode: compactor.mode,
          promptTokens: result.usage.promptTokens,
          completionTokens: result.usage.completionTokens,
          model: compactor.mode === 'MODEL' ? (this.deps.modelName ?? '') : 'offline',
        } satisfies Recorded;
      });
    });
    if (recorded.outcome === 'COMPACTED') {
      this.deps.logger.info(
        { session: session.name, messages: recorded.messagesCompacted, mode: recorded.mode },
        'session compacted',
      );
      // (3) Mirror the mark on ingestion's messages; a failure is repaired on the next turn.
      const state = await this.states.get(tenantId, sessionId);
      await sendMark(this.deps, tenantId, session.name, state).catch((error: unknown) => {
        this.deps.logger.warn(
          { session: session.name, err: String(error) },
          'compaction mark not yet acknowledged',
        );
      });
      // The new summary memory supersedes the previous one of the session.
      if (
        previousSummaryMemory !== undefined &&
        `memories/${previousSummaryMemory}` !== recorded.summaryMemory
      ) {
        await this.deps.governance
          .deleteMemory(
            { name: `memories/${previousSummaryMemory}`, reason: `superseded by ${recorded.summaryMemory}` },
            call,
          )
          .catch((error: unknown) => {
            this.deps.logger.warn(
              { session: session.name, err: String(error) },
              'previous summary memory not deleted',
            );
          });
      }
    }
    return recorded;
  }

  private async writeSummaryMemory(
    session: Session,
    compacted: readonly Message[],
    summary: string,
    through: number,
    call: CallOptions,
  ): Promise<string> {
    const digest = createHash('sha256').update(summary).digest('hex').slice(0, 16);
    const last = compacted[compacted.length - 1];
    const sessionId = session.name.slice('sessions/'.length);
    try {
      const { memory } = await this.deps.governance.createMemory(
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
          requestId: `cmp-${sessionId}-${through}-${digest}`,
        },
        call,
      );
      if (memory === undefined || memory.name === '')
        throw errors.unavailable('governance', 'no memory returned');
      return memory.name;
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
