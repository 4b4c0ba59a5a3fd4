import { createHash } from 'node:crypto';
import type { Expression, ExpressionBuilder, Kysely, Selectable, SelectQueryBuilder, SqlBool } from 'kysely';
import { errors } from '@engram/errors';
import { batches } from './batches.js';
import { fromJson, optional, toJson, type JsonValue } from './codec.js';
import type { Store } from './database.js';
import { filterOnly } from './dialect.js';
import { etagMismatch } from './errors.js';
import { newId } from './ids.js';
import { enqueueOutbox } from './outbox.js';
import { keysetOn, keysetPage, type Page, type PageRequest } from './pagination.js';
import { clipped, enumOf, flag, json, nullable, nullableJson, rowCodec, stringMap } from './row-codec.js';
import { deleteWhereIn, findOne } from './rows.js';
import type { Database, MemoryRevisionsTable, MemoryRow } from './schema.js';
import { read, run, type Executor } from './store-context.js';
import { visibleTo, type Scope, type TenantColumn, type Viewer } from './visibility.js';

export type { Scope, Viewer } from './visibility.js';
export type MemoryType = 'FACT' | 'EPISODE' | 'EVENT' | 'FORESIGHT' | 'SUMMARY';
export type MemoryStatus = 'ACTIVE' | 'SUPERSEDED' | 'EXPIRED' | 'DELETED' | 'QUARANTINED';
export type SourceKind =
  'EXPLICIT_USER_STATEMENT' | 'INFERRED' | 'ASSISTANT' | 'DOCUMENT' | 'IMPORT' | 'SYSTEM';

/** Where a memory came from. */
export interface Evidence {
  /**
   * Message ids of one session (`sessionId`), or, when the evidence names messages of several
   * sessions, their full names as given (`sessions/{s}/messages/{m}`).
   */
  readonly messageIds: readonly string[];
  /** The session the message and MemCell ids belong to, when they all belong to one. */
  readonly sessionId?: string;
  readonly memCellId?: string;
  readonly chunkIds: readonly string[];
  readonly excerpt?: string;
}

/** A memory as stored. Times are UTC epoch milliseconds. */
export interface MemoryRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly ownerId: string;
  /** '' unless scope is ORG. */
  readonly orgId: string;
  readonly scope: Scope;
  readonly type: MemoryType;
  readonly namespace: string;
  readonly key: string;
  readonly value?: JsonValue;
  readonly text: string;
  readonly evergreen: boolean;
  readonly sourceKind: SourceKind;
  readonly confidence: number;
  readonly status: MemoryStatus;
  readonly statusReason: string;
  readonly supersedesId?: string;
  readonly supersededById?: string;
  readonly evidence: Evidence;
  readonly languageCode: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly contentHash: string;
  readonly occurredAt?: number;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly expiresAt?: number;
  readonly validFrom?: number;
  readonly validUntil?: number;
  /** Incremented by every write; the optimistic-concurrency token (etag). */
  readonly version: number;
}

/** What a new memory is made of; the repository assigns id, times, hash and version. */
export type NewMemory = Omit<
  MemoryRecord,
  'id' | 'contentHash' | 'createdAt' | 'updatedAt' | 'version' | 'status' | 'statusReason' | 'supersededById'
> & { readonly status?: MemoryStatus; readonly statusReason?: string };

/** Fields an update may change. */
export type MemoryPatch = Partial<
  Pick<
    MemoryRecord,
    | 'text'
    | 'value'
    | 'evergreen'
    | 'confidence'
    | 'status'
    | 'statusReason'
    | 'expiresAt'
    | 'validFrom'
    | 'validUntil'
    | 'supersededById'
    | 'metadata'
  >
>;

export type RevisionAction =
  | 'CREATE'
  | 'UPDATE'
  | 'SUPERSEDE'
  | 'EXPIRE'
  | 'DELETE'
  | 'RESTORE'
  | 'QUARANTINE'
  | 'APPROVE'
  | 'REJECT'
  | 'REDACT';
