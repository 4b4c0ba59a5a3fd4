/**
 * @engram/config: configuration from the environment, parsed once with zod. A service's or a
 * library's `config.ts` declares its variables with these helpers and {@link parseEnv} names every
 * offending variable in one {@link ConfigError}.
 */
export { ConfigError, envEnum, envInt, envNumber, envString, parseEnv, unsetIfEmpty } from './env.js';
