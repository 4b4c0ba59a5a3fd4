/**
 * The OpenAI-compatible memory proxy: `POST /v1/chat/completions` (plain and server-sent events)
 * as ONE `ContextService.Chat` call of the caller, and `GET /v1/models`. An adapter only: the
 * context is built, the model called and the turn appended by Chat; the session is found, created
 * and filled by ingestion's RPCs; every failure is the RPC's own, as an OpenAI error body.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Code, ConnectError, type CallOptions } from '@connectrpc/connect';
import type { ChatDoneEvent, ChatResponse } from '@engram/contracts/context';
import { errors } from '@engram/errors';
import type { Logger } from '@engram/telemetry';
import { clientsFor, type TransportFor } from '../clients.js';
import type { AuthenticatedCaller, GatewayHandler } from '../http.js';
import { errorBodyOf, openAiFailureOf, proxyFailure, type OpenAiFailure } from './errors.js';
import {
  chatRequestOf,
  chunkOf,
  closingChunksOf,
  completionOf,
  parseChatCompletionBody,
  planChat,
  type ChatPlan,
  type CompletionIdentity,
} from './mapping.js';
import { appendBeforeChat, resolveSession } from './sessions.js';

/** Request header naming the session (`sessions/{id}` or the id); response header saying which one was used. */
export const SESSION_HEADER = 'x-engram-session';
/** Request header: the token budget of the assembled context (Chat's `budget.total_tokens`). */
export const BUDGET_HEADER = 'x-engram-budget-tokens';
/** The largest request body accepted by default. */
export const OPENAI_PROXY_MAX_BODY_BYTES = 8 * 1024 * 1024;
/** The context budget of a request without {@link BUDGET_HEADER}, by default. */
export const OPENAI_PROXY_DEFAULT_BUDGET_TOKENS = 8_000;

/** A model `GET /v1/models` lists. */
export interface ProxyModel {
  readonly id: string;
  /** Unix seconds (0 when unknown). */
  readonly created: number;
  /** '' when unknown (listed as `engram`). */
  readonly ownedBy: string;
}

/** Options of {@link openAiProxyHandler}. */
export interface OpenAiProxyOptions {
  /** How this process reaches the services (in-process in the all-in-one). */
  readonly transportFor: TransportFor;
  /**
   * The upstream's models, for `GET /v1/models` (the context service's `listChatModels`). Rejects
   * with the error to answer, e.g. FAILED_PRECONDITION `MODEL_NOT_CONFIGURED` (503).
   */
  readonly listModels: (signal: AbortSignal) => Promise<readonly ProxyModel[]>;
  /** One debug line per request (ids, route, status) and a warning per server-side failure; never contents. */
  readonly logger?: Logger;
  /** The context budget without {@link BUDGET_HEADER}. Default {@link OPENAI_PROXY_DEFAULT_BUDGET_TOKENS}. */
  readonly defaultBudgetTokens?: number;
  /** Default {@link OPENAI_PROXY_MAX_BODY_BYTES}. */
  readonly maxBodyBytes?: number;
}

/** A refusal of the proxy's own (routing, body), carried to the one place that answers failures. */
class ProxyRefusal extends Error {
  constructor(readonly failure: OpenAiFailure) {
    super(failure.message);
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const headerOf = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** One request being answered: its ids, the headers every answer carries, and its cancellation. */
class Exchange {
  readonly requestId: string;
  readonly abort = new AbortController();
  readonly headers: Record<string, string>;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly caller: AuthenticatedCaller,
    readonly logger: Logger | undefined,
  ) {
    // The server's id for this request when it set one (its log line), else the client's, else new.
    const mounted = res.getHeader('x-request-id');
    const given = typeof mounted === 'string' ? mounted : headerOf(req, 'x-request-id');
    this.requestId = given !== undefined && REQUEST_ID.test(given) ? given : randomUUID();
    this.headers = { 'x-request-id': this.requestId };
    // The client going away cancels the RPCs (Chat then appends nothing).
    res.once('close', () => {
      if (!res.writableFinished) {
        this.abort.abort(new ConnectError('the client closed the connection', Code.Canceled));
      }
    });
  }

  /** Options of every RPC of this request: its signal and request id (the credential is the transport's). */
  get call(): CallOptions {
    return { signal: this.abort.signal, headers: { 'x-request-id': this.requestId } };
  }

  get gone(): boolean {
    return this.abort.signal.aborted || this.res.destroyed;
  }

  json(status: number, body: unknown, extra: Record<string, string> = {}): void {
    if (this.gone) return;
    const text = JSON.stringify(body);
    this.res.writeHead(status, {
      ...this.headers,
      ...extra,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(text)),
    });
    this.res.end(text);
  }

