import { z } from 'zod';

/**
 * The Engram export format (docs/export-format.md): JSON Lines, one record per line.
 *
 * - line 1, the header: `{"kind":"header","format":"engram.export","version":1,…}`;
 * - then one line per record: `{"kind":"<kind>","record":{…}}`, parents before children
 *   (a session before its messages, a memory before its revisions);
 * - last, the trailer: `{"kind":"trailer","records":N,"sha256":"<hex>"}`, where N counts the
 *   record lines and the checksum is the SHA-256 of every line before the trailer, each followed
 *   by `\n`, as UTF-8.
 *
 * A record is the stored row as the store reads it (camelCase fields, JSON columns as JSON values,
 * times in UTC epoch milliseconds), without the tenant (an export is one user's, and the import
 * decides where it goes) and without the owner (always the exported subject).
 */
export const EXPORT_FORMAT = 'engram.export';
/** The format version this code writes and reads. A reader refuses any other. */
export const EXPORT_VERSION = 1;

/** The kinds of record, in the order an export writes them. */
export const RECORD_KINDS = [
  'session',
  'message',
  'mem_cell',
  'session_state',
  'document',
  'chunk',
  'memory',
  'memory_revision',
  'extraction_job',
] as const;
export type RecordKind = (typeof RECORD_KINDS)[number];

const id = z.string().regex(/^[0-9A-HJKMNP-TV-Z]{26}$/, 'a ULID (26 Crockford base-32 characters)');
const time = z.number().int().nonnegative();
const count = z.number().int().nonnegative();
const text = (max: number) => z.string().max(max);
const metadata = z.record(z.string().max(256), z.string().max(1_048_576));

/** Any JSON value (objects, arrays, strings, finite numbers, booleans, null). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
const json: z.ZodType<Json> = z.lazy(() =>
  z.union([z.null(), z.boolean(), z.number(), z.string(), z.array(json), z.record(z.string(), json)]),
);

const scope = z.enum(['SELF', 'ORG', 'PLATFORM']);

const evidence = z.strictObject({
  messageIds: z.array(z.string().max(160)).max(10_000),
  sessionId: id.optional(),
  memCellId: id.optional(),
  chunkIds: z.array(id).max(10_000),
  excerpt: text(1_048_576).optional(),
});

/** A memory (governance's `memories` row). */
const memoryFields = {
  id,
  orgId: text(128),
  scope,
  type: z.enum(['FACT', 'EPISODE', 'EVENT', 'FORESIGHT', 'SUMMARY']),
  namespace: text(128),
  key: text(512),
  value: json.optional(),
  text: text(1_048_576),
  evergreen: z.boolean(),
  sourceKind: z.enum(['EXPLICIT_USER_STATEMENT', 'INFERRED', 'ASSISTANT', 'DOCUMENT', 'IMPORT', 'SYSTEM']),
  confidence: z.number().min(0).max(1),
  status: z.enum(['ACTIVE', 'SUPERSEDED', 'EXPIRED', 'DELETED', 'QUARANTINED']),
  statusReason: text(1_000),
  supersedesId: id.optional(),
  supersededById: id.optional(),
  evidence,
  languageCode: text(35),
  metadata,
  /** Recomputed by the importer from the content; optional in files written by converters. */
  contentHash: text(128).optional(),
  occurredAt: time.optional(),
  createdAt: time,
  updatedAt: time,
  expiresAt: time.optional(),
  validFrom: time.optional(),
  validUntil: time.optional(),
  version: z.number().int().positive(),
};
const memory = z.strictObject(memoryFields);

/**
 * A memory's state in a revision: the memory as it was, owner and tenant left out like the
 * record's. Loose, not strict: a state written by an older version of the store may carry a field
 * the memory no longer has, and it is history, kept as it was.
 */
const memorySnapshot = z.looseObject(memoryFields);

const memoryRevision = z.strictObject({
  id,
  memoryId: id,
  version: z.number().int().positive(),
  action: z.enum([
    'CREATE',
    'UPDATE',
    'SUPERSEDE',
    'EXPIRE',
    'DELETE',
    'RESTORE',
    'QUARANTINE',
    'APPROVE',
    'REJECT',
    'REDACT',
  ]),
  actorKind: z.enum(['USER', 'ADMIN', 'SERVICE', 'EXTRACTOR', 'RULE', 'SYSTEM']),
  actorId: text(256),
  reason: text(1_000),
  rule: text(256),
  requestId: text(64),
  before: memorySnapshot.optional(),
  after: memorySnapshot.optional(),
  changedPaths: z.array(text(128)).max(100),
  extractionJobId: id.optional(),
  createdAt: time,
});

const extractionJob = z.strictObject({
  id,
  memCellId: id,
  sessionId: id,
  state: z.enum(['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED']),
  extractors: z.array(z.enum(['EPISODE', 'EVENT', 'FORESIGHT', 'FACT'])).max(8),
  attempts: count,
  result: json,
  usage: json,
  languageCode: text(35),
  error: json.optional(),
  requestId: text(64),
  createdAt: time,
  updatedAt: time,
  completedAt: time.optional(),
});

const session = z.strictObject({
  id,
  displayName: text(1_000),
  externalId: text(256).optional(),
  languageCode: text(35),
  timeZone: text(64),
  metadata,
  status: z.enum(['ACTIVE', 'CLOSED']),
  messageCount: count,
  lastSequence: count,
  lastMessageAt: time.optional(),
  openFromSequence: count,
  activityAt: time,
  createdAt: time,
  updatedAt: time,
  closedAt: time.optional(),
  version: z.number().int().positive(),
});

