/**
 * Fault injection (issue 11). The four services run as separate processes (the production
 * topology) over a MariaDB server and a Qdrant of their own (see cluster.ts), so each can be
 * killed, paused or stopped without touching other suites. Faults:
 *
 * - kill -9 of each service in the middle of work, then a restart on the same port;
 * - MariaDB stopped with SIGTERM (a clean shutdown: connections refused) and restarted on the same
 *   datadir, and MariaDB frozen with SIGSTOP (a hang: connections accepted, nothing answers) and
 *   thawed with SIGCONT;
 * - Qdrant killed with SIGKILL and restarted on the same storage, and frozen with SIGSTOP.
 *
 * Only outcomes are asserted (every acknowledged write present, no duplicates, status codes, the
 * index converging to MySQL with drift 0), never timings, except a generous "the call ended" bound
 * (deadline + 5 s) for the deadline checks.
 */
import { create } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { ErrorReason } from '@engram/contracts/common';
import { ExtractionJobState } from '@engram/contracts/governance';
import {
  DocumentState,
  IngestPhase,
  MemCellStatus,
  MessageRole,
  StreamIngestDocumentRequestSchema,
  type StreamIngestDocumentRequest,
} from '@engram/contracts/ingestion';
import { openStore } from '@engram/store';
import {
  allMessages,
  clientsOf,
  codeName,
  codeOf,
  converged,
  headersOf,
  indexStatus,
  outcome,
  statusOf,
  type Clients,
} from './clients.js';
import { Cluster, eventually, sleep } from './cluster.js';

/** A failed attempt of a call that was retried. */
interface Failure {
  readonly code: Code;
  readonly message: string;
}

/** How a client's call in flight ends when the server process is killed under it. */
const IN_FLIGHT_CRASH = [Code.Unavailable, Code.Canceled, Code.Aborted];

let cluster: Cluster;
let clients: Clients;

beforeAll(async () => {
  cluster = await Cluster.start({
    // Small MemCells so a few messages make several of them; everything else at its defaults.
    ingestion: { ENGRAM_BOUNDARY_MESSAGE_CAP: '4', ENGRAM_EXTRACTION_MAX_ATTEMPTS: '20' },
    // A dead indexer's leased rows come back after this (production default 30 s).
    retrieval: { ENGRAM_INDEXER_LEASE_MS: '5000' },
  });
  clients = clientsOf(cluster);
}, 180_000);

afterEach(async () => {
  // A dependency fault must never take a service process down. Crashed processes were restarted
  // by the cluster's supervisor so the test could go on; here they fail the test.
  const crashes = Object.values(cluster.services).flatMap((s) => s.crashes.splice(0));
  const unexpected = crashes;
  await Promise.all(Object.values(cluster.services).map((s) => s.start()));
  expect(unexpected.map((c) => `${c.service} exited ${c.exit}:\n${c.log}`)).toEqual([]);
}, 120_000);

afterAll(async () => {
  await (cluster as Cluster | undefined)?.dispose();
}, 60_000);

/** Keeps calling `call` until it succeeds (retrying every failure), up to `timeoutMs`; records the failure codes. */
async function untilAcknowledged<T>(
  call: () => Promise<T>,
  failures: Failure[],
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      failures.push({ code: codeOf(error), message: ConnectError.from(error).message });
      if (Date.now() > deadline) throw error;
      await sleep(100);
    }
  }
}

/** Appends `count` single-message batches with request ids, retrying each until acknowledged. */
async function appendAll(
  headers: Record<string, string>,
  session: string,
  prefix: string,
  count: number,
  failures: Failure[],
  onAck: (i: number) => Promise<void> | void = () => undefined,
): Promise<string[]> {
  const acked: string[] = [];
  for (let i = 0; i < count; i++) {
    const content = `${prefix} message ${i}: I had green tea at ${i} o'clock.`;
    await untilAcknowledged(
      () =>
        clients.ingestion.appendMessages(
          {
            parent: session,
            requestId: `${prefix}-${i}`,
            messages: [{ role: i % 2 === 0 ? MessageRole.USER : MessageRole.ASSISTANT, content }],
          },
          { headers, timeoutMs: 5_000 },
        ),
      failures,
    );
    acked.push(content);
    await onAck(i);
  }
  return acked;
}

