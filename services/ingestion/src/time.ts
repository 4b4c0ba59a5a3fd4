import { timestampMs, type Duration, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { HandlerContext } from '@connectrpc/connect';
import { errors } from '@engram/runtime';

/**
 * A `create_time_range` filter of a List call as the repositories take it, or INVALID_ARGUMENT
 * `TIME_RANGE_INVALID` when the range ends at or before its start.
 */
export function createTimeFilter(
  range: { readonly startTime?: Timestamp | undefined; readonly endTime?: Timestamp | undefined } | undefined,
): { createdFrom?: number; createdBefore?: number } {
  const from = range?.startTime === undefined ? undefined : timestampMs(range.startTime);
  const before = range?.endTime === undefined ? undefined : timestampMs(range.endTime);
  if (from !== undefined && before !== undefined && before <= from) {
    throw errors.invalidArgument('TIME_RANGE_INVALID', 'create_time_range ends at or before its start', {
      field: 'create_time_range',
    });
  }
  return {
    ...(from !== undefined ? { createdFrom: from } : {}),
    ...(before !== undefined ? { createdBefore: before } : {}),
  };
}

/** A request's wait timeout in whole milliseconds (sub-millisecond nanos are dropped). */
export function waitMsOf(duration: Duration): number {
  return Number(duration.seconds) * 1000 + Math.floor(duration.nanos / 1e6);
}

/**
 * When a wait of `ms` inside a call must end: after `ms`, or shortly before the call's own
 * deadline, which leaves the call time to answer.
 */
export function waitDeadline(ms: number, ctx: HandlerContext): number {
  const remaining = ctx.timeoutMs();
  return Date.now() + Math.min(ms, remaining === undefined ? ms : Math.max(0, remaining - 250));
}
