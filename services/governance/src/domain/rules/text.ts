/** Small text helpers shared by the rules: lengths in code points, notes, durations, FACT text. */
import type { JsonValue } from '@engram/store';
import { isJsonObject } from './json.js';

/** Length in Unicode code points (what the contract's character limits count). */
export function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/** `text` cut to at most `max` code points, with an ellipsis when cut. */
export function truncate(text: string, max: number): string {
  if (codePoints(text) <= max) return text;
  return (
    Array.from(text)
      .slice(0, Math.max(0, max - 1))
      .join('') + '…'
  );
}

const UNITS: readonly [number, string][] = [
  [86_400_000, 'day'],
  [3_600_000, 'hour'],
  [60_000, 'minute'],
  [1_000, 'second'],
];

/** A duration for people: "30 days", "1 hour", "90 minutes", "250 ms". */
export function formatDuration(ms: number): string {
  for (const [size, unit] of UNITS) {
    if (ms >= size && ms % size === 0) {
      const n = ms / size;
      return `${n} ${unit}${n === 1 ? '' : 's'}`;
    }
  }
  if (ms >= 86_400_000) return `${(ms / 86_400_000).toFixed(1)} days`;
  if (ms >= 1_000) return `${(ms / 1_000).toFixed(1)} seconds`;
  return `${ms} ms`;
}

/** An instant for notes: ISO 8601 UTC. */
export function formatTime(ms: number): string {
  return new Date(ms).toISOString();
}

/** A fraction with two decimals, as thresholds are written in notes. */
export function formatFraction(value: number): string {
  return value.toFixed(2);
}

function renderValue(value: JsonValue): string {
  if (typeof value === 'string') return value;
  if (isJsonObject(value)) {
    const entries = Object.entries(value);
    return entries.length === 0 ? '{}' : entries.map(([k, v]) => `${k}: ${renderValue(v)}`).join('; ');
  }
  return JSON.stringify(value);
}

/**
 * The text of a FACT proposed without one (the contract: "rendered from the value"), e.g.
 * `user_preference / answer_style: style: concise`. At most `maxChars` code points.
 */
export function renderFactText(namespace: string, key: string, value: JsonValue, maxChars: number): string {
  return truncate(`${namespace} / ${key}: ${renderValue(value)}`, maxChars);
}
