/** How the OpenAI-compatible clients (chat in `@engram/llm`, embeddings in `@engram/embeddings`) read the `openai` package's errors. */
import { APIConnectionError, APIError, APIUserAbortError } from 'openai';

/** Failures of an OpenAI-compatible endpoint worth retrying unchanged: the request may succeed later. */
export function retryableOpenAIError(error: unknown): boolean {
  if (error instanceof APIUserAbortError) return false;
  if (error instanceof APIConnectionError) return true; // includes timeouts
  if (error instanceof APIError && error.status !== undefined) {
    return error.status === 408 || error.status === 409 || error.status === 429 || error.status >= 500;
  }
  return false;
}

/** The server's requested delay (`retry-after-ms` or `Retry-After`, seconds or a date), if any. */
export function retryAfterMs(error: unknown): number | undefined {
  if (!(error instanceof APIError)) return undefined;
  // Typed loosely by the client (the fetch `Headers` of the runtime).
  const headers = error.headers as { get(name: string): string | null } | undefined;
  if (headers === undefined) return undefined;
  const ms = Number.parseFloat(headers.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const header = headers.get('retry-after');
  if (header === null) return undefined;
  const seconds = Number.parseFloat(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** A transport failure in one line; status and client message only (no request or answer text). */
export function describeOpenAIError(error: unknown): string {
  if (error instanceof APIConnectionError) return error.message;
  if (error instanceof APIError) return `HTTP ${error.status ?? '?'}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
