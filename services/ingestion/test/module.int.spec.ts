/**
 * The ingestion module behind the runtime's in-process transport (the same authentication and
 * error boundary as the network) over a real database, and the extraction hand-off against a
 * scripted governance.
 */
import { timestampNow } from '@bufbuild/protobuf/wkt';
import { Code, createClient, createRouterTransport, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ExtractionJobState, GovernanceService } from '@engram/contracts/governance';
import { IngestionService, MessageRole } from '@engram/contracts/ingestion';
import { engramTracer, mintToken, metricsRegistry, scopedMetrics, type ModuleContext } from '@engram/runtime';
import {
  ForgetReceiptRepository,
  SessionRepository,
  inTransaction,
  newId,
  openStore,
  type Store,
} from '@engram/store';
import { fakeAwsAccessKeyId, fakeOpenAiProjectKey } from '@engram/testing';
import { failure, moduleTestbed, reasonOf } from '../../../libs/runtime/test/module-testbed.js';
import { dialects } from '../../../libs/store/test/harness.js';
import { DEFAULT_BOUNDARY_RULES } from '../src/domain/boundaries.js';
import { ExtractionHandOff } from '../src/handoff.js';
import { ingestionModule } from '../src/module.js';
import type { IngestionResources } from '../src/resources.js';

const { secret, serviceSecret, logger, credentials, mount } = moduleTestbed('engram-ingestion');

/** What a Kysely `TableNode` names. */
type TableNodeShape = { readonly table: { readonly identifier: { readonly name: string } } };

/** `store` with a count of its reads of the session row (SELECTs from `sessions`, subqueries aside). */
function sessionReads(store: Store): { store: Store; count: () => number; reset: () => void } {
  let reads = 0;
  const plugin: Parameters<Store['db']['withPlugin']>[0] = {
    transformQuery({ node }) {
      const from = node.kind === 'SelectQueryNode' ? node.from?.froms[0] : undefined;
      if (
        from?.kind === 'TableNode' &&
        (from as unknown as TableNodeShape).table.identifier.name === 'sessions'
      ) {
        reads += 1;
      }
      return node;
    },
    transformResult: ({ result }) => Promise.resolve(result),
  };
  return {
    store: { ...store, db: store.db.withPlugin(plugin), close: () => store.close() },
    count: () => reads,
    reset: () => {
      reads = 0;
    },
  };
}

/** The module's resources over `store`, with the rule caps of the tests. */
function resources(store: Store): IngestionResources {
  return {
    store,
    judge: { reason: 'TOPIC_SHIFT', judge: () => Promise.resolve({ splits: [] }) },
    settings: {
      maxDocumentBytes: 4 << 20,
      chunkSize: 1000,
      overlap: 100,
      // Tenant `plain` has redaction turned off (its policy's `redactSecrets: false`).
      redactSecrets: (tenantId) => tenantId !== 'plain',
      boundaries: { ...DEFAULT_BOUNDARY_RULES, messageCap: 3 },
      maxExtractionAttempts: 5,
      admission: {
        documents: { maxConcurrent: 0, ratePerMinute: 0 },
        appends: { maxConcurrent: 0, ratePerMinute: 0 },
      },
    },
    close: () => store.close(),
  };
}

/** The module mounted behind the in-process transport; its workers stay stopped (nothing runs behind a test). */
async function mounted(store: Store): Promise<Client<typeof IngestionService>> {
  const context: ModuleContext = {
    logger,
    credentials,
    metrics: scopedMetrics(metricsRegistry()),
    transport: () => createRouterTransport(() => undefined),
  };
  const module = ingestionModule(resources(store), context);
  for (const worker of module.workers) await worker.stop();
  const transport = await mount([module]);
  return createClient(IngestionService, transport);
}

const as = async (subject: string, tenantId = 't1') => ({
  headers: {
    authorization: `Bearer ${await mintToken({ subject, tenantId }, { algorithm: 'HS256', secret })}`,
  },
});

const user = (content: string) => ({ role: MessageRole.USER, content });

