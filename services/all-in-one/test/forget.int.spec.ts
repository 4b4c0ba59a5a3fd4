import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sql, type RawBuilder } from 'kysely';
import { ItemKind, Scope } from '@engram/contracts/common';
import {
  DecisionOutcome,
  ForgetReceiptState,
  type GovernanceService,
  MemoryStatus,
  MemoryType,
  type ForgetReceipt,
} from '@engram/contracts/governance';
import { type IngestionService, MemCellStatus, MessageRole } from '@engram/contracts/ingestion';
import type { RetrievalService } from '@engram/contracts/retrieval';
import { errorInfoOf } from '@engram/runtime';
import { SessionStateRepository, inTransaction, openStore, type Store } from '@engram/store';
import { createEmbeddedStore } from '@engram/vector-index';
import { callerOf, newSecret, sleep, startServer, tempDir } from './harness.js';

const secret = newSecret();
const dataDir = tempDir();
const suffix = randomBytes(4).toString('hex');
/** Subjects and content markers unique to this run, so a scan of every table can look for them. */
const alice = `alice-${suffix}`;
const bob = `bob-${suffix}`;
const aliceMarker = `zebrafish${suffix}`;
const bobMarker = `okapi${suffix}`;

let stop: (() => Promise<void>) | undefined;
let ingestion: Client<typeof IngestionService>;
let governance: Client<typeof GovernanceService>;
let retrieval: Client<typeof RetrievalService>;

beforeAll(async () => {
  ({ stop, ingestion, governance, retrieval } = await startServer(secret, { dataDir }));
}, 60_000);

afterAll(async () => {
  await stop?.();
});

const as = callerOf(secret);

/** Waits until the indexer has processed every outbox row. */
async function indexed(): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const { indexStatus } = await retrieval.getIndexStatus({}, await as('root', { roles: ['admin'] }));
    if (indexStatus?.outboxPending === 0n) return;
    await sleep(100);
  }
  throw new Error('the indexer did not catch up within 30 s');
}

/** Polls the receipt (as `reader`) until it is COMPLETED. */
async function completed(name: string, reader: string): Promise<ForgetReceipt> {
  let receipt: ForgetReceipt | undefined;
  for (let i = 0; i < 600; i++) {
    ({ forgetReceipt: receipt } = await governance.getForgetReceipt({ name }, await as(reader)));
    if (receipt?.state === ForgetReceiptState.COMPLETED) return receipt;
    await sleep(100);
  }
  throw new Error(
    `${name} is still ${String(receipt?.state)} after 60 s: ${receipt?.lastError?.message ?? ''}`,
  );
}

/** A user's content everywhere: a document, a conversation flushed and extracted, an ORG memory. */
async function seed(subject: string, marker: string, said: string) {
  const options = await as(subject, { orgIds: ['org-1'] });
  const { document } = await ingestion.ingestDocument(
    {
      document: { mimeType: 'text/plain' },
      content: new TextEncoder().encode(
        `Field notes by ${subject}. The ${marker} project studies small fish.\n\nSecond paragraph about ${marker} habitats and the reef.`,
      ),
      waitForIndex: true,
    },
    options,
  );
  const { session } = await ingestion.createSession({ session: { timeZone: 'UTC' } }, options);
  const at = Date.now() - 60_000;
  await ingestion.appendMessages(
    {
      parent: session!.name,
      messages: [
        {
          role: MessageRole.USER,
          content: `${said} My project codename is ${marker}.`,
          occurTime: timestampFromMs(at),
        },
        { role: MessageRole.ASSISTANT, content: 'Noted.', occurTime: timestampFromMs(at + 1_000) },
      ],
    },
    options,
  );
  const { memCell } = await ingestion.flushSession(
    { name: session!.name, waitForExtraction: true, extractionWaitTimeout: { seconds: 30n } },
    options,
  );
  expect(memCell?.status).toBe(MemCellStatus.EXTRACTED);
  const { decisions } = await governance.proposeMemories(
    {
      candidates: [
        {
          type: MemoryType.FACT,
          namespace: 'team',
          key: `project_${suffix}`,
          value: { codename: marker },
          text: `The team project ${marker} meets on Fridays`,
          confidence: 0.9,
          scopeHint: Scope.ORG,
          orgId: 'org-1',
        },
      ],
    },
    options,
  );
  expect(decisions[0]?.outcome).toBe(DecisionOutcome.ACCEPTED);
  return { document: document!, session: session! };
}

