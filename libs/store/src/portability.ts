import type { Kysely } from 'kysely';
import { batches } from './batches.js';
import type { Store } from './database.js';
import { chunkRows, type ChunkRecord, type DocumentRecord, documentRows } from './documents.js';
import { type ExtractionJobRecord, extractionJobRows } from './extraction-jobs.js';
import {
  memoryContentHash,
  type MemoryRecord,
  type MemoryRevisionRecord,
  memoryRows,
  toRevisionRecord,
  toRevisionRow,
} from './memories.js';
import { enqueueOutbox, type OutboxEvent } from './outbox.js';
import type { Database } from './schema.js';
import { type SessionStateRecord, sessionStateRows } from './session-states.js';
import {
  type MemCellRecord,
  memCellRows,
  type MessageRecord,
  messageRows,
  type SessionRecord,
  sessionRows,
} from './sessions.js';
import { type Executor, inTransaction } from './store-context.js';

/**
 * Everything one subject owns in a tenant, as records (the export, decision 0039): memories (any
 * status and scope), their revisions, the subject's extraction jobs, sessions with their
 * messages, MemCells and session states, documents with their chunks.
 */
export interface SubjectSnapshot {
  readonly sessions: readonly SessionRecord[];
  readonly messages: readonly MessageRecord[];
  readonly memCells: readonly MemCellRecord[];
  readonly sessionStates: readonly SessionStateRecord[];
  readonly documents: readonly DocumentRecord[];
  readonly chunks: readonly ChunkRecord[];
  readonly memories: readonly MemoryRecord[];
  readonly revisions: readonly MemoryRevisionRecord[];
  readonly extractionJobs: readonly ExtractionJobRecord[];
}

/** The kinds of a snapshot, with the names the export format gives them. */
export type SnapshotKind = keyof SubjectSnapshot;

/**
 * Reads everything `subject` owns in the tenant in ONE transaction, so the export is a consistent
 * snapshot: a message is never exported without its session, a revision never without its memory.
 * Children are selected by their parents' owner with sub-queries, in a stable order (ids are
 * ULIDs: by time), messages by sequence and chunks by ordinal.
 */
export async function readSubjectSnapshot(
  store: Store,
  tenantId: string,
  subject: string,
): Promise<SubjectSnapshot> {
  return inTransaction(store, async (trx) => {
    const sessionIds = trx
      .selectFrom('sessions')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('owner_id', '=', subject);
    const documentIds = trx
      .selectFrom('documents')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('owner_id', '=', subject);
    const memoryIds = trx
      .selectFrom('memories')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('owner_id', '=', subject);
    const sessions = await trx
      .selectFrom('sessions')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('owner_id', '=', subject)
      .orderBy('id')
      .execute();
    const messages = await trx
      .selectFrom('messages')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('session_id', 'in', sessionIds)
      .orderBy('session_id')
      .orderBy('sequence')
      .execute();
    const memCells = await trx
      .selectFrom('mem_cells')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('session_id', 'in', sessionIds)
      .orderBy('session_id')
      .orderBy('first_sequence')
      .execute();
    const states = await trx
      .selectFrom('session_states')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('session_id', 'in', sessionIds)
      .orderBy('session_id')
      .execute();
    const documents = await trx
      .selectFrom('documents')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('owner_id', '=', subject)
      .orderBy('id')
      .execute();
    const chunks = await trx
      .selectFrom('chunks')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('document_id', 'in', documentIds)
      .orderBy('document_id')
      .orderBy('ordinal')
      .execute();
    const memories = await trx
      .selectFrom('memories')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('owner_id', '=', subject)
      .orderBy('id')
      .execute();
    const revisions = await trx
      .selectFrom('memory_revisions')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('memory_id', 'in', memoryIds)
      .orderBy('memory_id')
      .orderBy('version')
      .execute();
    const jobs = await trx
      .selectFrom('extraction_jobs')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('owner_id', '=', subject)
      .orderBy('id')
      .execute();
    return {
      sessions: sessions.map(sessionRows.toRecord),
      messages: messages.map(messageRows.toRecord),
      memCells: memCells.map(memCellRows.toRecord),
      sessionStates: states.map(sessionStateRows.toRecord),
      documents: documents.map(documentRows.toRecord),
      chunks: chunks.map(chunkRows.toRecord),
      memories: memories.map(memoryRows.toRecord),
      revisions: revisions.map(toRevisionRecord),
      extractionJobs: jobs.map(extractionJobRows.toRecord),
    };
  });
}

