import type { Kysely, Selectable } from 'kysely';
import type { Store } from './database.js';
import { filterOnly } from './dialect.js';
import type { Database } from './schema.js';
import { run } from './store-context.js';

/** Ids per `IN (…)` list of a batched read. */
export const IDS_PER_QUERY = 500;

/**
 * Records by id, for the batched reads of the repositories: `read` runs one query per
 * {@link IDS_PER_QUERY} distinct ids; the map holds what was found in the order of `ids` (first
 * occurrence), and absent ids are simply missing from it. No ids, no query.
 */
export async function readByIds<Row extends { readonly id: string }, R>(
  ids: readonly string[],
  read: (batch: readonly string[]) => Promise<readonly Row[]>,
  toRecord: (row: Row) => R,
): Promise<Map<string, R>> {
  const unique = [...new Set(ids)];
  const rows = new Map<string, Row>();
  for (let i = 0; i < unique.length; i += IDS_PER_QUERY) {
    for (const row of await read(unique.slice(i, i + IDS_PER_QUERY))) rows.set(row.id, row);
  }
  const found = new Map<string, R>();
  for (const id of unique) {
    const row = rows.get(id);
    if (row !== undefined) found.set(id, toRecord(row));
  }
  return found;
}

/** The tables whose rows have an `id` and a `tenant_id`. */
type TenantTable = {
  [T in keyof Database]: Database[T] extends { id: string; tenant_id: string } ? T : never;
}[keyof Database];

/**
 * The rows of `table` in the tenant with these ids, mapped by `toRecord`, as {@link readByIds}
 * returns them (whatever their scope or state: callers check visibility).
 */
export function findByIds<T extends TenantTable, R>(
  store: Store,
  table: T,
  tenantId: string,
  ids: readonly string[],
  toRecord: (row: Selectable<Database[T]>) => R,
): Promise<Map<string, R>> {
  // Kysely's types cannot follow a table given as a type parameter: the query is built on an
  // untyped view, and the signature keeps the caller's types exact.
  type Row = Selectable<Database[T]> & { readonly id: string };
  return readByIds<Row, R>(
    ids,
    (batch) =>
      run(store, async (db) => {
        const untyped = db as unknown as Kysely<Record<string, Record<string, unknown>>>;
        const rows = await untyped
          .selectFrom(table)
          .selectAll()
          .where(filterOnly(untyped, 'tenant_id'), '=', tenantId)
          .where('id', 'in', batch)
          .execute();
        return rows as Row[];
      }),
    toRecord,
  );
}
