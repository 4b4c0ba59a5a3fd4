import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { EngramError } from '@engram/errors';
import type { ExportedMemory, ExportedSession } from './format.js';
import { deriveId, remapIds } from './ids.js';
import { ExportWriter, parseExport } from './lines.js';
import { convertMem0, mem0Users } from './mem0.js';

const session: ExportedSession = {
  id: '01JF0000000000000000000001',
  displayName: 'chat',
  languageCode: 'en',
  timeZone: 'UTC',
  metadata: {},
  status: 'ACTIVE',
  messageCount: 1,
  lastSequence: 1,
  openFromSequence: 1,
  activityAt: 1,
  createdAt: 1,
  updatedAt: 1,
  version: 1,
};

const memory: ExportedMemory = {
  id: '01JF0000000000000000000002',
  orgId: '',
  scope: 'SELF',
  type: 'FACT',
  namespace: 'profile',
  key: 'city',
  value: { city: 'Lisbon' },
  text: 'lives in Lisbon',
  evergreen: false,
  sourceKind: 'EXPLICIT_USER_STATEMENT',
  confidence: 0.9,
  status: 'ACTIVE',
  statusReason: '',
  evidence: { messageIds: ['01JF0000000000000000000003'], sessionId: session.id, chunkIds: [] },
  languageCode: 'en',
  metadata: {},
  createdAt: 1,
  updatedAt: 1,
  version: 1,
};

function file(counts = { session: 1, message: 1, memory: 1 }): string[] {
  const writer = new ExportWriter();
  return [
    writer.header({
      schema: '0004',
      producer: 'test',
      exportedAt: '2026-12-01T00:00:00.000Z',
      source: { tenant: 'acme', subject: 'alice' },
      counts,
    }),
    writer.record('session', session),
    writer.record('message', {
      id: '01JF0000000000000000000003',
      sessionId: session.id,
      sequence: 1,
      role: 'USER',
      content: 'I live in Lisbon',
      participantName: '',
      toolCallId: '',
      toolCalls: [],
      tokenCount: 4,
      compacted: false,
      metadata: {},
      occurredAt: 1,
      createdAt: 1,
    }),
    writer.record('memory', memory),
    writer.trailer(),
  ];
}

