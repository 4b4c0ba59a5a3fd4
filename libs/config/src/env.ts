import { z } from 'zod';

/** A configuration error names every offending environment variable and what it expects. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';

  constructor(readonly problems: readonly { variable: string; message: string }[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p.variable}: ${p.message}`).join('\n')}`);
  }
}

/**
 * Parses the environment once with a zod schema whose keys are variable names. Only a service's
 * `config.ts` calls this. Throws {@link ConfigError} naming each bad variable.
 */
export function parseEnv<S extends z.ZodType>(
  schema: S,
  env: Readonly<Record<string, string | undefined>>,
): z.output<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => ({
      variable: issue.path.length > 0 ? issue.path.map(String).join('.') : '(environment)',
      message: issue.message,
    })),
  );
}

/** Empty strings count as unset (every helper below applies it). */
export const unsetIfEmpty = (value: unknown) => (value === '' ? undefined : value);

export const envInt = (defaultValue: number, min: number, max: number) =>
  z.preprocess(
    unsetIfEmpty,
    z.coerce
      .number({ error: `expected an integer from ${min} to ${max}` })
      .int({ error: `expected an integer from ${min} to ${max}` })
      .min(min, { error: `expected an integer from ${min} to ${max}` })
      .max(max, { error: `expected an integer from ${min} to ${max}` })
      .default(defaultValue),
  );

export const envNumber = (defaultValue: number, min: number, max: number) =>
  z.preprocess(
    unsetIfEmpty,
    z.coerce
      .number({ error: `expected a number from ${min} to ${max}` })
      .min(min, { error: `expected a number from ${min} to ${max}` })
      .max(max, { error: `expected a number from ${min} to ${max}` })
      .default(defaultValue),
  );

export const envString = () => z.preprocess(unsetIfEmpty, z.string().optional());

export const envEnum = <const T extends readonly [string, ...string[]]>(values: T, defaultValue: T[number]) =>
  z.preprocess(
    unsetIfEmpty,
    z.enum(values, { error: `expected one of: ${values.join(', ')}` }).default(defaultValue),
  );