export type ActorKind = 'USER' | 'ADMIN' | 'SERVICE' | 'EXTRACTOR' | 'RULE' | 'SYSTEM';

/** Who changed a memory, and why: written with every change. */
export interface RevisionInput {
  readonly action: RevisionAction;
  readonly actorKind: ActorKind;
  readonly actorId: string;
  readonly reason?: string;
  readonly rule?: string;
  readonly requestId?: string;
  readonly extractionJobId?: string;
}

export interface MemoryRevisionRecord extends Required<Omit<RevisionInput, 'extractionJobId'>> {
  readonly id: string;
  readonly tenantId: string;
  readonly memoryId: string;
  readonly version: number;
  readonly before?: MemoryRecord;
  readonly after?: MemoryRecord;
  readonly changedPaths: readonly string[];
  readonly extractionJobId?: string;
  readonly createdAt: number;
}

/** Narrowing filters of {@link MemoryRepository.list}. Empty arrays mean "any". */
export interface MemoryFilter {
  readonly types?: readonly MemoryType[];
  /** Default: ACTIVE only. */
  readonly statuses?: readonly MemoryStatus[];
  readonly namespaces?: readonly string[];
  readonly scopes?: readonly Scope[];
  readonly ownerId?: string;
  readonly evergreenOnly?: boolean;
  readonly occurredFrom?: number;
  readonly occurredBefore?: number;
  /** FACT keys (exact). */
  readonly keys?: readonly string[];
  /** Only ORG memories of this org. */
  readonly orgId?: string;
  readonly sourceKinds?: readonly SourceKind[];
  readonly minConfidence?: number;
  readonly createdFrom?: number;
  readonly createdBefore?: number;
  /** Valid at this instant: `valid_from` (if set) at or before it, `valid_until` (if set) after it. */
  readonly validAt?: number;
  /**
   * The time that decides expiry: an ACTIVE memory whose `expires_at` is at or before it counts as
   * EXPIRED (listed with EXPIRED, not with ACTIVE) even before the sweeper has recorded it.
   */
  readonly now?: number;
}

/** What {@link MemoryRepository.purge} removed. */
export interface PurgedMemoryCounts {
  readonly memories: number;
  /** Revisions of those memories, kept only as content-free audit records. */
  readonly revisionsRedacted: number;
}

/** How a purge is recorded. */
export interface PurgeOptions {
  /** Why the content went, kept on the audit records, e.g. `forgetReceipts/{id}`. */
  readonly erasedBy: string;
  /** Identifiers added to the MEMORY DELETE outbox rows (never contents). */
  readonly payload?: Readonly<Record<string, string | number>>;
}

/**
 * The columns of a revision kept when its memory is hard-deleted (migration 0003): action, version,
 * actor kind, rule, changed field names and time; no before/after, reason, actor or request.
 */
const AUDITED_COLUMNS = [
  'id',
  'tenant_id',
  'memory_id',
  'version',
  'action',
  'actor_kind',
  'rule',
  'changed_paths_json',
  'created_at',
] as const;

/**
 * What is kept of a revision of a hard-deleted memory, with who erased it and when. A type alias,
 * not an interface: Kysely's `withTables` needs a shape with an implicit index signature.
 */
type MemoryRevisionAuditsTable = Pick<MemoryRevisionsTable, (typeof AUDITED_COLUMNS)[number]> & {
  erased_by: string;
  erased_at: number;
};

/** Ids per IN list and per multi-row INSERT of a purge. */
const PURGE_BATCH = 500;

/** sha256 over what makes two memories the same content (type, identity, value, text). */
export function memoryContentHash(
  m: Pick<MemoryRecord, 'type' | 'namespace' | 'key' | 'value' | 'text'>,
): string {
  return createHash('sha256')
    .update(JSON.stringify([m.type, m.namespace, m.key, m.value ?? null, m.text.normalize('NFC').trim()]))
    .digest('hex');
}

