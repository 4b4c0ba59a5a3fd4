import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Code } from '@connectrpc/connect';
import { errorInfoOf, loggableError, toConnectError } from '@engram/errors';
import type { Logger } from '@engram/telemetry';
import type { Authenticator } from './auth.js';

/** The caller of an HTTP route, from the verified credential (decision 0035). */
export interface HttpCaller {
  /** The `authorization` header as presented: the adapters forward it on every RPC they make. */
  readonly authorization: string;
  readonly subject: string;
  readonly tenantId: string;
}

/**
 * A plain HTTP route served beside gRPC, gRPC-Web and Connect on a service's port: the
 * OpenAI-compatible proxy (`/v1/`), MCP's Streamable HTTP endpoint (`/mcp`) and the Studio's
 * files (`/studio`). The handler answers every request it is given, errors included, and never
 * throws.
 */
export type HttpRoute = BearerHttpRoute | PublicHttpRoute;

interface RouteBase {
  /**
   * The path it serves: `/v1/` matches every path under `/v1/`; `/mcp` matches `/mcp` exactly
   * and `/mcp/…` (a query string is ignored in either case).
   */
  readonly prefix: string;
}

/** A route for authenticated callers: the server verifies the bearer credential first (401 otherwise). */
export interface BearerHttpRoute extends RouteBase {
  readonly access?: 'bearer';
  readonly handle: (req: IncomingMessage, res: ServerResponse, caller: HttpCaller) => Promise<void>;
}

/**
 * A route anyone may call, such as static files: no credential is read, so the handler must not
 * act on anyone's behalf (the Studio's files, and its loopback-only sign-in, which checks the
 * connection itself).
 */
export interface PublicHttpRoute extends RouteBase {
  readonly access: 'public';
  readonly handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
}

/** The route serving `url` (a request target such as `/v1/chat/completions?x=1`), if any. */
export function matchRoute(routes: readonly HttpRoute[], url: string): HttpRoute | undefined {
  const path = url.split('?')[0] ?? '';
  return routes.find((route) =>
    route.prefix.endsWith('/')
      ? path.startsWith(route.prefix)
      : path === route.prefix || path.startsWith(`${route.prefix}/`),
  );
}

/** Checks that no two routes overlap and none shadows the gRPC paths (`/package.Service/Method`). */
export function checkRoutes(routes: readonly HttpRoute[]): void {
  for (const route of routes) {
    if (!/^\/[a-z0-9-]+(\/|$)/.test(route.prefix)) {
      throw new Error(`HTTP route prefix "${route.prefix}" must start with "/" and a lower-case segment`);
    }
    const other = routes.find(
      (r) => r !== route && (matchRoute([r], route.prefix) ?? matchRoute([route], r.prefix)),
    );
    if (other !== undefined) throw new Error(`HTTP routes "${route.prefix}" and "${other.prefix}" overlap`);
  }
}

/** What serving a route needs from the server. */
export interface RouteServing {
  readonly authenticate: Authenticator;
  readonly logger: Logger;
}

/**
 * Authenticates and hands one request to its route (a public route is handed over as it is). A missing or refused credential answers 401
 * with `WWW-Authenticate: Bearer` and a JSON error body in the OpenAI shape (`{ error: { message,
 * type, param, code } }`, `code` the ErrorInfo reason), which MCP clients read as an HTTP error
 * too. One log line per request, with the path, status and duration only (never a body).
 */
export async function serveRoute(
  route: HttpRoute,
  req: IncomingMessage,
  res: ServerResponse,
  serving: RouteServing,
): Promise<void> {
  const started = performance.now();
  const requestId = randomUUID();
  res.setHeader('x-request-id', requestId);
  const path = (req.url ?? '').split('?')[0] ?? '';
  const who: { subject?: string; tenant?: string } = {};
  res.once('close', () => {
    serving.logger.info(
      {
        requestId,
        route: route.prefix,
        path,
        method: req.method,
        status: res.statusCode,
        durationMs: Math.round((performance.now() - started) * 100) / 100,
        ...who,
      },
      'http',
    );
  });
  if (route.access === 'public') {
    await handleSafely(route.prefix, () => route.handle(req, res), res, serving.logger);
    return;
  }
  const authorization = req.headers.authorization;
  let principal;
  try {
    principal = await serving.authenticate(typeof authorization === 'string' ? authorization : null);
  } catch (error) {
    const { error: failure, internal } = toConnectError(error, { domain: 'engram.runtime', requestId });
    const reason = errorInfoOf(failure)?.reason ?? 'UNAUTHENTICATED';
    const status = failure.code === Code.Unauthenticated && !internal ? 401 : 500;
    if (status === 500) {
      serving.logger.error({ err: loggableError(error) }, 'authenticating an HTTP request failed');
    }
    answerJson(
      res,
      status,
      {
        error: {
          message: status === 401 ? failure.rawMessage : 'internal error',
          type: status === 401 ? 'authentication_error' : 'server_error',
          param: null,
          code: reason,
        },
      },
      status === 401 ? { 'www-authenticate': 'Bearer' } : {},
    );
    return;
  }
  who.subject = principal.subject;
  who.tenant = principal.tenantId;
  const caller = {
    authorization: `Bearer ${principal.token}`,
    subject: principal.subject,
    tenantId: principal.tenantId,
  };
  await handleSafely(route.prefix, () => route.handle(req, res, caller), res, serving.logger);
}

/** Runs a handler; one that throws (a handler must answer its own errors) gets a 500. */
async function handleSafely(
  prefix: string,
  handle: () => Promise<void>,
  res: ServerResponse,
  logger: Logger,
): Promise<void> {
  try {
    await handle();
  } catch (error) {
    // A handler must answer its own errors; this is the last line of defence.
    logger.error({ err: loggableError(error), route: prefix }, 'HTTP route handler failed');
    if (!res.headersSent) {
      answerJson(res, 500, {
        error: { message: 'internal error', type: 'server_error', param: null, code: 'INTERNAL' },
      });
    } else res.destroy();
  }
}

/** Ends `res` with a JSON body. */
function answerJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}
