import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import {
  StateItemOrigin,
  type KeyPoint as KeyPointMessage,
  type OpenLoop as OpenLoopMessage,
  type SessionStateSchema,
} from '@engram/contracts/context';
import { parseMessageName } from '@engram/resources';
import { errors } from '@engram/runtime';
import { newId, type KeyPoint, type OpenLoop, type SessionStateRecord } from '@engram/store';
import type { TailStats } from './session-access.js';
import { fitChars, type StoredText } from './stored-text.js';

/** Limits of context.proto (`SessionState`, `KeyPoint`, `OpenLoop`). */
export const STATE_LIMITS = {
  summaryChars: 16_000,
  items: 50,
  itemChars: 1_000,
  sources: 20,
} as const;

/** The paths `UpdateSessionState`'s mask may name. */
export const UPDATABLE_PATHS = ['summary', 'key_points', 'open_loops'] as const;

const chars = (s: string) => Array.from(s).length;

/** An opaque token that changes on every write of the state. */
export function stateEtag(state: SessionStateRecord): string {
  return state.version === 0
    ? '"0"'
    : `"${state.version.toString(36)}.${(state.updatedAt ?? 0).toString(36)}"`;
}

/** A stored state as the API's `SessionState`. */
export function stateMessage(
  state: SessionStateRecord,
  tail: TailStats,
): MessageInitShape<typeof SessionStateSchema> {
  const prefix = `sessions/${state.sessionId}/messages/`;
  const origin = (o: string | undefined) =>
    o === 'CLIENT' ? StateItemOrigin.CLIENT : StateItemOrigin.COMPACTION;
  const time = (ms: number | undefined) => (ms === undefined || ms === 0 ? undefined : timestampFromMs(ms));
  return {
    name: `sessions/${state.sessionId}/state`,
    summary: state.summary,
    summaryTokenCount: state.summaryTokenCount,
    keyPoints: state.keyPoints.map((k) => ({
      id: k.id,
      text: k.text,
      sourceMessages: k.sourceMessageIds.map((id) => prefix + id),
      origin: origin(k.origin),
      createTime: time(k.createdAt),
      updateTime: time(k.updatedAt ?? k.createdAt),
    })),
    openLoops: state.openLoops.map((l) => ({
      id: l.id,
      text: l.text,
      sourceMessages: l.sourceMessageIds.map((id) => prefix + id),
      resolved: l.resolved === true,
      origin: origin(l.origin),
      createTime: time(l.createdAt),
      updateTime: time(l.updatedAt ?? l.createdAt),
      resolveTime: l.resolved === true ? time(l.resolvedAt) : undefined,
    })),
    compactedThroughSequence: BigInt(state.compactedThroughSequence),
    compactedMessageCount: BigInt(state.compactedThroughSequence),
    uncompactedMessageCount: BigInt(tail.uncompactedMessageCount),
    uncompactedTokens: BigInt(tail.uncompactedTokens),
    summaryMemory: state.summaryMemoryId === undefined ? '' : `memories/${state.summaryMemoryId}`,
    lastCompactionTime: time(state.lastCompactedAt),
    updateTime: state.version === 0 ? undefined : time(state.updatedAt),
    etag: stateEtag(state),
    version: BigInt(state.version),
  };
}

/** The summary a client writes, within its limit. */
export function checkSummary(summary: string): string {
  if (chars(summary) > STATE_LIMITS.summaryChars) {
    throw errors.fieldInvalid('session_state.summary', `at most ${STATE_LIMITS.summaryChars} characters`);
  }
  return summary;
}

/** A summary as stored: `stored` applied, within its limit (a client can send it back unchanged). */
export function storedSummary(summary: string, stored: StoredText): string {
  return fitChars(stored(summary), STATE_LIMITS.summaryChars);
}

/** Items as stored: `stored` applied to their text, within its limit. */
export function storedItems(items: readonly ItemInput[], stored: StoredText): ItemInput[] {
  return items.map((item) => ({ ...item, text: fitChars(stored(item.text), STATE_LIMITS.itemChars) }));
}

/** A client-written item, validated: its id ('' for a new one), text and source message ids. */
export interface ItemInput {
  readonly id: string;
  readonly text: string;
  readonly sourceMessageIds: readonly string[];
  readonly resolved?: boolean;
}

/** Validates the items a client writes; their sources must be messages of the session. */
export function checkItems(
  items: readonly (KeyPointMessage | OpenLoopMessage)[],
  path: 'key_points' | 'open_loops',
  sessionId: string,
): ItemInput[] {
  const field = `session_state.${path}`;
  if (items.length > STATE_LIMITS.items)
    throw errors.fieldInvalid(field, `at most ${STATE_LIMITS.items} items`);
  const seen = new Set<string>();
  return items.map((item, i) => {
    const at = `${field}[${i}]`;
    if (item.text.trim() === '') throw errors.fieldRequired(`${at}.text`);
    if (chars(item.text) > STATE_LIMITS.itemChars) {
      throw errors.fieldInvalid(`${at}.text`, `at most ${STATE_LIMITS.itemChars} characters`);
    }
    if (item.id !== '') {
      if (seen.has(item.id)) throw errors.fieldInvalid(`${at}.id`, `${item.id} appears twice`);
      seen.add(item.id);
    }
    if (item.sourceMessages.length > STATE_LIMITS.sources) {
      throw errors.fieldInvalid(`${at}.source_messages`, `at most ${STATE_LIMITS.sources} messages`);
    }
    const sourceMessageIds = item.sourceMessages.map((name, j) => {
      const parsed = parseMessageName(name, `${at}.source_messages[${j}]`);
      if (parsed.sessionId !== sessionId) {
        throw errors.fieldInvalid(`${at}.source_messages[${j}]`, `${name} is not a message of this session`);
      }
      return parsed.messageId;
    });
    return {
      id: item.id,
      text: item.text,
      sourceMessageIds,
      ...('resolved' in item ? { resolved: item.resolved } : {}),
    };
  });
}

/**
 * The new list: items keep their id and create time when their id is sent back; a
 * compaction-made item whose text or sources change becomes the client's; new items get new ids.
 */
export function mergeItems<T extends KeyPoint | OpenLoop>(
  current: readonly T[],
  items: readonly ItemInput[],
  path: 'key_points' | 'open_loops',
  now: number,
): T[] {
  const byId = new Map(current.map((item) => [item.id, item]));
  return items.map((input, i): T => {
    if (input.id === '') {
      return {
        id: newId(now),
        text: input.text,
        sourceMessageIds: input.sourceMessageIds,
        origin: 'CLIENT',
        createdAt: now,
        updatedAt: now,
        ...(input.resolved === true ? { resolved: true, resolvedAt: now } : {}),
      } as T;
    }
    const existing = byId.get(input.id);
    if (existing === undefined) {
      throw errors.fieldInvalid(`session_state.${path}[${i}].id`, `${input.id} is not an item of this state`);
    }
    const contentChanged =
      existing.text !== input.text || existing.sourceMessageIds.join() !== input.sourceMessageIds.join();
    const wasResolved = (existing as OpenLoop).resolved === true;
    const resolved = input.resolved ?? wasResolved;
    const changed = contentChanged || resolved !== wasResolved;
    return {
      ...existing,
      text: input.text,
      sourceMessageIds: input.sourceMessageIds,
      origin: contentChanged ? 'CLIENT' : existing.origin,
      updatedAt: changed ? now : existing.updatedAt,
      ...(path === 'open_loops'
        ? { resolved, resolvedAt: resolved ? ((existing as OpenLoop).resolvedAt ?? now) : undefined }
        : {}),
    };
  });
}
