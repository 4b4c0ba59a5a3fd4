import { join } from 'node:path';
import { z } from 'zod';

const unset = (v: unknown) => (v === '' ? undefined : v);

/**
 * The environment variables that say where the source of truth lives, shared by every service
 * that opens it (each service's `config.ts` composes this shape into its own schema).
 */
export const storeEnvShape = {
  /** Local state: the embedded SQLite database (and other embedded files). */
  ENGRAM_DATA_DIR: z.preprocess(unset, z.string().default('.engram')),
  /** MySQL 8 / MariaDB source of truth; unset: `<ENGRAM_DATA_DIR>/engram.db`. */
  MYSQL_URL: z.preprocess(
    unset,
    z
      .string()
      .regex(/^mysql:\/\//, { error: 'expected a mysql://user:password@host:port/database URL' })
      .optional(),
  ),
} as const;

export type StoreEnv = z.output<z.ZodObject<typeof storeEnvShape>>;

/** Where the source of truth lives: MYSQL_URL, else `<ENGRAM_DATA_DIR>/engram.db`. */
export function storeTarget(config: StoreEnv): string {
  return config.MYSQL_URL ?? join(config.ENGRAM_DATA_DIR, 'engram.db');
}
