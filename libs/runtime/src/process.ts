import type { Transport } from '@connectrpc/connect';
import type { DestinationStream } from 'pino';
import { ConfigError } from '@engram/config';
import { loggableError } from '@engram/errors';
import {
  createLogger,
  metricsRegistry,
  rpcMetrics,
  scopedMetrics,
  type Logger,
  type Registry,
  type ServiceMetrics,
} from '@engram/telemetry';
import { createAuthenticator } from './auth.js';
import { createInProcessTransport } from './clients.js';
import { authConfigFromEnv, limitsFromEnv, metricsPortFromEnv, type ServerEnv } from './config.js';
import type { HttpRoute } from './http-routes.js';
import { startMetricsServer, type MetricsServer } from './metrics-server.js';
import {
  moduleHttpRoutes,
  moduleRegistrations,
  startModules,
  stopModules,
  type ServiceModule,
} from './module.js';
import { exitOnSignals, startServer, type EngramServer, type RoutingOptions } from './server.js';
import {
  serviceSigningKey,
  type ServiceCredentials,
  createServiceCredentials,
} from './service-credentials.js';
import { initTracing } from './tracing.js';

/** What a process gives its services when it builds them. */
export interface ServeContext {
  /**
   * Calls to the services of this very process, through the same authentication, limits and
   * error boundary as the network (the all-in-one process wires its services with it).
   */
  readonly localTransport: Transport;
  /** Tokens for the process's own background calls to other services (`service` role). */
  readonly serviceCredentials: ServiceCredentials;
  /** The process's Prometheus registry: services register their gauges here (removed at shutdown). */
  readonly metrics: ServiceMetrics;
}

/** Options of {@link serve}. */
export interface ServeOptions {
  /** Process name in logs, e.g. `governance` or `all-in-one`. */
  readonly name: string;
  readonly env: ServerEnv;
  readonly port: number;
  /**
   * Builds the modules once the logger exists. Their services are mounted; their workers start
   * once the server listens and stop in reverse order after it has drained, before `onShutdown`.
   */
  readonly modules: (logger: Logger, context: ServeContext) => readonly ServiceModule[];
  /** Plain HTTP routes the process serves beside its modules' own (the all-in-one: the Studio). */
  readonly httpRoutes?: readonly HttpRoute[];
  /** Supplies a secret when none is configured (the all-in-one local secret). */
  readonly fallbackSecret?: () => Uint8Array;
  /** Supplies the service key when none is configured (the all-in-one local service secret). */
  readonly fallbackServiceSecret?: () => Uint8Array;
  /** Extra fields for the "listening" log line (e.g. a command to try). */
  readonly announce?: (server: EngramServer) => Record<string, unknown>;
  /** Handle SIGTERM/SIGINT by draining and exiting (default true; tests pass false). */
  readonly handleSignals?: boolean;
  /** Runs after the server has drained (close databases, flush files). */
  readonly onShutdown?: () => Promise<void>;
  /** Where log lines go (default stdout); tests capture them. */
  readonly logDestination?: DestinationStream;
}

/**
 * Everything a service process does before serving: logs, tracing, auth, listen, the metrics
 * endpoint, signal handling.
 */
