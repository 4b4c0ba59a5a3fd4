/**
 * Pure formatting helpers of the human output: no I/O, no colour decisions (the caller passes a
 * colour set), so they are unit-tested on their own.
 */
import type { Timestamp } from '@bufbuild/protobuf/wkt';
import Table from 'cli-table3';

/** The name of an enum value without its prefix (`MemoryType[1]` → `FACT`), or `-` for UNSPECIFIED. */
export function enumLabel(enumObject: Record<number, string>, value: number): string {
  const name = enumObject[value];
  if (name === undefined) return String(value);
  return name === 'UNSPECIFIED' ? '-' : name;
}

/** `PermissionDenied` → `PERMISSION_DENIED` (the gRPC spelling of a status code). */
export function upperSnake(camel: string): string {
  return camel.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

/** Collapses whitespace and cuts to `max` characters with an ellipsis. */
export function oneLine(text: string, max = 80): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  return `${flat.slice(0, Math.max(0, max - 1))}…`;
}

/** A score with a fixed number of decimals, or `-` when absent. */
export function formatScore(value: number | undefined, digits = 3): string {
  if (value === undefined || Number.isNaN(value)) return '-';
  return value.toFixed(digits);
}

/** A protobuf timestamp as ISO 8601 UTC without milliseconds, or `-`. */
export function formatTime(timestamp: Timestamp | undefined): string {
  if (timestamp === undefined) return '-';
  const ms = Number(timestamp.seconds) * 1000 + Math.floor(timestamp.nanos / 1e6);
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A byte count for people: `512 B`, `1.5 KiB`, `3.2 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** MIME types by file extension: the gateway's, shared with the MCP server's `ingest_document`. */
export { MIME_TYPES, mimeTypeOf } from '@engram/gateway';

/**
 * A resource name under `collection`: `abc` → `sessions/abc`, `sessions/abc` unchanged. Lets
 * people type the id they see without its collection.
 */
export function resourceName(collection: string, idOrName: string): string {
  const trimmed = idOrName.trim();
  return trimmed.startsWith(`${collection}/`) ? trimmed : `${collection}/${trimmed}`;
}

/** Renders a table with a plain ASCII-free box; `head` may already be coloured. */
export function renderTable(
  head: readonly string[],
  rows: readonly (readonly (string | number)[])[],
  options: { colWidths?: readonly (number | null)[]; wrap?: boolean } = {},
): string {
  const table = new Table({
    head: [...head],
    // Colours are the caller's decision (picocolors, off without a TTY or with NO_COLOR).
    style: { head: [], border: [], compact: true },
    wordWrap: options.wrap ?? true,
    ...(options.colWidths === undefined ? {} : { colWidths: [...options.colWidths] }),
  });
  for (const row of rows) table.push(row.map((cell) => String(cell)));
  return table.toString();
}

/** `key: value` lines with the keys padded to one width, for `show`-style output. */
export function renderFields(fields: readonly (readonly [string, string])[]): string {
  const width = Math.max(0, ...fields.map(([key]) => key.length));
  return fields.map(([key, value]) => `${`${key}:`.padEnd(width + 2)}${value}`).join('\n');
}

/** A progress bar's payload label for a file: the last `max` characters of its path. */
export function shortPath(path: string, max = 40): string {
  return path.length <= max ? path : `…${path.slice(path.length - max + 1)}`;
}

/** Reads `--kind` values: `memory`, `chunk`, `round` (case-insensitive); throws on others. */
export function parseKind(value: string): 'MEMORY' | 'CHUNK' | 'ROUND' {
  const upper = value.trim().toUpperCase();
  if (upper === 'MEMORY' || upper === 'CHUNK' || upper === 'ROUND') return upper;
  throw new Error(`unknown kind "${value}"; expected memory, chunk or round`);
}

/** Parses a positive integer option; throws with the option's name otherwise. */
export function parsePositiveInt(option: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed <= 0) {
    throw new Error(`${option} expects a positive integer, got "${value}"`);
  }
  return parsed;
}

/** Splits a file into parts of at most `size` bytes (the streamed upload). */
export function* parts(content: Uint8Array, size: number): Generator<Uint8Array> {
  for (let offset = 0; offset < content.length; offset += size) {
    yield content.subarray(offset, Math.min(offset + size, content.length));
  }
}

/** The content of a memory or candidate in one line: the gateway's, shared with the MCP tools. */
export { memoryContent } from '@engram/gateway';
