import { createHash } from 'node:crypto';
import type { ExportedMemory, ExportRecords, Json } from './format.js';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ULID_TOKEN = /[0-9A-HJKMNP-TV-Z]{26}/g;

/**
 * The identifier a source record gets in another tenant or for another subject: the source
 * ULID's time part (so the order by time is kept) and 80 bits of SHA-256 over the target tenant,
 * the target subject and the source identifier. Deterministic, so a re-run of the same import
 * finds what the first run wrote; different for every target, so imports into two tenants of one
 * deployment never collide.
 */
export function deriveId(tenantId: string, subject: string, sourceId: string): string {
  return sourceId.slice(0, 10) + randomPart(`${tenantId}\u0000${subject}\u0000${sourceId}`);
}

/** 80 bits of SHA-256 over `seed` as the 16 Crockford base-32 characters of a ULID's random part. */
export function randomPart(seed: string): string {
  const digest = createHash('sha256').update(seed, 'utf8').digest();
  let bits = 0n;
  for (let i = 0; i < 10; i += 1) bits = (bits << 8n) | BigInt(digest.readUInt8(i));
  let random = '';
  for (let i = 0; i < 16; i += 1) {
    random = CROCKFORD.charAt(Number(bits & 31n)) + random;
    bits >>= 5n;
  }
  return random;
}

/** A ULID's 10-character time part for `timeMs` (clamped to the 48 bits a ULID holds). */
export function timePart(timeMs: number): string {
  let time = '';
  let t = Math.max(0, Math.min(Math.floor(timeMs), 2 ** 48 - 1));
  for (let i = 0; i < 10; i += 1) {
    time = CROCKFORD.charAt(t % 32) + time;
    t = Math.floor(t / 32);
  }
  return time;
}

/** Every identifier an export defines (its records' own ids), for rewriting references in free JSON. */
function definedIds(records: ExportRecords): Set<string> {
  const ids = new Set<string>();
  for (const list of Object.values(records) as { id?: string }[][]) {
    for (const r of list) if (r.id !== undefined) ids.add(r.id);
  }
  return ids;
}

/**
 * The export with every identifier and every reference to one rewritten by `map`: record ids,
 * parent links, supersede links, evidence (message ids and `sessions/{s}/messages/{m}` names, the
 * MemCell, chunks), session-state items and their source messages, the memory states inside
 * revisions, and the identifiers of this export inside JSON values (an extraction job's result
 * names the memories it wrote).
 */
export function remapIds(records: ExportRecords, map: (id: string) => string): ExportRecords {
  const known = definedIds(records);
  const opt = (id: string | undefined) => (id === undefined ? undefined : map(id));
  const inText = (text: string) =>
    text.replace(ULID_TOKEN, (token) => (known.has(token) ? map(token) : token));
  const inJson = (value: Json): Json => {
    if (typeof value === 'string') return inText(value);
    if (Array.isArray(value)) return value.map(inJson);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inJson(v)]));
    }
    return value;
  };
  const optJson = (value: Json | undefined) => (value === undefined ? undefined : inJson(value));
  const memory = (m: ExportedMemory): ExportedMemory =>
    dropUndefined({
      ...m,
      id: map(m.id),
      value: optJson(m.value),
      supersedesId: opt(m.supersedesId),
      supersededById: opt(m.supersededById),
      evidence: dropUndefined({
        ...m.evidence,
        messageIds: m.evidence.messageIds.map(inText),
        sessionId: opt(m.evidence.sessionId),
        memCellId: opt(m.evidence.memCellId),
        chunkIds: m.evidence.chunkIds.map(map),
      }),
    });
  const item = <T extends { id: string; sourceMessageIds: string[] }>(i: T): T => ({
    ...i,
    id: map(i.id),
    sourceMessageIds: i.sourceMessageIds.map(map),
  });
  return {
    session: records.session.map((s) => ({ ...s, id: map(s.id) })),
    message: records.message.map((m) =>
      dropUndefined({ ...m, id: map(m.id), sessionId: map(m.sessionId), memCellId: opt(m.memCellId) }),
    ),
    mem_cell: records.mem_cell.map((c) =>
      dropUndefined({
        ...c,
        id: map(c.id),
        sessionId: map(c.sessionId),
        extractionJobId: opt(c.extractionJobId),
      }),
    ),
    session_state: records.session_state.map((s) =>
      dropUndefined({
        ...s,
        sessionId: map(s.sessionId),
        summaryMemoryId: opt(s.summaryMemoryId),
        keyPoints: s.keyPoints.map(item),
        openLoops: s.openLoops.map(item),
      }),
    ),
    document: records.document.map((d) => ({ ...d, id: map(d.id) })),
    chunk: records.chunk.map((c) => ({ ...c, id: map(c.id), documentId: map(c.documentId) })),
    memory: records.memory.map(memory),
    memory_revision: records.memory_revision.map((r) =>
      dropUndefined({
        ...r,
        id: map(r.id),
        memoryId: map(r.memoryId),
        extractionJobId: opt(r.extractionJobId),
        before: r.before === undefined ? undefined : memory(r.before),
        after: r.after === undefined ? undefined : memory(r.after),
      }),
    ),
    extraction_job: records.extraction_job.map((j) =>
      dropUndefined({
        ...j,
        id: map(j.id),
        memCellId: map(j.memCellId),
        sessionId: map(j.sessionId),
        result: inJson(j.result),
        usage: inJson(j.usage),
        error: optJson(j.error),
      }),
    ),
  };
}

/** `value` without its undefined properties (records leave optional fields out rather than undefined). */
export function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
