import { join } from 'node:path';
import { z } from 'zod';
import { envInt, parseEnv, serverEnvShape } from '@engram/runtime';

/** The all-in-one port: `npm start` listens on 127.0.0.1:50051 unless told otherwise. */
export const DEFAULT_PORT = 50051;

const schema = z.object({
  ...serverEnvShape,
  ENGRAM_PORT: envInt(DEFAULT_PORT, 0, 65535),
  /** Local state: the generated signing secret and the embedded SQLite database. */
  ENGRAM_DATA_DIR: z.preprocess((v) => (v === '' ? undefined : v), z.string().default('.engram')),
  /** The source of truth on MySQL 8 / MariaDB; unset: SQLite in the data directory. */
  MYSQL_URL: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.string().regex(/^mysql:\/\//, { error: 'expected a mysql://user:password@host:port/database URL' }).optional(),
  ),
  /** Apply pending migrations at start (the all-in-one default; production runs a migration job). */
  ENGRAM_MIGRATE_ON_START: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.enum(['true', 'false'], { error: 'expected true or false' }).default('true'),
  ),
});

export type AllInOneConfig = z.output<typeof schema>;

/** Where the source of truth lives: MYSQL_URL, else `<ENGRAM_DATA_DIR>/engram.db`. */
export function storeTarget(config: AllInOneConfig): string {
  return config.MYSQL_URL ?? join(config.ENGRAM_DATA_DIR, 'engram.db');
}

/** Parses the environment once, at start; a bad variable fails with its name. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): AllInOneConfig {
  return parseEnv(schema, env);
}
