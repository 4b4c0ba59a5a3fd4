import type { Store } from './database.js';
import { run } from './store-context.js';

/** A user of a tenant, with the time of their newest session or memory. */
export interface RecentOwner {
  readonly ownerId: string;
  /** Epoch milliseconds of the newest session or memory update. */
  readonly lastActiveAt: number;
}

/**
 * The owners of a tenant's newest sessions and memories, newest first, at most `limit`. Only the
 * Studio's loopback sign-in uses it (the local user picker on the machine that runs the
 * all-in-one); it is never exposed to a remote caller.
 */
export async function recentOwners(store: Store, tenantId: string, limit = 50): Promise<RecentOwner[]> {
  return run(store, async (db) => {
    const newest = (table: 'sessions' | 'memories') =>
      db
        .selectFrom(table)
        .select(['owner_id', (eb) => eb.fn.max<number | string>('updated_at').as('last')])
        .where('tenant_id', '=', tenantId)
        .groupBy('owner_id')
        .orderBy('last', 'desc')
        .limit(limit)
        .execute();
    const [sessions, memories] = await Promise.all([newest('sessions'), newest('memories')]);
    const latest = new Map<string, number>();
    for (const row of [...sessions, ...memories]) {
      // MariaDB answers a bigint aggregate as a string.
      const at = Number(row.last);
      if ((latest.get(row.owner_id) ?? -Infinity) < at) latest.set(row.owner_id, at);
    }
    return [...latest]
      .map(([ownerId, lastActiveAt]) => ({ ownerId, lastActiveAt }))
      .sort((a, b) => b.lastActiveAt - a.lastActiveAt || a.ownerId.localeCompare(b.ownerId))
      .slice(0, limit);
  });
}