const { toRecord, toRow } = rowCodec<MemoryRecord, MemoryRow>({
  id: 'id',
  tenantId: 'tenant_id',
  ownerId: 'owner_id',
  orgId: 'org_id',
  scope: ['scope', enumOf<Scope>()],
  type: ['type', enumOf<MemoryType>()],
  namespace: 'namespace',
  key: 'mkey',
  // Left out of the record when NULL (a memory without a value has no `value` key).
  value: ['value_json', nullableJson<JsonValue>({ omitUndefined: true })],
  text: 'text',
  evergreen: ['evergreen', flag],
  sourceKind: ['source_kind', enumOf<SourceKind>()],
  confidence: 'confidence',
  status: ['status', enumOf<MemoryStatus>()],
  statusReason: ['status_reason', clipped(1024)],
  supersedesId: ['supersedes_id', nullable<string>()],
  supersededById: ['superseded_by_id', nullable<string>()],
  evidence: ['evidence_json', json<Evidence>(() => ({ messageIds: [], chunkIds: [] }))],
  languageCode: 'language_code',
  metadata: ['metadata_json', stringMap],
  contentHash: 'content_hash',
  occurredAt: ['occurred_at', nullable<number>()],
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  expiresAt: ['expires_at', nullable<number>()],
  validFrom: ['valid_from', nullable<number>()],
  validUntil: ['valid_until', nullable<number>()],
  version: 'version',
});

/** Rows of `memories` and their records, both ways (export and import, `portability.ts`). */
export const memoryRows = { toRecord, toRow } as const;

type MemoryQuery = SelectQueryBuilder<Database, 'memories', MemoryRow>;

/**
 * The SQL condition "this memory is visible to `viewer` at `now`" (decision 0027), the one rule
 * of every read path (Get, List, revisions, extraction-job views): a memory that is ACTIVE (and
 * not past its `expires_at`) is visible by its scope ({@link visibleTo}); every other status
 * (QUARANTINED, DELETED, SUPERSEDED, EXPIRED, and ACTIVE past its expiry) only to its owner, still
 * within its scope; and a reviewer (`admin`) sees every QUARANTINED memory of its tenant.
 * `tenant`: as {@link visibleTo} takes it.
 */
export function memoryVisibleTo(
  viewer: Viewer,
  now = Date.now(),
  tenant: TenantColumn = 'tenant_id',
): (eb: ExpressionBuilder<Database, 'memories'>) => Expression<SqlBool> {
  const byScope = visibleTo<'memories'>(viewer, tenant);
  return (eb) =>
    eb.or([
      eb.and([
        byScope(eb),
        eb.or([
          eb.and([
            eb('status', '=', 'ACTIVE'),
            eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]),
          ]),
          eb('owner_id', '=', viewer.subject),
        ]),
      ]),
      ...(viewer.reviewer === true
        ? [eb.and([eb(tenant, '=', viewer.tenantId), eb('status', '=', 'QUARANTINED')])]
        : []),
    ]);
}

