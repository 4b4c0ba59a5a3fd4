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
