import http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { errors } from '@engram/errors';

/**
 * A small HTTP/1.1 JSON client for Qdrant's REST API.
 *
 * Why not `@qdrant/js-client-rest`'s own transport: it goes through `fetch` (undici), which asks
 * for compressed answers (`accept-encoding: gzip, deflate`). Qdrant then streams the compressed
 * body in several writes after the headers, and on loopback that pattern regularly hits the
 * Nagle / delayed-ACK stall: ~44 ms per 512-dimension query returning 10 payloads, against ~1.7 ms
 * here (numbers and the experiments that isolate the cause are in ../QDRANT.md). This
 * client asks for `identity` (compression buys nothing for these sizes on a local network),
 * serializes each request to one Buffer handed to `req.end(buffer)` so the request line, headers
 * and body leave in a single write, keeps sockets alive and sets TCP_NODELAY.
 *
 * Retries: transient failures (connection refused/reset, socket hang-up, timeout, 429, 5xx) are
 * retried with exponential backoff and jitter, but only for requests the caller marks idempotent.
 * When retries run out, the failure becomes `UNAVAILABLE` (`DEPENDENCY_UNAVAILABLE`, `qdrant`).
 * Non-transient HTTP errors (4xx) are thrown as {@link QdrantHttpError} for the adapter to map.
 */

/** Options of {@link QdrantHttp}; defaults are filled in by {@link QdrantHttp}'s constructor. */
export interface QdrantHttpOptions {
  /** Base URL, e.g. `http://127.0.0.1:6333` (a path prefix is kept). */
  readonly url: string;
  /** Sent as the `api-key` header when set. */
  readonly apiKey?: string;
  /** Per-attempt timeout in milliseconds. Default 30 000. */
  readonly timeoutMs?: number;
  /** Attempts for idempotent requests, including the first. Default 4. */
  readonly maxAttempts?: number;
  /** First backoff delay in milliseconds (doubles per attempt, with jitter). Default 100. */
  readonly backoffMs?: number;
  /** Upper bound of one backoff delay in milliseconds. Default 2 000. */
  readonly maxBackoffMs?: number;
  /** Keep-alive sockets per host. Default 16. */
  readonly maxSockets?: number;
}

/** Per-request options. */
export interface RequestOptions {
  /** Safe to send again after a transient failure (default true). */
  readonly idempotent?: boolean;
  /** Aborts the request (and any backoff wait); the signal's reason is rethrown. */
  readonly signal?: AbortSignal;
}

/** Qdrant answered with a non-2xx status that is not worth retrying (or retries ran out). */
export class QdrantHttpError extends Error {
  override readonly name = 'QdrantHttpError';

  constructor(
    readonly status: number,
    /** Qdrant's `status.error` text, or the raw body when it is not Qdrant's JSON envelope. */
    readonly detail: string,
    readonly method: string,
    readonly path: string,
  ) {
    super(`Qdrant ${method} ${path} answered ${status}: ${detail}`);
  }
}

/** Type guard for {@link QdrantHttpError}. */
export function isQdrantHttpError(value: unknown): value is QdrantHttpError {
  return value instanceof QdrantHttpError;
}

/** Error codes of a connection that failed or broke before an answer arrived. */
const TRANSIENT_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
]);