/** Narrows a query of memories by `filter` ({@link MemoryFilter}: ACTIVE only unless statuses are given). */
function withFilter(query: MemoryQuery, filter: MemoryFilter): MemoryQuery {
  let q = query;
  const statuses = filter.statuses?.length ? filter.statuses : ['ACTIVE'];
  const now = filter.now;
  if (now === undefined || statuses.includes('ACTIVE') === statuses.includes('EXPIRED')) {
    q = q.where('status', 'in', [...statuses]);
  } else {
    // ACTIVE and due counts as EXPIRED.
    const due = (eb: ExpressionBuilder<Database, 'memories'>) =>
      eb.and([eb('status', '=', 'ACTIVE'), eb('expires_at', 'is not', null), eb('expires_at', '<=', now)]);
    const others = statuses.filter((s) => s !== 'ACTIVE' && s !== 'EXPIRED');
    q = statuses.includes('ACTIVE')
      ? q.where((eb) =>
          eb.or([
            eb.and([
              eb('status', '=', 'ACTIVE'),
              eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]),
            ]),
            ...(others.length > 0 ? [eb('status', 'in', others)] : []),
          ]),
        )
      : q.where((eb) =>
          eb.or([
            eb('status', '=', 'EXPIRED'),
            due(eb),
            ...(others.length > 0 ? [eb('status', 'in', others)] : []),
          ]),
        );
  }
  if (filter.types?.length) q = q.where('type', 'in', [...filter.types]);
  if (filter.namespaces?.length) q = q.where('namespace', 'in', [...filter.namespaces]);
  if (filter.scopes?.length) q = q.where('scope', 'in', [...filter.scopes]);
  if (filter.ownerId !== undefined) q = q.where('owner_id', '=', filter.ownerId);
  if (filter.evergreenOnly === true) q = q.where('evergreen', '=', 1);
  if (filter.occurredFrom !== undefined) q = q.where('occurred_at', '>=', filter.occurredFrom);
  if (filter.occurredBefore !== undefined) q = q.where('occurred_at', '<', filter.occurredBefore);
  if (filter.keys?.length) q = q.where('mkey', 'in', [...filter.keys]);
  if (filter.orgId !== undefined) q = q.where('scope', '=', 'ORG').where('org_id', '=', filter.orgId);
  if (filter.sourceKinds?.length) q = q.where('source_kind', 'in', [...filter.sourceKinds]);
  if (filter.minConfidence !== undefined) q = q.where('confidence', '>=', filter.minConfidence);
  if (filter.createdFrom !== undefined) q = q.where('created_at', '>=', filter.createdFrom);
  if (filter.createdBefore !== undefined) q = q.where('created_at', '<', filter.createdBefore);
  const at = filter.validAt;
  if (at !== undefined) {
    q = q
      .where((eb) => eb.or([eb('valid_from', 'is', null), eb('valid_from', '<=', at)]))
      .where((eb) => eb.or([eb('valid_until', 'is', null), eb('valid_until', '>', at)]));
  }
  return q;
}

/**
 * Memories and their revisions. Every write also writes a revision and, in the same transaction,
 * an outbox row for the indexer. Writes take the caller's transaction (`trx`) so that governance
 * can combine several (supersede = update old + create new) atomically.
 */
export class MemoryRepository {
  constructor(private readonly store: Store) {}

  /** Inserts a memory (status ACTIVE unless given), its CREATE revision and its outbox row. */
  async create(
    trx: Executor,
    input: NewMemory,
    revision: RevisionInput,
    now = Date.now(),
  ): Promise<MemoryRecord> {
    const record: MemoryRecord = {
      ...input,
      id: newId(now),
      status: input.status ?? 'ACTIVE',
      statusReason: input.statusReason ?? '',
      contentHash: memoryContentHash(input),
      createdAt: now,
      updatedAt: now,
      version: 1,
    };
    await trx.insertInto('memories').values(toRow(record)).execute();
    await this.#writeRevision(trx, record, undefined, record, revision, [], now);
    await enqueueOutbox(
      trx,
      [{ tenantId: record.tenantId, aggregate: 'MEMORY', aggregateId: record.id, operation: 'UPSERT' }],
      now,
    );
    return record;
  }

  /** A memory by id within the tenant, whatever its status and scope (callers check visibility). */
  async get(tenantId: string, id: string, executor?: Executor): Promise<MemoryRecord | undefined> {
    return findOne(this.store, 'memories', { tenant_id: tenantId, id }, toRecord, executor);
  }