describe.each(dialects)('the ingestion module on $name', (dialect) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let counted: ReturnType<typeof sessionReads>;
  let client: Client<typeof IngestionService>;

  beforeAll(async () => {
    ({ store, dispose } = await dialect.open());
    counted = sessionReads(store);
    client = await mounted(counted.store);
  });
  afterAll(async () => {
    await dispose();
  });

  it('EraseSubject erases only under a PENDING forget receipt for the tenant and subject (finding 5)', async () => {
    const service = {
      headers: {
        authorization: `Bearer ${await mintToken(
          { subject: 'engram-governance', tenantId: 't1', roles: ['service'] },
          { algorithm: 'HS256', secret: serviceSecret },
        )}`,
      },
    };
    const { session } = await client.createSession({}, await as('erin'));
    const receipts = new ForgetReceiptRepository(store);
    const receipt = (subject: string) =>
      receipts.create(store.db, {
        tenantId: 't1',
        subject,
        requestedBy: subject,
        reason: '',
        requestId: `forget-${subject}-${session?.name.slice(-8) ?? ''}`,
      });
    const forFrank = await receipt('frank');
    const done = await receipt('erin');
    const erase = (forgetReceipt: string, requestId: string) =>
      client.eraseSubject({ subject: 'erin', forgetReceipt, cutoffTime: timestampNow(), requestId }, service);
    await receipts.update(done, { state: 'COMPLETED', step: 'DONE' });
    for (const id of [newId(), forFrank.id, done.id]) {
      const refused = await failure(erase(`forgetReceipts/${id}`, `erase-${id.slice(-8)}`));
      expect([refused.code, reasonOf(refused)]).toEqual([
        Code.FailedPrecondition,
        'FORGET_RECEIPT_NOT_PENDING',
      ]);
    }
    // Nothing was erased.
    await expect(client.getSession({ name: session?.name ?? '' }, await as('erin'))).resolves.toBeDefined();
    const live = await receipt('erin');
    const erased = await erase(`forgetReceipts/${live.id}`, `erase-${live.id.slice(-8)}`);
    expect(erased.sessions).toBe(1n);
  });

  it('answers NOT_FOUND naming the message or MemCell when the session is another owner’s', async () => {
    const { session } = await client.createSession({}, await as('alice'));
    const { messages } = await client.appendMessages(
      { parent: session?.name ?? '', messages: [user('a'), user('b'), user('c')] },
      await as('alice'),
    );
    const { memCells } = await client.listMemCells({ parent: session?.name ?? '' }, await as('alice'));
    const names = [messages[0]?.name ?? '', memCells[0]?.name ?? ''];
    expect(names.every((n) => n !== '')).toBe(true);
    const bob = await as('bob');
    const [message, cell] = await Promise.all([
      failure(client.getMessage({ name: names[0] }, bob)),
      failure(client.getMemCell({ name: names[1] }, bob)),
    ]);
    expect([message.code, reasonOf(message), message.rawMessage]).toEqual([
      Code.NotFound,
      'RESOURCE_NOT_FOUND',
      `${names[0]} was not found`,
    ]);
    expect([cell.code, reasonOf(cell), cell.rawMessage]).toEqual([
      Code.NotFound,
      'RESOURCE_NOT_FOUND',
      `${names[1]} was not found`,
    ]);
  });

  it('AppendMessages reads the session row once in its transaction and once after it, for the etag and counters', async () => {
    const alice = await as('alice');
    const { session } = await client.createSession({}, alice);
    counted.reset();
    const appended = await client.appendMessages(
      { parent: session?.name ?? '', messages: [user('hello')], requestId: 'append-once' },
      alice,
    );
    // One read by the handler, one by the repository's compare-and-set, one for the response.
    expect(counted.count()).toBe(3);
    expect(appended.session?.lastSequence).toBe(1n);
    expect(appended.session?.openMessageCount).toBe(1n);
    expect(appended.messages.map((m) => [m.sequence, m.content, m.memCell])).toEqual([[1n, 'hello', '']]);
  });

  it('AppendMessages answers the messages with the MemCells its rules closed them into, and a replay the same', async () => {
    const alice = await as('alice');
    const { session } = await client.createSession({}, alice);
    const request = {
      parent: session?.name ?? '',
      messages: [user('one'), user('two'), user('three'), user('four')],
      requestId: 'append-cells',
    };
    const first = await client.appendMessages(request, alice);
    expect(first.closedMemCells.map((c) => [c.firstSequence, c.lastSequence])).toEqual([[1n, 3n]]);
    const cell = first.closedMemCells[0]?.name;
    expect(first.messages.map((m) => m.memCell)).toEqual([cell, cell, cell, '']);
    const stored = await Promise.all(first.messages.map((m) => client.getMessage({ name: m.name }, alice)));
    expect(stored.map((s) => s.message?.memCell)).toEqual(first.messages.map((m) => m.memCell));
    expect(first.session?.etag).toBe(
      (await client.getSession({ name: request.parent }, alice)).session?.etag,
    );

    const replayed = await client.appendMessages(request, alice);
    expect(replayed.messages.map((m) => [m.name, m.memCell])).toEqual(
      first.messages.map((m) => [m.name, m.memCell]),
    );
    expect(replayed.closedMemCells.map((c) => c.name)).toEqual([cell]);
  });

  describe('secrets in the fields stored beside the content', () => {
    const openAi = fakeOpenAiProjectKey(11);
    const aws = fakeAwsAccessKeyId(12);
    const urlWithPassword = 'https://deploy:Hunter2-Blue-Sky@git.example.com/team/handbook.md';
    const planted = [openAi, aws, 'Hunter2-Blue-Sky', 'Tr0ub4dor&3'];

    /** Every planted secret is absent from `values`. */
    const expectClean = (values: readonly string[]) => {
      for (const value of values) for (const p of planted) expect(value).not.toContain(p);
    };

    it('CreateSession and UpdateSession store and answer the display name and metadata redacted', async () => {
      const alice = await as('alice');
      const { session } = await client.createSession(
        {
          session: {
            displayName: `Rotate ${openAi} today`,
            metadata: { password: 'Tr0ub4dor&3', note: `aws ${aws}`, team: 'billing' },
          },
        },
        alice,
      );
      const name = session?.name ?? '';
      expect(session?.displayName).toBe('Rotate [redacted:api_key] today');
      expect(session?.metadata).toEqual({
        password: '[redacted:password]',
        note: 'aws [redacted:api_key]',
        team: 'billing',
      });
      const { session: updated } = await client.updateSession(
        {
          session: { name, displayName: `Key ${aws} moved`, metadata: { repo: urlWithPassword } },
          updateMask: { paths: ['display_name', 'metadata'] },
        },
        alice,
      );
      expect([updated?.displayName, updated?.metadata]).toEqual([
        'Key [redacted:api_key] moved',
        { repo: 'https://deploy:[redacted:password]@git.example.com/team/handbook.md' },
      ]);
      const read = await client.getSession({ name }, alice);
      const listed = await client.listSessions({}, alice);
      const row = await store.db
        .selectFrom('sessions')
        .select(['display_name', 'metadata_json'])
        .where('id', '=', name.slice('sessions/'.length))
        .executeTakeFirstOrThrow();
      expectClean([
        row.display_name,
        row.metadata_json,
        JSON.stringify(read.session?.metadata),
        read.session?.displayName ?? '',
        ...listed.sessions.flatMap((s) => [s.displayName, JSON.stringify(s.metadata)]),
      ]);
      expect(row.display_name).toBe('Key [redacted:api_key] moved');
    });

    it('IngestDocument stores the display name, metadata and source_uri redacted, and never a URL credential', async () => {
      const ingest = (tenantId: string, displayName: string) =>
        as('alice', tenantId).then((call) =>
          client.ingestDocument(
            {
              document: {
                displayName,
                mimeType: 'text/plain',
                sourceUri: urlWithPassword,
                metadata: { api_key: openAi, owner: 'platform team' },
              },
              content: new TextEncoder().encode(`The handbook, owned by the platform team (${tenantId}).`),
            },
            call,
          ),
        );
      const { document } = await ingest('t1', `Handbook (AWS ${aws})`);
      expect([document?.displayName, document?.sourceUri, document?.metadata]).toEqual([
        'Handbook (AWS [redacted:api_key])',
        'https://git.example.com/team/handbook.md',
        { api_key: '[redacted:api_key]', owner: 'platform team' },
      ]);
      const alice = await as('alice');
      const read = await client.getDocument({ name: document?.name ?? '' }, alice);
      const listed = await client.listDocuments({ sourceUri: urlWithPassword }, alice);
      expect(listed.documents.map((d) => d.name)).toEqual([document?.name]);
      const row = await store.db
        .selectFrom('documents')
        .select(['display_name', 'source_uri', 'metadata_json'])
        .where('id', '=', (document?.name ?? '').slice('documents/'.length))
        .executeTakeFirstOrThrow();
      expectClean([
        row.display_name,
        row.source_uri,
        row.metadata_json,
        read.document?.displayName ?? '',
        read.document?.sourceUri ?? '',
        JSON.stringify(read.document?.metadata),
      ]);

      // Redaction off for the tenant: the text fields are kept, a URL credential still is not.
      const plain = await ingest('plain', `Handbook (AWS ${aws})`);
      expect([plain.document?.displayName, plain.document?.sourceUri]).toEqual([
        `Handbook (AWS ${aws})`,
        'https://git.example.com/team/handbook.md',
      ]);
    });

    it('a document without a display name is named from its source_uri without the credentials', async () => {
      const { document } = await client.ingestDocument(
        {
          document: { mimeType: 'text/plain', sourceUri: 'https://ops:Hunter2-Blue-Sky@wiki.example.com' },
          content: new TextEncoder().encode('Runbook.'),
        },
        await as('alice'),
      );
      expect(document?.displayName).toBe('wiki.example.com');
    });
  });
});

