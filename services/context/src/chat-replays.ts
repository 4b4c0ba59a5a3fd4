/**
 * Completed `Chat` calls are recorded under their request id (store `request_ids`) so that a retry
 * replays them. The method key carries the session, so that deleting or erasing a session's state
 * also forgets its replays (`forgetResults`); a request id is therefore unique per caller and
 * session.
 */
export function chatMethodOf(sessionId: string): string {
  return `engram.context.v1.ContextService/Chat:${sessionId}`;
}