/** How many records of each kind an import wrote and found already there. */
export interface SnapshotWriteCounts {
  readonly created: Readonly<Record<SnapshotKind, number>>;
  readonly unchanged: Readonly<Record<SnapshotKind, number>>;
}

/**
 * A record of the import whose identifier or unique key already belongs to other content: another
 * tenant's or owner's row with the same id, a child row under another parent, or a session of the
 * subject with the same external id but another id. Nothing was written.
 */
export class SnapshotConflict extends Error {
  override readonly name = 'SnapshotConflict';
  constructor(
    readonly kind: SnapshotKind,
    /** The record's id (a session state: its session's). */
    readonly id: string,
    readonly field: string,
  ) {
    super(`the ${kind} record ${id} conflicts with stored content (${field})`);
  }
}

const IDS_PER_QUERY = 500;
const ROWS_PER_INSERT = 100;
/** Statement size bound for rows carrying text (messages, chunks, memories). */
const BYTES_PER_INSERT = 2 * 1024 * 1024;

/** The owner check of a kind: which column must equal what for an existing row to be "ours". */
type Ownership = { readonly column: string; readonly value: (record: never) => string };

interface KindSpec {
  readonly table: keyof Database;
  readonly idColumn: string;
  readonly owner: Ownership;
}

const KINDS: Readonly<Record<SnapshotKind, KindSpec>> = {
  sessions: {
    table: 'sessions',
    idColumn: 'id',
    owner: { column: 'owner_id', value: (r: SessionRecord) => r.ownerId },
  },
  messages: {
    table: 'messages',
    idColumn: 'id',
    owner: { column: 'session_id', value: (r: MessageRecord) => r.sessionId },
  },
  memCells: {
    table: 'mem_cells',
    idColumn: 'id',
    owner: { column: 'session_id', value: (r: MemCellRecord) => r.sessionId },
  },
  sessionStates: {
    table: 'session_states',
    idColumn: 'session_id',
    owner: { column: 'session_id', value: (r: SessionStateRecord) => r.sessionId },
  },
  documents: {
    table: 'documents',
    idColumn: 'id',
    owner: { column: 'owner_id', value: (r: DocumentRecord) => r.ownerId },
  },
  chunks: {
    table: 'chunks',
    idColumn: 'id',
    owner: { column: 'document_id', value: (r: ChunkRecord) => r.documentId },
  },
  memories: {
    table: 'memories',
    idColumn: 'id',
    owner: { column: 'owner_id', value: (r: MemoryRecord) => r.ownerId },
  },
  revisions: {
    table: 'memory_revisions',
    idColumn: 'id',
    owner: { column: 'memory_id', value: (r: MemoryRevisionRecord) => r.memoryId },
  },
  extractionJobs: {
    table: 'extraction_jobs',
    idColumn: 'id',
    owner: { column: 'owner_id', value: (r: ExtractionJobRecord) => r.ownerId },
  },
};

const idOf = (kind: SnapshotKind, record: object): string =>
  kind === 'sessionStates' ? (record as SessionStateRecord).sessionId : (record as { id: string }).id;

/**
 * Splits one kind's records into those to insert and those already stored for the target (same
 * tenant, same owner or parent): a stored row with the id under another tenant, owner or parent is
 * a {@link SnapshotConflict}.
 */
