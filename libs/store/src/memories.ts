import { etagMismatch } from './errors.js';
import { createHash } from 'node:crypto';
import { errors } from '@engram/runtime';
import { fromFlag, fromJson, optional, toFlag, toJson, type JsonValue } from './codec.js';
import type { Store } from './database.js';
import { newId } from './ids.js';
import { enqueueOutbox } from './outbox.js';
import { decodePageToken, toPage, type Page, type PageRequest } from './pagination.js';
import type { MemoryRow } from './schema.js';
import { run, type Executor } from './store-context.js';
import { visibleTo, type Scope, type Viewer } from './visibility.js';

export type { Scope, Viewer } from './visibility.js';
export type MemoryType = 'FACT' | 'EPISODE' | 'EVENT' | 'FORESIGHT' | 'SUMMARY';
export type MemoryStatus = 'ACTIVE' | 'SUPERSEDED' | 'EXPIRED' | 'DELETED' | 'QUARANTINED';
export type SourceKind =
  'EXPLICIT_USER_STATEMENT' | 'INFERRED' | 'ASSISTANT' | 'DOCUMENT' | 'IMPORT' | 'SYSTEM';

/** Where a memory came from. */
export interface Evidence {
  readonly messageIds: readonly string[];
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
}

/** sha256 over what makes two memories the same content (type, identity, value, text). */
export function memoryContentHash(
  m: Pick<MemoryRecord, 'type' | 'namespace' | 'key' | 'value' | 'text'>,
): string {
  return createHash('sha256')
    .update(JSON.stringify([m.type, m.namespace, m.key, m.value ?? null, m.text.normalize('NFC').trim()]))
    .digest('hex');
}

function toRecord(row: MemoryRow): MemoryRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    ownerId: row.owner_id,
    orgId: row.org_id,
    scope: row.scope as Scope,
    type: row.type as MemoryType,
    namespace: row.namespace,
    key: row.mkey,
    ...(row.value_json === null ? {} : { value: fromJson<JsonValue>(row.value_json) }),
    text: row.text,
    evergreen: fromFlag(row.evergreen),
    sourceKind: row.source_kind as SourceKind,
    confidence: row.confidence,
    status: row.status as MemoryStatus,
    statusReason: row.status_reason,
    supersedesId: optional(row.supersedes_id),
    supersededById: optional(row.superseded_by_id),
    evidence: fromJson<Evidence>(row.evidence_json) ?? { messageIds: [], chunkIds: [] },
    languageCode: row.language_code,
    metadata: fromJson<Record<string, string>>(row.metadata_json) ?? {},
    contentHash: row.content_hash,
    occurredAt: numberOrUndefined(row.occurred_at),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    expiresAt: numberOrUndefined(row.expires_at),
    validFrom: numberOrUndefined(row.valid_from),
    validUntil: numberOrUndefined(row.valid_until),
    version: row.version,
  };
}

function numberOrUndefined(value: number | null): number | undefined {
  return value ?? undefined;
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
    const query = (db: Executor) =>
      db
        .selectFrom('memories')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .where('id', '=', id)
        .executeTakeFirst();
    const row = executor === undefined ? await run(this.store, query) : await query(executor);
    return row === undefined ? undefined : toRecord(row);
  }

  /** A memory if `viewer` may see it (NOT_FOUND otherwise: invisible and absent look the same). */
  async getVisible(viewer: Viewer, id: string): Promise<MemoryRecord> {
    const row = await run(this.store, (db) =>
      db.selectFrom('memories').selectAll().where(visibleTo(viewer)).where('id', '=', id).executeTakeFirst(),
    );
    if (row === undefined) throw errors.notFound(`memories/${id}`);
    return toRecord(row);
  }

  /** Memories visible to `viewer`, newest first (id descending: ids sort by creation time). */
  async list(viewer: Viewer, filter: MemoryFilter, page: PageRequest): Promise<Page<MemoryRecord>> {
    const queryKey = { viewer, filter };
    const after = decodePageToken(page.pageToken, queryKey);
    const rows = await run(this.store, (db) => {
      let q = db.selectFrom('memories').selectAll().where(visibleTo(viewer));
      const statuses = filter.statuses?.length ? filter.statuses : ['ACTIVE'];
      q = q.where('status', 'in', [...statuses]);
      if (filter.types?.length) q = q.where('type', 'in', [...filter.types]);
      if (filter.namespaces?.length) q = q.where('namespace', 'in', [...filter.namespaces]);
      if (filter.scopes?.length) q = q.where('scope', 'in', [...filter.scopes]);
      if (filter.ownerId !== undefined) q = q.where('owner_id', '=', filter.ownerId);
      if (filter.evergreenOnly === true) q = q.where('evergreen', '=', 1);
      if (filter.occurredFrom !== undefined) q = q.where('occurred_at', '>=', filter.occurredFrom);
      if (filter.occurredBefore !== undefined) q = q.where('occurred_at', '<', filter.occurredBefore);
      if (after !== undefined) q = q.where('id', '<', String(after));
      return q
        .orderBy('id', 'desc')
        .limit(page.pageSize + 1)
        .execute();
    });
    return toPage(rows, page.pageSize, (r) => r.id, toRecord, queryKey);
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
    const row = executor === undefined ? await run(this.store, query) : await query(executor);
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
    const queryKey = { tenantId, memoryId };
    const after = decodePageToken(page.pageToken, queryKey);
    const rows = await run(this.store, (db) => {
      let q = db
        .selectFrom('memory_revisions')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .where('memory_id', '=', memoryId);
      if (after !== undefined) q = q.where('version', '>', Number(after));
      return q
        .orderBy('version', 'asc')
        .limit(page.pageSize + 1)
        .execute();
    });
    return toPage(
      rows,
      page.pageSize,
      (r) => r.version,
      (r): MemoryRevisionRecord => ({
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
      }),
      queryKey,
    );
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

function toRow(m: MemoryRecord) {
  return {
    id: m.id,
    tenant_id: m.tenantId,
    owner_id: m.ownerId,
    org_id: m.orgId,
    scope: m.scope,
    type: m.type,
    namespace: m.namespace,
    mkey: m.key,
    value_json: m.value === undefined ? null : toJson(m.value),
    text: m.text,
    evergreen: toFlag(m.evergreen),
    source_kind: m.sourceKind,
    confidence: m.confidence,
    status: m.status,
    status_reason: m.statusReason.slice(0, 1024),
    supersedes_id: m.supersedesId ?? null,
    superseded_by_id: m.supersededById ?? null,
    evidence_json: toJson(m.evidence),
    language_code: m.languageCode,
    metadata_json: toJson(m.metadata),
    content_hash: m.contentHash,
    occurred_at: m.occurredAt ?? null,
    created_at: m.createdAt,
    updated_at: m.updatedAt,
    expires_at: m.expiresAt ?? null,
    valid_from: m.validFrom ?? null,
    valid_until: m.validUntil ?? null,
    version: m.version,
  };
}