function expectOnlyUnavailable(failures: Failure[], allowed: Code[] = [Code.Unavailable]) {
  const unexpected = failures
    .filter((f) => !allowed.includes(f.code))
    .map((f) => `${codeName(f.code)}: ${f.message}`);
  expect(unexpected).toEqual([]);
}

async function expectEveryAckedOnce(headers: Record<string, string>, session: string, acked: string[]) {
  const stored = (await allMessages(clients, headers, session)).map((m) => m.content);
  for (const content of acked) expect(stored.filter((c) => c === content)).toHaveLength(1);
  expect(new Set(stored).size).toBe(stored.length);
  const sequences = (await allMessages(clients, headers, session)).map((m) => Number(m.sequence));
  expect(sequences).toEqual(sequences.map((_, i) => sequences[0]! + i));
}

describe('kill -9 of a service in the middle of work, then a restart', () => {
  it('ingestion, while appending messages and streaming a document: acknowledged writes survive once', async () => {
    const headers = await headersOf(cluster, 'faults-ingestion', 'alice');
    const admin = await headersOf(cluster, 'faults-ingestion', 'root', ['admin']);
    const { session } = await clients.ingestion.createSession(
      { session: { timeZone: 'UTC' } },
      { headers, timeoutMs: 10_000 },
    );
    const failures: Failure[] = [];
    // Appends with request ids; the process is killed after the 5th acknowledgement and started
    // again while the client keeps retrying.
    let restarted: Promise<void> | undefined;
    const acked = await appendAll(headers, session!.name, 'ing', 12, failures, (i) => {
      if (i === 4) {
        restarted = (async () => {
          await cluster.services.ingestion.kill();
          await sleep(500);
          await cluster.services.ingestion.start();
        })();
      }
    });
    await restarted;
    expect(failures.length).toBeGreaterThan(0);
    expectOnlyUnavailable(failures, IN_FLIGHT_CRASH);
    await expectEveryAckedOnce(headers, session!.name, acked);

    // A streamed document, interrupted by kill -9 while it is being written (or, if the server
    // is quicker than the kill, after it finished): sending the same content again completes it,
    // with one document and every chunk exactly once.
    const paragraphs = Array.from(
      { length: 200 },
      (_, i) => `Paragraph ${i}. The lighthouse keeper logged the tide, the wind and the ships at hour ${i}.`,
    );
    const content = new TextEncoder().encode(paragraphs.join('\n\n'));
    const requests = (): AsyncIterable<StreamIngestDocumentRequest> =>
      (async function* () {
        yield create(StreamIngestDocumentRequestSchema, {
          payload: {
            case: 'header',
            value: {
              document: { mimeType: 'text/plain', displayName: 'logbook' },
              chunking: { chunkSizeChars: 200, overlapChars: 0 },
            },
          },
        });
        for (let offset = 0; offset < content.length; offset += 16_384) {
          yield create(StreamIngestDocumentRequestSchema, {
            payload: { case: 'part', value: { data: content.subarray(offset, offset + 16_384) } },
          });
        }
      })();
    const phases: IngestPhase[] = [];
    const state = { killed: false };
    const first = await outcome(async (timeoutMs) => {
      for await (const response of clients.ingestion.streamIngestDocument(requests(), {
        headers,
        timeoutMs,
      })) {
        if (response.event.case === 'progress') {
          phases.push(response.event.value.phase);
          if (response.event.value.phase === IngestPhase.WRITING && !state.killed) {
            state.killed = true;
            await cluster.services.ingestion.kill();
          }
        }
      }
    }, 30_000);
    if (!state.killed) await cluster.services.ingestion.kill();
    // The call in flight when the process died ends with whatever the client's HTTP/2 stack makes
    // of the dead connection (a reset stream surfaces as CANCELED or ABORTED), never OK.
    if (!first.ok) expect(IN_FLIGHT_CRASH.map(codeName)).toContain(codeName(first.code));
    await cluster.services.ingestion.start();

    const again = await untilAcknowledged(async () => {
      let result;
      for await (const response of clients.ingestion.streamIngestDocument(requests(), {
        headers,
        timeoutMs: 60_000,
      })) {
        if (response.event.case === 'result') result = response.event.value;
      }
      return result;
    }, failures);
    const document = again?.document;
    expect(document?.state).toBe(DocumentState.READY);
    const { documents } = await clients.ingestion.listDocuments(
      { pageSize: 100 },
      { headers, timeoutMs: 10_000 },
    );
    expect(documents.map((d) => d.name)).toEqual([document!.name]);
    const ordinals: number[] = [];
    let pageToken = '';
    do {
      const page = await clients.ingestion.listChunks(
        { parent: document!.name, pageSize: 500, pageToken },
        { headers, timeoutMs: 10_000 },
      );
      ordinals.push(...page.chunks.map((c) => c.ordinal));
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
    expect(ordinals).toHaveLength(document!.chunkCount);
    expect(ordinals).toEqual(ordinals.map((_, i) => i));

    // The index converges to MySQL: every chunk and round once.
    await eventually('index drift 0 (ingestion)', () => converged(clients, admin), { timeoutMs: 90_000 });
  }, 180_000);

  it('governance, while extracting MemCells: the hand-offs resume, one memory per fact, no duplicates', async () => {
    const tenant = 'faults-governance';
    const admin = await headersOf(cluster, tenant, 'root', ['admin']);
    const users = ['g0', 'g1', 'g2', 'g3'];
    const cells: { headers: Record<string, string>; memCell: string }[] = [];
    for (const [i, user] of users.entries()) {
      const headers = await headersOf(cluster, tenant, user);
      const { session } = await clients.ingestion.createSession(
        { session: { timeZone: 'UTC' } },
        { headers, timeoutMs: 10_000 },
      );
      await clients.ingestion.appendMessages(
        {
          parent: session!.name,
          requestId: `gov-${user}`,
          messages: [
            {
              role: MessageRole.USER,
              content:
                'From now on please answer more concisely. My goal for the next 30 days is to solve 200 problems.',
              occurTime: timestampFromMs(Date.now() - 60_000),
            },
          ],
        },
        { headers, timeoutMs: 10_000 },
      );
      const { memCell } = await clients.ingestion.flushSession(
        { name: session!.name, requestId: `gov-flush-${user}` },
        { headers, timeoutMs: 10_000 },
      );
      cells.push({ headers, memCell: memCell!.name });
      // Kill governance while the first hand-offs are being extracted and the rest are queued.
      if (i === 1) await cluster.services.governance.kill();
    }
    await sleep(1_000);
    await cluster.services.governance.start();

    for (const { headers, memCell } of cells) {
      const cell = await eventually(
        `MemCell ${memCell} extracted`,
        async () => {
          const { memCell: c } = await clients.ingestion.getMemCell(
            { name: memCell },
            { headers, timeoutMs: 5_000 },
          );
          if (c?.status === MemCellStatus.EXTRACTED) return c;
          throw new Error(
            `MemCell ${MemCellStatus[c?.status ?? 0]} after ${c?.attempts} attempts: ${ErrorReason[c?.lastErrorReason ?? 0]} ${c?.lastErrorMessage}`,
          );
        },
        { timeoutMs: 60_000 },
      );
      const { extractionJobs } = await clients.governance.listExtractionJobs(
        { memCell },
        { headers, timeoutMs: 5_000 },
      );
      const succeeded = extractionJobs.filter((j) => j.state === ExtractionJobState.SUCCEEDED);
      const { memories } = await clients.governance.listMemories(
        { pageSize: 100 },
        { headers, timeoutMs: 5_000 },
      );
      const keys = memories.map((m) => `${m.namespace}/${m.key}`);
      // No duplicates, whatever happened.
      expect(new Set(keys).size).toBe(keys.length);
      expect(succeeded.length).toBeLessThanOrEqual(1);
      expect(cell.extractionJob).toMatch(/^extractionJobs\//);
      // Exactly one extraction of the MemCell succeeded.
      expect(succeeded).toHaveLength(1);
      expect(keys).toEqual(expect.arrayContaining(['user_preference/answer_style', 'goal/current_goal']));
    }
    await eventually('index drift 0 (governance)', () => converged(clients, admin), { timeoutMs: 60_000 });
  }, 180_000);

  it('retrieval, while indexing: after a restart the index converges to MySQL (drift 0)', async () => {
    const tenant = 'faults-retrieval';
    const headers = await headersOf(cluster, tenant, 'rita');
    const admin = await headersOf(cluster, tenant, 'root', ['admin']);
    const text = Array.from(
      { length: 160 },
      (_, i) =>
        `Section ${i}. The orchard's pear tree number ${i} was pruned, watered and mulched in spring.`,
    ).join('\n\n');
    await clients.ingestion.ingestDocument(
      {
        document: { mimeType: 'text/plain', displayName: 'orchard' },
        content: new TextEncoder().encode(text),
        chunking: { chunkSizeChars: 200, overlapChars: 0 },
        requestId: 'orchard',
      },
      { headers, timeoutMs: 30_000 },
    );
    // Kill retrieval once the indexer has written some but not all points.
    await eventually(
      'the indexer to be part-way',
      async () => {
        const status = await indexStatus(clients, admin);
        const chunk = status.kinds.find((k) => k.indexedPoints !== undefined && k.indexedPoints > 0n);
        return chunk === undefined && status.outboxPending > 0n ? undefined : status;
      },
      { timeoutMs: 30_000, everyMs: 50 },
    );
    await cluster.services.retrieval.kill();
    // The outbox rows the killed indexer had leased (not done, invisible until their lease ends).
    const store = openStore({ target: cluster.mariadb.url });
    try {
      const leased = await store.db
        .selectFrom('outbox')
        .select('id')
        .where('tenant_id', '=', tenant)
        .where('processed_at', 'is', null)
        .where('available_at', '>', Date.now())
        .execute();
      await cluster.services.retrieval.start();
      // Rows the killed indexer had leased come back when the lease ends (ENGRAM_INDEXER_LEASE_MS)
      // and are indexed then: the index converges with them.
      await eventually('index drift 0 (retrieval)', () => converged(clients, admin), { timeoutMs: 60_000 });
      const stillLeased = await store.db
        .selectFrom('outbox')
        .select('id')
        .where('id', 'in', leased.length > 0 ? leased.map((r) => r.id) : [-1])
        .where('processed_at', 'is', null)
        .execute();
      expect(stillLeased).toEqual([]);
    } finally {
      await store.close();
    }
    const { results } = await clients.retrieval.search(
      { query: 'pear tree pruned', topK: 3 },
      { headers, timeoutMs: 10_000 },
    );
    expect(results.length).toBeGreaterThan(0);
  }, 240_000);

  it('context, while building context: in-flight calls fail fast, and it serves again after a restart', async () => {
    const tenant = 'faults-context';
    const headers = await headersOf(cluster, tenant, 'carl');
    const { session } = await clients.ingestion.createSession(
      { session: { timeZone: 'UTC' } },
      { headers, timeoutMs: 10_000 },
    );
    const failures: Failure[] = [];
    const acked = await appendAll(headers, session!.name, 'ctx', 6, failures);
    const build = (timeoutMs: number) =>
      clients.context.buildContext(
        {
          session: session!.name,
          userMessage: 'What did I drink?',
          model: 'gpt-4o',
          budget: { totalTokens: 2_000 },
        },
        { headers, timeoutMs },
      );
    const inFlight = Array.from({ length: 4 }, () => outcome(build, 20_000));
    await sleep(150);
    await cluster.services.context.kill();
    for (const result of await Promise.all(inFlight)) {
      if (!result.ok) expect(IN_FLIGHT_CRASH.map(codeName)).toContain(codeName(result.code));
    }
    const down = await outcome(build, 2_000);
    expect(statusOf(down)).toBe('Unavailable(connection)');
    await cluster.services.context.start();
    const built = await untilAcknowledged(() => build(20_000), failures);
    expect(built.messages.length).toBeGreaterThan(0);
    await expectEveryAckedOnce(headers, session!.name, acked);
  }, 120_000);
});

describe('MariaDB outages under traffic (a dedicated mariadbd on its own port and datadir)', () => {
  it('stopped (SIGTERM, clean shutdown) and started again: UNAVAILABLE meanwhile, every acknowledged write present once', async () => {
    const tenant = 'faults-mysql-stop';
    const headers = await headersOf(cluster, tenant, 'mona');
    const admin = await headersOf(cluster, tenant, 'root', ['admin']);
    const { session } = await clients.ingestion.createSession(
      { session: { timeZone: 'UTC' } },
      { headers, timeoutMs: 10_000 },
    );
    const failures: Failure[] = [];
    const probes: { method: string; code: string; elapsedMs: number }[] = [];
    let outage: Promise<void> | undefined;
    const acked = await appendAll(headers, session!.name, 'mysql-stop', 16, failures, (i) => {
      if (i !== 4) return;
      outage = (async () => {
        await cluster.mariadb.stop();
        // Every service is asked something that needs the database while it is down.
        const calls: [string, (timeoutMs: number) => Promise<unknown>][] = [
          [
            'ingestion.GetSession',
            (t) => clients.ingestion.getSession({ name: session!.name }, { headers, timeoutMs: t }),
          ],
          ['governance.ListMemories', (t) => clients.governance.listMemories({}, { headers, timeoutMs: t })],
          [
            'retrieval.GetIndexStatus',
            (t) => clients.retrieval.getIndexStatus({}, { headers: admin, timeoutMs: t }),
          ],
          [
            'context.GetSessionState',
            (t) =>
              clients.context.getSessionState({ name: `${session!.name}/state` }, { headers, timeoutMs: t }),
          ],
        ];
        for (const [method, call] of calls) {
          const result = await outcome(call, 2_000);
          probes.push({ method, code: statusOf(result), elapsedMs: result.elapsedMs });
        }
        await sleep(1_000);
        await cluster.mariadb.start();
      })();
    });
    await outage;
    // Context checks the session with ingestion first, so it may name either dependency.
    expect(probes.map((p) => `${p.method}: ${p.code}`)).toEqual(
      probes.map(
        (p) =>
          `${p.method}: ${p.method.startsWith('context') && p.code === 'Unavailable(ingestion)' ? p.code : 'Unavailable(mysql)'}`,
      ),
    );
    for (const p of probes) expect(p.elapsedMs).toBeLessThan(2_000 + 5_000);
    expect(failures.length).toBeGreaterThan(0);
    expectOnlyUnavailable(failures, [Code.Unavailable]);
    await expectEveryAckedOnce(headers, session!.name, acked);
    await eventually('index drift 0 (mysql stop)', () => converged(clients, admin), { timeoutMs: 60_000 });
  }, 180_000);

  it('frozen (SIGSTOP) and thawed (SIGCONT): calls end by their 2 s deadline, and everything works after', async () => {
    const tenant = 'faults-mysql-hang';
    const headers = await headersOf(cluster, tenant, 'hana');
    const admin = await headersOf(cluster, tenant, 'root', ['admin']);
    const { session } = await clients.ingestion.createSession(
      { session: { timeZone: 'UTC' } },
      { headers, timeoutMs: 10_000 },
    );
    const failures: Failure[] = [];
    const before = await appendAll(headers, session!.name, 'hang-before', 3, failures);
    cluster.mariadb.pause();
    let results: { method: string; code: string; elapsedMs: number }[];
    try {
      const calls: [string, (timeoutMs: number) => Promise<unknown>][] = [
        [
          'ingestion.AppendMessages',
          (t) =>
            clients.ingestion.appendMessages(
              {
                parent: session!.name,
                requestId: 'hang-during',
                messages: [
                  { role: MessageRole.USER, content: 'hang-during: a message while the database hangs' },
                ],
              },
              { headers, timeoutMs: t },
            ),
        ],
        ['governance.ListMemories', (t) => clients.governance.listMemories({}, { headers, timeoutMs: t })],
        [
          'retrieval.GetIndexStatus',
          (t) => clients.retrieval.getIndexStatus({}, { headers: admin, timeoutMs: t }),
        ],
        [
          'context.BuildContext',
          (t) =>
            clients.context.buildContext(
              {
                session: session!.name,
                userMessage: 'hello?',
                model: 'gpt-4o',
                budget: { totalTokens: 1_000 },
              },
              { headers, timeoutMs: t },
            ),
        ],
      ];
      results = await Promise.all(
        calls.map(async ([method, call]) => {
          const r = await outcome(call, 2_000);
          return { method, code: statusOf(r), elapsedMs: r.elapsedMs };
        }),
      );
    } finally {
      cluster.mariadb.resume();
    }
    for (const r of results) {
      expect([`${r.method}: DeadlineExceeded`, `${r.method}: Unavailable(mysql)`]).toContain(
        `${r.method}: ${r.code}`,
      );
      expect(r.elapsedMs).toBeLessThan(2_000 + 5_000);
    }
    // After the thaw: the write whose acknowledgement was lost is retried with its request id.
    const during = await untilAcknowledged(
      () =>
        clients.ingestion.appendMessages(
          {
            parent: session!.name,
            requestId: 'hang-during',
            messages: [
              { role: MessageRole.USER, content: 'hang-during: a message while the database hangs' },
            ],
          },
          { headers, timeoutMs: 5_000 },
        ),
      failures,
    );
    expect(during.messages).toHaveLength(1);
    const after = await appendAll(headers, session!.name, 'hang-after', 3, failures);
    expectOnlyUnavailable(failures, [Code.Unavailable, Code.DeadlineExceeded]);
    await expectEveryAckedOnce(headers, session!.name, [
      ...before,
      'hang-during: a message while the database hangs',
      ...after,
    ]);
    await eventually('index drift 0 (mysql hang)', () => converged(clients, admin), { timeoutMs: 60_000 });
  }, 120_000);
});

describe('Qdrant outages under traffic (a dedicated Qdrant on its own ports and storage)', () => {
  const ingest = (headers: Record<string, string>, name: string, timeoutMs: number, waitForIndex = false) =>
    clients.ingestion.ingestDocument(
      {
        document: { mimeType: 'text/plain', displayName: name },
        content: new TextEncoder().encode(
          `${name}: the harbour master counted ${name.length} boats.\n\nThe ${name} ferry leaves at dawn.`,
        ),
        requestId: name,
        waitForIndex,
      },
      { headers, timeoutMs },
    );

  it('killed (SIGKILL) and restarted: Search is UNAVAILABLE meanwhile, writes are acknowledged, the indexer catches up', async () => {
    const tenant = 'faults-qdrant-kill';
    const headers = await headersOf(cluster, tenant, 'quinn');
    const admin = await headersOf(cluster, tenant, 'root', ['admin']);
    await ingest(headers, 'before-outage', 30_000, true);
    await cluster.qdrant.kill();
    const search = await outcome(
      (t) => clients.retrieval.search({ query: 'harbour ferry', topK: 5 }, { headers, timeoutMs: t }),
      5_000,
    );
    expect(statusOf(search)).toBe('Unavailable(qdrant)');
    // Writes need only MySQL: acknowledged during the outage.
    const failures: Failure[] = [];
    for (const name of ['during-outage-1', 'during-outage-2']) {
      await untilAcknowledged(() => ingest(headers, name, 10_000), failures, 20_000);
    }
    const { session } = await clients.ingestion.createSession(
      { session: { timeZone: 'UTC' } },
      { headers, timeoutMs: 10_000 },
    );
    const acked = await appendAll(headers, session!.name, 'qdrant-down', 4, failures);
    expectOnlyUnavailable(failures);
    expect(failures).toEqual([]);
    // GetIndexStatus still answers, reporting the index unreachable.
    const status = await indexStatus(clients, admin);
    expect(status.indexReachable).toBe(false);
    await sleep(2_000);
    await cluster.qdrant.start();
    await ingest(headers, 'after-outage', 30_000);
    await eventually('index drift 0 (qdrant kill)', () => converged(clients, admin), { timeoutMs: 90_000 });
    const { results } = await clients.retrieval.search(
      { query: 'harbour master boats ferry', topK: 10 },
      { headers, timeoutMs: 10_000 },
    );
    expect(results.length).toBeGreaterThan(0);
    await expectEveryAckedOnce(headers, session!.name, acked);
  }, 180_000);

  it('frozen (SIGSTOP): Search and a write waiting for the index end by their 2 s deadline; the index converges after SIGCONT', async () => {
    const tenant = 'faults-qdrant-hang';
    const headers = await headersOf(cluster, tenant, 'quentin');
    const admin = await headersOf(cluster, tenant, 'root', ['admin']);
    await ingest(headers, 'before-freeze', 30_000, true);
    cluster.qdrant.pause();
    let results: { method: string; code: string; elapsedMs: number; ok?: { indexComplete: boolean } }[];
    try {
      results = await Promise.all(
        (
          [
            [
              'retrieval.Search',
              (t: number) =>
                clients.retrieval.search({ query: 'harbour', topK: 5 }, { headers, timeoutMs: t }),
            ],
            [
              'ingestion.IngestDocument(wait_for_index)',
              (t: number) => ingest(headers, 'during-freeze', t, true),
            ],
          ] as const
        ).map(async ([method, call]) => {
          const r = await outcome<unknown>(call, 2_000);
          return {
            method,
            code: statusOf(r),
            elapsedMs: r.elapsedMs,
            ok: r.ok && method.startsWith('ingestion') ? (r.value as { indexComplete: boolean }) : undefined,
          };
        }),
      );
    } finally {
      cluster.qdrant.resume();
    }
    for (const r of results) {
      // IngestDocument with wait_for_index stops waiting shortly before the deadline and answers
      // normally with index_complete false (ingestion_service.proto): OK is allowed for it only.
      const allowed = [
        'DeadlineExceeded',
        'Unavailable(qdrant)',
        ...(r.method.startsWith('ingestion') ? ['OK'] : []),
      ];
      expect(allowed.map((c) => `${r.method}: ${c}`)).toContain(`${r.method}: ${r.code}`);
      if (r.ok !== undefined) expect(r.ok.indexComplete).toBe(false);
      expect(r.elapsedMs).toBeLessThan(2_000 + 5_000);
    }
    await eventually('index drift 0 (qdrant hang)', () => converged(clients, admin), { timeoutMs: 60_000 });
  }, 120_000);
});