  /**
   * Memories by id within the tenant, whatever their status and scope (callers check visibility),
   * in one query per 500 ids; absent ids are simply missing from the map.
   */
  async getMany(tenantId: string, ids: readonly string[]): Promise<Map<string, MemoryRecord>> {
    const found = new Map<string, MemoryRecord>();
    const unique = [...new Set(ids)];
    for (let i = 0; i < unique.length; i += 500) {
      const batch = unique.slice(i, i + 500);
      const rows = await run(this.store, (db) =>
        db
          .selectFrom('memories')
          .selectAll()
          .where(filterOnly(db, 'tenant_id'), '=', tenantId)
          .where('id', 'in', batch)
          .execute(),
      );
      for (const row of rows) found.set(row.id, toRecord(row));
    }
    return found;
  }

  /**
   * A memory if `viewer` may see it at `now` ({@link memoryVisibleTo}; NOT_FOUND otherwise:
   * invisible and absent look the same).
   */
  async getVisible(viewer: Viewer, id: string, now = Date.now()): Promise<MemoryRecord> {
    const row = await run(this.store, (db) =>
      db
        .selectFrom('memories')
        .selectAll()
        .where(memoryVisibleTo(viewer, now))
        .where('id', '=', id)
        .executeTakeFirst(),
    );
    if (row === undefined) throw errors.notFound(`memories/${id}`);
    return toRecord(row);
  }

  /**
   * The memories of `ids` that `viewer` may see at `now` ({@link memoryVisibleTo}), in one query
   * per 500 ids; invisible and absent ids are simply missing from the map.
   */
  async getManyVisible(
    viewer: Viewer,
    ids: readonly string[],
    now = Date.now(),
  ): Promise<Map<string, MemoryRecord>> {
    const found = new Map<string, MemoryRecord>();
    for (const batch of batches([...new Set(ids)], PURGE_BATCH)) {
      const rows = await run(this.store, (db) =>
        db
          .selectFrom('memories')
          .selectAll()
          .where(memoryVisibleTo(viewer, now, filterOnly(db, 'tenant_id')))
          .where('id', 'in', batch)
          .execute(),
      );
      for (const row of rows) found.set(row.id, toRecord(row));
    }
    return found;
  }

  /**
   * Memories visible to `viewer` ({@link memoryVisibleTo} at `filter.now`, else now), newest first
   * (id descending: ids sort by creation time).
   */
  async list(viewer: Viewer, filter: MemoryFilter, page: PageRequest): Promise<Page<MemoryRecord>> {
    return keysetPage(this.store, page, {
      // The token belongs to the query, not to the instant: every page of a listing is read at its
      // own `now` (with `now` in the fingerprint, every next page was refused as another query).
      query: { viewer, filter: { ...filter, now: undefined } },
      rows: (db) =>
        withFilter(
          db
            .selectFrom('memories')
            .selectAll()
            .where(memoryVisibleTo(viewer, filter.now ?? Date.now())),
          filter,
        ),
      order: keysetOn('id', 'desc', String),
      toItem: toRecord,
    });
  }

  /** The ACTIVE memory with this identity (supersede and dedupe by namespace/key). */
  async findActiveByKey(
    trx: Executor,
    identity: Pick<MemoryRecord, 'tenantId' | 'ownerId' | 'scope' | 'orgId' | 'namespace' | 'key'>,
  ): Promise<MemoryRecord | undefined> {
    const row = await trx
      .selectFrom('memories')
      .selectAll()
      .where('tenant_id', '=', identity.tenantId)
      .where('owner_id', '=', identity.ownerId)
      .where('namespace', '=', identity.namespace)
      .where('mkey', '=', identity.key)
      .where('status', '=', 'ACTIVE')
      .where('scope', '=', identity.scope)
      .where('org_id', '=', identity.orgId)
      .orderBy('id', 'desc')
      .executeTakeFirst();
    return row === undefined ? undefined : toRecord(row);
  }

