import { z } from 'zod';
import { contextEnvShape } from '@engram/context';
import { governanceEnvShape } from '@engram/governance';
import { ingestionEnvShape } from '@engram/ingestion';
import { refineRetrievalEnv, retrievalEnvShape } from '@engram/retrieval';
import { envEnum, envInt, parseEnv, serverEnvShape } from '@engram/runtime';
import { storeTarget } from '@engram/store';

export { storeTarget };

/** The all-in-one port: `npm start` listens on 127.0.0.1:50051 unless told otherwise. */
export const DEFAULT_PORT = 50051;

const schema = z
  .object({
    ...serverEnvShape,
    ...retrievalEnvShape,
    ...ingestionEnvShape,
    ...governanceEnvShape,
    ...contextEnvShape,
    ENGRAM_PORT: envInt(DEFAULT_PORT, 0, 65535),
    /**
     * `off` here (retrieval's own default is `on`): the all-in-one is one process held to 1 GiB, and
     * a search thread of its own raised its peak RSS from 873 to 1,090 MiB at 10k memories
     * (docs/benchmarks.md, decision 0042); queries then embed on the event loop, one ONNX thread.
     */
    ENGRAM_SEARCH_EMBED_THREAD: envEnum(['on', 'off'], 'off'),
    /** The Studio's local user picker on loopback (`off`: paste a token; decision 0038). */
    ENGRAM_STUDIO_LOCAL_SIGNIN: envEnum(['loopback', 'off'], 'loopback'),
    /** Apply pending migrations at start (the all-in-one default; production runs a migration job). */
    ENGRAM_MIGRATE_ON_START: z.preprocess(
      (v) => (v === '' ? undefined : v),
      z.enum(['true', 'false'], { error: 'expected true or false' }).default('true'),
    ),
  })
  .superRefine(refineRetrievalEnv);

export type AllInOneConfig = z.output<typeof schema>;

/** Parses the environment once, at start; a bad variable fails with its name. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): AllInOneConfig {
  return parseEnv(schema, env);
}
