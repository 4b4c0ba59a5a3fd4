import { setMaxListeners } from 'node:events';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { DescService } from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type Interceptor,
  type ServiceImpl,
} from '@connectrpc/connect';
import { setTrailerStatus } from '@connectrpc/connect/protocol-grpc';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { ErrorInfoSchema, Health, ServerReflection } from '@engram/contracts/grpc';
import { loggableError } from '@engram/errors';
import type { Logger, RpcMetrics } from '@engram/telemetry';
import type { Authenticator } from './auth.js';
import type { ServerLimits } from './config.js';
import { HealthRegistry, ServingStatus, createHealthService } from './health.js';
import { checkRoutes, matchRoute, serveRoute, type HttpRoute } from './http-routes.js';
import { createServerInterceptor } from './interceptors.js';
import { createReflectionService } from './reflection.js';

/** One service to mount: its descriptor and its (possibly partial) implementation. */
export interface ServiceRegistration<S extends DescService = DescService> {
  readonly service: S;
  /** Methods left out answer UNIMPLEMENTED with reason NOT_IMPLEMENTED. */
  readonly implementation: Partial<ServiceImpl<S>>;
}

/** Binds a service descriptor to its implementation with full type checking. */
export function registration<S extends DescService>(
  service: S,
  implementation: Partial<ServiceImpl<S>>,
): ServiceRegistration {
  return { service, implementation };
}

/** `engram.governance.v1.GovernanceService` → `engram.governance` (the ErrorInfo domain). */
export function domainOf(serviceTypeName: string): string {
  return serviceTypeName.split('.').slice(0, -2).join('.');
}

const PUBLIC_SERVICES: ReadonlySet<string> = new Set([Health.typeName, ServerReflection.typeName]);

/** What routing needs, shared by the network server and the in-process transport. */
export interface RoutingOptions {
  readonly services: readonly ServiceRegistration[];
  readonly authenticate: Authenticator;
  readonly logger: Logger;
  readonly limits: ServerLimits;
  /** Where calls are counted and timed (`serve` passes the process registry's); none, no metrics. */
  readonly metrics?: RpcMetrics;
}

/** The interceptors every Engram route runs behind. */
export function serverInterceptors(options: RoutingOptions): Interceptor[] {
  return [
    createServerInterceptor({
      authenticate: options.authenticate,
      logger: options.logger,
      domainOf,
      publicServices: PUBLIC_SERVICES,
      maxStreamMessages: options.limits.maxStreamMessages,
      ...(options.metrics !== undefined ? { metrics: options.metrics } : {}),
    }),
  ];
}

/** Registers the application services, health and reflection on a router. */
export function engramRoutes(
  services: readonly ServiceRegistration[],
  health: HealthRegistry,
): (router: ConnectRouter) => void {
  return (router) => {
    for (const { service, implementation } of services) {
      router.service(service, implementation);
    }
    router.service(Health, createHealthService(health));
    router.service(ServerReflection, createReflectionService([...services.map((s) => s.service), Health]));
  };
}

/** Options of {@link startServer}. */
export interface ServerOptions extends RoutingOptions {
  /** Interface to bind, e.g. `127.0.0.1` or `0.0.0.0` in a container. */
  readonly host: string;
  /** TCP port; 0 picks a free one (tests). */
  readonly port: number;
  /** How long in-flight calls may run after SIGTERM before they are cancelled, ms. */
  readonly shutdownGraceMs: number;
  /** Plain HTTP routes beside the RPCs (the gateway's `/v1/` and `/mcp`), HTTP/1.1 and HTTP/2. */
  readonly httpRoutes?: readonly HttpRoute[];
}

/** A running server. */
export interface EngramServer {
  readonly host: string;
  readonly port: number;
  /** `http://host:port`, for clients. */
  readonly url: string;
  /** `http://host:port/metrics` when `serve` exposes Prometheus metrics (ENGRAM_METRICS_PORT). */
  readonly metricsUrl?: string;
  readonly health: HealthRegistry;
  /**
   * Graceful shutdown: health goes NOT_SERVING, new connections are refused, open connections get
   * GOAWAY so in-flight calls finish; after the grace period the rest are cancelled with
   * UNAVAILABLE (SHUTTING_DOWN) and connections destroyed. Idempotent.
   */
  shutdown(): Promise<void>;
}

