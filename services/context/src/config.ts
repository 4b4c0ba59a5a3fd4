import type { z } from 'zod';
import { parseEnv, serviceEnvSchema } from '@engram/runtime';
import { storeEnvShape } from '@engram/store';

/** Port of the context service when it runs as its own process (`ENGRAM_PORT` overrides). */
export const DEFAULT_PORT = 50064;

const schema = serviceEnvSchema(DEFAULT_PORT).extend(storeEnvShape);

export type ContextConfig = z.output<typeof schema>;

/** Parses the environment once, at start; a bad variable fails with its name. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): ContextConfig {
  return parseEnv(schema, env);
}
