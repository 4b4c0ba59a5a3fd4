/**
 * The hostile-input server: a real all-in-one on the embedded defaults (SQLite + embedded index),
 * in-process, over gRPC (HTTP/2); fixtures of every resource kind; one generic caller for every
 * RPC kind; and the check that an outcome is documented.
 */
import { join } from 'node:path';
import { create, toBinary, type DescMethod, type DescService } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient, type Client, type Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { sql } from 'kysely';
import { Scope } from '@engram/contracts/common';
import { MemoryType } from '@engram/contracts/governance';
import { Health, HealthCheckResponse_ServingStatus } from '@engram/contracts/grpc';
import { MessageRole } from '@engram/contracts/ingestion';
import { engramServices } from '@engram/contracts/registry';
import { ReindexMode } from '@engram/contracts/retrieval';
import { errorInfoOf, type Role } from '@engram/runtime';
import { openStore, type Store } from '@engram/store';
import { newSecret, startServer, TokenCache, type EngramClients } from '../harness.js';
import { readContracts, REASON_CODES } from './documented-errors.js';

export const rpcId = (service: DescService, method: DescMethod) => `${service.typeName}/${method.name}`;
export const ALL_RPCS = engramServices.flatMap((service) =>
  service.methods.map((method) => ({ id: rpcId(service, method), service, method })),
);
export const CONTRACTS = readContracts();

export interface Caller {
  readonly tenant: string;
  readonly subject: string;
  readonly orgs?: readonly string[];
  readonly roles?: readonly Role[];
}

export interface Harness extends EngramClients {
  readonly url: string;
  readonly secret: string;
  readonly transport: Transport;
  readonly store: Store;
  readonly health: Client<typeof Health>;
  headers(caller: Caller): Promise<{ authorization: string }>;
  stop(): Promise<void>;
}

export async function startHarness(): Promise<Harness> {
  const secret = newSecret();
  // No per-caller rate limits (decision 0026): the properties call each RPC hundreds of times as the
  // same few callers, and a refusal at admission would skip the validation they exercise.
  const { server, dataDir, transport, governance, ingestion, retrieval, context } = await startServer(
    secret,
    {
      env: { ENGRAM_INGEST_DOCUMENT_RATE_PER_MIN: '0', ENGRAM_INGEST_APPEND_RATE_PER_MIN: '0' },
    },
  );
  const store = openStore({ target: join(dataDir, 'engram.db') });
  const tokens = new TokenCache(secret);
  return {
    url: server.url,
    secret,
    transport,
    store,
    governance,
    ingestion,
    retrieval,
    context,
    health: createClient(Health, transport),
    headers: (caller) =>
      tokens.headers({
        subject: caller.subject,
        tenantId: caller.tenant,
        orgIds: caller.orgs ?? [],
        roles: caller.roles ?? [],
      }),
    async stop() {
      await store.close();
      await server.shutdown();
    },
  };
}

/** The server's default maximum receive size (ENGRAM_MAX_MESSAGE_BYTES, 5 MiB). */
export const MAX_MESSAGE_BYTES = 5 * 1024 * 1024;

/** What one call ended with. */
export type Outcome =
  | { readonly ok: true; readonly response: unknown }
  | {
      readonly ok: false;
      readonly code: Code;
      readonly reason: string | undefined;
      readonly message: string;
    };

/**
 * Calls any RPC of the four services with a plain init object (or, for client streams, a list
 * of them); server streams are read to their end.
 */
export async function call(
  h: Harness,
  service: DescService,
  method: DescMethod,
  input: unknown,
  header: Record<string, string>,
  timeoutMs = 30_000,
): Promise<Outcome> {
  const messages = (Array.isArray(input) ? input : [input]).map((m) => create(method.input, m as never));
  // A request over the server's receive limit goes on a connection of its own: see
  // OVERSIZED_POISONS_CONNECTION (a second one on a shared connection breaks that connection).
  const oversized = messages.some((m) => toBinary(method.input, m).length > MAX_MESSAGE_BYTES);
  const transport = oversized
    ? createGrpcTransport({ baseUrl: h.url, idleConnectionTimeoutMs: 500 })
    : h.transport;
  const client = createClient(service, transport) as unknown as Record<
    string,
    (input: unknown, options: unknown) => unknown
  >;
  const fn = client[method.localName]!;
  const options = { headers: header, timeoutMs };
  try {
    switch (method.methodKind) {
      case 'unary':
        return { ok: true, response: await fn(messages[0], options) };
      case 'server_streaming': {
        const events: unknown[] = [];
        for await (const e of fn(messages[0], options) as AsyncIterable<unknown>) events.push(e);
        return { ok: true, response: events };
      }
      case 'client_streaming': {
        async function* requests() {
          for (const m of messages) yield m;
        }
        return { ok: true, response: await fn(requests(), options) };
      }
      default: {
        async function* requests() {
          for (const m of messages) yield m;
        }
        const events: unknown[] = [];
        for await (const e of fn(requests(), options) as AsyncIterable<unknown>) events.push(e);
        return { ok: true, response: events };
      }
    }
  } catch (error) {
    if (!(error instanceof ConnectError)) throw error;
    return { ok: false, code: error.code, reason: errorInfoOf(error)?.reason, message: error.rawMessage };
  }
}