/**
 * Serves gRPC, gRPC-Web and Connect on one cleartext port, with `grpc.health.v1` and reflection,
 * and the plain HTTP routes of `httpRoutes`. The port speaks both HTTP/2 with prior knowledge (gRPC
 * clients) and HTTP/1.1 (browsers, OpenAI and MCP clients, curl): each connection is routed by its
 * first bytes, the HTTP/2 preface starting with `PRI` (decision 0035). Over HTTP/1.1 the RPCs
 * answer the Connect and gRPC-Web protocols (gRPC itself needs HTTP/2). Every service starts
 * SERVING.
 */
export async function startServer(options: ServerOptions): Promise<EngramServer> {
  const health = new HealthRegistry();
  const routes = options.httpRoutes ?? [];
  checkRoutes(routes);
  const routeServing = { authenticate: options.authenticate, logger: options.logger };
  const shutdownController = new AbortController();
  // Every call in flight links its own signal to this one: many concurrent calls are normal.
  setMaxListeners(0, shutdownController.signal);
  const handler = connectNodeAdapter({
    routes: engramRoutes(options.services, health),
    interceptors: serverInterceptors(options),
    readMaxBytes: options.limits.maxMessageBytes,
    writeMaxBytes: options.limits.maxMessageBytes,
    maxTimeoutMs: options.limits.maxTimeoutMs,
    shutdownSignal: shutdownController.signal,
  });
  // Responses in flight, so that shutdown drains calls rather than waiting for clients to hang
  // up. A call is over once its handler has ended the response (`writableEnded`), even if the
  // client is still sending an oversized request it will never finish.
  const active = new Set<{ readonly writableEnded: boolean }>();
  const streamingInput = new Set(
    options.services.flatMap(({ service }) =>
      service.methods
        .filter((m) => m.methodKind === 'client_streaming' || m.methodKind === 'bidi_streaming')
        .map((m) => `/${service.typeName}/${m.name}`),
    ),
  );
  const h2 = http2.createServer({}, (req, res) => {
    active.add(res);
    req.stream.once('close', () => active.delete(res));
    const route = matchRoute(routes, req.url);
    if (route !== undefined) {
      // The compatibility API implements the surface the routes use (headers, body, writeHead, end).
      void serveRoute(
        route,
        req as unknown as http.IncomingMessage,
        res as unknown as http.ServerResponse,
        routeServing,
      );
      return;
    }
    // A client stream may pause between messages: its early answer goes out at once.
    if (streamingInput.has(req.url.split('?')[0] ?? '')) {
      req.stream.once('finish', () => {
        if (!req.readableEnded) resetWhenSent(req.stream);
      });
    } else answerAfterDraining(req, res);
    describeEarlyErrors(req, res);
    handler(req, res);
  });
  const h1 = http.createServer({}, (req, res) => {
    active.add(res);
    res.once('close', () => active.delete(res));
    const route = matchRoute(routes, req.url ?? '');
    if (route !== undefined) void serveRoute(route, req, res, routeServing);
    else handler(req, res);
  });
  // Its request, header and keep-alive timeouts are checked by a timer that starts on 'listening':
  // the socket is the outer server's, so start it by hand (stopped by `close` at shutdown).
  h1.emit('listening');
  h1.on('clientError', (error, socket) => {
    options.logger.debug({ err: loggableError(error) }, 'http/1.1 client error');
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
  const server = net.createServer((socket) => {
    routeConnection(socket, h1, h2);
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    // A broken connection is the client's problem, not a reason to crash the process.
    session.on('error', (error) => {
      options.logger.debug({ err: loggableError(error) }, 'http2 session error');
    });
  });
  const callsDone = () => [...active].every((res) => res.writableEnded);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  health.set('', ServingStatus.SERVING);
  for (const { service } of options.services) health.set(service.typeName, ServingStatus.SERVING);

  let closing: Promise<void> | undefined;
  const shutdown = () => {
    closing ??= (async () => {
      health.setAll(ServingStatus.NOT_SERVING);
      const closed = new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
      // GOAWAY: clients open no new streams here; in-flight calls go on. HTTP/1.1 connections
      // close once idle (a response in flight finishes first).
      for (const session of sessions) session.close();
      h1.closeIdleConnections();
      const drained = new Promise<'drained'>((resolve) => {
        const poll = setInterval(() => {
          if (callsDone()) {
            clearInterval(poll);
            resolve('drained');
          }
        }, 20);
        poll.unref();
      });
      const graceOver = new Promise<'timeout'>((resolve) =>
        setTimeout(() => {
          resolve('timeout');
        }, options.shutdownGraceMs).unref(),
      );
      if ((await Promise.race([drained, graceOver])) === 'timeout') {
        options.logger.warn({ inFlight: active.size }, 'grace period over: cancelling in-flight calls');
        shutdownController.abort(
          new ConnectError('server is shutting down', Code.Unavailable, undefined, [
            {
              desc: ErrorInfoSchema,
              value: { reason: 'SHUTTING_DOWN', domain: 'engram.runtime', metadata: {} },
            },
          ]),
        );
        // Give cancelled handlers a moment to send their status before connections are cut.
        await Promise.race([drained, new Promise((resolve) => setTimeout(resolve, 200))]);
      }
      for (const session of sessions) session.destroy();
      h1.closeAllConnections();
      h1.close();
      await closed;
    })();
    return closing;
  };

  return { host: options.host, port, url: `http://${options.host}:${port}`, health, shutdown };
}

/** Bytes that tell the two protocols apart: HTTP/2's preface starts `PRI`, no HTTP/1.1 method does. */
const PREFACE_PEEK = 3;

/**
 * Hands a new connection to the HTTP/2 or the HTTP/1.1 server by its first bytes, which are read
 * and put back (`unshift`) without switching the socket to flowing mode, so that either server
 * reads them again (an HTTP/2 session takes over a paused socket's buffered bytes; a flowing one
 * would lose them). A connection that closes or fails before sending anything is dropped.
 */
function routeConnection(socket: net.Socket, h1: http.Server, h2: http2.Http2Server): void {
  const dropOnError = () => socket.destroy();
  socket.on('error', dropOnError);
  const peek = () => {
    const head = socket.read(PREFACE_PEEK) as Buffer | null;
    if (head === null) {
      // Not enough yet: wait for more, or for the end (when `read` returns what is left).
      if (!socket.readableEnded && !socket.destroyed) socket.once('readable', peek);
      return;
    }
    socket.off('error', dropOnError);
    socket.unshift(head);
    (head.toString('latin1') === 'PRI' ? h2 : h1).emit('connection', socket);
  };
  peek();
}

/**
 * Holds an early answer (a request over `readMaxBytes`, an undecodable message, a refused
 * credential: the response ends while the client is still sending) until the rest of the request
 * has been read and dropped. A client writes a request as one buffer that its HTTP/2 session
 * counts against its `maxSessionMemory` (Node's default 10 MB) until the write completes; answered
 * early and left unread, a 6 MiB request stays counted, the next large one pushes the session
 * over its limit, and the client resets every later stream on the connection with
 * ENHANCE_YOUR_CALM — valid calls included. Reading the rest first lets the client's write
 * complete before it sees the answer. Past {@link DRAIN_LIMIT_BYTES} (or
 * {@link DRAIN_LIMIT_MS}) the answer is sent anyway and the stream is reset with NO_ERROR once the
 * trailers are out (RFC 9113 §8.1). Only for methods whose request is one message (the client
 * ends its stream right after it); a client stream that errs early is answered at once and reset
 * once the trailers are out (its client writes message by message). Decision 0031.
 */
function answerAfterDraining(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): void {
  const end = res.end.bind(res) as (...args: unknown[]) => http2.Http2ServerResponse;
  res.end = (...args: unknown[]) => {
    const stream = req.stream;
    if (req.readableEnded || stream.readableEnded || stream.destroyed) return end(...args);
    // connect's abandoned body iterator has destroyed the compatibility request, which pauses
    // the stream on every chunk it can no longer take: read from the stream itself.
    stream.removeAllListeners('data');
    let drained = 0;
    let answered = false;
    const answer = (reset: boolean) => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      end(...args);
      if (reset) resetWhenSent(stream);
    };
    const timer = setTimeout(() => {
      answer(true);
    }, DRAIN_LIMIT_MS).unref();
    stream.on('data', (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > DRAIN_LIMIT_BYTES) answer(true);
    });
    stream.once('end', () => {
      answer(false);
    });
    stream.once('close', () => {
      answer(false);
    });
    stream.resume();
    return res;
  };
}

