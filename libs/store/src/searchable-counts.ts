import type { Store } from './database.js';
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

/** One searchable source row, across tenants, for a full rebuild of the index. */
export interface SearchableRow {
  readonly tenantId: string;
  readonly id: string;
  /** ROUND: the session of the user message. */
  readonly sessionId?: string;
}

/**
 * Searchable source rows of one kind after `afterId` (id order, all tenants): ACTIVE memories,
 * READY documents (their chunks are expanded by the indexer), and USER messages (rounds).
 */
export async function scanSearchable(
  store: Store,
  kind: 'MEMORY' | 'DOCUMENT' | 'ROUND',
  afterId: string,
  limit: number,
): Promise<SearchableRow[]> {
  return run(store, async (db) => {
    if (kind === 'MEMORY') {
      const rows = await db
        .selectFrom('memories')
        .select(['tenant_id', 'id'])
        .where('status', '=', 'ACTIVE')
        .where('id', '>', afterId)
        .orderBy('id')
        .limit(limit)
        .execute();
      return rows.map((r) => ({ tenantId: r.tenant_id, id: r.id }));
    }
    if (kind === 'DOCUMENT') {
      const rows = await db
        .selectFrom('documents')
        .select(['tenant_id', 'id'])
        .where('state', '=', 'READY')
        .where('id', '>', afterId)
        .orderBy('id')
        .limit(limit)
        .execute();
      return rows.map((r) => ({ tenantId: r.tenant_id, id: r.id }));
    }
    const rows = await db
      .selectFrom('messages')
      .select(['tenant_id', 'id', 'session_id'])
      .where('role', '=', 'USER')
      .where('id', '>', afterId)
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ tenantId: r.tenant_id, id: r.id, sessionId: r.session_id }));
  });
}
