import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampDate, timestampFromMs, type Timestamp } from '@bufbuild/protobuf/wkt';
import { ErrorReason } from '@engram/contracts/common';
import {
  BoundaryReason,
  MemCellStatus,
  MessageRole,
  SessionStatus,
  type MemCellSchema,
  type Message,
  type MessageSchema,
  type Session,
  type SessionSchema,
} from '@engram/contracts/ingestion';
import { redact, redactMetadata } from '@engram/redaction';
import { errors } from '@engram/runtime';
import type {
  BoundaryReason as StoredBoundaryReason,
  MemCellRecord,
  MemCellStatus as StoredMemCellStatus,
  MessageRecord,
  MessageRole as StoredRole,
  NewMessage,
  SessionCounts,
  SessionRecord,
  SessionStatus as StoredSessionStatus,
} from '@engram/store';
import { isValidTimeZone } from './domain/boundaries.js';
import { countTokens } from './domain/token-count.js';

/** Limits of session.proto. */
const MAX_DISPLAY_NAME = 256;
const MAX_LANGUAGE_CODE = 35;
const MAX_CONTENT = 32_000;
const MAX_TOOL_CALLS = 32;
const MAX_TOOL_CALL_ID = 128;
export const MAX_MESSAGES_PER_APPEND = 100;
/** How far in the future of the server clock an `occur_time` may be, ms. */
export const MAX_FUTURE_MS = 5 * 60_000;

const EXTERNAL_ID = /^[A-Za-z0-9_.:/-]{1,128}$/;
const PARTICIPANT = /^[A-Za-z0-9_-]{1,64}$/;
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
// BCP-47, loosely: language, then subtags of letters and digits.
const LANGUAGE_CODE = /^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/;

const chars = (s: string) => Array.from(s).length;

/** Metadata maps: up to 32 entries, keys 1–64 characters, values up to 512. */
export function checkMetadata(field: string, metadata: Readonly<Record<string, string>>): void {
  const entries = Object.entries(metadata);
  if (entries.length > 32) throw errors.fieldInvalid(field, 'at most 32 entries');
  for (const [key, value] of entries) {
    if (chars(key) < 1 || chars(key) > 64) throw errors.fieldInvalid(field, 'keys are 1–64 characters');
    if (chars(value) > 512) throw errors.fieldInvalid(field, 'values are at most 512 characters');
  }
}

/** The session fields a client may set on creation or update, validated. */
export function checkSessionFields(
  session: Pick<Session, 'displayName' | 'languageCode' | 'timeZone' | 'metadata'>,
  paths: ReadonlySet<string> | 'all',
): void {
  const has = (p: string) => paths === 'all' || paths.has(p);
  if (has('display_name') && chars(session.displayName) > MAX_DISPLAY_NAME) {
    throw errors.fieldInvalid('session.display_name', `at most ${MAX_DISPLAY_NAME} characters`);
  }
  if (
    has('language_code') &&
    session.languageCode !== '' &&
    (session.languageCode.length > MAX_LANGUAGE_CODE || !LANGUAGE_CODE.test(session.languageCode))
  ) {
    throw errors.fieldInvalid('session.language_code', 'a BCP-47 tag of up to 35 characters');
  }
  if (has('time_zone') && session.timeZone !== '' && !isValidTimeZone(session.timeZone)) {
    throw errors.fieldInvalid('session.time_zone', 'an IANA time zone such as Asia/Shanghai');
  }
  if (has('metadata')) checkMetadata('session.metadata', session.metadata);
}

/** `external_id`: 1–128 characters of `[A-Za-z0-9_.:/-]`, or empty (none). */
export function checkExternalId(externalId: string): void {
  if (externalId !== '' && !EXTERNAL_ID.test(externalId)) {
    throw errors.fieldInvalid('session.external_id', '1–128 characters of [A-Za-z0-9_.:/-]');
  }
}

const ROLES_IN: Partial<Record<MessageRole, StoredRole>> = {
  [MessageRole.USER]: 'USER',
  [MessageRole.ASSISTANT]: 'ASSISTANT',
  [MessageRole.SYSTEM]: 'SYSTEM',
  [MessageRole.TOOL]: 'TOOL',
};
const ROLES_OUT: Record<StoredRole, MessageRole> = {
  USER: MessageRole.USER,
  ASSISTANT: MessageRole.ASSISTANT,
  SYSTEM: MessageRole.SYSTEM,
  TOOL: MessageRole.TOOL,
};

