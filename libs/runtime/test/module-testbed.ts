import { randomBytes } from 'node:crypto';
import { ConnectError, type Transport } from '@connectrpc/connect';
import { ErrorInfoSchema } from '@engram/contracts/grpc';
import {
  createAuthenticator,
  createInProcessTransport,
  createLogger,
  createServiceCredentials,
  moduleRegistrations,
  type ServiceModule,
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
