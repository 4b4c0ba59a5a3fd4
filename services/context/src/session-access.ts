import type { CallOptions, Client } from '@connectrpc/connect';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { StateItemOrigin, type SessionStateSchema } from '@engram/contracts/context';
import { MessageRole, type IngestionService, type Message, type Session } from '@engram/contracts/ingestion';
import { ULID_PATTERN, badName } from '@engram/resources';
import { dependencyFailure, errors } from '@engram/runtime';
import type { SessionStateRecord } from '@engram/store';
import type { ChatRole, TurnCandidate } from './domain/types.js';

/** Most uncompacted messages BuildContext considers (context.proto, CONTEXT_LAYER_RECENT_TURNS). */
export const MAX_TURN_CANDIDATES = 200;

const STATE_NAME = new RegExp(`^sessions/(${ULID_PATTERN})/state$`);

/** `sessions/{id}/state` → id, or INVALID_ARGUMENT `NAME_INVALID` (`FIELD_REQUIRED` when empty). */
export function parseStateName(name: string, field = 'name'): string {
  if (name === '') throw errors.fieldRequired(field);
  return STATE_NAME.exec(name)?.[1] ?? badName(field, 'sessions/{session}/state');
}

/** An opaque token that changes on every write of the state. */
export function stateEtag(state: SessionStateRecord): string {
  return state.version === 0
    ? '"0"'
    : `"${state.version.toString(36)}.${(state.updatedAt ?? 0).toString(36)}"`;
}

/** The uncompacted tail of a session, as measured when the state is read. */
export interface TailStats {
  readonly uncompactedMessageCount: number;
  readonly uncompactedTokens: number;
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

/** Reads a session with the caller's credential: NOT_FOUND when it is not the caller's. */
export async function readSession(
  ingestion: Client<typeof IngestionService>,
  sessionId: string,
  call: CallOptions,
): Promise<Session> {
  try {
    const { session } = await ingestion.getSession({ name: `sessions/${sessionId}` }, call);
    if (session === undefined) throw errors.notFound(`sessions/${sessionId}`);
    return session;
  } catch (error) {
    throw dependencyFailure('ingestion', error);
  }
}

/** The uncompacted tail: its size, and its newest messages (oldest first). */
export interface Tail extends TailStats {
  /** The newest `limit` uncompacted messages, oldest first. */
  readonly messages: readonly Message[];
}

/**
 * Reads the messages after the compaction mark with the caller's credential, keeping the newest
 * `limit` and measuring all of them (sequences are dense, so the count is `last − mark`; the
 * tokens are summed over every page).
 */
export async function readTail(
  ingestion: Client<typeof IngestionService>,
  session: Session,
  compactedThrough: number,
  call: CallOptions,
  limit = MAX_TURN_CANDIDATES,
): Promise<Tail> {
  const last = Number(session.lastSequence);
  if (last <= compactedThrough) return { messages: [], uncompactedMessageCount: 0, uncompactedTokens: 0 };
  const kept: Message[] = [];
  let tokens = 0;
  let pageToken = '';
  try {
    do {
      const page = await ingestion.listMessages(
        {
          parent: session.name,
          fromSequence: BigInt(compactedThrough + 1),
          toSequence: BigInt(last),
          pageSize: 1_000,
          pageToken,
        },
        call,
      );
      for (const m of page.messages) {
        tokens += m.tokenCount;
        kept.push(m);
      }
      if (kept.length > limit) kept.splice(0, kept.length - limit);
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
  } catch (error) {
    throw dependencyFailure('ingestion', error);
  }
  return { messages: kept, uncompactedMessageCount: last - compactedThrough, uncompactedTokens: tokens };
}

const ROLES: Readonly<Partial<Record<MessageRole, ChatRole>>> = {
  [MessageRole.USER]: 'USER',
  [MessageRole.ASSISTANT]: 'ASSISTANT',
  [MessageRole.SYSTEM]: 'SYSTEM',
  [MessageRole.TOOL]: 'TOOL',
};

/** A stored message as a RECENT_TURNS candidate. */
export function turnCandidate(m: Message): TurnCandidate {
  return {
    name: m.name,
    sequence: Number(m.sequence),
    role: ROLES[m.role] ?? 'USER',
    content: m.content,
    participantName: m.participantName,
    toolCallId: m.toolCallId,
    toolCalls: m.toolCalls.map((c) => ({ id: c.id, name: c.name, argumentsJson: c.argumentsJson })),
  };
}