/** A role filter: UNSPECIFIED or unknown values are refused. */
export function storedRoles(roles: readonly MessageRole[], field: string): StoredRole[] {
  return roles.map((r) => {
    const role = ROLES_IN[r];
    if (role === undefined) throw errors.fieldInvalid(field, 'UNSPECIFIED or unknown role');
    return role;
  });
}

/** The milliseconds of a timestamp, validated as a real instant. */
export function timestampMsOf(ts: Timestamp, field: string): number {
  const ms = timestampDate(ts).getTime();
  if (!Number.isFinite(ms) || ts.nanos < 0 || ts.nanos > 999_999_999) {
    throw errors.fieldInvalid(field, 'not a valid timestamp');
  }
  return ms;
}

/**
 * Validates the messages of an append against the documented limits and turns them into what
 * the repository stores: secrets redacted (when `redactSecrets`), token counts in `o200k_base`.
 * Checks what does not depend on the stored session: in-request `occur_time` order and the
 * 5-minute future limit. Returns how many secrets were redacted (for metrics, never the values).
 */
export function prepareMessages(
  messages: readonly Message[],
  options: { readonly now: number; readonly redactSecrets: boolean },
): { messages: NewMessage[]; redactions: number } {
  if (messages.length === 0) throw errors.fieldRequired('messages');
  if (messages.length > MAX_MESSAGES_PER_APPEND) {
    throw errors.resourceExhausted(
      'BATCH_TOO_LARGE',
      `at most ${MAX_MESSAGES_PER_APPEND} messages per call`,
      {
        field: 'messages',
        limit: String(MAX_MESSAGES_PER_APPEND),
      },
    );
  }
  let redactions = 0;
  const clean = (text: string): string => {
    if (!options.redactSecrets) return text;
    const result = redact(text);
    redactions += result.findings.length;
    return result.text;
  };
  let previousAt = Number.NEGATIVE_INFINITY;
  const prepared = messages.map((m, i): NewMessage => {
    const at = (f: string) => `messages[${i}].${f}`;
    const role = ROLES_IN[m.role];
    if (role === undefined) {
      if (m.role === MessageRole.UNSPECIFIED) throw errors.fieldRequired(at('role'));
      throw errors.fieldInvalid(at('role'), 'unknown role');
    }
    if (m.toolCalls.length > 0 && role !== 'ASSISTANT') {
      throw errors.fieldInvalid(at('tool_calls'), 'only ASSISTANT messages carry tool calls');
    }
    if (m.content.trim() === '' && !(role === 'ASSISTANT' && m.toolCalls.length > 0)) {
      throw errors.fieldRequired(at('content'));
    }
    if (chars(m.content) > MAX_CONTENT)
      throw errors.fieldInvalid(at('content'), `at most ${MAX_CONTENT} characters`);
    if (m.participantName !== '' && !PARTICIPANT.test(m.participantName)) {
      throw errors.fieldInvalid(at('participant_name'), '1–64 characters of [A-Za-z0-9_-]');
    }
    if (m.toolCallId !== '') {
      if (role !== 'TOOL')
        throw errors.fieldInvalid(at('tool_call_id'), 'only TOOL messages answer a tool call');
      if (chars(m.toolCallId) > MAX_TOOL_CALL_ID) {
        throw errors.fieldInvalid(at('tool_call_id'), `at most ${MAX_TOOL_CALL_ID} characters`);
      }
    }
    if (m.toolCalls.length > MAX_TOOL_CALLS) {
      throw errors.fieldInvalid(at('tool_calls'), `at most ${MAX_TOOL_CALLS} tool calls per message`);
    }
    const ids = new Set<string>();
    const toolCalls = m.toolCalls.map((call, j) => {
      const f = (name: string) => `messages[${i}].tool_calls[${j}].${name}`;
      if (call.id === '') throw errors.fieldRequired(f('id'));
      if (call.id.trim() === '' || chars(call.id) > MAX_TOOL_CALL_ID) {
        throw errors.fieldInvalid(f('id'), `1–${MAX_TOOL_CALL_ID} characters, not only whitespace`);
      }
      if (ids.has(call.id)) throw errors.fieldInvalid(f('id'), 'repeated within the message');
      ids.add(call.id);
      if (call.name === '') throw errors.fieldRequired(f('name'));
      if (!TOOL_NAME.test(call.name))
        throw errors.fieldInvalid(f('name'), '1–64 characters of [A-Za-z0-9_-]');
      if (chars(call.argumentsJson) > MAX_CONTENT) {
        throw errors.fieldInvalid(f('arguments_json'), `at most ${MAX_CONTENT} characters`);
      }
      return { id: call.id, name: call.name, argumentsJson: clean(call.argumentsJson) };
    });
    checkMetadata(at('metadata'), m.metadata);
    let occurredAt: number | undefined;
    if (m.occurTime !== undefined) {
      occurredAt = timestampMsOf(m.occurTime, at('occur_time'));
      if (occurredAt > options.now + MAX_FUTURE_MS) {
        throw errors.fieldInvalid(at('occur_time'), 'more than 5 minutes in the future');
      }
      if (occurredAt < previousAt) {
        throw errors.fieldInvalid(at('occur_time'), "earlier than the previous message's occur_time");
      }
      previousAt = occurredAt;
    }
    const content = clean(m.content);
    // Each entry is read as `key: value`, so `{"password": "x"}` loses `x` (issue 18).
    const metadata = options.redactSecrets ? redactMetadata(m.metadata) : { ...m.metadata };
    redactions += Object.values(metadata).filter((v, j) => v !== Object.values(m.metadata)[j]).length;
    const tokenCount =
      countTokens(content) +
      toolCalls.reduce((n, c) => n + countTokens(c.name) + countTokens(c.argumentsJson), 0);
    return {
      role,
      content,
      ...(m.participantName !== '' ? { participantName: m.participantName } : {}),
      ...(m.toolCallId !== '' ? { toolCallId: m.toolCallId } : {}),
      toolCalls,
      tokenCount,
      metadata,
      ...(occurredAt !== undefined ? { occurredAt } : {}),
    };
  });
  return { messages: prepared, redactions };
}

