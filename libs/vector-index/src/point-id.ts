import { createHash } from 'node:crypto';
import type { ItemKind } from './port.js';

/**
 * The point id of a source row: a name-based UUID (version 5 layout over SHA-1) of `kind:sourceId`.
 * Deterministic, so a retried or replayed outbox row overwrites its point instead of duplicating it.
 */
export function pointId(kind: ItemKind, sourceId: string): string {
  const hash = createHash('sha1').update(`engram:${kind}:${sourceId}`).digest();
  hash[6] = ((hash[6] ?? 0) & 0x0f) | 0x50;
  hash[8] = ((hash[8] ?? 0) & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
