import { describe, expect, it } from '@jest/globals';
import { encodeTime } from 'ulid';
import { EngramError } from '@engram/errors';
import {
  DocumentRepository,
  ExtractionJobRepository,
  ForgetReceiptRepository,
  MemoryRepository,
  OutboxRepository,
  SessionRepository,
  ZERO_FORGET_COUNTS,
  addForgetCounts,
  eraseLateExtractions,
  forgetPayload,
  idempotent,
  inTransaction,
  newId,
  purgeRequestIds,
  type ForgetReceiptRecord,
  type NewMemory,
  type Store,
} from '../src/index.js';
import { dialects, thrown, useStore } from './harness.js';

const HASH = 'a'.repeat(64);

function memory(tenantId: string, ownerId: string, overrides: Partial<NewMemory> = {}): NewMemory {
  return {
    tenantId,
    ownerId,
    orgId: '',
    scope: 'SELF',
    type: 'FACT',
    namespace: 'profile',
    key: `k-${newId()}`,
    value: { likes: 'green tea' },
    text: 'likes green tea',
    evergreen: false,
    sourceKind: 'EXPLICIT_USER_STATEMENT',
    confidence: 0.9,
    evidence: { messageIds: [], chunkIds: [] },
    languageCode: 'en',
    metadata: {},
    ...overrides,
  };
}

async function rows(store: Store, table: 'memories' | 'memory_revisions', tenantId: string) {
  return store.db.selectFrom(table).selectAll().where('tenant_id', '=', tenantId).execute();
}

/** The content-free audit records kept of purged revisions (migration 0003's table). */
async function audits(store: Store, tenantId: string) {
  return store.db
    .withTables<{
      memory_revision_audits: { tenant_id: string; memory_id: string } & Record<string, unknown>;
    }>()
    .selectFrom('memory_revision_audits')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .orderBy('memory_id')
    .orderBy('version')
    .execute();
}

async function outbox(store: Store, tenantId: string) {
  const found = await store.db
    .selectFrom('outbox')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .orderBy('id')
    .execute();
  return found.map((r) => ({
    id: r.id,
    kind: r.aggregate_kind,
    aggregateId: r.aggregate_id,
    operation: r.operation,
    payload: JSON.parse(r.payload_json) as Record<string, string>,
  }));
}

