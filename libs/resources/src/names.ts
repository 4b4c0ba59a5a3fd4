import { errors } from '@engram/runtime';

/** A ULID, as every Engram resource id is. */
export const ULID_PATTERN = '[0-9A-HJKMNP-TV-Z]{26}';

const SESSION_NAME = new RegExp(`^sessions/(${ULID_PATTERN})$`);
const MESSAGE_NAME = new RegExp(`^sessions/(${ULID_PATTERN})/messages/(${ULID_PATTERN})$`);

/** INVALID_ARGUMENT `NAME_INVALID` naming the field and the expected pattern. */
export function badName(field: string, pattern: string): never {
  throw errors.invalidArgument('NAME_INVALID', `${field} must look like ${pattern}`, { field, pattern });
}

/** `sessions/{id}` → id, or INVALID_ARGUMENT `NAME_INVALID` (`FIELD_REQUIRED` when empty). */
export function parseSessionName(name: string, field = 'name'): string {
  if (name === '') throw errors.fieldRequired(field);
  return SESSION_NAME.exec(name)?.[1] ?? badName(field, 'sessions/{session}');
}

/** `sessions/{s}/messages/{m}` → ids, or INVALID_ARGUMENT `NAME_INVALID` (`FIELD_REQUIRED` when empty). */
export function parseMessageName(name: string, field = 'name'): { sessionId: string; messageId: string } {
  if (name === '') throw errors.fieldRequired(field);
  const match = MESSAGE_NAME.exec(name);
  if (match?.[1] === undefined || match[2] === undefined) {
    return badName(field, 'sessions/{session}/messages/{message}');
  }
  return { sessionId: match[1], messageId: match[2] };
}

/**
 * The paths of an update mask, checked against the updatable ones: FIELD_REQUIRED when the mask is
 * empty, UPDATE_MASK_INVALID naming the first unknown or non-updatable path (`*` included).
 */
export function checkUpdateMask(
  paths: readonly string[],
  updatable: readonly string[],
  field = 'update_mask',
): void {
  if (paths.length === 0) throw errors.fieldRequired(field);
  for (const path of paths) {
    if (!updatable.includes(path)) {
      throw errors.invalidArgument(
        'UPDATE_MASK_INVALID',
        `${field} path "${path}" is unknown or not updatable; updatable: ${updatable.join(', ')}`,
        { field, path },
      );
    }
  }
}

/** The range of `google.protobuf.Timestamp`: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z. */
const MIN_SECONDS = -62_135_596_800n;
const MAX_SECONDS = 253_402_300_799n;

/**
 * A timestamp as epoch milliseconds, or INVALID_ARGUMENT `FIELD_INVALID` naming `field` when it is
 * outside the Timestamp range or its nanos are not 0–999,999,999.
 */
export function checkedTimestampMs(
  t: { readonly seconds: bigint; readonly nanos: number },
  field: string,
): number {
  if (
    t.seconds < MIN_SECONDS ||
    t.seconds > MAX_SECONDS ||
    !Number.isInteger(t.nanos) ||
    t.nanos < 0 ||
    t.nanos > 999_999_999
  ) {
    throw errors.fieldInvalid(field, 'not a valid timestamp (years 1–9999, nanos 0–999999999)');
  }
  return Number(t.seconds) * 1000 + Math.floor(t.nanos / 1_000_000);
}