async function partition<T extends object>(
  trx: Executor,
  tenantId: string,
  kind: SnapshotKind,
  records: readonly T[],
): Promise<{ fresh: T[]; unchanged: number }> {
  const spec = KINDS[kind];
  const db = trx as unknown as Kysely<Record<string, Record<string, string>>>;
  const stored = new Map<string, { tenant: string; owner: string }>();
  for (const batch of batches(records, IDS_PER_QUERY)) {
    const rows = await db
      .selectFrom(spec.table)
      .select([`${spec.idColumn} as id`, 'tenant_id as tenant', `${spec.owner.column} as owner`])
      .where(
        spec.idColumn,
        'in',
        batch.map((r) => idOf(kind, r)),
      )
      .execute();
    for (const row of rows as { id: string; tenant: string; owner: string }[]) stored.set(row.id, row);
  }
  const fresh: T[] = [];
  let unchanged = 0;
  for (const record of records) {
    const id = idOf(kind, record);
    const found = stored.get(id);
    if (found === undefined) fresh.push(record);
    else if (found.tenant === tenantId && found.owner === (spec.owner.value as (r: T) => string)(record))
      unchanged += 1;
    else throw new SnapshotConflict(kind, id, found.tenant === tenantId ? spec.owner.column : 'id');
  }
  return { fresh, unchanged };
}

/** New sessions must not take an external id the subject already uses for another session. */
async function checkExternalIds(trx: Executor, tenantId: string, sessions: readonly SessionRecord[]) {
  const withExternal = sessions.flatMap((s) =>
    s.externalId === undefined ? [] : [{ ...s, externalId: s.externalId }],
  );
  for (const batch of batches(withExternal, IDS_PER_QUERY)) {
    const rows = await trx
      .selectFrom('sessions')
      .select(['id', 'owner_id', 'external_id'])
      .where('tenant_id', '=', tenantId)
      .where(
        'external_id',
        'in',
        batch.map((s) => s.externalId),
      )
      .execute();
    for (const s of batch) {
      if (rows.some((r) => r.owner_id === s.ownerId && r.external_id === s.externalId && r.id !== s.id)) {
        throw new SnapshotConflict('sessions', s.id, 'external_id');
      }
    }
  }
}

/** New children of a stored parent must not take a position (sequence, ordinal) already used. */
async function checkPositions(
  trx: Executor,
  kind: 'messages' | 'chunks',
  records: readonly (MessageRecord | ChunkRecord)[],
) {
  const [table, parent, position] =
    kind === 'messages'
      ? (['messages', 'session_id', 'sequence'] as const)
      : (['chunks', 'document_id', 'ordinal'] as const);
  const db = trx as unknown as Kysely<Record<string, Record<string, string | number>>>;
  const byParent = new Map<string, (MessageRecord | ChunkRecord)[]>();
  for (const r of records) {
    const key = 'sessionId' in r ? r.sessionId : r.documentId;
    byParent.set(key, [...(byParent.get(key) ?? []), r]);
  }
  for (const [parentId, children] of byParent) {
    const rows = (await db
      .selectFrom(table)
      .select(['id', `${position} as position`])
      .where(parent, '=', parentId)
      .execute()) as { id: string; position: number | string }[];
    if (rows.length === 0) continue;
    const taken = new Map(rows.map((r) => [Number(r.position), r.id]));
    for (const c of children) {
      const at = 'sequence' in c ? c.sequence : c.ordinal;
      const holder = taken.get(at);
      if (holder !== undefined && holder !== c.id) throw new SnapshotConflict(kind, c.id, position);
    }
  }
}

const textWeight = (row: Record<string, unknown>) =>
  Object.values(row).reduce<number>((n, v) => n + (typeof v === 'string' ? v.length * 3 : 8), 0);

async function insertAll(trx: Executor, table: keyof Database, rows: readonly object[]) {
  const db = trx as unknown as Kysely<Record<string, Record<string, unknown>>>;
  for (const batch of batches(
    rows as Record<string, unknown>[],
    ROWS_PER_INSERT,
    BYTES_PER_INSERT,
    textWeight,
  )) {
    await db.insertInto(table).values(batch).execute();
  }
}

/**
 * The outbox rows that index what an import created, as the ordinary writes would have: a MEMORY
 * upsert per ACTIVE memory, a ROUND upsert per USER message (a conversation round is keyed by its
 * user message), a CHUNK upsert per chunk.
 */