describe('GetMessage and GetMemCell during a database outage', () => {
  let store: Store;
  let client: Client<typeof IngestionService>;

  beforeAll(async () => {
    // Nothing listens on port 1: every query fails to connect.
    store = openStore({ target: 'mysql://engram:engram@127.0.0.1:1/engram' });
    client = await mounted(store);
  });
  afterAll(async () => {
    await store.close();
  });

  it('answer UNAVAILABLE, not NOT_FOUND', async () => {
    const session = 'sessions/01JD7Z5Q2G8V6K3M9T1R4X0B2C';
    const alice = await as('alice');
    const [message, cell] = await Promise.all([
      failure(client.getMessage({ name: `${session}/messages/01JD7Z5Q2G8V6K3M9T1R4X0B2D` }, alice)),
      failure(client.getMemCell({ name: `${session}/memCells/01JD7Z5Q2G8V6K3M9T1R4X0B2E` }, alice)),
    ]);
    expect([message.code, reasonOf(message)]).toEqual([Code.Unavailable, 'DEPENDENCY_UNAVAILABLE']);
    expect([cell.code, reasonOf(cell)]).toEqual([Code.Unavailable, 'DEPENDENCY_UNAVAILABLE']);
  });
});

describe.each(dialects)('the extraction hand-off on $name', (dialect) => {
  let store: Store;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    ({ store, dispose } = await dialect.open());
  });
  afterAll(async () => {
    await dispose();
  });

  it('calls governance with the service token, the attempt’s request id and the active trace', async () => {
    const sessions = new SessionRepository(store);
    const cell = await inTransaction(store, async (trx) => {
      const session = await sessions.createSession(trx, { tenantId: 'h1', ownerId: 'alice' });
      await sessions.appendMessages(trx, 'h1', session.id, [{ role: 'USER', content: 'hello' }]);
      return sessions.closeMemCell(trx, 'h1', session.id, { throughSequence: 1, reason: 'FLUSH' });
    });
    const calls: { requestId: string; headers: Headers }[] = [];
    const governance = createRouterTransport(({ service }) => {
      service(GovernanceService, {
        extractMemories(request, ctx) {
          calls.push({ requestId: request.requestId, headers: ctx.requestHeader });
          return {
            extractionJob: {
              name: 'extractionJobs/01JD7Z5Q2G8V6K3M9T1R4X0B2F',
              state: ExtractionJobState.SUCCEEDED,
            },
          };
        },
      });
    });
    const handOff = new ExtractionHandOff({
      store,
      governance: createClient(GovernanceService, governance),
      credentials,
      logger,
    });
    // Started inside a span: the first sweep, and the attempt it starts, belong to its trace.
    const traceId = engramTracer().startActiveSpan('test', (span) => {
      handOff.worker.start();
      span.end();
      return span.spanContext().traceId;
    });
    for (let i = 0; i < 500 && calls.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    await handOff.worker.stop();

    expect(calls).toHaveLength(1);
    const [call] = calls;
    expect(call?.requestId).toBe(`mc-${cell.id}-1`);
    expect(call?.headers.get('x-request-id')).toBe(`mc-${cell.id}-1`);
    expect(call?.headers.get('authorization')).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    expect(call?.headers.get('traceparent')).toContain(`-${traceId}-`);
    expect((await sessions.getMemCell('h1', cell.sessionId, cell.id))?.status).toBe('EXTRACTED');
  });
});
