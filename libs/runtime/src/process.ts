import type { Transport } from '@connectrpc/connect';
import { createAuthenticator } from './auth.js';
import { createInProcessTransport } from './clients.js';
import { ConfigError, authConfigFromEnv, limitsFromEnv, type ServerEnv } from './config.js';
import { createLogger, type Logger } from './logger.js';
import {
  exitOnSignals,
  startServer,
  type EngramServer,
  type RoutingOptions,
  type ServiceRegistration,
} from './server.js';
import {
  serviceSigningKey,
  type ServiceCredentials,
  createServiceCredentials,
} from './service-credentials.js';

/** What a process gives its services when it builds them. */
export interface ServeContext {
  /**
   * Calls to the services of this very process, through the same authentication, limits and
   * error boundary as the network (the all-in-one process wires its services with it).
   */
  readonly localTransport: Transport;
  /** Tokens for the process's own background calls to other services (`service` role). */
  readonly serviceCredentials: ServiceCredentials;
}

/** Options of {@link serve}. */
export interface ServeOptions {
  /** Process name in logs, e.g. `governance` or `all-in-one`. */
  readonly name: string;
  readonly env: ServerEnv;
  readonly port: number;
  /** Builds the services once the logger exists. */
  readonly services: (logger: Logger, context: ServeContext) => readonly ServiceRegistration[];
  /** Supplies a secret when none is configured (the all-in-one local secret). */
  readonly fallbackSecret?: () => Uint8Array;
  /** Extra fields for the "listening" log line (e.g. a command to try). */
  readonly announce?: (server: EngramServer) => Record<string, unknown>;
  /** Handle SIGTERM/SIGINT by draining and exiting (default true; tests pass false). */
  readonly handleSignals?: boolean;
  /** Runs after the server has drained (close databases, flush files). */
  readonly onShutdown?: () => Promise<void>;
}

/** Everything a service process does before serving: logs, auth, listen, signal handling. */
export async function serve(options: ServeOptions): Promise<{ server: EngramServer; logger: Logger }> {
  const { env } = options;
  const logger = createLogger({ service: options.name, level: env.ENGRAM_LOG_LEVEL });
  const authConfig = authConfigFromEnv(env, options.fallbackSecret);
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
  const services = options.services(logger, { localTransport, serviceCredentials });
  const authenticate = await createAuthenticator(authConfig);
  const limits = limitsFromEnv(env);
  routing.current = { services, authenticate, logger, limits };
  const started = await startServer({
    services,
    authenticate,
    logger,
    limits,
    host: env.ENGRAM_HOST,
    port: options.port,
    shutdownGraceMs: env.ENGRAM_SHUTDOWN_GRACE_MS,
  });
  const { onShutdown } = options;
  let closing: Promise<void> | undefined;
  const server: EngramServer =
    onShutdown === undefined
      ? started
      : { ...started, shutdown: () => (closing ??= started.shutdown().then(onShutdown)) };
  if (options.handleSignals ?? true) exitOnSignals(server, logger);
  logger.info(
    {
      url: server.url,
      services: services.map((s) => s.service.typeName),
      auth: authConfig.mode,
      ...options.announce?.(server),
    },
    `engram ${options.name} listening on ${server.url}`,
  );
  return { server, logger };
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
