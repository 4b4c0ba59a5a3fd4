// `ENGRAM_SERVICE=wait-for-migrations`: the Kubernetes init container of every Engram Deployment.
// Exits 0 once the database at MYSQL_URL (else the SQLite file in ENGRAM_DATA_DIR) has every
// migration this image knows applied, i.e. once the migration Job of the same release has run.
// Polls every ENGRAM_WAIT_INTERVAL_SEC (default 3) until ENGRAM_WAIT_TIMEOUT_SEC (default 900),
// then exits 1 (Kubernetes restarts the init container with backoff). It never migrates anything.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { isMysqlTarget, knownMigrations, openStore } from '@engram/store';

const target = process.env['MYSQL_URL'] ?? join(process.env['ENGRAM_DATA_DIR'] ?? '.engram', 'engram.db');
const where = isMysqlTarget(target) ? target.replace(/\/\/[^@]*@/, '//***@') : target;
const interval = Number(process.env['ENGRAM_WAIT_INTERVAL_SEC'] ?? '3') * 1000;
const deadline = Date.now() + Number(process.env['ENGRAM_WAIT_TIMEOUT_SEC'] ?? '900') * 1000;
const wanted = knownMigrations();

/** Names of the migrations still missing from the database (all of them when it cannot be read). */
async function pending() {
  const store = openStore({ target });
  try {
    const { rows } = await sql`select name from schema_migrations`.execute(store.db);
    const applied = new Set(rows.map((row) => row.name));
    return wanted.filter((name) => !applied.has(name));
  } finally {
    await store.close();
  }
}

let last = '';
for (;;) {
  let message;
  try {
    const missing = await pending();
    if (missing.length === 0) {
      process.stdout.write(`[wait-for-migrations] ${where} has all ${wanted.length} migrations\n`);
      process.exit(0);
    }
    message = `waiting for the migration job: ${missing.join(', ')} not applied to ${where}`;
  } catch (error) {
    message = `waiting for ${where}: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (message !== last) process.stderr.write(`[wait-for-migrations] ${message}\n`);
  last = message;
  if (Date.now() >= deadline) {
    process.stderr.write('[wait-for-migrations] timed out\n');
    process.exit(1);
  }
  await sleep(interval);
}
