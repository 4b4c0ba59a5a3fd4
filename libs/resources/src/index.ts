/**
 * @engram/resources: stored records as the API's resources. Governance serves memories,
 * ingestion serves documents and chunks, and retrieval returns all three in search results; the
 * mapping is written once, here, so the same record always reads the same everywhere.
 */
import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Scope as ScopeEnum } from '@engram/contracts/common';
import {
  MemoryStatus,
  MemoryType as MemoryTypeEnum,
  SourceKind as SourceKindEnum,
  type MemorySchema,
} from '@engram/contracts/governance';
import { ChunkKind, DocumentState, type ChunkSchema, type DocumentSchema } from '@engram/contracts/ingestion';
import type {
  ChunkRecord,
  DocumentRecord,
  Evidence,
  JsonValue,
  MemoryRecord,
  MemoryStatus as StoredStatus,
  MemoryType,
  Scope,
  SourceKind,
} from '@engram/store';

export const SCOPES: Readonly<Record<Scope, ScopeEnum>> = {
  SELF: ScopeEnum.SELF,
  ORG: ScopeEnum.ORG,
  PLATFORM: ScopeEnum.PLATFORM,
};
export const MEMORY_TYPES: Readonly<Record<MemoryType, MemoryTypeEnum>> = {
  FACT: MemoryTypeEnum.FACT,
  EPISODE: MemoryTypeEnum.EPISODE,
  EVENT: MemoryTypeEnum.EVENT,
  FORESIGHT: MemoryTypeEnum.FORESIGHT,
  SUMMARY: MemoryTypeEnum.SUMMARY,
};
export const SOURCE_KINDS: Readonly<Record<SourceKind, SourceKindEnum>> = {
  EXPLICIT_USER_STATEMENT: SourceKindEnum.EXPLICIT_USER_STATEMENT,
  INFERRED: SourceKindEnum.INFERRED,
  ASSISTANT: SourceKindEnum.ASSISTANT,
  DOCUMENT: SourceKindEnum.DOCUMENT,
  IMPORT: SourceKindEnum.IMPORT,
  SYSTEM: SourceKindEnum.SYSTEM,
};
export const MEMORY_STATUSES: Readonly<Record<StoredStatus, MemoryStatus>> = {
  ACTIVE: MemoryStatus.ACTIVE,
  SUPERSEDED: MemoryStatus.SUPERSEDED,
  EXPIRED: MemoryStatus.EXPIRED,
  DELETED: MemoryStatus.DELETED,
  QUARANTINED: MemoryStatus.QUARANTINED,
};
export const DOCUMENT_STATES: Readonly<Record<DocumentRecord['state'], DocumentState>> = {
  INGESTING: DocumentState.INGESTING,
  READY: DocumentState.READY,
  FAILED: DocumentState.FAILED,
};
export const CHUNK_KINDS: Readonly<Record<ChunkRecord['kind'], ChunkKind>> = {
  TEXT: ChunkKind.TEXT,
  TABLE: ChunkKind.TABLE,
  CODE: ChunkKind.CODE,
};

/** The inverse of a name → enum table: enum → name (UNSPECIFIED and unknown values are absent). */
function inverse<K extends string, E extends number>(
  table: Readonly<Record<K, E>>,
): Readonly<Partial<Record<E, K>>> {
  return Object.fromEntries(Object.entries(table).map(([k, v]) => [v, k])) as Partial<Record<E, K>>;
}

export const SCOPE_NAMES = inverse(SCOPES);
export const MEMORY_TYPE_NAMES = inverse(MEMORY_TYPES);
export const SOURCE_KIND_NAMES = inverse(SOURCE_KINDS);
export const MEMORY_STATUS_NAMES = inverse(MEMORY_STATUSES);

/** A JSON value as a protobuf `Struct` (a JSON object), or undefined for anything else. */
export function asJsonObject(value: JsonValue | undefined): JsonObject | undefined {
  return value !== undefined && value !== null && typeof value === 'object' && !Array.isArray(value)
    ? value
    : undefined;
}

/** A stored memory as the API's `Memory`. */
export function memoryMessage(m: MemoryRecord): MessageInitShape<typeof MemorySchema> {
  const value = asJsonObject(m.value);
  return {
    name: `memories/${m.id}`,
    type: MEMORY_TYPES[m.type],
    namespace: m.namespace,
    key: m.key,
    ...(value !== undefined ? { value } : {}),
    text: m.text,
    languageCode: m.languageCode,
    evergreen: m.evergreen,
    scope: SCOPES[m.scope],
    orgId: m.orgId,
    owner: m.ownerId,
    sourceKind: SOURCE_KINDS[m.sourceKind],
    confidence: m.confidence,
    evidence: evidenceNames(m.evidence),
    status: MEMORY_STATUSES[m.status],
    statusReason: m.statusReason,
    supersedes: m.supersedesId === undefined ? '' : `memories/${m.supersedesId}`,
    supersededBy: m.supersededById === undefined ? '' : `memories/${m.supersededById}`,
    ...(m.occurredAt !== undefined ? { occurTime: timestampFromMs(m.occurredAt) } : {}),
    createTime: timestampFromMs(m.createdAt),
    updateTime: timestampFromMs(m.updatedAt),
    ...(m.expiresAt !== undefined ? { expireTime: timestampFromMs(m.expiresAt) } : {}),
    ...(m.validFrom !== undefined ? { validFromTime: timestampFromMs(m.validFrom) } : {}),
    ...(m.validUntil !== undefined ? { validUntilTime: timestampFromMs(m.validUntil) } : {}),
    contentHash: m.contentHash,
    version: BigInt(m.version),
    etag: `"${String(m.version)}"`,
    metadata: { ...m.metadata },
  };
}

