import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openStore, isMysqlTarget } from './database.js';
import { migrateToLatest } from './migrator.js';

/**
 * `npm run migrate`: applies pending migrations to MYSQL_URL when set, else to the embedded SQLite
 * file `<ENGRAM_DATA_DIR>/engram.db` (default `.engram`). Idempotent. Prints what it applied.
 */
const target = process.env['MYSQL_URL'] ?? join(process.env['ENGRAM_DATA_DIR'] ?? '.engram', 'engram.db');
if (!isMysqlTarget(target)) mkdirSync(join(target, '..'), { recursive: true });
const store = openStore({ target });
try {
  const report = await migrateToLatest(store.db);
  const where = isMysqlTarget(target) ? target.replace(/\/\/[^@]*@/, '//***@') : target;
  process.stdout.write(
    report.applied.length > 0
      ? `applied ${report.applied.join(', ')} to ${where}\n`
      : `${where} is up to date (${report.current.length} migrations)\n`,
  );
} catch (error) {
  process.stderr.write(`migrate failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
} finally {
  await store.close();
}
