import { randomBytes } from 'node:crypto';
import { ConnectError, type Transport } from '@connectrpc/connect';
import { ErrorInfoSchema } from '@engram/contracts/grpc';
import {
  createAuthenticator,
  createInProcessTransport,
  createLogger,
  createServiceCredentials,
  mintToken,
  moduleRegistrations,
  startServer,
  type EngramServer,
  type ServiceModule,
  type ServiceRegistration,
} from '../src/index.js';

/**
 * What a module's integration test mounts it with: a user-facing key, a distinct service key
 * (decision 0024), a silent logger, the server's limits, the module's own service credentials, and
 * `mount`, which routes calls to the modules through the same authentication, limits and error
 * boundary as a real server (in-process).
 */
export function moduleTestbed(serviceSubject: string) {
  const secret = randomBytes(32);
  const serviceSecret = randomBytes(32);
  const logger = createLogger({ service: 'test', level: 'silent' });
  const limits = { maxMessageBytes: 8 << 20, maxStreamMessages: 1000, maxTimeoutMs: 60_000 };
  const credentials = createServiceCredentials(
    { algorithm: 'HS256', secret: serviceSecret },
    { subject: serviceSubject },
  );
  const mount = async (modules: readonly ServiceModule[]): Promise<Transport> => {
    const authenticate = await createAuthenticator({
      mode: 'hs256',
      secret,
      clockToleranceSec: 0,
      serviceKey: { algorithm: 'HS256', secret: serviceSecret },
    });
    return createInProcessTransport(() => ({
      services: moduleRegistrations(modules),
      authenticate,
      logger,
      limits,
    }));
  };
  return { secret, serviceSecret, logger, limits, credentials, mount };
}

/** The error a call failed with (the test fails when it succeeds). */
export async function failure(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error('expected the call to fail');
}

/** The `google.rpc.ErrorInfo` reason of a failed call. */
export const reasonOf = (error: ConnectError) => error.findDetails(ErrorInfoSchema)[0]?.reason;

/**
 * A real HTTP/2 server on a free loopback port serving `services` behind the real interceptors
 * (HS256 with a fresh key, a silent logger), and a bearer token for `alice` of tenant `t1`.
 */
export async function serveOnLoopback(
  services: readonly ServiceRegistration[],
): Promise<{ server: EngramServer; token: string }> {
  const secret = randomBytes(32);
  const server = await startServer({
    services,
    authenticate: await createAuthenticator({ mode: 'hs256', secret, clockToleranceSec: 0 }),
    logger: createLogger({ service: 'test', level: 'silent' }),
    limits: { maxMessageBytes: 1 << 20, maxStreamMessages: 100, maxTimeoutMs: 60_000 },
    host: '127.0.0.1',
    port: 0,
    shutdownGraceMs: 1_000,
  });
  const token = await mintToken({ subject: 'alice', tenantId: 't1' }, { algorithm: 'HS256', secret });
  return { server, token };
}
