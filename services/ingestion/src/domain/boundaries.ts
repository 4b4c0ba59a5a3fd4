/**
 * Rule-based boundary detection over the open tail of a session (blueprint §3 flow 2): a calendar
 * date change in the session's time zone, a silence longer than the gap, and the token and message
 * caps. Pure: the caller closes the MemCells it returns, in order, in the append's transaction.
 */

/** Thresholds of the rules (the API documents the defaults; the server may configure others). */
export interface BoundaryRules {
  /** A silence longer than this between two messages closes the cell before the second, ms. */
  readonly timeGapMs: number;
  /** A cell ends before the message that would take it over this many tokens. */
  readonly tokenCap: number;
  /** A cell that reaches this many messages is closed. */
  readonly messageCap: number;
}

export const DEFAULT_BOUNDARY_RULES: BoundaryRules = {
  timeGapMs: 30 * 60_000,
  tokenCap: 8_000,
  messageCap: 50,
};

/** What the rules read of a message. */
export interface TailMessage {
  readonly sequence: number;
  readonly occurredAt: number;
  readonly tokenCount: number;
}

export type RuleReason = 'DATE_CHANGE' | 'TIME_GAP' | 'TOKEN_CAP' | 'MESSAGE_CAP';

/** A cell to close: the open tail's messages up to and including `throughSequence`. */
export interface RuleBoundary {
  readonly throughSequence: number;
  readonly reason: RuleReason;
}

const dayFormats = new Map<string, Intl.DateTimeFormat>();

/** Whether `timeZone` is an IANA zone this runtime knows (e.g. `Asia/Shanghai`, `UTC`). */
export function isValidTimeZone(timeZone: string): boolean {
  if (timeZone === '' || timeZone.length > 64) return false;
  try {
    dayFormat(timeZone);
    return true;
  } catch {
    return false;
  }
}

function dayFormat(timeZone: string): Intl.DateTimeFormat {
  let format = dayFormats.get(timeZone);
  if (format === undefined) {
    // en-CA renders YYYY-MM-DD, which orders as text.
    format = new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    });
    dayFormats.set(timeZone, format);
  }
  return format;
}

/** The calendar day of `epochMs` in `timeZone`, as `YYYY-MM-DD`. */
export function calendarDay(epochMs: number, timeZone: string): string {
  return dayFormat(timeZone).format(new Date(epochMs));
}

/**
 * The cells the rules close in `tail` (the open tail, by sequence ascending), in order. Between
 * two neighbours the first rule that holds decides: DATE_CHANGE (the later message falls on a
 * later calendar day), TIME_GAP (more than `timeGapMs` apart), TOKEN_CAP (the later message would
 * take the cell over the cap). A cell is also closed as soon as it reaches `messageCap` messages,
 * or when a single message is over the token cap (it forms a cell of its own). What remains after
 * the last boundary stays open.
 */
export function ruleBoundaries(
  tail: readonly TailMessage[],
  timeZone: string,
  rules: BoundaryRules = DEFAULT_BOUNDARY_RULES,
): RuleBoundary[] {
  const boundaries: RuleBoundary[] = [];
  let count = 0;
  let tokens = 0;
  let previous: TailMessage | undefined;
  for (const message of tail) {
    if (previous !== undefined && count > 0) {
      let reason: RuleReason | undefined;
      if (calendarDay(message.occurredAt, timeZone) > calendarDay(previous.occurredAt, timeZone)) {
        reason = 'DATE_CHANGE';
      } else if (message.occurredAt - previous.occurredAt > rules.timeGapMs) {
        reason = 'TIME_GAP';
      } else if (tokens + message.tokenCount > rules.tokenCap) {
        reason = 'TOKEN_CAP';
      }
      if (reason !== undefined) {
        boundaries.push({ throughSequence: previous.sequence, reason });
        count = 0;
        tokens = 0;
      }
    }
    count += 1;
    tokens += message.tokenCount;
    previous = message;
    if (count >= rules.messageCap) {
      boundaries.push({ throughSequence: message.sequence, reason: 'MESSAGE_CAP' });
      count = 0;
      tokens = 0;
    } else if (count === 1 && tokens > rules.tokenCap) {
      boundaries.push({ throughSequence: message.sequence, reason: 'TOKEN_CAP' });
      count = 0;
      tokens = 0;
    }
  }
  return boundaries;
}

/**
 * Whether a silent open tail should be closed by the periodic sweep: its last message is more
 * than the gap in the past.
 */
export function silenceExpired(lastMessageAt: number, now: number, rules: BoundaryRules): boolean {
  return now - lastMessageAt > rules.timeGapMs;
}