  /** ACTIVE memories of every tenant whose `expires_at` is at or before `now`, soonest first. */
  async findExpired(now: number, limit: number): Promise<MemoryRecord[]> {
    const rows = await run(this.store, (db) =>
      db
        .selectFrom('memories')
        .selectAll()
        .where('status', '=', 'ACTIVE')
        .where('expires_at', '<=', now)
        .orderBy('expires_at', 'asc')
        .limit(limit)
        .execute(),
    );
    return rows.map(toRecord);
  }

  /** How many ACTIVE memories `ownerId` has in the tenant (of `type`, when given; evergreen only, when asked). */
  async countActive(
    tenantId: string,
    ownerId: string,
    options: { readonly type?: MemoryType; readonly evergreenOnly?: boolean } = {},
    executor?: Executor,
  ): Promise<number> {
    const query = (db: Executor) => {
      let q = db
        .selectFrom('memories')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('tenant_id', '=', tenantId)
        .where('owner_id', '=', ownerId)
        .where('status', '=', 'ACTIVE');
      if (options.type !== undefined) q = q.where('type', '=', options.type);
      if (options.evergreenOnly === true) q = q.where('evergreen', '=', 1);
      return q.executeTakeFirstOrThrow();
    };
    const row = await read(this.store, executor, query);
    return row.n;
  }

  /** Non-deleted memories of the owner with exactly this content (dedupe). */
  async findByContentHash(
    trx: Executor,
    tenantId: string,
    ownerId: string,
    contentHash: string,
  ): Promise<MemoryRecord[]> {
    const rows = await trx
      .selectFrom('memories')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('owner_id', '=', ownerId)
      .where('content_hash', '=', contentHash)
      .where('status', 'in', ['ACTIVE', 'QUARANTINED'])
      .execute();
    return rows.map(toRecord);
  }

  /**
   * Applies `patch` if the stored version is still `expectedVersion` (optimistic concurrency):
   * otherwise ABORTED `ETAG_MISMATCH`, and nothing is written. Writes the revision and the outbox
   * row in the same transaction. Returns the new record.
   */
  async update(
    trx: Executor,
    tenantId: string,
    id: string,
    expectedVersion: number,
    patch: MemoryPatch,
    revision: RevisionInput,
    now = Date.now(),
  ): Promise<MemoryRecord> {
    const before = await this.get(tenantId, id, trx);
    if (before === undefined) throw errors.notFound(`memories/${id}`);
    if (before.version !== expectedVersion) throw etagMismatch(`memories/${id}`);
    const after: MemoryRecord = { ...before, ...patch, updatedAt: now, version: before.version + 1 };
    const changed = { ...after, contentHash: memoryContentHash(after) };
    const result = await trx
      .updateTable('memories')
      .set(toRow(changed))
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .where('version', '=', expectedVersion)
      .executeTakeFirst();
    // Another writer committed between our read and our write.
    if (Number(result.numUpdatedRows) !== 1) throw etagMismatch(`memories/${id}`);
    const paths = Object.keys(patch).filter(
      (k) =>
        JSON.stringify(before[k as keyof MemoryRecord]) !== JSON.stringify(changed[k as keyof MemoryRecord]),
    );
    await this.#writeRevision(trx, changed, before, changed, revision, paths, now);
    await enqueueOutbox(
      trx,
      [
        {
          tenantId,
          aggregate: 'MEMORY',
          aggregateId: id,
          operation: changed.status === 'ACTIVE' ? 'UPSERT' : 'DELETE',
        },
      ],
      now,
    );
    return changed;
  }

  /** Revisions of a memory, oldest first. */
  async listRevisions(
    tenantId: string,
    memoryId: string,
    page: PageRequest,
  ): Promise<Page<MemoryRevisionRecord>> {
    return keysetPage(this.store, page, {
      query: { tenantId, memoryId },
      rows: (db) =>
        db
          .selectFrom('memory_revisions')
          .selectAll()
          .where('tenant_id', '=', tenantId)
          .where('memory_id', '=', memoryId),
      order: keysetOn('version', 'asc', Number),
      toItem: toRevisionRecord,
    });
  }