/** Why an outcome breaks the contract of the RPC, or undefined when it is documented. */
export function contractViolation(id: string, outcome: Outcome): string | undefined {
  if (outcome.ok) return undefined;
  const { code, reason } = outcome;
  const what = `${Code[code]} ${reason ?? '(no ErrorInfo)'}: ${outcome.message.slice(0, 300)}`;
  if (code === Code.Internal) return `INTERNAL ${what}`;
  if (code === Code.Unknown) return `UNKNOWN ${what}`;
  if (reason === undefined) return `no ErrorInfo reason ${what}`;
  const documented = CONTRACTS.get(id)?.reasons;
  if (documented === undefined) return `no contract for ${id}`;
  if (!documented.has(reason)) return `undocumented reason ${what}`;
  const codes = REASON_CODES.get(reason);
  if (codes !== undefined && !codes.has(code)) return `reason sent with the wrong code ${what}`;
  return undefined;
}

export async function expectServing(h: Harness, sentinel: { name: string; text: string; caller: Caller }) {
  const { status } = await h.health.check({ service: '' });
  if (status !== HealthCheckResponse_ServingStatus.SERVING)
    throw new Error(`health is ${HealthCheckResponse_ServingStatus[status]}`);
  const { memory } = await h.governance.getMemory(
    { name: sentinel.name },
    { headers: await h.headers(sentinel.caller), timeoutMs: 10_000 },
  );
  if (memory?.text !== sentinel.text) throw new Error('the sentinel memory changed');
}

/** Rows of one tenant, per table (the source of truth, every table). */
export async function tenantRows(store: Store, tenant: string): Promise<Record<string, number>> {
  const tables = [
    'memories',
    'memory_revisions',
    'documents',
    'chunks',
    'sessions',
    'session_states',
    'messages',
    'mem_cells',
    'extraction_jobs',
    'outbox',
    'request_ids',
  ];
  const out: Record<string, number> = {};
  for (const table of tables) {
    const { rows } = await sql<{
      n: number | string;
    }>`select count(*) as n from ${sql.table(table)} where tenant_id = ${tenant}`.execute(store.db);
    out[table] = Number(rows[0]?.n ?? 0);
  }
  return out;
}

/** Fixtures of every resource kind, in tenant `hostile`. */
export interface Fixtures {
  readonly tenant: string;
  readonly alice: Caller;
  readonly bob: Caller;
  readonly admin: Caller;
  readonly platform: Caller;
  readonly service: Caller;
  readonly memFact: string;
  readonly memOrg: string;
  readonly revision: string;
  readonly document: string;
  readonly chunk: string;
  readonly session: string;
  readonly messages: string[];
  readonly memCell: string;
  readonly extractionJob: string;
  readonly forgetReceipt: string;
  readonly reindexJob: string;
  readonly sentinel: { name: string; text: string; caller: Caller };
  /** Every name above, and names found later, for name-like arbitraries. */
  readonly names: string[];
  /** Real page tokens, of other queries. */
  readonly pageTokens: string[];
}

