import { monotonicFactory } from 'ulid';

const next = monotonicFactory();

/** A new ULID: 26 characters, sortable by creation time (monotonic within a millisecond). */
export function newId(now: number = Date.now()): string {
  return next(now);
}

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** Whether `value` is a well-formed ULID. */
export function isId(value: string): boolean {
  return ULID.test(value);
}
