import { redact } from '@engram/redaction';
import type { ContextSettings } from './config.js';
import type { CompactionResult } from './domain/types.js';

/** A text as context stores it: with its secrets replaced by placeholders, or unchanged. */
export type StoredText = (text: string) => string;

const unchanged: StoredText = (text) => text;
const redacted: StoredText = (text) => redact(text).text;

/**
 * How context stores a tenant's text (session states, compaction results, Chat replays): redacted
 * with the same detectors and the same setting as the messages ingestion stores (the tenant's
 * `redactSecrets`, else `ENGRAM_REDACT_SECRETS`).
 */
export function storedTextOf(settings: Pick<ContextSettings, 'redactSecrets'>, tenantId: string): StoredText {
  return settings.redactSecrets(tenantId) ? redacted : unchanged;
}

/** `text` cut to `max` code points (a placeholder can be longer than the secret it replaces). */
export function fitChars(text: string, max: number): string {
  const points = Array.from(text);
  return points.length <= max ? text : points.slice(0, max).join('');
}

/** What a compactor returned (a model's values included), as it may be stored. */
export function storedCompaction(result: CompactionResult, stored: StoredText): CompactionResult {
  const item = (i: CompactionResult['keyPoints'][number]) => ({ ...i, text: stored(i.text) });
  return {
    ...result,
    summary: stored(result.summary),
    keyPoints: result.keyPoints.map(item),
    openLoops: result.openLoops.map(item),
  };
}
