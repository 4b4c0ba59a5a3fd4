import type { Expression, ExpressionBuilder, Kysely, Selectable, SqlBool } from 'kysely';
import { errors } from '@engram/errors';
import type { Store } from './database.js';
import { filterOnly } from './dialect.js';
import type { Database } from './schema.js';
import { read, run, type Executor } from './store-context.js';
import { visibleTo, type ScopedTable, type Viewer } from './visibility.js';

/** Any table of any schema, as the query builder sees it when the table is a type parameter. */
type AnyTables = Record<string, Record<string, unknown>>;

/**
 * The reads below name their table and columns through type parameters, which Kysely's types
 * cannot follow: they build the query on this view of the executor, and their signatures keep the
 * caller's types exact.
 */
function untyped(db: Executor): Kysely<AnyTables> {
  return db as unknown as Kysely<AnyTables>;
}

/**
 * The row of `table` whose columns equal `match` (conditions in its key order: tenant, parent,
 * id), mapped by `toRecord`; undefined when there is none. Reads on `executor` when given (inside
 * the caller's transaction), else on the store. `DB` is the schema `table` belongs to.
 */
export async function findOne<T extends keyof DB & string, R, DB = Database>(
  store: Store,
  table: T,
  match: Readonly<Partial<Selectable<DB[T]>>>,
  toRecord: (row: Selectable<DB[T]>) => R,
  executor?: Executor,
): Promise<R | undefined> {
  const row = await read(store, executor, (db) => {
    let q = untyped(db).selectFrom(table).selectAll();
    for (const [column, value] of Object.entries(match)) q = q.where(column, '=', value);
    return q.executeTakeFirst();
  });
  return row === undefined ? undefined : toRecord(row as Selectable<DB[T]>);
}

/**
 * The row of `table` with this id if `viewer` may see it ({@link visibleTo}), mapped by
 * `toRecord`; NOT_FOUND `name` otherwise (invisible and absent look the same).
 */
export async function findVisible<T extends ScopedTable, R>(
  store: Store,
  table: T,
  viewer: Viewer,
  id: string,
  name: string,
  toRecord: (row: Selectable<Database[T]>) => R,
): Promise<R> {
  const visible = visibleTo<T>(viewer) as unknown as (
    eb: ExpressionBuilder<AnyTables, string>,
  ) => Expression<SqlBool>;
  const row = await run(store, (db) =>
    untyped(db).selectFrom(table).selectAll().where(visible).where('id', '=', id).executeTakeFirst(),
  );
  if (row === undefined) throw errors.notFound(name);
  return toRecord(row as Selectable<Database[T]>);
}

/**
 * Deletes the rows of `table` in the tenant whose `column` holds one of `values` (callers keep the
 * list within an `IN (…)` batch) and returns how many went. `DB` is the schema `table` belongs to.
 */
export async function deleteWhereIn<T extends keyof DB & string, DB = Database>(
  trx: Executor,
  table: T,
  tenantId: string,
  column: keyof DB[T] & string,
  values: readonly string[],
): Promise<number> {
  const name: string = column;
  const result = await untyped(trx)
    .deleteFrom(table as string)
    .where(filterOnly(trx, 'tenant_id'), '=', tenantId)
    .where(name, 'in', values)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
