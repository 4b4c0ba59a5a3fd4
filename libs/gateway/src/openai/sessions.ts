/**
 * Which session a chat-completions request belongs to, and what the proxy appends before the
 * Chat call — all as RPCs of the caller (ingestion ListSessions, CreateSession, AppendMessages,
 * DeleteSession), so ownership and validation stay ingestion's.
 */
import { createHash } from 'node:crypto';
import { Code, ConnectError, type CallOptions } from '@connectrpc/connect';
import { errorInfoOf } from '@engram/errors';
import type { EngramClients } from '../clients.js';
import type { ChatPlan, SessionMessage } from './mapping.js';

/** AppendMessages' batch limit. */
const MAX_BATCH = 100;

/** The session a request is answered in. */
export interface ResolvedSession {
  /** `sessions/{id}`. */
  readonly name: string;
  /** True when this request created it (its history is then appended). */
  readonly created: boolean;
}

/** `sessions/{id}` for a header holding either that or the bare id. */
export function sessionNameOf(header: string): string {
  const value = header.trim();
  return value.startsWith('sessions/') ? value : `sessions/${value}`;
}

/**
 * The session of a request: the one the `x-engram-session` header names (used as is: Chat and
 * AppendMessages answer NOT_FOUND for a session that is not the caller's), else the caller's
 * session with the conversation's `external_id`, created when there is none.
 */
export async function resolveSession(
  clients: EngramClients,
  plan: ChatPlan,
  header: string | undefined,
  call: CallOptions,
): Promise<ResolvedSession> {
  if (header !== undefined && header.trim() !== '') return { name: sessionNameOf(header), created: false };
  const { sessions } = await clients.ingestion.listSessions(
    { externalId: plan.externalId, pageSize: 1 },
    call,
  );
  const found = sessions[0];
  if (found !== undefined) return { name: found.name, created: false };
  try {
    const { session } = await clients.ingestion.createSession(
      {
        session: {
          externalId: plan.externalId,
          displayName: 'OpenAI-compatible proxy conversation',
          metadata: { 'engram.created_by': 'openai-proxy' },
        },
      },
      call,
    );
    return { name: session?.name ?? '', created: true };
  } catch (error) {
    // Two first requests of one conversation at once: the other one created it.
    const existing = errorInfoOf(error)?.metadata['name'];
    if (ConnectError.from(error).code === Code.AlreadyExists && existing !== undefined) {
      return { name: existing, created: false };
    }
    throw error;
  }
}

/** An idempotency key for appending `messages` to `session`: a retried request appends nothing twice. */
function appendRequestId(session: string, messages: readonly SessionMessage[], batch: number): string {
  const hash = createHash('sha256')
    .update(JSON.stringify([session, batch, messages]))
    .digest('base64url');
  return `openai-proxy-${hash.slice(0, 43)}`;
}

/**
 * Appends what the request brings before Chat runs: for a session this request created, the
 * client's history and any tool results; for an existing one only the tool results (the session
 * is the source of truth for the rest). Each batch carries a request id derived from its content,
 * so a retried request does not append it again. If appending the history of a new session fails,
 * the session is deleted again (best effort), so that a retry starts it afresh.
 */
export async function appendBeforeChat(
  clients: EngramClients,
  session: ResolvedSession,
  plan: ChatPlan,
  call: CallOptions,
): Promise<void> {
  const messages = session.created ? [...plan.history, ...plan.toolResults] : plan.toolResults;
  try {
    for (let start = 0; start < messages.length; start += MAX_BATCH) {
      const batch = messages.slice(start, start + MAX_BATCH);
      await clients.ingestion.appendMessages(
        { parent: session.name, messages: batch, requestId: appendRequestId(session.name, batch, start) },
        call,
      );
    }
  } catch (error) {
    if (session.created) {
      // Without the request's signal: a client that went away must not leave a half-filled session.
      const { signal: _signal, ...cleanup } = call;
      await clients.ingestion.deleteSession({ name: session.name }, cleanup).catch(() => undefined);
    }
    throw error;
  }
}
