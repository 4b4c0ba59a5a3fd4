import {
  dropUndefined,
  type ExportedMemory,
  type ExportRecords,
  ExportWriter,
  type Json,
  RECORD_KINDS,
  type RecordKind,
} from '@engram/portability';
import { redact, redactMetadata, stripUrlCredentials } from '@engram/redaction';
import type { MemoryRecord, SnapshotKind, SubjectSnapshot } from '@engram/store';

/** The export format's name of each snapshot kind. */
export const KIND_OF: Readonly<Record<SnapshotKind, RecordKind>> = {
  sessions: 'session',
  messages: 'message',
  memCells: 'mem_cell',
  sessionStates: 'session_state',
  documents: 'document',
  chunks: 'chunk',
  memories: 'memory',
  revisions: 'memory_revision',
  extractionJobs: 'extraction_job',
};

const SNAPSHOT_KIND_OF = Object.fromEntries(
  Object.entries(KIND_OF).map(([snapshot, kind]) => [kind, snapshot]),
) as Readonly<Record<RecordKind, SnapshotKind>>;

/** A stored record without its tenant and owner: what an export line carries. */
function portable<T extends object>(record: T): Omit<T, 'tenantId' | 'ownerId'> {
  const {
    tenantId: _tenant,
    ownerId: _owner,
    ...rest
  } = record as T & { tenantId?: unknown; ownerId?: unknown };
  return rest;
}

/** A memory state inside a revision, without its tenant and owner (an older state may lack fields). */
function portableMemory(m: MemoryRecord | undefined): ExportedMemory | undefined {
  return m === undefined ? undefined : (portable(m) as ExportedMemory);
}

/** A snapshot as the export format's records, by kind (tenant and owner left out). */
export function exportRecords(snapshot: SubjectSnapshot): ExportRecords {
  return {
    session: snapshot.sessions.map(portable),
    message: snapshot.messages.map((m) => ({ ...portable(m), toolCalls: [...m.toolCalls] })),
    mem_cell: snapshot.memCells.map(portable),
    session_state: snapshot.sessionStates.map(portable) as ExportRecords['session_state'],
    document: snapshot.documents.map(portable),
    chunk: snapshot.chunks.map(portable) as ExportRecords['chunk'],
    memory: snapshot.memories.map(portable) as ExportRecords['memory'],
    memory_revision: snapshot.revisions.map((r) =>
      dropUndefined({ ...portable(r), before: portableMemory(r.before), after: portableMemory(r.after) }),
    ) as ExportRecords['memory_revision'],
    extraction_job: snapshot.extractionJobs.map(portable) as ExportRecords['extraction_job'],
  };
}

/** The export's lines for a snapshot: header (with the counts), every record by kind, trailer. */
export function* exportLines(
  records: ExportRecords,
  header: {
    readonly tenantId: string;
    readonly subject: string;
    readonly schema: string;
    readonly now: number;
  },
): Generator<string> {
  const writer = new ExportWriter();
  yield writer.header({
    schema: header.schema,
    producer: 'engram',
    exportedAt: new Date(header.now).toISOString(),
    source: { tenant: header.tenantId, subject: header.subject },
    counts: Object.fromEntries(RECORD_KINDS.map((kind) => [kind, records[kind].length])),
  });
  for (const kind of RECORD_KINDS) {
    for (const record of records[kind]) yield writer.record(kind, record);
  }
  yield writer.trailer();
}

/** The records of an import as the store's records of the target tenant and subject. */
export function importSnapshot(records: ExportRecords, tenantId: string, ownerId: string): SubjectSnapshot {
  const owned = <T extends object>(r: T) => ({ ...r, tenantId, ownerId });
  const inTenant = <T extends object>(r: T) => ({ ...r, tenantId });
  const memory = (m: ExportedMemory): MemoryRecord => ({
    ...m,
    tenantId,
    ownerId,
    contentHash: m.contentHash ?? '',
  });
  const state = (m: ExportedMemory | undefined) => (m === undefined ? undefined : memory(m));
  return {
    sessions: records.session.map(owned),
    messages: records.message.map(inTenant),
    memCells: records.mem_cell.map(inTenant),
    sessionStates: records.session_state.map(inTenant),
    documents: records.document.map(owned),
    chunks: records.chunk.map(inTenant),
    memories: records.memory.map(memory),
    revisions: records.memory_revision.map((r) =>
      dropUndefined({ ...r, tenantId, before: state(r.before), after: state(r.after) }),
    ),
    extractionJobs: records.extraction_job.map(owned),
  };
}

