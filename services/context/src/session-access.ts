import type { CallOptions, Client } from '@connectrpc/connect';
import { MessageRole, type IngestionService, type Message, type Session } from '@engram/contracts/ingestion';
import { dependencyFailure, errors, type Principal } from '@engram/runtime';
import type { SessionStateRecord } from '@engram/store';
import type { ContextDeps } from './deps.js';
import type { ChatRole, TurnCandidate } from './domain/types.js';

/** Most uncompacted messages BuildContext considers (context.proto, CONTEXT_LAYER_RECENT_TURNS). */
export const MAX_TURN_CANDIDATES = 200;

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

/**
 * Pages through the messages after the compaction mark (through `toSequence` when given), oldest
 * first, with the caller's credential, handing each page to `take` until it answers false or the
 * pages end.
 */
export async function readMessagesAfter(
  ingestion: Client<typeof IngestionService>,
  session: Session,
  compactedThrough: number,
  call: CallOptions,
  take: (messages: readonly Message[]) => boolean,
  toSequence?: number,
): Promise<void> {
  let pageToken = '';
  try {
    do {
      const page = await ingestion.listMessages(
        {
          parent: session.name,
          fromSequence: BigInt(compactedThrough + 1),
          ...(toSequence !== undefined ? { toSequence: BigInt(toSequence) } : {}),
          pageSize: 1_000,
          pageToken,
        },
        call,
      );
      pageToken = page.nextPageToken;
      if (!take(page.messages)) return;
    } while (pageToken !== '');
  } catch (error) {
    throw dependencyFailure('ingestion', error);
  }
}

/** The uncompacted tail of a session, as measured when the state is read. */
export interface TailStats {
  readonly uncompactedMessageCount: number;
  readonly uncompactedTokens: number;
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
  await readMessagesAfter(
    ingestion,
    session,
    compactedThrough,
    call,
    (messages) => {
      for (const m of messages) {
        tokens += m.tokenCount;
        kept.push(m);
      }
      if (kept.length > limit) kept.splice(0, kept.length - limit);
      return true;
    },
    last,
  );
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

/**
 * Re-sends a committed compaction mark that ingestion has not acknowledged yet, in the
 * background: a failure is logged and retried on the next turn, never fails the call.
 */
export function repairMark(
  deps: Pick<ContextDeps, 'ingestion' | 'credentials' | 'states' | 'logger' | 'background'>,
  principal: Principal,
  session: Session,
  state: SessionStateRecord,
): void {
  if (state.compactedThroughSequence <= state.markAcknowledgedThrough) return;
  deps.background.start(
    () => sendMark(deps, principal.tenantId, session.name, state),
    (error) => {
      deps.logger.warn({ session: session.name, err: String(error) }, 'compaction mark not yet acknowledged');
    },
  );
}

/** Mirrors the state's compaction mark on ingestion's messages and records the acknowledgement. */
export async function sendMark(
  deps: Pick<ContextDeps, 'ingestion' | 'credentials' | 'states'>,
  tenantId: string,
  sessionName: string,
  state: SessionStateRecord,
): Promise<void> {
  const through = state.compactedThroughSequence;
  if (through === 0) return;
  await deps.ingestion.markMessagesCompacted(
    {
      session: sessionName,
      throughSequence: BigInt(through),
      requestId: `mark-${state.sessionId}-${through}`,
    },
    await deps.credentials.callOptions(tenantId),
  );
  await deps.states.acknowledgeMark(tenantId, state.sessionId, through);
}