/**
 * Gives the errors connect raises before any interceptor runs — a request it cannot decode
 * (INTERNAL "parse binary: …", e.g. a Struct nested deeper than protobuf-es's limit of 100
 * messages) and one over `readMaxBytes` (RESOURCE_EXHAUSTED without details) — the status and
 * `ErrorInfo` every other error has: INVALID_ARGUMENT MESSAGE_MALFORMED, RESOURCE_EXHAUSTED
 * MESSAGE_TOO_LARGE. gRPC only (the status is in the trailers; gRPC-Web and Connect write it in the
 * body). Decision 0031.
 */
function describeEarlyErrors(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): void {
  const addTrailers = res.addTrailers.bind(res);
  res.addTrailers = (trailers: http2.OutgoingHttpHeaders) => {
    const status = String(trailers[GRPC_STATUS] ?? '');
    const message = decodeURIComponent(String(trailers[GRPC_MESSAGE] ?? ''));
    const described = trailers[GRPC_DETAILS] !== undefined ? undefined : earlyError(status, message, req.url);
    if (described === undefined) {
      addTrailers(trailers);
      return;
    }
    const headers = new Headers();
    setTrailerStatus(headers, described);
    const rewritten: http2.OutgoingHttpHeaders = { ...trailers };
    headers.forEach((value, key) => {
      rewritten[key] = value;
    });
    addTrailers(rewritten);
  };
}