/** Per-kind counts of a snapshot write, keyed by the export format's kind names. */
export function byFormatKind(counts: Readonly<Record<SnapshotKind, number>>): Record<string, bigint> {
  return Object.fromEntries(RECORD_KINDS.map((kind) => [kind, BigInt(counts[SNAPSHOT_KIND_OF[kind]])]));
}

const IDENTIFIER =
  /^(?:[0-9A-HJKMNP-TV-Z]{26}|[a-zA-Z]+\/[0-9A-HJKMNP-TV-Z]{26}(?:\/[a-zA-Z]+\/[0-9A-Za-z]+)*)$/;

/**
 * Redacts every free-text field of an import (rule 6: everything stored passes redaction; a
 * converted file may carry secrets an Engram export never does), counting the fields it changed.
 * `redactSecrets` is the tenant's setting, as ingestion and context apply it (decision 0029): off,
 * only a source URI's credentials go, which are never data. Identifiers and resource names inside
 * JSON values are left alone.
 */
export function redactRecords(
  records: ExportRecords,
  { redactSecrets }: { readonly redactSecrets: boolean },
): { records: ExportRecords; changed: number } {
  let changed = 0;
  const counted = <T>(before: T, after: T): T => {
    if (JSON.stringify(after) !== JSON.stringify(before)) changed += 1;
    return after;
  };
  const text = (value: string): string =>
    value === '' || !redactSecrets ? value : counted(value, redact(value).text);
  const map = (value: Readonly<Record<string, string>>): Record<string, string> =>
    redactSecrets ? counted(value, redactMetadata(value)) : { ...value };
  const uri = (value: string): string => {
    const stripped = stripUrlCredentials(value);
    return counted(value, redactSecrets ? redact(stripped).text : stripped);
  };
  const deep = (value: Json): Json => {
    if (typeof value === 'string') return IDENTIFIER.test(value) ? value : text(value);
    if (Array.isArray(value)) return value.map(deep);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, deep(v)]));
    }
    return value;
  };
  const memory = (m: ExportedMemory): ExportedMemory =>
    dropUndefined({
      ...m,
      text: text(m.text),
      value: m.value === undefined ? undefined : deep(m.value),
      statusReason: text(m.statusReason),
      metadata: map(m.metadata),
      evidence: dropUndefined({
        ...m.evidence,
        excerpt: m.evidence.excerpt === undefined ? undefined : text(m.evidence.excerpt),
      }),
    });
  const item = <T extends { text: string }>(i: T): T => ({ ...i, text: text(i.text) });
  const result: ExportRecords = {
    session: records.session.map((s) => ({
      ...s,
      displayName: text(s.displayName),
      metadata: map(s.metadata),
    })),
    message: records.message.map((m) => ({
      ...m,
      content: text(m.content),
      participantName: text(m.participantName),
      metadata: map(m.metadata),
      toolCalls: m.toolCalls.map((c) => ({ ...c, argumentsJson: text(c.argumentsJson) })),
    })),
    mem_cell: records.mem_cell.map((c) => ({
      ...c,
      boundaryNote: text(c.boundaryNote),
      lastError: text(c.lastError),
    })),
    session_state: records.session_state.map((s) => ({
      ...s,
      summary: text(s.summary),
      keyPoints: s.keyPoints.map(item),
      openLoops: s.openLoops.map(item),
    })),
    document: records.document.map((d) => ({
      ...d,
      displayName: text(d.displayName),
      sourceUri: uri(d.sourceUri),
      metadata: map(d.metadata),
      failureMessage: text(d.failureMessage),
    })),
    chunk: records.chunk.map((c) => ({ ...c, text: text(c.text) })),
    memory: records.memory.map(memory),
    memory_revision: records.memory_revision.map((r) =>
      dropUndefined({
        ...r,
        reason: text(r.reason),
        before: r.before === undefined ? undefined : memory(r.before),
        after: r.after === undefined ? undefined : memory(r.after),
      }),
    ),
    extraction_job: records.extraction_job.map((j) =>
      dropUndefined({
        ...j,
        result: deep(j.result),
        usage: j.usage,
        error: j.error === undefined ? undefined : deep(j.error),
      }),
    ),
  };
  return { records: result, changed };
}
