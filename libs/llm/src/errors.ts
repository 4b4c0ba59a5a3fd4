import { Code } from '@connectrpc/connect';
import { EngramError, isEngramError } from '@engram/errors';

/** The `dependency` metadata of every model failure (`engram.common.v1.ErrorReason` lists `model`). */
export const MODEL_DEPENDENCY = 'model';

/**
 * The error of a model that gave no valid answer in `attempts` tries. There is no dedicated
 * `ErrorReason` for it: the dependency failed to do its job and a later call may well succeed
 * (sampling varies), which is what UNAVAILABLE `DEPENDENCY_UNAVAILABLE` tells a client.
 * `failure: output_invalid` tells it apart from a transport failure in process and in logs.
 */
export function modelOutputInvalid(
  schemaName: string,
  attempts: number,
  problem: string,
  cause?: unknown,
): EngramError {
  return new EngramError(
    Code.Unavailable,
    'DEPENDENCY_UNAVAILABLE',
    `model gave no valid ${schemaName} answer in ${attempts} ${attempts === 1 ? 'attempt' : 'attempts'}: ${problem}`,
    { dependency: MODEL_DEPENDENCY, failure: 'output_invalid', schema: schemaName, attempts },
    { cause },
  );
}

/** Whether `error` is the model's repeated invalid output ({@link modelOutputInvalid}). */
export function isModelOutputInvalid(error: unknown): error is EngramError {
  return isEngramError(error) && error.metadata['failure'] === 'output_invalid';
}