const GRPC_STATUS = 'grpc-status';
const GRPC_MESSAGE = 'grpc-message';
const GRPC_DETAILS = 'grpc-status-details-bin';

/** The described error for connect's own early failure, or undefined for any other status. */
function earlyError(status: string, message: string, path: string): ConnectError | undefined {
  const service = /^\/([\w.]+)\//.exec(path)?.[1] ?? '';
  const info = (reason: string, metadata: Record<string, string>) => [
    { desc: ErrorInfoSchema, value: { reason, domain: domainOf(service), metadata } },
  ];
  if (status === String(Code.Internal) && message.startsWith('parse binary:')) {
    const tooDeep = message.includes('maximum recursion depth');
    return new ConnectError(
      tooDeep
        ? 'the request cannot be decoded: messages are nested deeper than 100 levels'
        : 'the request cannot be decoded as the method input message',
      Code.InvalidArgument,
      undefined,
      info('MESSAGE_MALFORMED', {}),
    );
  }
  const limit = /larger than configured readMaxBytes (\d+)/.exec(message)?.[1];
  if (status === String(Code.ResourceExhausted) && limit !== undefined) {
    return new ConnectError(
      message,
      Code.ResourceExhausted,
      undefined,
      info('MESSAGE_TOO_LARGE', { limit_bytes: limit }),
    );
  }
  return undefined;
}

/** Resets a stream with NO_ERROR once its trailers have been sent (it is half-closed locally). */
function resetWhenSent(stream: http2.ServerHttp2Stream, started = Date.now()): void {
  if (stream.closed || stream.destroyed) return;
  if (stream.state.localClose === 1) stream.close(http2.constants.NGHTTP2_NO_ERROR);
  else if (Date.now() - started < DRAIN_LIMIT_MS)
    setTimeout(() => {
      resetWhenSent(stream, started);
    }, 5).unref();
}

/** How much of an early-answered request the server reads and drops before answering, bytes. */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;
/** …and for how long, ms. */
const DRAIN_LIMIT_MS = 10_000;

/**
 * Shuts the server down on SIGTERM or SIGINT and exits 0 when drained (1 if draining failed).
 * Returns a function that removes the handlers.
 */
export function exitOnSignals(server: EngramServer, logger: Logger): () => void {
  const onSignal = (signal: NodeJS.Signals) => {
    logger.info({ signal }, 'shutting down: draining in-flight calls');
    server.shutdown().then(
      () => {
        logger.info('shutdown complete');
        logger.flush();
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: loggableError(error) }, 'shutdown failed');
        logger.flush();
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  return () => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  };
}
