/** JSON helpers for FACT values: shape checks, canonical form, size and depth. */
import type { JsonValue } from '@engram/store';

export type JsonObject = { [key: string]: JsonValue };

function isPlain(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === null || Object.getPrototypeOf(proto) === null;
}

/** Whether `value` is a plain JSON object (not null, not an array). */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The path of the first part of `value` that JSON cannot represent (a non-finite number,
 * `undefined`, a function, a class instance), or undefined when it is all JSON.
 */
export function nonJsonPath(value: unknown, path = 'value'): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : path;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const inner = nonJsonPath(value[i], `${path}[${i}]`);
      if (inner !== undefined) return inner;
    }
    return undefined;
  }
  // Plain objects only (any realm, or without prototype); not Date, Map, class instances.
  if (
    typeof value === 'object' &&
    Object.prototype.toString.call(value) === '[object Object]' &&
    isPlain(value)
  ) {
    for (const [key, inner] of Object.entries(value)) {
      const found = nonJsonPath(inner, `${path}.${key}`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  return path;
}

/** The value with object keys sorted at every level (arrays keep their order). */
export function canonicalize(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(canonicalize);
  if (isJsonObject(value)) {
    const sorted: JsonObject = {};
    for (const key of Object.keys(value).sort()) sorted[key] = canonicalize(value[key] ?? null);
    return sorted;
  }
  return value;
}

/** Compact JSON with sorted keys: equal for values that mean the same. */
export function canonicalJson(value: JsonValue | undefined): string {
  return value === undefined ? '' : JSON.stringify(canonicalize(value));
}

/** Bytes of the compact UTF-8 JSON serialization. */
export function jsonBytes(value: JsonValue): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

/**
 * Nesting depth: a scalar is 0, `{}` or `[]` is 1, `{"a": {}}` is 2. Iterative, with no spread of
 * children into arguments, so neither a wide array nor a deep value overflows the stack.
 */
export function jsonDepth(value: JsonValue): number {
  let deepest = 0;
  const pending: [JsonValue, number][] = [[value, 0]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [item, depth] = next;
    const children = Array.isArray(item) ? item : isJsonObject(item) ? Object.values(item) : undefined;
    if (children === undefined) continue;
    deepest = Math.max(deepest, depth + 1);
    for (const child of children) pending.push([child, depth + 1]);
  }
  return deepest;
}
