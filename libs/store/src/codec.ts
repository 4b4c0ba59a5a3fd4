/** Small encoders shared by the repositories: JSON text columns, 0/1 booleans, optional times. */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export function toJson(value: unknown): string {
  return JSON.stringify(value);
}

// The caller states what the column holds; JSON.parse cannot check it.
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters
export function fromJson<T>(text: string | null): T | undefined {
  return text === null ? undefined : (JSON.parse(text) as T);
}

export function toFlag(value: boolean): number {
  return value ? 1 : 0;
}

export function fromFlag(value: number | boolean): boolean {
  return value === 1 || value === true;
}

/** Nullable column → optional field. */
export function optional<T>(value: T | null): T | undefined {
  return value ?? undefined;
}
