import { createHash, type Hash } from 'node:crypto';
import type { z } from 'zod';
import { errors } from '@engram/errors';
import {
  emptyRecords,
  EXPORT_FORMAT,
  EXPORT_VERSION,
  type ExportHeader,
  type ExportRecords,
  headerSchema,
  RECORD_KINDS,
  RECORD_SCHEMAS,
  type RecordKind,
  type RecordOf,
  trailerSchema,
} from './format.js';

/** What the header says beyond the fixed format and version. */
export type HeaderInput = Omit<ExportHeader, 'kind' | 'format' | 'version'>;

/**
 * Writes an export line by line: the header, the records, then the trailer with the count and
 * the checksum of everything written before it. Each method returns one line without its `\n`.
 */
export class ExportWriter {
  readonly #hash: Hash = createHash('sha256');
  #records = 0;
  #state: 'start' | 'records' | 'done' = 'start';

  header(input: HeaderInput): string {
    if (this.#state !== 'start') throw new Error('the header is the first line');
    this.#state = 'records';
    return this.#line({ kind: 'header', format: EXPORT_FORMAT, version: EXPORT_VERSION, ...input });
  }

  record<K extends RecordKind>(kind: K, record: RecordOf<K>): string {
    if (this.#state !== 'records') throw new Error('records come between the header and the trailer');
    this.#records += 1;
    return this.#line({ kind, record });
  }

  trailer(): string {
    if (this.#state !== 'records') throw new Error('the trailer follows the header and the records');
    this.#state = 'done';
    return JSON.stringify({ kind: 'trailer', records: this.#records, sha256: this.#hash.digest('hex') });
  }

  #line(value: unknown): string {
    const line = JSON.stringify(value);
    this.#hash.update(`${line}\n`, 'utf8');
    return line;
  }
}

/** A checked export: its header, its records by kind, and the line each record came from. */
export interface ParsedExport {
  readonly header: ExportHeader;
  readonly records: ExportRecords;
  /** Records in all (header and trailer excluded). */
  readonly recordCount: number;
  /** The 1-based line of a record, by `${kind}:${id}` (session states by their session id). */
  readonly lineOf: ReadonlyMap<string, number>;
}

/** The key of a record in {@link ParsedExport.lineOf}. */
export function recordKey(
  kind: RecordKind,
  record: { readonly id?: string; readonly sessionId?: string },
): string {
  return `${kind}:${kind === 'session_state' ? record.sessionId : record.id}`;
}

function invalid(line: number, kind: string, message: string, field?: string) {
  return errors.invalidArgument('IMPORT_RECORD_INVALID', `line ${line}: ${message}`, {
    line,
    kind,
    ...(field === undefined ? {} : { field }),
  });
}

function unsupported(line: number, message: string, metadata: Record<string, string | number> = {}) {
  return errors.invalidArgument('IMPORT_FORMAT_UNSUPPORTED', `line ${line}: ${message}`, {
    line,
    ...metadata,
  });
}

/** The first problem zod found, as a JSON path and a sentence (never the offending value). */
function firstIssue(error: z.ZodError, prefix: string): { field: string; message: string } {
  const issue = error.issues[0];
  const path = [prefix, ...(issue?.path ?? []).map(String)].filter((p) => p !== '').join('.');
  return { field: path, message: `${path === '' ? 'the line' : path}: ${issue?.message ?? 'invalid'}` };
}

function parseJson(text: string, line: number): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalid(line, '', 'not a JSON value');
  }
}

/**
 * Reads and checks a whole export, before anything is written: the header's format and version
 * first, each record against its kind's schema, no identifier twice, every reference of a record
 * to its parent (a message's session, a chunk's document, a revision's memory, a session state's
 * session, a message's MemCell) present in the export, then the trailer's count and checksum.
 * Blank lines are ignored and not part of the checksum. Throws the first problem as an
 * EngramError with the line it is on.
 */
export function parseExport(lines: Iterable<string>): ParsedExport {
  const hash = createHash('sha256');
  const records = emptyRecords();
  const lineOf = new Map<string, number>();
  let header: ExportHeader | undefined;
  let trailerSeen = false;
  let recordCount = 0;
  let lineNumber = 0;
  for (const raw of lines) {
    lineNumber += 1;
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (text.trim() === '') continue;
    if (trailerSeen) throw unsupported(lineNumber, 'content after the trailer');
    const value = parseJson(text, lineNumber);
    const kind = typeof value === 'object' && value !== null ? (value as { kind?: unknown }).kind : undefined;
    if (header === undefined) {
      header = parseHeader(value, kind, lineNumber);
    } else if (kind === 'trailer') {
      checkTrailer(value, lineNumber, recordCount, hash.digest('hex'));
      trailerSeen = true;
      continue;
    } else {
      const [recordKind, record] = parseRecord(value, kind, lineNumber);
      const key = recordKey(recordKind, record);
      if (lineOf.has(key))
        throw invalid(lineNumber, recordKind, `a second ${recordKind} with this id`, 'record.id');
      lineOf.set(key, lineNumber);
      (records[recordKind] as unknown[]).push(record);
      recordCount += 1;
    }
    hash.update(`${text}\n`, 'utf8');
  }
  if (header === undefined) throw unsupported(Math.max(lineNumber, 1), 'the export is empty: no header');
  if (!trailerSeen) {
    throw unsupported(lineNumber, 'the export has no trailer (the file is truncated?)');
  }
  checkCounts(header, records);
  checkReferences(records, lineOf);
  return { header, records, recordCount, lineOf };
}

function parseHeader(value: unknown, kind: unknown, line: number): ExportHeader {
  if (kind !== 'header') throw unsupported(line, 'the first line is not the header', { format: '' });
  const { format, version } = value as { format?: unknown; version?: unknown };
  if (format !== EXPORT_FORMAT || version !== EXPORT_VERSION) {
    throw unsupported(line, `this server reads ${EXPORT_FORMAT} version ${EXPORT_VERSION}`, {
      format: String(format),
      version: String(version),
      supported_version: EXPORT_VERSION,
    });
  }
  const parsed = headerSchema.safeParse(value);
  if (!parsed.success) {
    const issue = firstIssue(parsed.error, '');
    throw invalid(line, 'header', issue.message, issue.field);
  }
  return parsed.data;
}

function parseRecord(value: unknown, kind: unknown, line: number): [RecordKind, RecordOf<RecordKind>] {
  if (typeof kind !== 'string' || !(RECORD_KINDS as readonly string[]).includes(kind)) {
    throw invalid(
      line,
      typeof kind === 'string' ? kind : '',
      `unknown kind (one of ${RECORD_KINDS.join(', ')})`,
      'kind',
    );
  }
  const recordKind = kind as RecordKind;
  const { record, ...rest } = value as { record?: unknown };
  const extra = Object.keys(rest).filter((k) => k !== 'kind');
  if (extra.length > 0) throw invalid(line, recordKind, `unknown field ${extra[0]}`, extra[0]);
  const parsed = RECORD_SCHEMAS[recordKind].safeParse(record);
  if (!parsed.success) {
    const issue = firstIssue(parsed.error, 'record');
    throw invalid(line, recordKind, issue.message, issue.field);
  }
  return [recordKind, parsed.data];
}

function checkTrailer(value: unknown, line: number, recordCount: number, sha256: string): void {
  const parsed = trailerSchema.safeParse(value);
  if (!parsed.success) {
    const issue = firstIssue(parsed.error, '');
    throw invalid(line, 'trailer', issue.message, issue.field);
  }
  const mismatch = (field: string, expected: string | number, actual: string | number) =>
    errors.invalidArgument(
      'IMPORT_CHECKSUM_MISMATCH',
      `line ${line}: the trailer's ${field} is ${expected} but the lines before it give ${actual} (the file was truncated or edited)`,
      { field, expected, actual, line },
    );
  if (parsed.data.records !== recordCount) throw mismatch('records', parsed.data.records, recordCount);
  if (parsed.data.sha256 !== sha256) throw mismatch('sha256', parsed.data.sha256, sha256);
}

function checkCounts(header: ExportHeader, records: ExportRecords): void {
  for (const kind of RECORD_KINDS) {
    const said = header.counts[kind] ?? 0;
    if (said !== records[kind].length) {
      throw errors.invalidArgument(
        'IMPORT_CHECKSUM_MISMATCH',
        `line 1: the header counts ${said} ${kind} records but the export has ${records[kind].length}`,
        { field: `counts.${kind}`, expected: said, actual: records[kind].length, line: 1 },
      );
    }
  }
}

/** Every child's parent is in the export (parents may come after children in a hand-made file). */
function checkReferences(records: ExportRecords, lineOf: ReadonlyMap<string, number>): void {
  const has = (kind: RecordKind, id: string) => lineOf.has(`${kind}:${id}`);
  const needParent = (
    kind: RecordKind,
    child: { id?: string; sessionId?: string },
    parent: RecordKind,
    id: string,
    field: string,
  ) => {
    if (!has(parent, id)) {
      const line = lineOf.get(recordKey(kind, child)) ?? 0;
      throw invalid(line, kind, `${field} names a ${parent} that is not in the export`, `record.${field}`);
    }
  };
  for (const m of records.message) {
    needParent('message', m, 'session', m.sessionId, 'sessionId');
    if (m.memCellId !== undefined) needParent('message', m, 'mem_cell', m.memCellId, 'memCellId');
  }
  for (const c of records.mem_cell) needParent('mem_cell', c, 'session', c.sessionId, 'sessionId');
  for (const s of records.session_state) needParent('session_state', s, 'session', s.sessionId, 'sessionId');
  for (const c of records.chunk) needParent('chunk', c, 'document', c.documentId, 'documentId');
  for (const r of records.memory_revision) needParent('memory_revision', r, 'memory', r.memoryId, 'memoryId');
}