  fail(failure: OpenAiFailure): void {
    const extra: Record<string, string> = {};
    if (failure.retryAfterSeconds !== undefined) extra['retry-after'] = String(failure.retryAfterSeconds);
    if (failure.status === 405 && failure.metadata['allow'] !== undefined)
      extra['allow'] = failure.metadata['allow'];
    this.json(failure.status, errorBodyOf(failure), extra);
  }

  /** A warning for a failure on the server's side (5xx): ids, status and reason only. */
  logFailure(failure: OpenAiFailure): void {
    if (failure.status < 500) return;
    this.logger?.warn(
      {
        requestId: this.requestId,
        subject: this.caller.subject,
        status: failure.status,
        reason: failure.code,
      },
      'openai proxy request failed',
    );
  }
}

/** Reads the whole body as JSON: 413 beyond `limit` bytes (declared or received), 400 when not JSON. */
function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const tooLarge = () =>
    new ProxyRefusal(
      proxyFailure(413, 'MESSAGE_TOO_LARGE', `the request body is larger than ${limit} bytes`, {
        limit: String(limit),
      }),
    );
  if (Number(headerOf(req, 'content-length') ?? 0) > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let total = 0;
    req.on('data', (part: Buffer) => {
      total += part.length;
      // Beyond the limit the rest is read and dropped (the connection stays usable), not kept.
      if (total <= limit) parts.push(part);
      else reject(tooLarge());
    });
    req.once('error', reject);
    req.once('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(parts).toString('utf8')));
      } catch {
        reject(
          new ProxyRefusal(proxyFailure(400, 'MESSAGE_MALFORMED', 'the request body is not valid JSON')),
        );
      }
    });
  });
}

/** The context budget: the header's, else the default (INVALID_ARGUMENT naming the header). */
function budgetOf(req: IncomingMessage, fallback: number): number {
  const value = headerOf(req, BUDGET_HEADER)?.trim();
  if (value === undefined) return fallback;
  const tokens = /^\d{1,7}$/.test(value) ? Number(value) : NaN;
  if (!(tokens >= 1 && tokens <= 2_000_000)) {
    throw errors.fieldInvalid(BUDGET_HEADER, 'expected an integer from 1 to 2000000');
  }
  return tokens;
}

const identityOf = (model: string): CompletionIdentity => ({
  id: `chatcmpl-${randomUUID().replaceAll('-', '')}`,
  created: Math.floor(Date.now() / 1000),
  model,
});

const sse = (res: ServerResponse, data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);

/** Answers with one `chat.completion` once the Chat stream has ended. */
async function answerWhole(exchange: Exchange, events: AsyncIterable<ChatResponse>, plan: ChatPlan) {
  let model = plan.model;
  let done: ChatDoneEvent | undefined;
  for await (const { event } of events) {
    if (event.case === 'context') model = event.value.model;
    else if (event.case === 'done') done = event.value;
  }
  if (done === undefined) throw errors.unavailable('context', 'the Chat stream ended without a result');
  exchange.json(200, completionOf(identityOf(model), done));
}

/**
 * Answers with server-sent `chat.completion.chunk` events. The status is sent with Chat's first
 * event, so a failure before it (validation, model, session) is a plain JSON error; a failure
 * after it is a last `data: {"error": …}` event, after which the stream ends.
 */