/**
 * Checks the explicit `occur_time`s of an append against the session's latest message, inside
 * the append's transaction (the only place the latest time is known for sure).
 */
export function checkAfterLatest(messages: readonly NewMessage[], lastMessageAt: number | undefined): void {
  if (lastMessageAt === undefined) return;
  messages.forEach((m, i) => {
    if (m.occurredAt !== undefined && m.occurredAt < lastMessageAt) {
      throw errors.fieldInvalid(
        `messages[${i}].occur_time`,
        "earlier than the session's latest message (occur_time must not decrease)",
      );
    }
  });
}

const SESSION_STATUSES: Record<StoredSessionStatus, SessionStatus> = {
  ACTIVE: SessionStatus.ACTIVE,
  CLOSED: SessionStatus.CLOSED,
};

export function storedSessionStatuses(statuses: readonly SessionStatus[]): StoredSessionStatus[] {
  if (statuses.length > 2) throw errors.fieldInvalid('statuses', 'at most 2 values');
  return statuses.flatMap((s): StoredSessionStatus[] => {
    if (s === SessionStatus.ACTIVE) return ['ACTIVE'];
    if (s === SessionStatus.CLOSED) return ['CLOSED'];
    return ['ACTIVE', 'CLOSED']; // UNSPECIFIED: every status
  });
}

/** A stored session as the API's `Session`. */
export function sessionMessage(
  s: SessionRecord,
  counts: SessionCounts,
): MessageInitShape<typeof SessionSchema> {
  return {
    name: `sessions/${s.id}`,
    displayName: s.displayName,
    externalId: s.externalId ?? '',
    owner: s.ownerId,
    languageCode: s.languageCode,
    timeZone: s.timeZone,
    metadata: { ...s.metadata },
    status: SESSION_STATUSES[s.status],
    ...(s.closedAt !== undefined ? { closeTime: timestampFromMs(s.closedAt) } : {}),
    messageCount: BigInt(s.messageCount),
    lastSequence: BigInt(s.lastSequence),
    ...(s.lastMessageAt !== undefined ? { lastMessageTime: timestampFromMs(s.lastMessageAt) } : {}),
    openMessageCount: BigInt(counts.openMessageCount),
    openTokenCount: BigInt(counts.openTokenCount),
    memCellCount: counts.memCellCount,
    createTime: timestampFromMs(s.createdAt),
    updateTime: timestampFromMs(s.updatedAt),
    etag: `"${s.version}"`,
  };
}

