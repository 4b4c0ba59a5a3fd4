import { detectLanguage, safeTimeZone, toLocal, type Lang } from '@engram/lexical';
import type { ChunkRecord, DocumentRecord, MemoryRecord, MessageRecord, SessionRecord } from '@engram/store';
import { STAGED_STATUS, pointId, type PointPayload } from '@engram/vector-index';

/**
 * What the indexer turns a source row into: the text to embed and tokenize, and the payload that
 * filters read. Pure functions of the rows, so a replayed outbox row produces the same point.
 * Only searchable items become points (ACTIVE memories, chunks of READY documents, rounds); every
 * other state removes the point, so `status` is always ACTIVE in the index.
 */
export interface IndexDocument {
  readonly id: string;
  readonly text: string;
  readonly payload: PointPayload;
}

/**
 * The version of the index texts below (rounds with speakers, date and preceding turn; FACTs as
 * sentences; dated episodes). Recorded with the collection's model id, so an index built from
 * older texts is stale and rebuilt by Reindex rather than mixed (decision 0021).
 */
export const INDEX_TEXT_VERSION = 2;

/** English day formatters by zone (formatters are costly to build; the indexer formats every round). */
const dayFormatters = new Map<string, Intl.DateTimeFormat>();

/** `Monday, 8 May 2023` / `2023年5月8日`: the calendar day of `at` in `timeZone` (UTC when unknown). */
export function dayText(at: number, timeZone: string, lang: Lang): string {
  const zone = safeTimeZone(timeZone);
  if (lang === 'zh') {
    const d = toLocal(at, zone);
    return `${d.year}年${d.month}月${d.day}日`;
  }
  let format = dayFormatters.get(zone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en', {
      timeZone: zone,
      year: 'numeric',
      month: 'long',
      day: 'numeric',
      weekday: 'long',
    });
    dayFormatters.set(zone, format);
  }
  const parts = format.formatToParts(at);
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  return `${part('weekday')}, ${part('day')} ${part('month')} ${part('year')}`;
}

/** Words of a namespace or key: `user_preference` → `user preference`, `daughter.emma` → `daughter emma`. */
function words(identifier: string): string {
  return identifier.replace(/[._/-]+/g, ' ').trim();
}

/** A JSON value as plain words: strings as they are, objects as `key value` pairs. */
function valueWords(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value))
    return value
      .map(valueWords)
      .filter((w) => w !== '')
      .join(', ');
  return Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => `${words(k)} ${valueWords(v)}`.trim())
    .join(', ');
}

/**
 * What a memory is indexed as: its text, and for a FACT a natural sentence made of its namespace,
 * key and value (so "What is my daughter's name?" matches `relationship/daughter {"name": "Emma"}`
 * even when the text is terse or empty), and for an EPISODE or EVENT the day it happened.
 */
export function memoryIndexText(memory: MemoryRecord): string {
  const lang = detectLanguage(memory.text, memory.languageCode);
  const parts: string[] = [];
  if (memory.text.trim() !== '') parts.push(memory.text.trim());
  if (memory.type === 'FACT') {
    const value = memory.value as Record<string, unknown> | undefined;
    const relation = typeof value?.['relation'] === 'string' ? value['relation'] : undefined;
    const name = typeof value?.['name'] === 'string' ? value['name'] : undefined;
    if (memory.namespace === 'relationship' && relation !== undefined) {
      // The relation is an English word: a Chinese text already names it in Chinese.
      if (lang === 'en')
        parts.push(name === undefined ? `I have a ${relation}.` : `My ${relation}'s name is ${name}.`);
    } else {
      const about = [words(memory.namespace), words(memory.key)].filter((w) => w !== '').join(' ');
      const detail = valueWords(memory.value);
      const sentence = lang === 'zh' ? `关于${about}：${detail}` : `About ${about}: ${detail}`;
      if (about !== '' || detail !== '') parts.push(sentence.trim());
    }
  }
  if ((memory.type === 'EPISODE' || memory.type === 'EVENT') && memory.occurredAt !== undefined) {
    parts.push(
      lang === 'zh'
        ? `（${dayText(memory.occurredAt, 'UTC', lang)}）`
        : `(${dayText(memory.occurredAt, 'UTC', lang)})`,
    );
  }
  return parts.join('\n');
}

/** An ACTIVE memory, or undefined when the memory must not be searchable. */
export function memoryDocument(memory: MemoryRecord): IndexDocument | undefined {
  if (memory.status !== 'ACTIVE') return undefined;
  return {
    id: pointId('MEMORY', memory.id),
    text: memoryIndexText(memory),
    payload: {
      tenantId: memory.tenantId,
      kind: 'MEMORY',
      sourceId: memory.id,
      scope: memory.scope,
      ownerId: memory.ownerId,
      orgId: memory.orgId,
      status: 'ACTIVE',
      memoryType: memory.type,
      namespace: memory.namespace,
      evergreen: memory.evergreen,
      createdAt: memory.createdAt,
      sourceUpdatedAt: memory.updatedAt,
      ...(memory.occurredAt === undefined ? {} : { occurredAt: memory.occurredAt }),
      ...(memory.expiresAt === undefined ? {} : { expiresAt: memory.expiresAt }),
    },
  };
}