async function answerStreaming(exchange: Exchange, events: AsyncIterable<ChatResponse>, plan: ChatPlan) {
  const { res } = exchange;
  const iterator = events[Symbol.asyncIterator]();
  const first = await iterator.next();
  const model =
    !first.done && first.value.event.case === 'context' ? first.value.event.value.model : plan.model;
  const identity = identityOf(model);
  res.writeHead(200, {
    ...exchange.headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  sse(res, chunkOf(identity, { role: 'assistant', content: '' }));
  try {
    for (let next = first; !next.done; next = await iterator.next()) {
      const { event } = next.value;
      if (event.case === 'delta') sse(res, chunkOf(identity, { content: event.value.text }));
      if (event.case === 'done') {
        for (const chunk of closingChunksOf(identity, event.value, plan.includeUsage)) sse(res, chunk);
        res.end('data: [DONE]\n\n');
        return;
      }
    }
    throw errors.unavailable('context', 'the Chat stream ended without a result');
  } catch (error) {
    if (exchange.gone) return;
    const failure = openAiFailureOf(error);
    exchange.logFailure(failure);
    sse(res, errorBodyOf(failure));
    res.end();
  }
}

/** `POST /v1/chat/completions`. */
async function chatCompletions(exchange: Exchange, options: OpenAiProxyOptions): Promise<void> {
  const limit = options.maxBodyBytes ?? OPENAI_PROXY_MAX_BODY_BYTES;
  const body = parseChatCompletionBody(await readJsonBody(exchange.req, limit));
  const plan = planChat(body);
  const budget = budgetOf(exchange.req, options.defaultBudgetTokens ?? OPENAI_PROXY_DEFAULT_BUDGET_TOKENS);
  const clients = clientsFor(options.transportFor, exchange.caller.authorization);
  const session = await resolveSession(clients, plan, headerOf(exchange.req, SESSION_HEADER), exchange.call);
  exchange.headers[SESSION_HEADER] = session.name;
  await appendBeforeChat(clients, session, plan, exchange.call);
  const events = clients.context.chat(chatRequestOf(plan, session.name, budget), exchange.call);
  await (plan.stream ? answerStreaming(exchange, events, plan) : answerWhole(exchange, events, plan));
}

const modelObjectOf = (model: ProxyModel) => ({
  id: model.id,
  object: 'model',
  created: model.created,
  owned_by: model.ownedBy === '' ? 'engram' : model.ownedBy,
});

/** `GET /v1/models` and `GET /v1/models/{id}`. */
async function models(exchange: Exchange, options: OpenAiProxyOptions, id?: string): Promise<void> {
  const listed = await options.listModels(exchange.abort.signal);
  if (id === undefined) {
    exchange.json(200, { object: 'list', data: listed.map(modelObjectOf) });
    return;
  }
  const model = listed.find((m) => m.id === id);
  if (model === undefined) throw errors.notFound(`models/${id}`);
  exchange.json(200, modelObjectOf(model));
}

/** The route of a path, or a refusal (404 unknown path, 405 wrong method). */
function route(method: string, path: string): 'chat' | 'models' | { model: string } {
  const refuse = (allow: string) => {
    throw new ProxyRefusal(
      proxyFailure(405, 'NOT_IMPLEMENTED', `${method} is not allowed on ${path}; use ${allow}`, {
        method,
        allow,
      }),
    );
  };
  if (path === '/v1/chat/completions') return method === 'POST' ? 'chat' : refuse('POST');
  if (path === '/v1/models') return method === 'GET' ? 'models' : refuse('GET');
  const model = /^\/v1\/models\/([^/]+)$/.exec(path)?.[1];
  if (model !== undefined) return method === 'GET' ? { model: decodeURIComponent(model) } : refuse('GET');
  throw new ProxyRefusal(
    proxyFailure(
      404,
      'RESOURCE_NOT_FOUND',
      `no route ${path}: the proxy serves /v1/chat/completions and /v1/models`,
      {
        path,
      },
    ),
  );
}

/**
 * The `GatewayHandler` of the `/v1/` prefix. The caller was authenticated by the server; their
 * `authorization` is forwarded unchanged on every RPC, so what the caller may do is the services'
 * decision.
 */
export function openAiProxyHandler(options: OpenAiProxyOptions): GatewayHandler {
  return async (req, res, caller) => {
    const exchange = new Exchange(req, res, caller, options.logger);
    const path = new URL(req.url ?? '/', 'http://proxy').pathname.replace(/\/+$/, '');
    try {
      const target = route(req.method ?? 'GET', path);
      if (target === 'chat') await chatCompletions(exchange, options);
      else if (target === 'models') await models(exchange, options);
      else await models(exchange, options, target.model);
    } catch (error) {
      const failure = error instanceof ProxyRefusal ? error.failure : openAiFailureOf(error);
      exchange.logFailure(failure);
      if (res.headersSent) res.end();
      else exchange.fail(failure);
    }
    options.logger?.debug(
      { requestId: exchange.requestId, subject: caller.subject, path, status: res.statusCode },
      'openai proxy request',
    );
  };
}
