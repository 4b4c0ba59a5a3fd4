import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import {
  CompactionMode,
  CompactionOutcome,
  type CompactSessionRequest,
  type CompactSessionResponseSchema,
} from '@engram/contracts/context';
import { MessageRole, type Message } from '@engram/contracts/ingestion';
import { parseSessionName } from '@engram/resources';
import { checkRequestId, newId, type KeyPoint, type OpenLoop, type SessionStateRecord } from '@engram/store';
import type { ContextSettings } from './config.js';
import { TRANSCRIPT_LIMITS } from './domain/compaction/index.js';
import type { CompactionMessage, CompactionResult } from './domain/types.js';
import { checkPolicy, type CheckedPolicy } from './policy.js';
import { turnCandidate, type TailStats } from './session-access.js';
import { stateMessage } from './state-api.js';

/** Most messages one compaction folds (the oldest of the tail); the rest wait for the next one. */
export const MAX_COMPACTED_PER_CALL = 2_000;
const MAX_ITEMS = 50;

type CompactSessionResponse = MessageInitShape<typeof CompactSessionResponseSchema>;

/** What a committed compaction is remembered as (its request id's result). */
export interface RecordedCompaction {
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

/** Validates a `CompactSession` request: the session's id and the policy (defaults applied). */
export function checkCompactRequest(
  request: CompactSessionRequest,
  settings: ContextSettings,
): { sessionId: string; policy: CheckedPolicy } {
  const sessionId = parseSessionName(request.session, 'session');
  const policy = checkPolicy(request.policy, 'policy', settings);
  checkRequestId(request.requestId);
  return { sessionId, policy };
}

/** A compaction that did nothing, as recorded. */
export function skippedCompaction(outcome: RecordedCompaction['outcome']): RecordedCompaction {
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

/** A recorded compaction as the API's `CompactSessionResponse`, with the state as it is now. */
export function compactionResponse(
  recorded: RecordedCompaction,
  state: SessionStateRecord,
  tail: TailStats,
): CompactSessionResponse {
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

/** A stored message as the compactor reads it. */
export function compactionMessage(m: Message): CompactionMessage {
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
export function mergeCompaction(
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