  /**
   * Hard-deletes memories (ForgetUser; any status and scope): their revisions are reduced to
   * content-free audit records (`memory_revision_audits`) and deleted with the memories, and one
   * MEMORY DELETE outbox row per memory removes its point. Ids that do not exist are skipped.
   */
  async purge(
    trx: Executor,
    tenantId: string,
    ids: readonly string[],
    options: PurgeOptions,
    now = Date.now(),
  ): Promise<PurgedMemoryCounts> {
    const audits = (trx as Kysely<Database>).withTables<{
      memory_revision_audits: MemoryRevisionAuditsTable;
    }>();
    let memories = 0;
    let revisionsRedacted = 0;
    for (const batch of batches(ids, PURGE_BATCH)) {
      const found = await trx
        .selectFrom('memories')
        .select('id')
        .where(filterOnly(trx, 'tenant_id'), '=', tenantId)
        .where('id', 'in', batch)
        .execute();
      if (found.length === 0) continue;
      const present = found.map((m) => m.id);
      await audits
        .insertInto('memory_revision_audits')
        .columns([...AUDITED_COLUMNS, 'erased_by', 'erased_at'])
        .expression((eb) =>
          eb
            .selectFrom('memory_revisions')
            .select((r) => [
              ...AUDITED_COLUMNS,
              r.val(options.erasedBy.slice(0, 128)).as('erased_by'),
              r.val(now).as('erased_at'),
            ])
            .where('tenant_id', '=', tenantId)
            .where('memory_id', 'in', present),
        )
        .execute();
      revisionsRedacted += await deleteWhereIn(trx, 'memory_revisions', tenantId, 'memory_id', present);
      memories += await deleteWhereIn(trx, 'memories', tenantId, 'id', present);
      await enqueueOutbox(
        trx,
        present.map((id) => ({
          tenantId,
          aggregate: 'MEMORY' as const,
          aggregateId: id,
          operation: 'DELETE' as const,
          ...(options.payload !== undefined ? { payload: options.payload } : {}),
        })),
        now,
      );
    }
    return { memories, revisionsRedacted };
  }

  /**
   * Hard-deletes every memory of `ownerId` in the tenant created at or before the cutoff, whatever
   * its status and scope (ORG memories the owner created included), as {@link purge} does.
   */
  async purgeOwner(
    trx: Executor,
    tenantId: string,
    ownerId: string,
    options: PurgeOptions & { readonly createdAtOrBefore: number },
    now = Date.now(),
  ): Promise<PurgedMemoryCounts> {
    const rows = await trx
      .selectFrom('memories')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('owner_id', '=', ownerId)
      .where('created_at', '<=', options.createdAtOrBefore)
      .orderBy('id')
      .execute();
    return this.purge(
      trx,
      tenantId,
      rows.map((r) => r.id),
      options,
      now,
    );
  }