/** `"<version>"` → version; undefined for ''. */
export function parseEtag(etag: string, field = 'etag'): number | undefined {
  if (etag === '') return undefined;
  const version = Number(/^"(\d+)"$/.exec(etag)?.[1] ?? Number.NaN);
  if (!Number.isSafeInteger(version)) throw errors.fieldInvalid(field, 'not an etag of this session');
  return version;
}

/** A stored message as the API's `Message`. */
export function messageMessage(m: MessageRecord): MessageInitShape<typeof MessageSchema> {
  return {
    name: `sessions/${m.sessionId}/messages/${m.id}`,
    sequence: BigInt(m.sequence),
    role: ROLES_OUT[m.role],
    content: m.content,
    participantName: m.participantName,
    toolCallId: m.toolCallId,
    occurTime: timestampFromMs(m.occurredAt),
    metadata: { ...m.metadata },
    toolCalls: m.toolCalls.map((c) => ({ id: c.id, name: c.name, argumentsJson: c.argumentsJson })),
    tokenCount: m.tokenCount,
    compacted: m.compacted,
    memCell: m.memCellId === undefined ? '' : `sessions/${m.sessionId}/memCells/${m.memCellId}`,
    createTime: timestampFromMs(m.createdAt),
  };
}

const BOUNDARY_REASONS: Record<StoredBoundaryReason, BoundaryReason> = {
  MODEL_JUDGEMENT: BoundaryReason.MODEL_JUDGEMENT,
  TOPIC_SHIFT: BoundaryReason.TOPIC_SHIFT,
  DATE_CHANGE: BoundaryReason.DATE_CHANGE,
  TIME_GAP: BoundaryReason.TIME_GAP,
  TOKEN_CAP: BoundaryReason.TOKEN_CAP,
  MESSAGE_CAP: BoundaryReason.MESSAGE_CAP,
  FLUSH: BoundaryReason.FLUSH,
  SESSION_CLOSED: BoundaryReason.SESSION_CLOSED,
};
const MEM_CELL_STATUSES: Record<StoredMemCellStatus, MemCellStatus> = {
  PENDING: MemCellStatus.PENDING,
  EXTRACTING: MemCellStatus.EXTRACTING,
  EXTRACTED: MemCellStatus.EXTRACTED,
  FAILED: MemCellStatus.FAILED,
};

export function storedMemCellStatuses(statuses: readonly MemCellStatus[]): StoredMemCellStatus[] {
  return statuses.flatMap((s): StoredMemCellStatus[] => {
    if (s === MemCellStatus.UNSPECIFIED) return [];
    const found = Object.entries(MEM_CELL_STATUSES).find(([, v]) => v === s)?.[0];
    if (found === undefined) throw errors.fieldInvalid('statuses', 'unknown status');
    return [found as StoredMemCellStatus];
  });
}

/** The `ErrorReason` enum value of a stored reason name ('' and unknown names: UNSPECIFIED). */
function errorReason(name: string): ErrorReason {
  const value = (ErrorReason as unknown as Record<string, ErrorReason | undefined>)[name];
  return value ?? ErrorReason.UNSPECIFIED;
}

/** A stored MemCell as the API's `MemCell`. */
export function memCellMessage(c: MemCellRecord): MessageInitShape<typeof MemCellSchema> {
  return {
    name: `sessions/${c.sessionId}/memCells/${c.id}`,
    firstSequence: BigInt(c.firstSequence),
    lastSequence: BigInt(c.lastSequence),
    messageCount: c.messageCount,
    tokenCount: c.tokenCount,
    boundaryReason: BOUNDARY_REASONS[c.reason],
    boundaryNote: c.boundaryNote,
    status: MEM_CELL_STATUSES[c.status],
    attempts: c.attempts,
    extractionJob: c.extractionJobId === undefined ? '' : `extractionJobs/${c.extractionJobId}`,
    lastErrorReason: errorReason(c.lastErrorReason),
    lastErrorMessage: c.lastError,
    ...(c.status === 'PENDING' && c.nextAttemptAt !== undefined
      ? { nextAttemptTime: timestampFromMs(c.nextAttemptAt) }
      : {}),
    openTime: timestampFromMs(c.openedAt),
    lastMessageTime: timestampFromMs(c.lastMessageAt),
    closeTime: timestampFromMs(c.closedAt),
    createTime: timestampFromMs(c.createdAt),
    updateTime: timestampFromMs(c.updatedAt),
  };
}
