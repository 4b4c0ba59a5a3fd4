import { sql, type SelectQueryBuilder } from 'kysely';
import type { Store } from './database.js';
import { filterOnly } from './dialect.js';
import type { Database } from './schema.js';
import { run } from './store-context.js';

/** How many rows of a tenant should be points in the vector index, per kind. */
export interface SearchableCounts {
  /** ACTIVE memories that have not expired. */
  readonly memories: number;
  /** Chunks of READY documents. */
  readonly chunks: number;
  /** Conversation rounds: one per USER message. */
  readonly rounds: number;
}

/**
 * The source-of-truth side of index drift: what the indexer should have turned into points for
 * `tenantId`. Compared with the index's own counts by retrieval's GetIndexStatus.
 */
export async function countSearchable(
  store: Store,
  tenantId: string,
  now = Date.now(),
): Promise<SearchableCounts> {
  return run(store, async (db) => {
    const memories = await db
      .selectFrom('memories')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('tenant_id', '=', tenantId)
      .where('status', '=', 'ACTIVE')
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .executeTakeFirstOrThrow();
    const chunks = await db
      .selectFrom('chunks')
      .innerJoin('documents', 'documents.id', 'chunks.document_id')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('chunks.tenant_id', '=', tenantId)
      .where('documents.state', '=', 'READY')
      .executeTakeFirstOrThrow();
    const rounds = await db
      .selectFrom('messages')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('tenant_id', '=', tenantId)
      .where('role', '=', 'USER')
      .executeTakeFirstOrThrow();
    return { memories: memories.n, chunks: chunks.n, rounds: rounds.n };
  });
}

/** One searchable source row, for a rebuild or a drift repair of the index. */
export interface SearchableRow {
  readonly tenantId: string;
  readonly id: string;
  /** ROUND: the session of the user message. */
  readonly sessionId?: string;
  /** When the row last changed (memories, documents), or was created (messages). */
  readonly updatedAt: number;
}

/**
 * Searchable source rows of one kind after `afterId`, in id order, of one tenant or of all:
 * ACTIVE memories, READY documents (the indexer expands their chunks), USER messages (rounds).
 */
export async function scanSearchable(
  store: Store,
  kind: 'MEMORY' | 'DOCUMENT' | 'ROUND',
  afterId: string,
  limit: number,
  tenantId?: string,
): Promise<SearchableRow[]> {
  // The rows of `q` after `afterId`, of the tenant when one is given, in id order.
  const scan = <TB extends keyof Database, O>(q: SelectQueryBuilder<Database, TB, O>) => {
    let scoped = q.where(sql.ref('id'), '>', afterId);
    if (tenantId !== undefined) scoped = scoped.where(sql.ref('tenant_id'), '=', tenantId);
    return scoped.orderBy(sql.ref('id')).limit(limit).execute();
  };
  return run(store, async (db) => {
    if (kind !== 'ROUND') {
      const rows = await (kind === 'MEMORY'
        ? scan(
            db
              .selectFrom('memories')
              .select(['tenant_id', 'id', 'updated_at'])
              .where('status', '=', 'ACTIVE'),
          )
        : scan(
            db.selectFrom('documents').select(['tenant_id', 'id', 'updated_at']).where('state', '=', 'READY'),
          ));
      return rows.map((r) => ({ tenantId: r.tenant_id, id: r.id, updatedAt: r.updated_at }));
    }
    const rows = await scan(
      db
        .selectFrom('messages')
        .select(['tenant_id', 'id', 'session_id', 'created_at'])
        .where('role', '=', 'USER'),
    );
    return rows.map((r) => ({
      tenantId: r.tenant_id,
      id: r.id,
      sessionId: r.session_id,
      updatedAt: r.created_at,
    }));
  });
}

/**
 * Of `ids` (source ids of one kind in one tenant), those whose row is still searchable: ACTIVE
 * unexpired memories, chunks of READY documents, USER messages. A drift repair deletes the points
 * of the others.
 */
export async function searchableIds(
  store: Store,
  tenantId: string,
  kind: 'MEMORY' | 'CHUNK' | 'ROUND',
  ids: readonly string[],
  now = Date.now(),
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  return run(store, async (db) => {
    if (kind === 'MEMORY') {
      const rows = await db
        .selectFrom('memories')
        .select('id')
        .where(filterOnly(db, 'tenant_id'), '=', tenantId)
        .where('id', 'in', [...ids])
        .where(filterOnly(db, 'status'), '=', 'ACTIVE')
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
        .execute();
      return new Set(rows.map((r) => r.id));
    }
    if (kind === 'CHUNK') {
      const rows = await db
        .selectFrom('chunks')
        .innerJoin('documents', 'documents.id', 'chunks.document_id')
        .select('chunks.id as id')
        .where(filterOnly(db, 'chunks.tenant_id'), '=', tenantId)
        .where('chunks.id', 'in', [...ids])
        .where(filterOnly(db, 'documents.state'), '=', 'READY')
        .execute();
      return new Set(rows.map((r) => r.id));
    }
    const rows = await db
      .selectFrom('messages')
      .select('id')
      .where(filterOnly(db, 'tenant_id'), '=', tenantId)
      .where('id', 'in', [...ids])
      .where('role', '=', 'USER')
      .execute();
    return new Set(rows.map((r) => r.id));
  });
}