describe('ForgetUser through gRPC on the embedded defaults', () => {
  let aliceContent: Awaited<ReturnType<typeof seed>>;
  let bobContent: Awaited<ReturnType<typeof seed>>;
  let first: ForgetReceipt;
  let aliceActive: number;
  let pointsBefore: Map<ItemKind, bigint>;

  const points = async () => {
    const { indexStatus } = await retrieval.getIndexStatus({}, await as('root', { roles: ['admin'] }));
    return new Map(indexStatus!.kinds.map((k) => [k.kind, k.indexedPoints ?? 0n]));
  };

  it('starts from two users with documents, extracted conversations and ORG memories, all indexed', async () => {
    aliceContent = await seed(
      alice,
      aliceMarker,
      'From now on please answer more concisely. My goal for the next 30 days is to solve 200 problems.',
    );
    bobContent = await seed(bob, bobMarker, 'I prefer tea over coffee. I live in Lisbon.');
    // Context's state of alice's session (as compaction would write it).
    const store = openStore({ target: join(dataDir, 'engram.db') });
    try {
      await inTransaction(store, (trx) =>
        new SessionStateRepository(store).save(trx, 'acme', aliceContent.session.name.split('/')[1]!, 0, {
          summary: `Talked about ${aliceMarker}`,
          summaryTokenCount: 5,
          keyPoints: [],
          openLoops: [],
          compactedThroughSequence: 0,
        }),
      );
    } finally {
      await store.close();
    }
    const { memories } = await governance.listMemories(
      { owner: alice, statuses: [MemoryStatus.ACTIVE] },
      await as(alice, { orgIds: ['org-1'] }),
    );
    aliceActive = memories.length;
    expect(aliceActive).toBeGreaterThanOrEqual(3);
    await indexed();
    pointsBefore = await points();
  }, 120_000);

  it('refuses to let a user forget someone else without the admin role', async () => {
    const error = await governance.forgetUser({ subject: alice }, await as(bob)).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.PermissionDenied);
    expect(errorInfoOf(error)).toMatchObject({ reason: 'ROLE_REQUIRED', metadata: { role: 'admin' } });
  });

  it('erases every row and point of the user and completes the receipt with the counts', async () => {
    const admin = await as('root', { roles: ['admin'] });
    const request = { subject: alice, reason: 'erasure request #4711', requestId: `forget-${suffix}` };
    const { forgetReceipt } = await governance.forgetUser(request, admin);
    expect(forgetReceipt).toMatchObject({
      subject: alice,
      requestedBy: 'root',
      reason: 'erasure request #4711',
      requestId: request.requestId,
    });
    // Governance's own content is gone when the call returns.
    expect(forgetReceipt!.counts!.memories).toBeGreaterThanOrEqual(BigInt(aliceActive));
    const { memories: left } = await governance.listMemories(
      { owner: alice, statuses: [MemoryStatus.ACTIVE, MemoryStatus.QUARANTINED, MemoryStatus.SUPERSEDED] },
      await as(alice, { orgIds: ['org-1'] }),
    );
    expect(left).toHaveLength(0);
    // A retry returns the same receipt.
    const again = await governance.forgetUser(request, admin);
    expect(again.forgetReceipt?.name).toBe(forgetReceipt!.name);

    first = await completed(forgetReceipt!.name, alice);
    const counts = first.counts!;
    expect(first.completeTime).toBeDefined();
    expect(first.lastError).toBeUndefined();
    expect(counts.documents).toBe(1n);
    expect(counts.chunks).toBeGreaterThanOrEqual(1n);
    expect(counts.sessions).toBe(1n);
    expect(counts.messages).toBe(2n);
    expect(counts.memCells).toBe(1n);
    expect(counts.sessionStates).toBe(1n);
    expect(counts.extractionJobs).toBeGreaterThanOrEqual(1n);
    expect(counts.revisionsRedacted).toBeGreaterThanOrEqual(counts.memories);
    // One deletion per memory, chunk and round (the conversation had one user message).
    expect(counts.vectorPoints).toBe(counts.memories + counts.chunks + 1n);

    // The index lost exactly alice's points.
    const after = await points();
    expect(after.get(ItemKind.CHUNK)).toBe(pointsBefore.get(ItemKind.CHUNK)! - counts.chunks);
    expect(after.get(ItemKind.ROUND)).toBe(pointsBefore.get(ItemKind.ROUND)! - 1n);
    expect(after.get(ItemKind.MEMORY)).toBe(pointsBefore.get(ItemKind.MEMORY)! - BigInt(aliceActive));

    // Visible to the subject and the requester, not to others.
    const error = await governance.getForgetReceipt({ name: first.name }, await as(bob)).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.NotFound);
    const mine = await governance.listForgetReceipts({}, await as(alice));
    expect(mine.forgetReceipts.map((r) => r.name)).toEqual([first.name]);
    expect((await governance.listForgetReceipts({}, await as(bob))).forgetReceipts).toHaveLength(0);
    const completedOnly = await governance.listForgetReceipts(
      { subject: alice, states: [ForgetReceiptState.COMPLETED] },
      admin,
    );
    expect(completedOnly.forgetReceipts.map((r) => r.name)).toEqual([first.name]);

    // The other user's content is intact.
    const bobOptions = await as(bob, { orgIds: ['org-1'] });
    expect((await ingestion.getDocument({ name: bobContent.document.name }, bobOptions)).document?.name).toBe(
      bobContent.document.name,
    );
    expect((await ingestion.getSession({ name: bobContent.session.name }, bobOptions)).session?.name).toBe(
      bobContent.session.name,
    );
    const { memories: bobs } = await governance.listMemories({ owner: bob }, bobOptions);
    expect(bobs.length).toBeGreaterThanOrEqual(3);
    // alice's document and session are gone.
    const gone = await ingestion.getDocument({ name: aliceContent.document.name }, await as(alice)).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(gone?.code).toBe(Code.NotFound);
  }, 120_000);

  it('finds nothing the second time: a COMPLETED receipt with zero counts', async () => {
    const { forgetReceipt } = await governance.forgetUser({ subject: alice }, await as(alice));
    expect(forgetReceipt?.name).not.toBe(first.name);
    const second = await completed(forgetReceipt!.name, alice);
    expect(second.requestedBy).toBe(alice);
    for (const [field, value] of Object.entries(second.counts!)) {
      if (typeof value === 'bigint') expect([field, value]).toEqual([field, 0n]);
    }
    const mine = await governance.listForgetReceipts({ subject: alice }, await as(alice));
    expect(mine.forgetReceipts.map((r) => r.name)).toEqual([second.name, first.name]);
  }, 60_000);

  it('leaves no row mentioning the user or their content, and no point of theirs, after shutdown', async () => {
    await indexed();
    await stop?.();
    stop = undefined;

    const store: Store = openStore({ target: join(dataDir, 'engram.db') });
    const count = async (query: RawBuilder<unknown>) =>
      Number((await sql<{ n: number | string }>`${query}`.execute(store.db)).rows[0]?.n ?? 0);
    try {
      const tables = await store.db.introspection.getTables();
      const names = tables.map((t) => t.name);
      for (const table of ['memories', 'memory_revisions', 'documents', 'chunks', 'sessions', 'messages']) {
        expect(names).toContain(table);
      }
      const found: string[] = [];
      for (const table of tables) {
        for (const column of table.columns) {
          // Receipts name their subject by design (they are the proof, and hold no content).
          if (table.name === 'forget_receipts' && ['subject', 'requested_by'].includes(column.name)) continue;
          const value = sql`cast(${sql.ref(column.name)} as text)`;
          const n = await count(
            sql`select count(*) as n from ${sql.table(table.name)} where ${value} like ${`%${alice}%`} or ${value} like ${`%${aliceMarker}%`}`,
          );
          if (n > 0) found.push(`${table.name}.${column.name}`);
        }
      }
      expect(found).toEqual([]);
      // Content-free audit records of the erased revisions remain.
      const audits = await sql<{ n: number }>`select count(*) as n from memory_revision_audits`.execute(
        store.db,
      );
      expect(Number(audits.rows[0]?.n)).toBe(Number(first.counts!.revisionsRedacted));
      // The other user's content is still there.
      expect(
        await count(sql`select count(*) as n from messages where content like ${`%${bobMarker}%`}`),
      ).toBe(1);
    } finally {
      await store.close();
    }

    const vectors = createEmbeddedStore({ path: join(dataDir, 'vectors') });
    try {
      const index = vectors.index('engram');
      const scroll = await index.scroll({ tenantId: 'acme', ownerIds: [alice] }, { limit: 1000 });
      expect(scroll.points).toEqual([]);
      expect(await index.count({ tenantId: 'acme', ownerIds: [alice] })).toBe(0);
      const kinds = new Set(
        (await index.scroll({ tenantId: 'acme', ownerIds: [bob] }, { limit: 1000 })).points.map(
          (p) => p.payload.kind,
        ),
      );
      expect([...kinds].sort()).toEqual(['CHUNK', 'MEMORY', 'ROUND']);
    } finally {
      await vectors.close();
    }
  }, 60_000);
});