/** The EngramError `fn` throws. */
function refusal(fn: () => unknown): EngramError {
  try {
    fn();
  } catch (error) {
    if (error instanceof EngramError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('the export format', () => {
  it('writes a header, records and a trailer whose checksum covers every line before it', () => {
    const lines = file();
    const trailer = JSON.parse(lines.at(-1)!) as { records: number; sha256: string };
    const sha = createHash('sha256')
      .update(
        lines
          .slice(0, -1)
          .map((l) => `${l}\n`)
          .join(''),
      )
      .digest('hex');
    expect(trailer).toEqual({ kind: 'trailer', records: 3, sha256: sha });
    const parsed = parseExport([...lines, '']);
    expect(parsed.recordCount).toBe(3);
    expect(parsed.records.memory).toEqual([memory]);
    expect(parsed.lineOf.get(`memory:${memory.id}`)).toBe(4);
  });

  it('reads CRLF line ends as the same file', () => {
    expect(parseExport(file().map((l) => `${l}\r`)).recordCount).toBe(3);
  });

  it.each([
    [
      'an edited line',
      (l: string[]) => l.map((x, i) => (i === 3 ? x.replace('Lisbon', 'Porto') : x)),
      'IMPORT_CHECKSUM_MISMATCH',
      { field: 'sha256' },
    ],
    ['a missing trailer', (l: string[]) => l.slice(0, -1), 'IMPORT_FORMAT_UNSUPPORTED', {}],
    [
      'a removed line',
      (l: string[]) => [...l.slice(0, 2), ...l.slice(3)],
      'IMPORT_CHECKSUM_MISMATCH',
      { field: 'records' },
    ],
    [
      'another version',
      (l: string[]) => [l[0]!.replace('"version":1', '"version":9'), ...l.slice(1)],
      'IMPORT_FORMAT_UNSUPPORTED',
      { version: '9', supported_version: 1 },
    ],
    ['no header', (l: string[]) => l.slice(1), 'IMPORT_FORMAT_UNSUPPORTED', { line: 1 }],
    [
      'a line that is not JSON',
      (l: string[]) => [l[0]!, '{oops', ...l.slice(1)],
      'IMPORT_RECORD_INVALID',
      { line: 2 },
    ],
    ['content after the trailer', (l: string[]) => [...l, l[1]!], 'IMPORT_FORMAT_UNSUPPORTED', { line: 6 }],
  ])('refuses %s with its reason and line', (_name, edit, reason, metadata) => {
    const error = refusal(() => parseExport(edit(file())));
    expect(error.reason).toBe(reason);
    expect(error.metadata).toMatchObject(metadata);
  });

  it('refuses a record that breaks its schema, naming the field but not the value', () => {
    const writer = new ExportWriter();
    const lines = [
      writer.header({
        schema: '',
        producer: 't',
        exportedAt: '2026-12-01T00:00:00Z',
        source: { tenant: 'a', subject: 'b' },
        counts: { memory: 1 },
      }),
      writer.record('memory', { ...memory, status: 'SECRET-ISH' as 'ACTIVE' }),
      writer.trailer(),
    ];
    const error = refusal(() => parseExport(lines));
    expect(error).toMatchObject({
      reason: 'IMPORT_RECORD_INVALID',
      metadata: { line: 2, kind: 'memory', field: 'record.status' },
    });
    expect(error.message).not.toContain('SECRET-ISH');
  });

  it('refuses a child whose parent is not in the export', () => {
    const writer = new ExportWriter();
    const lines = [
      writer.header({
        schema: '',
        producer: 't',
        exportedAt: '2026-12-01T00:00:00Z',
        source: { tenant: 'a', subject: 'b' },
        counts: { message: 1 },
      }),
      file()[2]!,
    ];
    const checked = new ExportWriter();
    const rebuilt = [
      checked.header(JSON.parse(lines[0]!) as never),
      checked.record('message', (JSON.parse(lines[1]!) as { record: never }).record),
      checked.trailer(),
    ];
    const error = refusal(() => parseExport(rebuilt));
    expect(error).toMatchObject({
      reason: 'IMPORT_RECORD_INVALID',
      metadata: { line: 2, kind: 'message', field: 'record.sessionId' },
    });
  });

  it('refuses header counts that differ from the records', () => {
    const error = refusal(() => parseExport(file({ session: 1, message: 1, memory: 2 })));
    expect(error).toMatchObject({ reason: 'IMPORT_CHECKSUM_MISMATCH', metadata: { field: 'counts.memory' } });
  });
});

describe('identifiers for another target', () => {
  it('are ULIDs with the source time, deterministic per target and different across targets', () => {
    const a = deriveId('acme', 'alice', memory.id);
    expect(a).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(a.slice(0, 10)).toBe(memory.id.slice(0, 10));
    expect(deriveId('acme', 'alice', memory.id)).toBe(a);
    expect(deriveId('globex', 'alice', memory.id)).not.toBe(a);
    expect(deriveId('acme', 'bob', memory.id)).not.toBe(a);
  });

  it('rewrite every reference consistently, inside JSON values too', () => {
    const parsed = parseExport(file());
    const map = (id: string) => deriveId('t', 's', id);
    const out = remapIds(parsed.records, map);
    expect(out.session[0]!.id).toBe(map(session.id));
    expect(out.message[0]!.sessionId).toBe(out.session[0]!.id);
    expect(out.memory[0]!.evidence).toEqual({
      messageIds: [out.message[0]!.id],
      sessionId: out.session[0]!.id,
      chunkIds: [],
    });
    expect(out.memory[0]!.value).toEqual({ city: 'Lisbon' });
  });
});

describe('the mem0 converter', () => {
  const mem0 = {
    results: [
      {
        id: 'u-1',
        memory: 'Likes tea',
        user_id: 'alice',
        metadata: { mood: 'calm', n: 2 },
        created_at: '2024-07-26T10:29:36-07:00',
      },
      { id: 'u-2', memory: 'Has a cat', user_id: 'bob', created_at: '2024-07-27T00:00:00Z' },
    ],
  };

  it("turns one user's memories into a valid export, the same every time", () => {
    const lines = convertMem0(mem0, { userId: 'alice', now: 0 });
    const parsed = parseExport(lines);
    expect(parsed.header.source).toEqual({ tenant: 'mem0', subject: 'alice' });
    expect(parsed.records.memory).toHaveLength(1);
    expect(parsed.records.memory[0]).toMatchObject({
      text: 'Likes tea',
      sourceKind: 'IMPORT',
      createdAt: Date.parse('2024-07-26T10:29:36-07:00'),
      metadata: { mood: 'calm', n: '2', mem0_id: 'u-1' },
    });
    expect(parsed.records.memory_revision[0]).toMatchObject({
      action: 'CREATE',
      memoryId: parsed.records.memory[0]!.id,
    });
    expect(convertMem0(mem0, { userId: 'alice', now: 99 }).slice(1, -1)).toEqual(lines.slice(1, -1));
  });

  it('asks which user when the file holds several, and accepts a plain list', () => {
    expect(refusal(() => convertMem0(mem0))).toMatchObject({
      reason: 'FIELD_REQUIRED',
      metadata: { field: 'user' },
    });
    expect(mem0Users(mem0)).toEqual(
      new Map([
        ['alice', 1],
        ['bob', 1],
      ]),
    );
    expect(parseExport(convertMem0(mem0.results.slice(1))).header.source.subject).toBe('bob');
  });

  it('names the entry that is not a mem0 memory', () => {
    expect(refusal(() => convertMem0([{ id: 'x' }]))).toMatchObject({
      reason: 'IMPORT_RECORD_INVALID',
      metadata: { line: 1, field: 'memory' },
    });
    expect(refusal(() => convertMem0({ nope: 1 }))).toMatchObject({ reason: 'IMPORT_FORMAT_UNSUPPORTED' });
  });
});