function indexEvents(
  tenantId: string,
  created: { memories: MemoryRecord[]; messages: MessageRecord[]; chunks: ChunkRecord[] },
): OutboxEvent[] {
  return [
    ...created.messages
      .filter((m) => m.role === 'USER')
      .map((m): OutboxEvent => ({
        tenantId,
        aggregate: 'ROUND',
        aggregateId: m.id,
        operation: 'UPSERT',
        payload: { sessionId: m.sessionId },
      })),
    ...created.memories
      .filter((m) => m.status === 'ACTIVE')
      .map((m): OutboxEvent => ({ tenantId, aggregate: 'MEMORY', aggregateId: m.id, operation: 'UPSERT' })),
    ...created.chunks.map((c): OutboxEvent => ({
      tenantId,
      aggregate: 'CHUNK',
      aggregateId: c.id,
      operation: 'UPSERT',
      payload: { documentId: c.documentId },
    })),
  ];
}

/**
 * Writes a snapshot for its tenant in ONE transaction (ImportUser): every record not yet stored is
 * inserted as it is, records already stored for the same tenant and owner are left unchanged (a
 * re-run writes nothing), and the outbox rows that index the new memories, rounds and chunks are
 * enqueued in the same transaction. Memories' content hashes are recomputed from their content.
 * Throws {@link SnapshotConflict} (and writes nothing) when a record's id or unique key belongs to
 * other content. With `validateOnly`, checks and counts but writes nothing.
 */
export async function writeSubjectSnapshot(
  store: Store,
  tenantId: string,
  snapshot: SubjectSnapshot,
  options: { readonly validateOnly?: boolean; readonly now?: number } = {},
): Promise<SnapshotWriteCounts> {
  const now = options.now ?? Date.now();
  return inTransaction(store, async (trx) => {
    const order: SnapshotKind[] = [
      'sessions',
      'messages',
      'memCells',
      'sessionStates',
      'documents',
      'chunks',
      'memories',
      'revisions',
      'extractionJobs',
    ];
    const fresh = {} as Record<SnapshotKind, object[]>;
    const created = {} as Record<SnapshotKind, number>;
    const unchanged = {} as Record<SnapshotKind, number>;
    for (const kind of order) {
      const part = await partition(trx, tenantId, kind, snapshot[kind] as readonly object[]);
      fresh[kind] = part.fresh;
      created[kind] = part.fresh.length;
      unchanged[kind] = part.unchanged;
    }
    await checkExternalIds(trx, tenantId, fresh.sessions as SessionRecord[]);
    await checkPositions(trx, 'messages', fresh.messages as MessageRecord[]);
    await checkPositions(trx, 'chunks', fresh.chunks as ChunkRecord[]);
    if (options.validateOnly === true) return { created, unchanged };

    const memories = (fresh.memories as MemoryRecord[]).map((m) => ({
      ...m,
      contentHash: memoryContentHash(m),
    }));
    await insertAll(trx, 'sessions', (fresh.sessions as SessionRecord[]).map(sessionRows.toRow));
    await insertAll(trx, 'messages', (fresh.messages as MessageRecord[]).map(messageRows.toRow));
    await insertAll(trx, 'mem_cells', (fresh.memCells as MemCellRecord[]).map(memCellRows.toRow));
    await insertAll(
      trx,
      'session_states',
      (fresh.sessionStates as SessionStateRecord[]).map(sessionStateRows.toRow),
    );
    await insertAll(trx, 'documents', (fresh.documents as DocumentRecord[]).map(documentRows.toRow));
    await insertAll(trx, 'chunks', (fresh.chunks as ChunkRecord[]).map(chunkRows.toRow));
    await insertAll(trx, 'memories', memories.map(memoryRows.toRow));
    await insertAll(trx, 'memory_revisions', (fresh.revisions as MemoryRevisionRecord[]).map(toRevisionRow));
    await insertAll(
      trx,
      'extraction_jobs',
      (fresh.extractionJobs as ExtractionJobRecord[]).map(extractionJobRows.toRow),
    );
    const events = indexEvents(tenantId, {
      memories,
      messages: fresh.messages as MessageRecord[],
      chunks: fresh.chunks as ChunkRecord[],
    });
    for (const batch of batches(events, 500)) await enqueueOutbox(trx, batch, now);
    return { created, unchanged };
  });
}
