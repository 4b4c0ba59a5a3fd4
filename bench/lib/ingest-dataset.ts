/**
 * Ingests a generic retrieval dataset (bench/retrieval/README.md) into a real all-in-one server, for
 * the benchmarks that need stored conversations (bench:retrieval, bench:context).
 *
 * `startBenchServer` starts the all-in-one server on embedded defaults in a temporary data directory
 * (log level warn) and mints tokens (tenant `bench`, one subject per user). `ingestDataset` then
 * appends every conversation as its user: one Engram session per dataset session; turns go through
 * `AppendMessages` in batches of at most 100 with `occur_time` = the session's `started_at` + i × 30
 * s, then `FlushSession` (so MemCells close and extraction runs). It waits until every MemCell is
 * EXTRACTED or FAILED and the index outbox and the dense stage are drained (`GetIndexStatus` as an
 * admin of tenant `bench`), and returns the message name → turn id map, the sessions with their messages in order,
 * and the ingestion timings.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { createClient, type Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { createAllInOneServer, loadConfig } from '@engram/all-in-one';
import { ItemKind } from '@engram/contracts/common';
import { IngestionService, MemCellStatus, MessageRole } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { mintToken, type Role } from '@engram/runtime';
import type { Conversation } from '../retrieval/dataset.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Call options carrying a bearer token. */
export interface AuthOptions {
  headers: { authorization: string };
}

/** A running all-in-one server for a benchmark, with a token minter. */
export interface BenchServer {
  /** The server's base URL. */
  readonly url: string;
  /** An HTTP/2 gRPC transport to the server. */
  readonly transport: Transport;
  /** Call options for `subject` in tenant `bench` with `roles` (tokens cached, renewed every 30 min). */
  as(subject: string, roles?: Role[]): Promise<AuthOptions>;
  /** Stops the server and deletes its data directory. */
  close(): Promise<void>;
}

/**
 * Starts the all-in-one server on embedded defaults in a fresh temporary directory `<prefix>XXXXXX`,
 * with `env` added to its configuration (e.g. a reranker).
 */
