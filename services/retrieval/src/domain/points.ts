import type { ChunkRecord, DocumentRecord, MemoryRecord, MessageRecord, SessionRecord } from '@engram/store';
import { pointId, type PointPayload } from '@engram/vector-index';

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

/** An ACTIVE memory, or undefined when the memory must not be searchable. */
export function memoryDocument(memory: MemoryRecord): IndexDocument | undefined {
  if (memory.status !== 'ACTIVE') return undefined;
  return {
    id: pointId('MEMORY', memory.id),
    text: memory.text,
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

/** A chunk of a READY document, or undefined while the document is not searchable. */
export function chunkDocument(chunk: ChunkRecord, document: DocumentRecord): IndexDocument | undefined {
  if (document.state !== 'READY') return undefined;
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
      status: 'ACTIVE',
      documentId: document.id,
      createdAt: chunk.createdAt,
      sourceUpdatedAt: chunk.createdAt,
    },
  };
}

/**
 * A conversation round: the user message with the first assistant reply that has content after
 * it (SYSTEM, TOOL and tool-call-only messages in between are skipped). Indexed in SELF scope of
 * the session owner, keyed by the user message, so a later reply replaces the question-only point.
 */
export function roundDocument(
  session: SessionRecord,
  user: MessageRecord,
  reply: MessageRecord | undefined,
): IndexDocument {
  const text =
    reply === undefined ? `user: ${user.content}` : `user: ${user.content}\nassistant: ${reply.content}`;
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

/** Retry delay after `attempts` failures: exponential from 1 s, capped at 5 min, with ±20 % jitter. */
export function retryDelayMs(attempts: number, random: () => number = Math.random): number {
  const base = Math.min(300_000, 1_000 * 2 ** Math.max(0, attempts));
  return Math.round(base * (0.8 + 0.4 * random()));
}