/**
 * A chunk of a READY document (ACTIVE); with `staged`, also of a document still INGESTING, as a
 * {@link STAGED_STATUS} point no search returns until the document's READY row activates it.
 * Undefined otherwise (a FAILED document's chunks are never indexed).
 */
export function chunkDocument(
  chunk: ChunkRecord,
  document: DocumentRecord,
  staged = false,
): IndexDocument | undefined {
  const status =
    document.state === 'READY'
      ? 'ACTIVE'
      : staged && document.state === 'INGESTING'
        ? STAGED_STATUS
        : undefined;
  if (status === undefined) return undefined;
  return {
    id: pointId('CHUNK', chunk.id),
    text: chunk.text,
    payload: {
      tenantId: chunk.tenantId,
      kind: 'CHUNK',
      sourceId: chunk.id,
      scope: document.scope,
      ownerId: document.ownerId,
      orgId: document.orgId,
      status,
      documentId: document.id,
      createdAt: chunk.createdAt,
      sourceUpdatedAt: chunk.createdAt,
    },
  };
}

/** Who said a message, as the index text names them: the participant name, else the role. */
function speaker(message: MessageRecord): string {
  const name = message.participantName.trim();
  return name !== '' ? name : message.role.toLowerCase();
}

/**
 * The index text of a round: the day it happened, the turn it answers (the preceding message with
 * content, when there is one: a short reply such as "Yes, last Tuesday!" carries its question),
 * then the user message and the reply, each line led by who said it:
 *
 *   Monday, 8 May 2023
 *   Melanie: How was the support group?
 *   Caroline: It was so powerful, I went yesterday.
 *   Melanie: That's amazing!
 */
export function roundIndexText(
  session: SessionRecord,
  user: MessageRecord,
  reply: MessageRecord | undefined,
  previous: MessageRecord | undefined,
): string {
  const lang = detectLanguage(user.content, session.languageCode);
  const lines = [dayText(user.occurredAt, session.timeZone, lang)];
  if (previous !== undefined) lines.push(`${speaker(previous)}: ${previous.content}`);
  lines.push(`${speaker(user)}: ${user.content}`);
  if (reply !== undefined) lines.push(`${speaker(reply)}: ${reply.content}`);
  return lines.join('\n');
}

/**
 * A conversation round: the user message with the first assistant reply that has content after
 * it (SYSTEM, TOOL and tool-call-only messages in between are skipped). Indexed in SELF scope of
 * the session owner, keyed by the user message, so a later reply replaces the question-only point.
 * `previous` is the message before the user message that the round's text carries as context
 * ({@link previousTurn}).
 */
export function roundDocument(
  session: SessionRecord,
  user: MessageRecord,
  reply: MessageRecord | undefined,
  previous?: MessageRecord,
): IndexDocument {
  const text = roundIndexText(session, user, reply, previous);
  return {
    id: pointId('ROUND', user.id),
    text,
    payload: {
      tenantId: user.tenantId,
      kind: 'ROUND',
      sourceId: user.id,
      scope: 'SELF',
      ownerId: session.ownerId,
      orgId: '',
      status: 'ACTIVE',
      sessionId: session.id,
      occurredAt: user.occurredAt,
      createdAt: user.createdAt,
      sourceUpdatedAt: reply?.createdAt ?? user.createdAt,
    },
  };
}

/** The first reply of a round among the messages that follow the user message, in order. */
export function firstReply(following: readonly MessageRecord[]): MessageRecord | undefined {
  for (const message of following) {
    if (message.role === 'USER') return undefined;
    if (message.role === 'ASSISTANT' && message.content.trim() !== '') return message;
  }
  return undefined;
}

/**
 * The turn a round answers: the last USER or ASSISTANT message with content among the messages
 * before it (`preceding`, in sequence order); SYSTEM and TOOL messages and tool-call-only
 * assistant messages are skipped. Undefined when there is none.
 */
export function previousTurn(preceding: readonly MessageRecord[]): MessageRecord | undefined {
  return preceding.findLast(
    (message) => (message.role === 'USER' || message.role === 'ASSISTANT') && message.content.trim() !== '',
  );
}

/** Retry delay after `attempts` failures: exponential from 1 s, capped at 5 min, with ±20 % jitter. */
export function retryDelayMs(attempts: number, random: () => number = Math.random): number {
  const base = Math.min(300_000, 1_000 * 2 ** Math.max(0, attempts));
  return Math.round(base * (0.8 + 0.4 * random()));
}
