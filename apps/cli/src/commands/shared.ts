import { type Code, ConnectError } from '@connectrpc/connect';
import { errorInfoOf } from '@engram/runtime';
import type { Connection } from '../connection.js';
import { resourceName } from '../format.js';

/** Whether a failed call ended with `code` (and, if given, the ErrorInfo `reason`). */
export function failedWith(error: unknown, code: Code, reason?: string): boolean {
  if (!(error instanceof ConnectError) || error.code !== code) return false;
  return reason === undefined || errorInfoOf(error)?.reason === reason;
}

/** The caller's time zone for new sessions (DATE_CHANGE boundaries and relative dates). */
export function localTimeZone(): string | undefined {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** `new` creates a session (returned with `created`), anything else names one (`abc` or `sessions/abc`). */
export async function sessionFor(
  connection: Connection,
  spec: string,
  displayName: string,
): Promise<{ name: string; created: boolean }> {
  if (spec.trim().toLowerCase() !== 'new') return { name: resourceName('sessions', spec), created: false };
  const timeZone = localTimeZone();
  const { session } = await connection.ingestion.createSession({
    session: { displayName, ...(timeZone === undefined ? {} : { timeZone }) },
  });
  if (session === undefined) throw new Error('CreateSession answered without a session');
  return { name: session.name, created: true };
}

/** Pages through a List method until the last page or `limit` items. */
export async function listAll<T>(
  page: (pageToken: string) => Promise<{ items: T[]; nextPageToken: string }>,
  limit = Number.POSITIVE_INFINITY,
): Promise<{ items: T[]; more: boolean }> {
  const items: T[] = [];
  let token = '';
  for (;;) {
    const answer = await page(token);
    items.push(...answer.items);
    if (items.length >= limit) {
      return { items: items.slice(0, limit), more: items.length > limit || answer.nextPageToken !== '' };
    }
    if (answer.nextPageToken === '') return { items, more: false };
    token = answer.nextPageToken;
  }
}

/** The id part of a resource name (`sessions/abc` → `abc`). */
export function idOf(name: string): string {
  return name.slice(name.lastIndexOf('/') + 1);
}