export async function createFixtures(h: Harness): Promise<Fixtures> {
  const tenant = 'hostile';
  const alice: Caller = { tenant, subject: 'alice', orgs: ['org-1'] };
  const bob: Caller = { tenant, subject: 'bob', orgs: ['org-1', 'org-2'] };
  const admin: Caller = { tenant, subject: 'root', roles: ['admin'] };
  const platform: Caller = { tenant, subject: 'pat', roles: ['platform'] };
  const service: Caller = { tenant, subject: 'svc', roles: ['service'] };
  const as = async (c: Caller) => ({ headers: await h.headers(c) });

  const fact = await h.governance.createMemory(
    {
      memory: {
        type: MemoryType.FACT,
        namespace: 'notes',
        key: 'tea',
        value: { text: 'alice likes green tea' },
        text: 'alice likes green tea',
        scope: Scope.SELF,
        confidence: 0.9,
      },
    },
    await as(alice),
  );
  const org = await h.governance.createMemory(
    {
      memory: {
        type: MemoryType.EPISODE,
        text: 'the org-1 weekly meeting moved to Friday',
        scope: Scope.ORG,
        orgId: 'org-1',
        confidence: 0.9,
      },
    },
    await as(alice),
  );
  for (let i = 0; i < 3; i += 1)
    await h.governance.createMemory(
      { memory: { type: MemoryType.EPISODE, text: `alice episode ${i} about coffee`, confidence: 0.9 } },
      await as(alice),
    );
  const memFact = fact.memory!.name;
  const { revisions } = await h.governance.listMemoryRevisions({ parent: memFact }, await as(alice));
  const { document } = await h.ingestion.ingestDocument(
    {
      document: { mimeType: 'text/plain', displayName: 'alice notes' },
      content: new TextEncoder().encode('Green tea is good.\n\nCoffee is also good.'),
      waitForIndex: true,
    },
    await as(alice),
  );
  const { chunks } = await h.ingestion.listChunks({ parent: document!.name }, await as(alice));
  const { session } = await h.ingestion.createSession({ session: { timeZone: 'UTC' } }, await as(alice));
  const at = Date.now() - 60_000;
  const { messages } = await h.ingestion.appendMessages(
    {
      parent: session!.name,
      messages: [0, 1, 2, 3].map((i) => ({
        role: i % 2 === 0 ? MessageRole.USER : MessageRole.ASSISTANT,
        content: i % 2 === 0 ? 'I prefer green tea in the morning.' : 'Noted, green tea it is.',
        occurTime: timestampFromMs(at + i * 1_000),
      })),
    },
    await as(alice),
  );
  const { memCell } = await h.ingestion.flushSession({ name: session!.name }, await as(alice));
  const { extractionJob: job } = await h.governance.extractMemories(
    { memCell: memCell!.name, dryRun: true },
    await as(alice),
  );
  const { forgetReceipt: receipt } = await h.governance.forgetUser(
    { subject: 'nobody', reason: 'fixture' },
    await as(admin),
  );
  const { reindexJob } = await h.retrieval.reindex(
    { kinds: [], mode: ReindexMode.MISSING_ONLY, requestId: 'fixture-reindex' },
    await as(admin),
  );
  const sentinelCaller: Caller = { tenant: 'sentinel', subject: 'sam' };
  const sentinelText = 'the sentinel memory of sam';
  const sentinel = await h.governance.createMemory(
    { memory: { type: MemoryType.EPISODE, text: sentinelText, confidence: 0.9 } },
    await as(sentinelCaller),
  );
  const pageTokens: string[] = [];
  const page = async (p: Promise<{ nextPageToken: string }>) => {
    const t = (await p).nextPageToken;
    if (t !== '') pageTokens.push(t);
  };
  await page(h.governance.listMemories({ pageSize: 1 }, await as(alice)));
  await page(h.governance.listMemories({ pageSize: 1, types: [MemoryType.EPISODE] }, await as(alice)));
  await page(h.governance.listMemoryRevisions({ parent: memFact, pageSize: 1 }, await as(alice)));
  await page(h.ingestion.listMessages({ parent: session!.name, pageSize: 1 }, await as(alice)));
  const names = [
    memFact,
    org.memory!.name,
    revisions[0]!.name,
    document!.name,
    chunks[0]!.name,
    session!.name,
    `${session!.name}/state`,
    ...messages.map((m) => m.name),
    memCell!.name,
    job!.name,
    receipt!.name,
    reindexJob!.name,
    'policy',
  ];
  return {
    tenant,
    alice,
    bob,
    admin,
    platform,
    service,
    memFact,
    memOrg: org.memory!.name,
    revision: revisions[0]!.name,
    document: document!.name,
    chunk: chunks[0]!.name,
    session: session!.name,
    messages: messages.map((m) => m.name),
    memCell: memCell!.name,
    extractionJob: job!.name,
    forgetReceipt: receipt!.name,
    reindexJob: reindexJob!.name,
    sentinel: { name: sentinel.memory!.name, text: sentinelText, caller: sentinelCaller },
    names,
    pageTokens,
  };
}
