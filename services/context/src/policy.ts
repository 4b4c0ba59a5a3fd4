import { CompactionMode, type CompactionPolicy } from '@engram/contracts/context';
import { errors } from '@engram/runtime';
import type { ContextSettings } from './config.js';

/** Validates the compaction policy's fields; returns the threshold (default applied). */
function checkCompactionPolicy(
  policy: CompactionPolicy | undefined,
  field: string,
  defaults: ContextSettings['compaction'],
) {
  const range = (value: number | undefined, name: string, min: number, max: number, fallback: number) => {
    if (value === undefined) return fallback;
    if (!Number.isInteger(value) || value < min || value > max) {
      throw errors.fieldInvalid(`${field}.${name}`, `expected an integer from ${min} to ${max}`);
    }
    return value;
  };
  return {
    thresholdTokens: range(
      policy?.thresholdTokens,
      'threshold_tokens',
      200,
      1_000_000,
      defaults.thresholdTokens,
    ),
    keepRecentTurns: range(policy?.keepRecentTurns, 'keep_recent_turns', 0, 200, defaults.keepRecentTurns),
    summaryMaxTokens: range(
      policy?.summaryMaxTokens,
      'summary_max_tokens',
      100,
      4_000,
      defaults.summaryMaxTokens,
    ),
  };
}

/** A compaction's policy with every field set, and the mode asked for. */
export interface CheckedPolicy {
  readonly thresholdTokens: number;
  readonly keepRecentTurns: number;
  readonly summaryMaxTokens: number;
  readonly mode: 'AUTO' | 'MODEL' | 'OFFLINE';
}

/** Validates a compaction policy (defaults applied). */
export function checkPolicy(
  policy: CompactionPolicy | undefined,
  field: string,
  settings: ContextSettings,
): CheckedPolicy {
  const sizes = checkCompactionPolicy(policy, field, settings.compaction);
  const mode = policy?.mode ?? CompactionMode.UNSPECIFIED;
  const modes: Partial<Record<CompactionMode, CheckedPolicy['mode']>> = {
    [CompactionMode.UNSPECIFIED]: 'AUTO',
    [CompactionMode.AUTO]: 'AUTO',
    [CompactionMode.MODEL]: 'MODEL',
    [CompactionMode.OFFLINE]: 'OFFLINE',
  };
  const checked = modes[mode];
  if (checked === undefined) throw errors.fieldInvalid(`${field}.mode`, 'unknown value');
  return { ...sizes, mode: checked };
}