const message = z.strictObject({
  id,
  sessionId: id,
  sequence: z.number().int().positive(),
  role: z.enum(['USER', 'ASSISTANT', 'SYSTEM', 'TOOL']),
  content: text(1_048_576),
  participantName: text(256),
  toolCallId: text(256),
  toolCalls: z
    .array(z.strictObject({ id: text(256), name: text(256), argumentsJson: text(1_048_576) }))
    .max(128),
  tokenCount: count,
  compacted: z.boolean(),
  memCellId: id.optional(),
  metadata,
  occurredAt: time,
  createdAt: time,
});

const memCell = z.strictObject({
  id,
  sessionId: id,
  firstSequence: z.number().int().positive(),
  lastSequence: z.number().int().positive(),
  messageCount: count,
  tokenCount: count,
  reason: z.enum([
    'MODEL_JUDGEMENT',
    'TOPIC_SHIFT',
    'DATE_CHANGE',
    'TIME_GAP',
    'TOKEN_CAP',
    'MESSAGE_CAP',
    'FLUSH',
    'SESSION_CLOSED',
  ]),
  status: z.enum(['PENDING', 'EXTRACTING', 'EXTRACTED', 'FAILED']),
  attempts: count,
  extractionJobId: id.optional(),
  lastError: text(65_536),
  lastErrorReason: text(64),
  boundaryNote: text(65_536),
  nextAttemptAt: time.optional(),
  openedAt: time,
  lastMessageAt: time,
  closedAt: time,
  createdAt: time,
  updatedAt: time,
});

const stateItem = {
  id,
  text: text(65_536),
  sourceMessageIds: z.array(id).max(1_000),
  origin: z.enum(['COMPACTION', 'CLIENT']).optional(),
  createdAt: time,
  updatedAt: time.optional(),
};

const sessionState = z.strictObject({
  sessionId: id,
  summary: text(1_048_576),
  summaryTokenCount: count,
  keyPoints: z.array(z.strictObject(stateItem)).max(1_000),
  openLoops: z
    .array(z.strictObject({ ...stateItem, resolved: z.boolean().optional(), resolvedAt: time.optional() }))
    .max(1_000),
  compactedThroughSequence: count,
  summaryMemoryId: id.optional(),
  lastCompactedAt: time.optional(),
  markAcknowledgedThrough: count,
  updatedAt: time.optional(),
  version: count,
});

const document = z.strictObject({
  id,
  orgId: text(128),
  scope,
  displayName: text(1_000),
  mimeType: text(255),
  sourceUri: text(2_048),
  metadata,
  contentHash: text(128),
  sizeBytes: count,
  charCount: count,
  chunkCount: count,
  state: z.enum(['INGESTING', 'READY', 'FAILED']),
  chunkSize: count,
  chunkOverlap: count,
  keepTablesWhole: z.boolean(),
  keepCodeWhole: z.boolean(),
  failureReason: text(64),
  failureMessage: text(65_536),
  createdAt: time,
  updatedAt: time,
  version: z.number().int().positive(),
});

const chunk = z.strictObject({
  id,
  documentId: id,
  ordinal: count,
  kind: z.enum(['TEXT', 'TABLE', 'CODE']),
  text: text(1_048_576),
  startOffset: count,
  endOffset: count,
  overlapPrefixChars: count,
  headerPrefixChars: count,
  tokenCount: count,
  headingPath: z.array(text(1_000)).max(64),
  createdAt: time,
});

/** The schema of each kind's `record`. */
export const RECORD_SCHEMAS = {
  session,
  message,
  mem_cell: memCell,
  session_state: sessionState,
  document,
  chunk,
  memory,
  memory_revision: memoryRevision,
  extraction_job: extractionJob,
} as const satisfies Record<RecordKind, z.ZodType>;

/** The record of each kind, as read from a file. */
export type RecordOf<K extends RecordKind> = z.infer<(typeof RECORD_SCHEMAS)[K]>;
export type ExportedMemory = RecordOf<'memory'>;
export type ExportedMemoryRevision = RecordOf<'memory_revision'>;
export type ExportedExtractionJob = RecordOf<'extraction_job'>;
export type ExportedSession = RecordOf<'session'>;
export type ExportedMessage = RecordOf<'message'>;
export type ExportedMemCell = RecordOf<'mem_cell'>;
export type ExportedSessionState = RecordOf<'session_state'>;
export type ExportedDocument = RecordOf<'document'>;
export type ExportedChunk = RecordOf<'chunk'>;

/** Every record of an export, by kind, in file order. */
export type ExportRecords = { -readonly [K in RecordKind]: RecordOf<K>[] };

/** An empty {@link ExportRecords}. */
export function emptyRecords(): ExportRecords {
  return Object.fromEntries(RECORD_KINDS.map((kind) => [kind, []])) as unknown as ExportRecords;
}

/** The first line. */
export const headerSchema = z.strictObject({
  kind: z.literal('header'),
  format: z.string(),
  version: z.number().int(),
  /** The store's schema when exported: the name of its latest migration. */
  schema: z.string().max(128),
  /** What wrote the file, e.g. `engram 0.1.0` or `engram convert mem0`. */
  producer: z.string().max(128),
  exportedAt: z.iso.datetime(),
  source: z.strictObject({ tenant: z.string().min(1).max(128), subject: z.string().min(1).max(256) }),
  counts: z.partialRecord(z.enum(RECORD_KINDS), count),
});
export type ExportHeader = z.infer<typeof headerSchema>;

/** The last line. */
export const trailerSchema = z.strictObject({
  kind: z.literal('trailer'),
  records: count,
  sha256: z.string().regex(/^[0-9a-f]{64}$/, '64 lowercase hexadecimal digits'),
});
export type ExportTrailer = z.infer<typeof trailerSchema>;
