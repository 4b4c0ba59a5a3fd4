import { Code, ConnectError } from '@connectrpc/connect';
import { errorInfoOf, isEngramError } from '@engram/runtime';

/** What a log line may say about a failure: its code and reason, never its message (it may quote content). */
export function reasonOf(error: unknown): string {
  if (isEngramError(error)) return error.reason;
  const e = ConnectError.from(error);
  const reason = errorInfoOf(e)?.reason;
  return reason === undefined ? Code[e.code] : `${Code[e.code]} ${reason}`;
}
