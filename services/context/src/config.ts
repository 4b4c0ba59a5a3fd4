import { parseEnv, serviceEnvSchema, type ServiceEnv } from '@engram/runtime';

/** Port of the context service when it runs as its own process (`ENGRAM_PORT` overrides). */
export const DEFAULT_PORT = 50064;

export type ContextConfig = ServiceEnv;

/** Parses the environment once, at start; a bad variable fails with its name. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): ContextConfig {
  return parseEnv(serviceEnvSchema(DEFAULT_PORT), env);
}