describe.each(dialects)('forgetting a subject on $name', (dialect) => {
  let store: Store;
  let receipts: ForgetReceiptRepository;
  let memories: MemoryRepository;
  let documents: DocumentRepository;
  let sessions: SessionRepository;
  let jobs: ExtractionJobRepository;

  useStore(dialect, (opened) => {
    store = opened;
    receipts = new ForgetReceiptRepository(opened);
    memories = new MemoryRepository(opened);
    documents = new DocumentRepository(opened);
    sessions = new SessionRepository(opened);
    jobs = new ExtractionJobRepository(opened);
  });

  const receipt = (tenantId: string, subject: string, requestedBy = subject, now?: number) =>
    inTransaction(store, (trx) =>
      receipts.create(
        trx,
        { tenantId, subject, requestedBy, reason: 'erasure request', requestId: '' },
        undefined,
        now,
      ),
    );

  describe('ForgetReceiptRepository', () => {
    it('creates a PENDING receipt due now, with the outbox high-water mark, and reads it back', async () => {
      await inTransaction(store, (trx) =>
        memories.create(trx, memory('r1', 'bob'), { action: 'CREATE', actorKind: 'USER', actorId: 'bob' }),
      );
      const mark = await receipts.outboxMark();
      const created = await receipt('r1', 'alice', 'root', 1_700_000_000_000);
      expect(created).toMatchObject({
        tenantId: 'r1',
        subject: 'alice',
        requestedBy: 'root',
        reason: 'erasure request',
        state: 'PENDING',
        step: 'CONTEXT',
        counts: ZERO_FORGET_COUNTS,
        outboxFromId: mark,
        attempts: 0,
        nextAttemptAt: 1_700_000_000_000,
        lastErrorReason: '',
        createdAt: 1_700_000_000_000,
        version: 1,
      });
      expect(await receipts.get('r1', created.id)).toEqual(created);
      expect(await receipts.get('other-tenant', created.id)).toBeUndefined();
    });

    it('lists newest first, filtered by subject, state and involvement, page by page', async () => {
      const a = await receipt('r2', 'alice', 'alice', 1_000);
      const b = await receipt('r2', 'bob', 'root', 2_000);
      const c = await receipt('r2', 'alice', 'root', 3_000);
      const done = await receipts.update(c, { state: 'COMPLETED', step: 'DONE', completedAt: 3_500 });
      expect(done?.state).toBe('COMPLETED');
      const ids = async (filter: Parameters<ForgetReceiptRepository['list']>[1]) =>
        (await receipts.list('r2', filter, { pageSize: 10 })).items.map((r) => r.id);
      expect(await ids({})).toEqual([c.id, b.id, a.id]);
      expect(await ids({ subject: 'alice' })).toEqual([c.id, a.id]);
      expect(await ids({ states: ['PENDING'] })).toEqual([b.id, a.id]);
      expect(await ids({ involving: 'alice' })).toEqual([c.id, a.id]);
      expect(await ids({ involving: 'root' })).toEqual([c.id, b.id]);
      const first = await receipts.list('r2', {}, { pageSize: 2 });
      expect(first.items.map((r) => r.id)).toEqual([c.id, b.id]);
      const second = await receipts.list('r2', {}, { pageSize: 2, pageToken: first.nextPageToken });
      expect(second.items.map((r) => r.id)).toEqual([a.id]);
      expect(second.nextPageToken).toBe('');
      const misuse = await thrown(() =>
        receipts.list('r2', { subject: 'bob' }, { pageSize: 2, pageToken: first.nextPageToken }),
      );
      expect(misuse instanceof EngramError && misuse.reason).toBe('PAGE_TOKEN_INVALID');
    });

    it('updates with compare-and-set: a stale version writes nothing', async () => {
      const created = await receipt('r3', 'alice');
      const taken = await receipts.take(created, 60_000, 10_000);
      expect(taken).toMatchObject({ nextAttemptAt: 70_000, version: 2 });
      expect(await receipts.update(created, { step: 'INGESTION' })).toBeUndefined();
      const failed = await receipts.update(taken!, {
        attempts: 1,
        nextAttemptAt: 80_000,
        lastError: { reason: 'DEPENDENCY_UNAVAILABLE', message: 'ingestion unreachable' },
        counts: addForgetCounts(ZERO_FORGET_COUNTS, { sessionStates: 2 }),
      });
      expect(await receipts.get('r3', created.id)).toEqual(failed);
      expect(failed).toMatchObject({
        step: 'CONTEXT',
        attempts: 1,
        lastErrorReason: 'DEPENDENCY_UNAVAILABLE',
        lastError: 'ingestion unreachable',
        counts: { ...ZERO_FORGET_COUNTS, sessionStates: 2 },
      });
      const cleared = await receipts.update(failed!, { step: 'INGESTION', lastError: null, attempts: 0 });
      expect(cleared).toMatchObject({ lastErrorReason: '', lastError: '', step: 'INGESTION', attempts: 0 });
    });

    it('finds due PENDING receipts and the next due time', async () => {
      const now = Date.now();
      const later = await receipt('r4', 'alice', 'alice', now);
      await receipts.update(later, { nextAttemptAt: now + 3_600_000 });
      const dueNow = await receipt('r4', 'bob', 'bob', now);
      const due = (await receipts.due(now + 1, 100)).filter((r) => r.tenantId === 'r4');
      expect(due.map((r) => r.id)).toEqual([dueNow.id]);
      expect(await receipts.nextDueAt()).toBeLessThanOrEqual(now);
    });
  });

  describe('erasing governance content', () => {
    it('hard-deletes the owner’s memories of every status and scope, keeping content-free audit records', async () => {
      const t = 'g1';
      const revision = (actorId: string) => ({
        action: 'CREATE' as const,
        actorKind: 'USER' as const,
        actorId,
        reason: 'said so',
      });
      const own = await inTransaction(store, (trx) =>
        memories.create(trx, memory(t, 'alice'), revision('alice')),
      );
      const org = await inTransaction(store, (trx) =>
        memories.create(
          trx,
          memory(t, 'alice', { scope: 'ORG', orgId: 'o1', text: 'team standup 09:30' }),
          revision('alice'),
        ),
      );
      await inTransaction(store, (trx) =>
        memories.update(
          trx,
          t,
          own.id,
          1,
          { status: 'QUARANTINED' },
          { action: 'QUARANTINE', actorKind: 'ADMIN', actorId: 'root', reason: 'review' },
        ),
      );
      const others = await inTransaction(store, (trx) =>
        memories.create(trx, memory(t, 'bob'), revision('bob')),
      );
      // alice reviewed bob's memory
      await inTransaction(store, (trx) =>
        memories.update(
          trx,
          t,
          others.id,
          1,
          { evergreen: true },
          { action: 'UPDATE', actorKind: 'ADMIN', actorId: 'alice', reason: 'pinned' },
        ),
      );
      const created = await receipt(t, 'alice', 'root');
      const later = Date.now() + 60_000;
      const afterCutoff = await inTransaction(store, (trx) =>
        memories.create(trx, memory(t, 'alice'), revision('alice'), later),
      );

      const purged = await inTransaction(store, (trx) =>
        memories.purgeOwner(trx, t, 'alice', {
          createdAtOrBefore: created.createdAt,
          erasedBy: `forgetReceipts/${created.id}`,
          payload: forgetPayload(created.id),
        }),
      );
      expect(purged).toEqual({ memories: 2, revisionsRedacted: 3 });
      const replaced = await inTransaction(store, (trx) =>
        memories.replaceRevisionActor(trx, t, 'alice', `forgetReceipts/${created.id}`, created.createdAt),
      );
      expect(replaced).toBe(1);

      const left = await rows(store, 'memories', t);
      expect(left.map((m) => m.id).sort()).toEqual([afterCutoff.id, others.id].sort());
      const revisions = await rows(store, 'memory_revisions', t);
      expect(revisions.map((r) => r.memory_id).sort()).toEqual([afterCutoff.id, others.id, others.id].sort());
      expect(
        revisions
          .filter((r) => r.memory_id === others.id)
          .map((r) => r.actor_id)
          .sort(),
      ).toEqual(['bob', `forgetReceipts/${created.id}`].sort());
      const kept = await audits(store, t);
      expect(kept).toHaveLength(3);
      for (const audit of kept) {
        expect([own.id, org.id]).toContain(audit.memory_id);
        expect(audit['erased_by']).toBe(`forgetReceipts/${created.id}`);
        expect(Object.keys(audit).sort()).toEqual(
          [
            'action',
            'actor_kind',
            'changed_paths_json',
            'created_at',
            'erased_at',
            'erased_by',
            'id',
            'memory_id',
            'rule',
            'tenant_id',
            'version',
          ].sort(),
        );
        expect(JSON.stringify(audit)).not.toMatch(/alice|root|green tea|standup|said so|review/);
      }
      const deletes = (await outbox(store, t)).filter((r) => r.payload['forgetReceipt'] !== undefined);
      expect(deletes.map((r) => [r.kind, r.aggregateId, r.payload]).sort()).toEqual(
        [own.id, org.id].sort().map((id) => ['MEMORY', id, { forgetReceipt: created.id }]),
      );

      // A second erasure finds nothing.
      const again = await inTransaction(store, (trx) =>
        memories.purgeOwner(trx, t, 'alice', { createdAtOrBefore: created.createdAt, erasedBy: 'x' }),
      );
      expect(again).toEqual({ memories: 0, revisionsRedacted: 0 });
    });

    it('erases extractions that raced the erasure: jobs for sessions created before the cutoff, and their memories', async () => {
      const t = 'g2';
      const cutoff = Date.now();
      // Session ids as ingestion makes them: ULIDs of their creation time (newId is monotonic
      // within a process, so build them directly).
      const sessionId = (at: number) => `${encodeTime(at, 10)}${'0'.repeat(16)}`;
      const oldSession = sessionId(cutoff - 60_000);
      const newSession = sessionId(cutoff + 60_000);
      const late = await inTransaction(store, (trx) =>
        jobs.create(
          trx,
          { tenantId: t, ownerId: 'alice', memCellId: newId(), sessionId: oldSession, extractors: ['FACT'] },
          cutoff + 1_000,
        ),
      );
      const fresh = await inTransaction(store, (trx) =>
        jobs.create(
          trx,
          { tenantId: t, ownerId: 'alice', memCellId: newId(), sessionId: newSession, extractors: ['FACT'] },
          cutoff + 61_000,
        ),
      );
      const written = await inTransaction(store, (trx) =>
        memories.create(
          trx,
          memory(t, 'alice'),
          { action: 'CREATE', actorKind: 'EXTRACTOR', actorId: 'x', extractionJobId: late.id },
          cutoff + 2_000,
        ),
      );
      const kept = await inTransaction(store, (trx) =>
        memories.create(
          trx,
          memory(t, 'alice'),
          { action: 'CREATE', actorKind: 'EXTRACTOR', actorId: 'x', extractionJobId: fresh.id },
          cutoff + 62_000,
        ),
      );
      const counts = await inTransaction(store, (trx) =>
        eraseLateExtractions(trx, memories, {
          tenantId: t,
          subject: 'alice',
          cutoff,
          erasedBy: 'forgetReceipts/X',
        }),
      );
      expect(counts).toEqual({ memories: 1, revisionsRedacted: 1, extractionJobs: 1 });
      expect(await memories.get(t, written.id)).toBeUndefined();
      expect(await memories.get(t, kept.id)).toBeDefined();
      expect(await jobs.get(t, late.id)).toBeUndefined();
      expect(await jobs.get(t, fresh.id)).toBeDefined();
    });

    it('forgets the request ids a subject used with one service, keeping the listed methods', async () => {
      const t = 'g3';
      const use = (subject: string, method: string, requestId: string) =>
        idempotent(store, { tenantId: t, subject, method, requestId }, { requestId }, () =>
          Promise.resolve({ ok: true }),
        );
      await use('alice', 'engram.ingestion.v1.IngestionService/CreateSession', 'a1');
      await use('alice', 'engram.ingestion.v1.IngestionService/AppendMessages', 'a2');
      await use('alice', 'engram.governance.v1.GovernanceService/ForgetUser', 'a3');
      await use('alice', 'engram.governance.v1.GovernanceService/ProposeMemories', 'a4');
      await use('bob', 'engram.ingestion.v1.IngestionService/CreateSession', 'b1');
      const left = async () =>
        (
          await store.db
            .selectFrom('request_ids')
            .select(['subject', 'request_id'])
            .where('tenant_id', '=', t)
            .orderBy('request_id')
            .execute()
        ).map((r) => `${r.subject}:${r.request_id}`);
      const now = Date.now();
      const ingestion = await inTransaction(store, (trx) =>
        purgeRequestIds(trx, {
          tenantId: t,
          subject: 'alice',
          methodPrefix: 'engram.ingestion.v1.IngestionService/',
          createdAtOrBefore: now,
        }),
      );
      expect(ingestion).toBe(2);
      const governance = await inTransaction(store, (trx) =>
        purgeRequestIds(trx, {
          tenantId: t,
          subject: 'alice',
          methodPrefix: 'engram.governance.v1.GovernanceService/',
          createdAtOrBefore: now,
          keepMethods: ['engram.governance.v1.GovernanceService/ForgetUser'],
        }),
      );
      expect(governance).toBe(1);
      expect(await left()).toEqual(['alice:a3', 'bob:b1']);
    });
  });

  describe('erasing ingestion content in batches', () => {
    it('deletes documents and sessions of the owner created at or before the cutoff, with tagged outbox rows', async () => {
      const t = 'i1';
      const cutoff = Date.now();
      const doc = (ownerId: string, at: number, scope: 'SELF' | 'ORG' = 'SELF') =>
        inTransaction(store, async (trx) => {
          const created = await documents.createDocument(
            trx,
            {
              tenantId: t,
              ownerId,
              orgId: scope === 'ORG' ? 'o1' : '',
              scope,
              displayName: 'notes',
              mimeType: 'text/plain',
              sourceUri: '',
              metadata: {},
              contentHash: HASH,
              sizeBytes: 10,
              charCount: 10,
              state: 'INGESTING',
              chunkSize: 1_000,
              chunkOverlap: 0,
              keepTablesWhole: true,
              keepCodeWhole: true,
            },
            at,
          );
          await documents.addChunks(
            trx,
            t,
            created.id,
            [0, 1].map((ordinal) => ({
              ordinal,
              kind: 'TEXT' as const,
              text: `chunk ${ordinal}`,
              startOffset: ordinal * 10,
              endOffset: ordinal * 10 + 7,
              overlapPrefixChars: 0,
              headerPrefixChars: 0,
              tokenCount: 2,
              headingPath: [],
            })),
            at,
          );
          return created;
        });
      const conversation = (ownerId: string, at: number) =>
        inTransaction(store, async (trx) => {
          const session = await sessions.createSession(trx, { tenantId: t, ownerId }, at);
          await sessions.appendMessages(
            trx,
            t,
            session.id,
            [
              { role: 'USER', content: 'hello', occurredAt: at },
              { role: 'ASSISTANT', content: 'hi', occurredAt: at },
              { role: 'USER', content: 'bye', occurredAt: at },
            ],
            {},
            at,
          );
          await sessions.closeMemCell(trx, t, session.id, { throughSequence: 3, reason: 'FLUSH' }, at);
          return session;
        });
      const d1 = await doc('alice', cutoff - 2_000);
      const d2 = await doc('alice', cutoff - 1_000, 'ORG');
      const d3 = await doc('alice', cutoff + 1_000);
      const d4 = await doc('bob', cutoff - 1_000);
      const s1 = await conversation('alice', cutoff - 2_000);
      const s2 = await conversation('alice', cutoff + 1_000);
      const s3 = await conversation('bob', cutoff - 1_000);
      const tag = forgetPayload('01RECEIPT0000000000000000X');
      const before = (await outbox(store, t)).length;

      const first = await inTransaction(store, (trx) =>
        documents.purgeOwnerBatch(trx, t, 'alice', { createdAtOrBefore: cutoff, limit: 1, payload: tag }),
      );
      expect(first).toEqual({ documents: 1, chunks: 2 });
      const second = await inTransaction(store, (trx) =>
        documents.purgeOwnerBatch(trx, t, 'alice', { createdAtOrBefore: cutoff, limit: 1, payload: tag }),
      );
      expect(second).toEqual({ documents: 1, chunks: 2 });
      const none = await inTransaction(store, (trx) =>
        documents.purgeOwnerBatch(trx, t, 'alice', { createdAtOrBefore: cutoff, limit: 1, payload: tag }),
      );
      expect(none).toEqual({ documents: 0, chunks: 0 });
      expect(await documents.get(t, d1.id)).toBeUndefined();
      expect(await documents.get(t, d2.id)).toBeUndefined();
      expect(await documents.get(t, d3.id)).toBeDefined();
      expect(await documents.get(t, d4.id)).toBeDefined();

      const conversations = await inTransaction(store, (trx) =>
        sessions.purgeOwnerBatch(trx, t, 'alice', { createdAtOrBefore: cutoff, limit: 10, payload: tag }),
      );
      expect(conversations).toEqual({ sessions: 1, messages: 3, memCells: 1, sessionStates: 0 });
      expect(await sessions.get(t, s1.id)).toBeUndefined();
      expect(await sessions.get(t, s2.id)).toBeDefined();
      expect(await sessions.get(t, s3.id)).toBeDefined();

      const written = (await outbox(store, t)).slice(before);
      expect(
        written.every((r) => r.operation === 'DELETE' && r.payload['forgetReceipt'] === tag['forgetReceipt']),
      ).toBe(true);
      expect(written.filter((r) => r.kind === 'CHUNK')).toHaveLength(4);
      expect(
        written.filter((r) => r.kind === 'CHUNK').every((r) => r.payload['documentId'] !== undefined),
      ).toBe(true);
      expect(
        written
          .filter((r) => r.kind === 'DOCUMENT')
          .map((r) => r.aggregateId)
          .sort(),
      ).toEqual([d1.id, d2.id].sort());
      expect(written.filter((r) => r.kind === 'ROUND')).toHaveLength(2);
      expect(written.filter((r) => r.kind === 'SESSION').map((r) => r.aggregateId)).toEqual([s1.id]);
    });
  });

  describe('index progress of an erasure', () => {
    it('counts the tagged point deletions and tells when the indexer has applied them all', async () => {
      const t = 'x1';
      const created = await receipt(t, 'alice');
      const revision = { action: 'CREATE' as const, actorKind: 'USER' as const, actorId: 'alice' };
      await inTransaction(store, (trx) => memories.create(trx, memory(t, 'alice'), revision));
      await inTransaction(store, (trx) => memories.create(trx, memory(t, 'alice'), revision));
      // Untagged rows of the same tenant (another user's writes, and alice's writes before the
      // erasure) are not the erasure's, but they are unsettled until processed: an indexer may hold
      // one and write its point after the erasure's DELETE.
      await inTransaction(store, (trx) => memories.create(trx, memory(t, 'bob'), revision));
      await inTransaction(store, (trx) =>
        memories.purgeOwner(trx, t, 'alice', {
          createdAtOrBefore: Date.now(),
          erasedBy: 'forgetReceipts/x',
          payload: forgetPayload(created.id),
        }),
      );
      const to = await receipts.outboxMark();
      const progress = (record: ForgetReceiptRecord) => receipts.indexProgress(record, to);
      expect(await progress(created)).toEqual({
        pending: 2,
        parked: 0,
        pointDeletions: 2,
        pointDeletionsDone: 0,
        unsettled: 3,
      });

      const consumer = new OutboxRepository(store, 1);
      const leased = (await consumer.lease(1_000, 60_000)).filter((e) => e.tenantId === t);
      const tagged = leased.filter((e) => e.payload['forgetReceipt'] === created.id);
      expect(tagged).toHaveLength(2);
      await consumer.complete([tagged[0]!.id]);
      await consumer.fail([{ entry: tagged[1]!, error: 'index down', retryAt: Date.now() }]);
      expect(await progress(created)).toEqual({
        pending: 1,
        parked: 1,
        pointDeletions: 2,
        pointDeletionsDone: 1,
        unsettled: 3,
      });
      await consumer.complete([tagged[1]!.id]);
      expect(await progress(created)).toEqual({
        pending: 0,
        parked: 0,
        pointDeletions: 2,
        pointDeletionsDone: 2,
        unsettled: 3,
      });
      await consumer.complete(
        leased.filter((e) => e.payload['forgetReceipt'] !== created.id).map((e) => e.id),
      );
      expect((await progress(created)).unsettled).toBe(0);
      // Another receipt's range sees none of them.
      const other = await receipt(t, 'alice');
      expect(await receipts.indexProgress(other, await receipts.outboxMark())).toEqual({
        pending: 0,
        parked: 0,
        pointDeletions: 0,
        pointDeletionsDone: 0,
        unsettled: 0,
      });
    });
  });
});
