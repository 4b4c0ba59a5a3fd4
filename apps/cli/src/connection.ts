import { createClient, type Client, type Interceptor, type Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { ContextService } from '@engram/contracts/context';
import { GovernanceService } from '@engram/contracts/governance';
import { Health } from '@engram/contracts/grpc';
import { IngestionService } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { resolveCredential, type CliEnv, type Credential, type IdentityFlags } from './auth.js';
import { EXIT, cliErrorFromCall, isCliError } from './errors.js';
import { retryInterceptor, type RetryInterceptorOptions } from './retry.js';

/** Default deadline of a call; calls that wait on the server (ingestion, extraction) set their own. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Clients of the four services and health over one gRPC (HTTP/2) connection. */
export interface Connection {
  readonly addr: string;
  readonly credential: Credential;
  readonly ingestion: Client<typeof IngestionService>;
  readonly governance: Client<typeof GovernanceService>;
  readonly retrieval: Client<typeof RetrievalService>;
  readonly context: Client<typeof ContextService>;
  readonly health: Client<typeof Health>;
}

/**
 * A transport to `addr` that sends `token` as the bearer credential and retries a unary call the
 * server refused for now (RESOURCE_EXHAUSTED with a RetryInfo, UNAVAILABLE it answered) after
 * the delay it asked for, within the call's deadline (`retry.ts`).
 */
export function engramTransport(
  addr: string,
  token: string | undefined,
  retry: RetryInterceptorOptions = {},
): Transport {
  const bearer: Interceptor = (next) => (request) => {
    if (token !== undefined) request.header.set('authorization', `Bearer ${token}`);
    return next(request);
  };
  return createGrpcTransport({
    baseUrl: addr,
    interceptors: [retryInterceptor(retry), bearer],
    defaultTimeoutMs: DEFAULT_TIMEOUT_MS,
    // Ingested files go up in one message up to the streaming threshold; answers may be large.
    readMaxBytes: 64 * 1024 * 1024,
    writeMaxBytes: 64 * 1024 * 1024,
  });
}

/** Resolves the credential (see auth.ts) and opens the clients (no I/O until the first call). */
export async function connect(env: CliEnv, flags: IdentityFlags): Promise<Connection> {
  let credential: Credential;
  try {
    credential = await resolveCredential(env, flags);
  } catch (error) {
    // Without a local secret and without a server, "start a server" is the useful message.
    if (isCliError(error) && error.exitCode === EXIT.TOKEN) {
      try {
        await createClient(Health, engramTransport(env.addr, undefined)).check({}, { timeoutMs: 5_000 });
      } catch (probe) {
        const failure = cliErrorFromCall(probe, env.addr);
        if (failure.exitCode === EXIT.UNREACHABLE) throw failure;
      }
    }
    throw error;
  }
  const transport = engramTransport(env.addr, credential.token);
  return {
    addr: env.addr,
    credential,
    ingestion: createClient(IngestionService, transport),
    governance: createClient(GovernanceService, transport),
    retrieval: createClient(RetrievalService, transport),
    context: createClient(ContextService, transport),
    health: createClient(Health, transport),
  };
}
