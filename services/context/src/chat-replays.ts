import { ContextService } from '@engram/contracts/context';
import { methodKey } from '@engram/resources';

/**
 * Completed `Chat` calls are recorded under their request id (store `request_ids`) so that a retry
 * replays them. The method key carries the session, so that deleting or erasing a session's state
 * also forgets its replays (`forgetResults`); a request id is therefore unique per caller and
 * session. The key starts with the service's name, so that `EraseSubject`'s purge of the
 * subject's request ids (prefix `engram.context.v1.ContextService/`) takes them too.
 */
export function chatMethodOf(sessionId: string): string {
  return `${methodKey(ContextService.method.chat)}:${sessionId}`;
}