  /**
   * Replaces `actorId` as the actor of the revisions it caused at or before the cutoff (on other
   * owners' memories, e.g. as a reviewer) with `replacement` (a forget receipt's name). Returns
   * how many revisions changed.
   */
  async replaceRevisionActor(
    trx: Executor,
    tenantId: string,
    actorId: string,
    replacement: string,
    createdAtOrBefore: number,
  ): Promise<number> {
    const result = await trx
      .updateTable('memory_revisions')
      .set({ actor_id: replacement })
      .where('tenant_id', '=', tenantId)
      .where('actor_id', '=', actorId)
      .where('created_at', '<=', createdAtOrBefore)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /** Ids of the memories of `ownerId` that these extraction jobs wrote or changed. */
  async idsWrittenByJobs(
    trx: Executor,
    tenantId: string,
    ownerId: string,
    jobIds: readonly string[],
  ): Promise<string[]> {
    const ids = new Set<string>();
    for (const batch of batches(jobIds, PURGE_BATCH)) {
      const rows = await trx
        .selectFrom('memory_revisions')
        .innerJoin('memories', 'memories.id', 'memory_revisions.memory_id')
        .select('memories.id')
        .where('memories.tenant_id', '=', tenantId)
        .where('memories.owner_id', '=', ownerId)
        .where('memory_revisions.extraction_job_id', 'in', batch)
        .execute();
      for (const row of rows) ids.add(row.id);
    }
    return [...ids].sort();
  }

  /** One revision of a memory by its id (NOT the audit record of a purged memory). */
  async getRevision(
    tenantId: string,
    memoryId: string,
    revisionId: string,
    executor?: Executor,
  ): Promise<MemoryRevisionRecord | undefined> {
    return findOne(
      this.store,
      'memory_revisions',
      { tenant_id: tenantId, memory_id: memoryId, id: revisionId },
      toRevisionRecord,
      executor,
    );
  }

  /** The newest revision of a memory (highest version), e.g. the one that deleted it. */
  async latestRevision(
    tenantId: string,
    memoryId: string,
    executor?: Executor,
  ): Promise<MemoryRevisionRecord | undefined> {
    const row = await read(this.store, executor, (db) =>
      db
        .selectFrom('memory_revisions')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .where('memory_id', '=', memoryId)
        .orderBy('version', 'desc')
        .limit(1)
        .executeTakeFirst(),
    );
    return row === undefined ? undefined : toRevisionRecord(row);
  }

  async #writeRevision(
    trx: Executor,
    record: MemoryRecord,
    before: MemoryRecord | undefined,
    after: MemoryRecord | undefined,
    revision: RevisionInput,
    changedPaths: string[],
    now: number,
  ): Promise<void> {
    await trx
      .insertInto('memory_revisions')
      .values({
        id: newId(now),
        tenant_id: record.tenantId,
        memory_id: record.id,
        version: record.version,
        action: revision.action,
        actor_kind: revision.actorKind,
        actor_id: revision.actorId,
        reason: (revision.reason ?? '').slice(0, 1024),
        rule: revision.rule ?? '',
        before_json: before === undefined ? null : toJson(before),
        after_json: after === undefined ? null : toJson(after),
        changed_paths_json: toJson(changedPaths),
        request_id: revision.requestId ?? '',
        extraction_job_id: revision.extractionJobId ?? null,
        created_at: now,
      })
      .execute();
  }
}

/** A `memory_revisions` row as its record. */
export function toRevisionRecord(r: Selectable<MemoryRevisionsTable>): MemoryRevisionRecord {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    memoryId: r.memory_id,
    version: r.version,
    action: r.action as RevisionAction,
    actorKind: r.actor_kind as ActorKind,
    actorId: r.actor_id,
    reason: r.reason,
    rule: r.rule,
    requestId: r.request_id,
    extractionJobId: optional(r.extraction_job_id),
    before: fromJson<MemoryRecord>(r.before_json),
    after: fromJson<MemoryRecord>(r.after_json),
    changedPaths: fromJson<string[]>(r.changed_paths_json) ?? [],
    createdAt: r.created_at,
  };
}

/** A revision record as its `memory_revisions` row (the inverse of {@link toRevisionRecord}). */
export function toRevisionRow(r: MemoryRevisionRecord): Selectable<MemoryRevisionsTable> {
  return {
    id: r.id,
    tenant_id: r.tenantId,
    memory_id: r.memoryId,
    version: r.version,
    action: r.action,
    actor_kind: r.actorKind,
    actor_id: r.actorId,
    reason: r.reason.slice(0, 1024),
    rule: r.rule,
    before_json: r.before === undefined ? null : toJson(r.before),
    after_json: r.after === undefined ? null : toJson(r.after),
    changed_paths_json: toJson(r.changedPaths),
    request_id: r.requestId,
    extraction_job_id: r.extractionJobId ?? null,
    created_at: r.createdAt,
  };
}