export async function startBenchServer(
  prefix = 'engram-bench-',
  env: Readonly<Record<string, string>> = {},
): Promise<BenchServer> {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  const secret = randomBytes(32).toString('hex');
  const key = { algorithm: 'HS256' as const, secret: new TextEncoder().encode(secret) };
  let server;
  try {
    ({ server } = await createAllInOneServer(
      loadConfig({
        ENGRAM_PORT: '0',
        ENGRAM_JWT_SECRET: secret,
        ENGRAM_DATA_DIR: dataDir,
        ENGRAM_LOG_LEVEL: 'warn',
        ...env,
      }),
      { handleSignals: false },
    ));
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const tokens = new Map<string, { token: string; at: number }>();
  return {
    url: server.url,
    transport: createGrpcTransport({ baseUrl: server.url }),
    async as(subject: string, roles: Role[] = []) {
      const cacheKey = `${subject}|${roles.join(',')}`;
      let entry = tokens.get(cacheKey);
      if (entry === undefined || Date.now() - entry.at > 30 * 60_000) {
        entry = {
          token: await mintToken({ subject, tenantId: 'bench', roles }, key, { expiresIn: '2h' }),
          at: Date.now(),
        };
        tokens.set(cacheKey, entry);
      }
      return { headers: { authorization: `Bearer ${entry.token}` } };
    },
    async close() {
      try {
        await server.shutdown();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}

/** One stored message, in session order. */
export interface StoredMessage {
  /** `sessions/{session}/messages/{message}`. */
  readonly name: string;
  /** The dataset turn id. */
  readonly turnId: string;
  readonly role: 'user' | 'assistant';
}

/** One Engram session created for a dataset session. */
export interface IngestedSession {
  readonly conversation: string;
  readonly user: string;
  /** The dataset session id. */
  readonly datasetSession: string;
  /** `sessions/{session}`. */
  readonly name: string;
  /** Its messages in append order. */
  readonly messages: readonly StoredMessage[];
}

export interface IngestionResult {
  /** Message name → turn id (message names are unique across sessions). */
  readonly turnOfMessage: Map<string, string>;
  /** Every session created, in ingestion order. */
  readonly sessions: readonly IngestedSession[];
  /** Conversation id → one day after the start of its last session (ms since the epoch). */
  readonly referenceTime: Map<string, number>;
  /** Whether every MemCell finished and the outbox drained before the timeout. */
  readonly settled: boolean;
  readonly appendMs: number;
  /** From the first append until settled (or the timeout). */
  readonly totalMs: number;
  /** MemCell count per status at the end. */
  readonly memCells: Record<string, number>;
  /** Per item kind: source rows and indexed points at the end. */
  readonly index: Record<string, { sourceRows: number; indexedPoints: number }>;
}

/**
 * Appends `conversations` (each as its user), flushes every session, and waits for extraction and
 * indexing (at most `waitTimeoutMs`). Progress goes to stdout.
 */
export async function ingestDataset(
  bench: BenchServer,
  conversations: readonly Conversation[],
  { waitTimeoutMs }: { waitTimeoutMs: number },
): Promise<IngestionResult> {
  const ingestion = createClient(IngestionService, bench.transport);
  const retrieval = createClient(RetrievalService, bench.transport);
  const turnOfMessage = new Map<string, string>();
  const sessions: IngestedSession[] = [];
  const referenceTime = new Map<string, number>();

  // ---- Ingestion ----
  const ingestStart = performance.now();
  for (const conversation of conversations) {
    const auth = await bench.as(conversation.user);
    for (const dsSession of conversation.sessions) {
      const { session } = await ingestion.createSession(
        { session: { displayName: `${conversation.id} ${dsSession.id}`, timeZone: 'UTC' } },
        auth,
      );
      if (session === undefined) throw new Error('CreateSession returned no session');
      const messages: StoredMessage[] = [];
      sessions.push({
        conversation: conversation.id,
        user: conversation.user,
        datasetSession: dsSession.id,
        name: session.name,
        messages,
      });
      const start = Date.parse(dsSession.started_at);
      for (let from = 0; from < dsSession.turns.length; from += 100) {
        const batch = dsSession.turns.slice(from, from + 100);
        const response = await ingestion.appendMessages(
          {
            parent: session.name,
            messages: batch.map((turn, j) => {
              const participant = (turn.speaker ?? '').replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
              return {
                role: turn.role === 'user' ? MessageRole.USER : MessageRole.ASSISTANT,
                content: turn.text,
                occurTime: timestampFromMs(start + (from + j) * 30_000),
                ...(/[A-Za-z0-9]/.test(participant) ? { participantName: participant } : {}),
              };
            }),
          },
          auth,
        );
        if (response.messages.length !== batch.length) {
          throw new Error(`appended ${batch.length} messages, got ${response.messages.length} back`);
        }
        response.messages.forEach((message, j) => {
          const turn = batch[j]!;
          turnOfMessage.set(message.name, turn.id);
          messages.push({ name: message.name, turnId: turn.id, role: turn.role });
        });
      }
      await ingestion.flushSession({ name: session.name, reason: 'benchmark session end' }, auth);
    }
    const last = conversation.sessions.at(-1)!;
    referenceTime.set(conversation.id, Date.parse(last.started_at) + 86_400_000);
    process.stdout.write(`  ingested ${conversation.id} (${turnOfMessage.size} messages so far)\n`);
  }
  const appendMs = performance.now() - ingestStart;

  // ---- Wait for extraction and indexing ----
  const admin = await bench.as('bench-admin', ['admin']);
  const deadline = Date.now() + waitTimeoutMs;
  let cellStatus: Record<string, number> = {};
  let settled = false;
  let drainedTwice = 0;
  let lastReport = 0;
  while (Date.now() < deadline) {
    cellStatus = {};
    for (const { user, name } of sessions) {
      let pageToken = '';
      do {
        const page = await ingestion.listMemCells(
          { parent: name, pageSize: 500, pageToken },
          await bench.as(user),
        );
        for (const cell of page.memCells) {
          const status = MemCellStatus[cell.status];
          cellStatus[status] = (cellStatus[status] ?? 0) + 1;
        }
        pageToken = page.nextPageToken;
      } while (pageToken !== '');
    }
    const pendingCells = Object.entries(cellStatus)
      .filter(([status]) => status !== 'EXTRACTED' && status !== 'FAILED')
      .reduce((a, [, n]) => a + n, 0);
    const { indexStatus } = await retrieval.getIndexStatus({}, admin);
    // Lexical-first indexing (decision 0032): the outbox drains first, dense vectors follow.
    const densePending = (indexStatus?.kinds ?? []).reduce(
      (a, k) => a + Number(k.densePendingPoints ?? 0n),
      0,
    );
    const backlog =
      Number(indexStatus?.outboxPending ?? 0n) + Number(indexStatus?.outboxRetrying ?? 0n) + densePending;
    if (Date.now() - lastReport > 15_000) {
      lastReport = Date.now();
      const kinds = (indexStatus?.kinds ?? [])
        .map((k) => `${ItemKind[k.kind]} ${k.sourceRows}/${k.indexedPoints ?? '?'}`)
        .join(', ');
      process.stdout.write(
        `  waiting: cells ${JSON.stringify(cellStatus)}, outbox + dense pending ${backlog}, ${kinds} (${Math.round(
          (performance.now() - ingestStart) / 1000,
        )} s)\n`,
      );
    }
    drainedTwice = pendingCells === 0 && backlog === 0 ? drainedTwice + 1 : 0;
    if (drainedTwice >= 2) {
      settled = true;
      break;
    }
    await sleep(2000);
  }
  const totalMs = performance.now() - ingestStart;
  const { indexStatus } = await retrieval.getIndexStatus({}, admin);
  const index = Object.fromEntries(
    (indexStatus?.kinds ?? []).map((k) => [
      ItemKind[k.kind],
      { sourceRows: Number(k.sourceRows), indexedPoints: Number(k.indexedPoints ?? -1n) },
    ]),
  );
  process.stdout.write(
    `  ingestion ${settled ? 'settled' : 'NOT settled (timeout)'} in ${Math.round(totalMs / 1000)} s (appends ${Math.round(
      appendMs / 1000,
    )} s); cells ${JSON.stringify(cellStatus)}; index ${JSON.stringify(index)}\n`,
  );
  return { turnOfMessage, sessions, referenceTime, settled, appendMs, totalMs, memCells: cellStatus, index };
}