/** A stored document as the API's `Document`. */
export function documentMessage(
  d: DocumentRecord,
  indexedChunkCount: number,
): MessageInitShape<typeof DocumentSchema> {
  return {
    name: `documents/${d.id}`,
    displayName: d.displayName,
    mimeType: d.mimeType,
    scope: SCOPES[d.scope],
    orgId: d.orgId,
    owner: d.ownerId,
    sourceUri: d.sourceUri,
    metadata: { ...d.metadata },
    state: DOCUMENT_STATES[d.state],
    failureMessage: d.failureMessage,
    contentHash: d.contentHash,
    sizeBytes: BigInt(d.sizeBytes),
    charCount: BigInt(d.charCount),
    chunkCount: d.chunkCount,
    indexedChunkCount,
    chunking: {
      chunkSizeChars: d.chunkSize,
      overlapChars: d.chunkOverlap,
      keepTablesWhole: d.keepTablesWhole,
      keepCodeWhole: d.keepCodeWhole,
    },
    createTime: timestampFromMs(d.createdAt),
    updateTime: timestampFromMs(d.updatedAt),
    etag: `"${String(d.version)}"`,
  };
}

/** A stored chunk as the API's `Chunk`. */
export function chunkMessage(c: ChunkRecord): MessageInitShape<typeof ChunkSchema> {
  return {
    name: `documents/${c.documentId}/chunks/${c.id}`,
    ordinal: c.ordinal,
    kind: CHUNK_KINDS[c.kind],
    text: c.text,
    startOffset: BigInt(c.startOffset),
    endOffset: BigInt(c.endOffset),
    overlapPrefixChars: c.overlapPrefixChars,
    headerPrefixChars: c.headerPrefixChars,
    tokenCount: c.tokenCount,
    headingPath: [...c.headingPath],
    createTime: timestampFromMs(c.createdAt),
  };
}

export {
  ULID_PATTERN,
  badName,
  checkUpdateMask,
  checkedTimestampMs,
  parseChunkName,
  parseDocumentName,
  parseExtractionJobName,
  parseForgetReceiptName,
  parseMemCellName,
  parseMemoryName,
  parseMessageName,
  parseReindexJobName,
  parseRevisionName,
  parseSessionName,
  parseSessionStateName,
} from './names.js';
export { DEFAULT_PAGE_LIMITS, methodKey, pageSize } from './wire.js';

/** What an API `Evidence` carries: resource names. */
export interface EvidenceNames {
  messages: string[];
  memCell: string;
  chunks: string[];
  excerpt: string;
}

const MESSAGE = /^sessions\/([^/]+)\/messages\/([^/]+)$/;
const MEM_CELL = /^sessions\/([^/]+)\/memCells\/([^/]+)$/;

/**
 * API evidence as stored: message and MemCell names of one session become that session's ids
 * (`sessionId`); names spanning several sessions, and chunk names, are kept as given.
 */
export function evidenceFromNames(
  e:
    | {
        readonly messages?: readonly string[];
        readonly memCell?: string;
        readonly chunks?: readonly string[];
        readonly excerpt?: string;
      }
    | undefined,
): Evidence {
  const messages = e?.messages ?? [];
  const memCell = e?.memCell ?? '';
  const sessions = new Set(
    [
      ...messages.map((n) => MESSAGE.exec(n)?.[1]),
      memCell === '' ? undefined : MEM_CELL.exec(memCell)?.[1],
    ].filter((s) => s !== undefined),
  );
  const allParsed = messages.every((n) => MESSAGE.test(n)) && (memCell === '' || MEM_CELL.test(memCell));
  const sessionId = sessions.size === 1 && allParsed ? [...sessions][0] : undefined;
  return {
    messageIds: sessionId === undefined ? [...messages] : messages.map((n) => MESSAGE.exec(n)?.[2] ?? n),
    ...(sessionId !== undefined ? { sessionId } : {}),
    ...(memCell !== ''
      ? { memCellId: sessionId === undefined ? memCell : (MEM_CELL.exec(memCell)?.[2] ?? memCell) }
      : {}),
    chunkIds: [...(e?.chunks ?? [])],
    ...(e?.excerpt !== undefined && e.excerpt !== '' ? { excerpt: e.excerpt } : {}),
  };
}

/** Stored evidence as API resource names (ids of one session are given their session back). */
export function evidenceNames(e: Evidence): EvidenceNames {
  const { sessionId } = e;
  const name = (kind: 'messages' | 'memCells', id: string) =>
    sessionId === undefined || id.includes('/') ? id : `sessions/${sessionId}/${kind}/${id}`;
  return {
    messages: e.messageIds.map((id) => name('messages', id)),
    memCell: e.memCellId === undefined ? '' : name('memCells', e.memCellId),
    chunks: [...e.chunkIds],
    excerpt: e.excerpt ?? '',
  };
}
export { checkEraseRequest } from './erase.js';
