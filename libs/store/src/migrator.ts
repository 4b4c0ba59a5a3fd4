import { Migrator, type Kysely, type MigrationResultSet } from 'kysely';
import { migrations } from './migrations/index.js';

/** Outcome of {@link migrateToLatest}: what ran now, and what was already applied. */
export interface MigrationReport {
  readonly applied: readonly string[];
  readonly current: readonly string[];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema version
function migrator(db: Kysely<any>): Migrator {
  return new Migrator({
    db,
    provider: { getMigrations: () => Promise.resolve({ ...migrations }) },
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
  });
}

/**
 * Applies every pending migration, in order, under Kysely's migration lock (safe when several
 * processes start at once). Idempotent: on a migrated database it applies nothing. Throws with the
 * failing migration's name if one fails.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema version
export async function migrateToLatest(db: Kysely<any>): Promise<MigrationReport> {
  const { error, results }: MigrationResultSet = await migrator(db).migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error !== undefined || failed !== undefined) {
    const name = failed?.migrationName ?? '(migrator)';
    throw new Error(`migration ${name} failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  const current = (await migrator(db).getMigrations())
    .filter((m) => m.executedAt !== undefined)
    .map((m) => m.name);
  return { applied: (results ?? []).map((r) => r.migrationName), current };
}

/** Names of all migrations this code knows, in order. */
export function knownMigrations(): string[] {
  return Object.keys(migrations).sort();
}