export async function serve(options: ServeOptions): Promise<{ server: EngramServer; logger: Logger }> {
  const { env } = options;
  const logger = createLogger(
    { service: options.name, level: env.ENGRAM_LOG_LEVEL, format: env.ENGRAM_LOG_FORMAT },
    options.logDestination,
  );
  const tracing = initTracing({
    serviceName: `engram-${options.name}`,
    exporter: env.ENGRAM_OTEL_EXPORTER,
    ...(env.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined
      ? { otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT }
      : {}),
  });
  const registry = metricsRegistry();
  const serviceMetrics = scopedMetrics(registry);
  const authConfig = authConfigFromEnv(env, options.fallbackSecret, options.fallbackServiceSecret);
  if (authConfig.mode === 'insecure') {
    logger.warn(
      'INSECURE MODE (ENGRAM_AUTH_MODE=insecure): token signatures are NOT verified; anyone can act as any user. Development only.',
    );
  }
  // Filled in below, once the services exist; read at the first in-process call.
  const routing: { current?: RoutingOptions } = {};
  const localTransport = createInProcessTransport(() => {
    if (routing.current === undefined) throw new Error('in-process call before the server was started');
    return routing.current;
  });
  const serviceCredentials = createServiceCredentials(() => serviceSigningKey(env, authConfig), {
    subject: `engram-${options.name}`,
    ...(env.ENGRAM_JWT_ISSUER !== undefined ? { issuer: env.ENGRAM_JWT_ISSUER } : {}),
    ...(env.ENGRAM_JWT_AUDIENCE !== undefined ? { audience: env.ENGRAM_JWT_AUDIENCE } : {}),
  });
  const modules = options.modules(logger, {
    localTransport,
    serviceCredentials,
    metrics: serviceMetrics,
  });
  const services = moduleRegistrations(modules);
  const authenticate = await createAuthenticator(authConfig);
  const limits = limitsFromEnv(env);
  const metrics = rpcMetrics(registry);
  routing.current = { services, authenticate, logger, limits, metrics };
  const metricsPort = metricsPortFromEnv(env, options.port);
  const metricsServer =
    metricsPort === 'off'
      ? undefined
      : await listenForMetrics(env, metricsPort, registry, logger).catch((error: unknown) => {
          serviceMetrics.dispose();
          throw error;
        });
  let started: EngramServer;
  try {
    started = await startServer({
      services,
      authenticate,
      logger,
      limits,
      metrics,
      host: env.ENGRAM_HOST,
      port: options.port,
      shutdownGraceMs: env.ENGRAM_SHUTDOWN_GRACE_MS,
      httpRoutes: [...moduleHttpRoutes(modules), ...(options.httpRoutes ?? [])],
    });
  } catch (error) {
    serviceMetrics.dispose();
    await metricsServer?.close();
    throw error;
  }
  startModules(modules);
  const { onShutdown } = options;
  let closing: Promise<void> | undefined;
  const server: EngramServer = {
    ...started,
    ...(metricsServer !== undefined ? { metricsUrl: metricsServer.url } : {}),
    shutdown: () =>
      (closing ??= (async () => {
        await started.shutdown();
        await stopModules(modules);
        await onShutdown?.();
        // Scrapes go on while calls drain; the gauges' sources are closed by now.
        serviceMetrics.dispose();
        await metricsServer?.close();
        await tracing.flush().catch((error: unknown) => {
          logger.warn({ err: loggableError(error) }, 'exporting the last spans failed');
        });
      })()),
  };
  if (options.handleSignals ?? true) exitOnSignals(server, logger);
  logger.info(
    {
      url: server.url,
      ...(server.metricsUrl !== undefined ? { metrics: server.metricsUrl } : {}),
      services: services.map((s) => s.service.typeName),
      auth: authConfig.mode,
      ...(tracing.exporter !== 'off' ? { traceExporter: tracing.exporter } : {}),
      ...options.announce?.(server),
    },
    `engram ${options.name} listening on ${server.url}`,
  );
  return { server, logger };
}

/**
 * Starts the metrics endpoint. A configured port that is taken is a configuration error; the
 * default one (9464) being taken (several Engram processes on one host) falls back to a free port,
 * with a warning: the metrics URL is in the "listening" line either way.
 */
async function listenForMetrics(
  env: ServerEnv,
  port: number,
  registry: Registry,
  logger: Logger,
): Promise<MetricsServer> {
  const start = (p: number) => startMetricsServer({ host: env.ENGRAM_HOST, port: p, registry, logger });
  try {
    return await start(port);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || port === 0) throw error;
    if (env.ENGRAM_METRICS_PORT !== undefined) {
      throw new ConfigError([
        {
          variable: 'ENGRAM_METRICS_PORT',
          message: `port ${port} on ${env.ENGRAM_HOST} is in use: choose another, 0 for a free one, or off`,
        },
      ]);
    }
    const fallback = await start(0);
    logger.warn(
      { defaultPort: port, metrics: fallback.url },
      `metrics port ${port} is in use: serving metrics on a free port (set ENGRAM_METRICS_PORT to choose)`,
    );
    return fallback;
  }
}

/**
 * Runs a process entry point: configuration errors print the offending variables and exit 2;
 * any other start-up failure exits 1.
 */
export function runMain(main: () => Promise<unknown>): void {
  // `then` also catches a synchronous throw (e.g. configuration parsed inside `main`).
  Promise.resolve()
    .then(main)
    .catch((error: unknown) => {
      if (error instanceof ConfigError) {
        process.stderr.write(`engram: ${error.message}\n`);
        process.exit(2);
      }
      process.stderr.write(
        `engram: failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exit(1);
    });
}
