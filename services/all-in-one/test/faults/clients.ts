/** Real gRPC clients (connect-node over HTTP/2) of a {@link Cluster}, with tokens and helpers. */
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { ContextService } from '@engram/contracts/context';
import { GovernanceService } from '@engram/contracts/governance';
import { ErrorInfoSchema } from '@engram/contracts/grpc';
import { IngestionService, type Message } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { tokenFor, type EngramClients } from '../harness.js';
import type { Cluster } from './cluster.js';

export type Clients = EngramClients;

/** Clients of the cluster's four services. One HTTP/2 session per service, reconnecting after a restart. */
export function clientsOf(cluster: Cluster): Clients {
  const transport = (baseUrl: string) =>
    createGrpcTransport({
      baseUrl,
      idleConnectionTimeoutMs: 5_000,
      pingIntervalMs: 1_000,
      pingTimeoutMs: 2_000,
    });
  return {
    governance: createClient(GovernanceService, transport(cluster.services.governance.url)),
    ingestion: createClient(IngestionService, transport(cluster.services.ingestion.url)),
    retrieval: createClient(RetrievalService, transport(cluster.services.retrieval.url)),
    context: createClient(ContextService, transport(cluster.services.context.url)),
  };
}

/** Bearer headers of a user of a tenant (optionally with roles). */
export async function headersOf(
  cluster: Cluster,
  tenantId: string,
  subject: string,
  roles: ('admin' | 'platform' | 'service')[] = [],
): Promise<Record<string, string>> {
  return { authorization: `Bearer ${await tokenFor(cluster.secret, { subject, tenantId, roles })}` };
}

/**
 * The status code of a failed call. A call that could not reach the server (refused or reset
 * connection: the process is dead or restarting) counts as UNAVAILABLE. In plain Node,
 * connect-node maps ECONNREFUSED to UNAVAILABLE itself, but under Jest the socket's error comes from
 * the host realm, its `instanceof Error` check fails, and the same failure surfaces as INTERNAL
 * "[internal] Error: connect ECONNREFUSED" — a test-environment artifact, not a server answer.
 */
export function codeOf(error: unknown): Code {
  const e = ConnectError.from(error);
  if (e.code === Code.Internal && CONNECTION_FAILURE.test(e.rawMessage)) return Code.Unavailable;
  return e.code;
}

const CONNECTION_FAILURE = /^Error: (connect ECONNREFUSED|read ECONNRESET|write EPIPE|connect ETIMEDOUT)/;

export function codeName(code: Code): string {
  return Code[code];
}

/**
 * Runs `call` with a deadline and reports how it ended: ok with its value, or the status code;
 * `elapsedMs` measures that it ended at all (the no-hang check), never a precise timing.
 */
export async function outcome<T>(
  call: (timeoutMs: number) => Promise<T>,
  timeoutMs: number,
): Promise<
  | { ok: true; value: T; elapsedMs: number }
  | { ok: false; code: Code; elapsedMs: number; error: ConnectError }
> {
  const started = Date.now();
  try {
    const value = await call(timeoutMs);
    return { ok: true, value, elapsedMs: Date.now() - started };
  } catch (error) {
    const e = ConnectError.from(error);
    return { ok: false, code: codeOf(e), elapsedMs: Date.now() - started, error: e };
  }
}

/** Every message of a session, oldest first. */
export async function allMessages(
  clients: Clients,
  headers: Record<string, string>,
  session: string,
): Promise<Message[]> {
  const messages: Message[] = [];
  let pageToken = '';
  do {
    const page = await clients.ingestion.listMessages(
      { parent: session, pageSize: 500, pageToken, includeCompacted: true },
      { headers, timeoutMs: 10_000 },
    );
    messages.push(...page.messages);
    pageToken = page.nextPageToken;
  } while (pageToken !== '');
  return messages;
}

/** The tenant's index status as an admin sees it; drift per kind. */
export async function indexStatus(clients: Clients, adminHeaders: Record<string, string>) {
  const { indexStatus: status } = await clients.retrieval.getIndexStatus(
    {},
    { headers: adminHeaders, timeoutMs: 10_000 },
  );
  if (status === undefined) throw new Error('GetIndexStatus returned no status');
  return status;
}

/**
 * The status once the index has converged to MySQL: reachable, and drift 0 for every kind (source
 * rows = points). Throws (with the numbers) otherwise, for {@link eventually}.
 */
export async function converged(clients: Clients, adminHeaders: Record<string, string>) {
  const status = await indexStatus(clients, adminHeaders);
  const settled =
    status.indexReachable && status.kinds.length === 3 && status.kinds.every((k) => k.drift === 0n);
  if (settled) return status;
  throw new Error(
    `not converged: reachable ${status.indexReachable}, outbox pending ${status.outboxPending} (retrying ${status.outboxRetrying}), ` +
      status.kinds.map((k) => `${k.kind}: ${k.sourceRows} rows, drift ${k.drift}`).join('; '),
  );
}

/**
 * How a call ended, for assertions: `OK`, the code name, and for UNAVAILABLE who was unavailable:
 * `Unavailable(mysql)` / `Unavailable(qdrant)` when the service answered DEPENDENCY_UNAVAILABLE
 * naming a dependency, `Unavailable(connection)` when the client could not reach the service.
 */
export function statusOf(result: { ok: true } | { ok: false; code: Code; error: ConnectError }): string {
  if (result.ok) return 'OK';
  const name = codeName(result.code);
  if (result.code !== Code.Unavailable) return name;
  const [info] = result.error.findDetails(ErrorInfoSchema);
  if (info?.reason === 'DEPENDENCY_UNAVAILABLE') return `${name}(${info.metadata['dependency'] ?? '?'})`;
  if (info === undefined && /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT/.test(result.error.rawMessage))
    return `${name}(connection)`;
  return `${name}(${info?.reason ?? `no ErrorInfo: ${result.error.rawMessage}`})`;
}
