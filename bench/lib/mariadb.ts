/**
 * A fresh database for a benchmark on the MariaDB of `scripts/ensure-mariadb.sh` (started here if
 * it is not running), named `<prefix><random>` (the test user may create `engram_test_*` ones),
 * and how to drop it.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createConnection } from 'mysql2/promise';

const WORKSPACE = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface ScratchDatabase {
  /** `mysql://…/<name>` for `openStore` or `MYSQL_URL`. */
  readonly url: string;
  /** The server's `VERSION()`. */
  readonly version: string;
  readonly drop: () => Promise<void>;
}

export async function scratchMariadbDatabase(prefix: `engram_test_${string}`): Promise<ScratchDatabase> {
  execFileSync('bash', ['scripts/ensure-mariadb.sh'], {
    cwd: WORKSPACE,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const file = join(process.env['ENGRAM_TEST_STATE_DIR'] ?? join(os.homedir(), '.engram-test'), 'mysql-url');
  const base = new URL(readFileSync(file, 'utf8').trim());
  const name = `${prefix}${randomBytes(5).toString('hex')}`;
  const admin = await createConnection({
    uri: `${base.protocol}//${base.username}:${base.password}@${base.host}/`,
  });
  let rows: unknown;
  try {
    await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    [rows] = await admin.query('SELECT VERSION() AS v');
  } catch (error) {
    await admin.end();
    throw error;
  }
  const version = (rows as { v: string }[])[0]?.v ?? '?';
  const url = new URL(base.href);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    version,
    drop: async () => {
      await admin.query(`DROP DATABASE \`${name}\``);
      await admin.end();
    },
  };
}