/** Whether a failed attempt may succeed when sent again. */
export function isTransient(error: unknown): boolean {
  if (error instanceof QdrantHttpError) return error.status === 429 || error.status >= 500;
  if (error instanceof TimeoutError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && TRANSIENT_SOCKET_CODES.has(code);
}

/** The attempt did not complete within `timeoutMs`. */
class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/** Exponential backoff with full jitter: a random delay in [d/2, d], d = base · 2^(attempt−1). */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** Qdrant's response envelope. */
interface Envelope {
  readonly result?: unknown;
  readonly status?: unknown;
}

/** See the module comment. */
export class QdrantHttp {
  private readonly base: URL;
  private readonly agent: http.Agent;
  private readonly send: typeof http.request;
  private readonly headers: Readonly<Record<string, string>>;
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private closed = false;

  constructor(options: QdrantHttpOptions) {
    this.base = new URL(options.url);
    if (this.base.protocol !== 'http:' && this.base.protocol !== 'https:') {
      throw new Error(`Qdrant URL must start with http:// or https://, got ${options.url}`);
    }
    const tls = this.base.protocol === 'https:';
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 16, noDelay: true };
    this.agent = tls ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
    this.send = tls ? https.request : http.request;
    this.headers = {
      accept: 'application/json',
      // Uncompressed answers: Qdrant streams compressed bodies in pieces (see the module comment).
      'accept-encoding': 'identity',
      ...(options.apiKey !== undefined && options.apiKey !== '' ? { 'api-key': options.apiKey } : {}),
    };
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxAttempts = Math.max(1, options.maxAttempts ?? 4);
    this.backoffMs = options.backoffMs ?? 100;
    this.maxBackoffMs = options.maxBackoffMs ?? 2_000;
  }

  /** The server's origin, for messages. */
  get origin(): string {
    return this.base.origin;
  }

  /**
   * Sends one request and returns Qdrant's `result`. `path` is relative to the base URL and
   * already encoded (use {@link segment} for names). Retries transient failures of idempotent
   * requests; throws UNAVAILABLE when the server cannot be reached.
   */
  async call<T>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<T> {
    if (this.closed) throw new Error('the Qdrant client is closed');
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8');
    const attempts = (options.idempotent ?? true) ? this.maxAttempts : 1;
    for (let attempt = 1; ; attempt++) {
      options.signal?.throwIfAborted();
      try {
        const envelope = await this.once(method, path, payload, options.signal);
        return envelope.result as T;
      } catch (error) {
        if (options.signal?.aborted === true) throw options.signal.reason;
        if (!isTransient(error)) throw error;
        if (attempt >= attempts) {
          throw errors.unavailable(
            'qdrant',
            `Qdrant at ${this.base.origin} is unavailable (${method} ${path}, ${attempt} attempt${attempt === 1 ? '' : 's'}): ${explain(error)}`,
            { cause: error },
          );
        }
        await sleep(backoffDelay(attempt, this.backoffMs, this.maxBackoffMs), undefined, {
          signal: options.signal,
        }).catch(() => undefined);
      }
    }
  }

  /** Closes idle keep-alive sockets; later calls fail. */
  close(): void {
    this.closed = true;
    this.agent.destroy();
  }

  private once(
    method: string,
    path: string,
    payload: Buffer | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Envelope> {
    const url = new URL(joinPath(this.base.pathname, path), this.base);
    return new Promise<Envelope>((resolve, reject) => {
      const headers: Record<string, string | number> = { ...this.headers };
      if (payload !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = payload.length;
      }
      const req = this.send(url, { method, headers, agent: this.agent, signal }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          let parsed: Envelope | undefined;
          try {
            parsed = text === '' ? {} : (JSON.parse(text) as Envelope);
          } catch {
            parsed = undefined;
          }
          if (status >= 200 && status < 300 && parsed !== undefined) {
            resolve(parsed);
            return;
          }
          reject(new QdrantHttpError(status, errorDetail(parsed, text), method, path));
        });
      });
      req.setTimeout(this.timeoutMs, () => {
        req.destroy(new TimeoutError(`no answer within ${this.timeoutMs} ms`));
      });
      req.on('error', reject);
      // One write: request line, headers and body together (see the module comment).
      req.end(payload);
    });
  }
}

/** Percent-encodes one path segment (a collection or alias name). */
export function segment(name: string): string {
  return encodeURIComponent(name);
}

function joinPath(prefix: string, path: string): string {
  const left = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  return `${left}${path.startsWith('/') ? path : `/${path}`}`;
}

function errorDetail(parsed: Envelope | undefined, text: string): string {
  const status = parsed?.status;
  if (typeof status === 'object' && status !== null && 'error' in status) {
    const message = (status as { error?: unknown }).error;
    if (typeof message === 'string') return message;
  }
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

function explain(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${code} ${error.message}` : error.message;
  }
  return String(error);
}
