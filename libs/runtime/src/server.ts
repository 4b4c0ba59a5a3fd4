import { setMaxListeners } from 'node:events';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { DescService } from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type Interceptor,
  type ServiceImpl,
} from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { ErrorInfoSchema, Health, ServerReflection } from '@engram/contracts/grpc';
import type { Logger, RpcMetrics } from '@engram/telemetry';
import type { Authenticator } from './auth.js';
import type { ServerLimits } from './config.js';
import { HealthRegistry, ServingStatus, createHealthService } from './health.js';
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
 * Serves gRPC, gRPC-Web and Connect on one HTTP/2 (cleartext, prior knowledge) port, with
 * `grpc.health.v1` and reflection. Every service starts SERVING.
 */
export async function startServer(options: ServerOptions): Promise<EngramServer> {
  const health = new HealthRegistry();
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
  const active = new Set<http2.Http2ServerResponse>();
  const server = http2.createServer({}, (req, res) => {
    active.add(res);
    req.stream.once('close', () => active.delete(res));
    handler(req, res);
  });
  const callsDone = () => [...active].every((res) => res.writableEnded);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    // A broken connection is the client's problem, not a reason to crash the process.
    session.on('error', (error) => {
      options.logger.debug({ err: error }, 'http2 session error');
    });
  });

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
      // GOAWAY: clients open no new streams here; in-flight calls go on.
      for (const session of sessions) session.close();
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
      await closed;
    })();
    return closing;
  };

  return { host: options.host, port, url: `http://${options.host}:${port}`, health, shutdown };
}

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
        logger.error({ err: error }, 'shutdown failed');
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
