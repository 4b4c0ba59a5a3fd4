import { z } from 'zod';
import { envInt, parseEnv, serverEnvShape } from '@engram/runtime';

/** The all-in-one port: `npm start` listens on 127.0.0.1:50051 unless told otherwise. */
export const DEFAULT_PORT = 50051;

const schema = z.object({
  ...serverEnvShape,
  ENGRAM_PORT: envInt(DEFAULT_PORT, 0, 65535),
  /** Local state: the generated signing secret now; the embedded database and index later. */
  ENGRAM_DATA_DIR: z.preprocess((v) => (v === '' ? undefined : v), z.string().default('.engram')),
});

export type AllInOneConfig = z.output<typeof schema>;

/** Parses the environment once, at start; a bad variable fails with its name. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): AllInOneConfig {
  return parseEnv(schema, env);
}
