import { createAuthenticator } from './auth.js';
import { ConfigError, authConfigFromEnv, limitsFromEnv, type ServerEnv } from './config.js';
import { createLogger, type Logger } from './logger.js';
import { exitOnSignals, startServer, type EngramServer, type ServiceRegistration } from './server.js';

/** Options of {@link serve}. */
export interface ServeOptions {
  /** Process name in logs, e.g. `governance` or `all-in-one`. */
  readonly name: string;
  readonly env: ServerEnv;
  readonly port: number;
  /** Builds the services once the logger exists. */
  readonly services: (logger: Logger) => readonly ServiceRegistration[];
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
  const services = options.services(logger);
  const started = await startServer({
    services,
    authenticate: await createAuthenticator(authConfig),
    logger,
    limits: limitsFromEnv(env),
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
