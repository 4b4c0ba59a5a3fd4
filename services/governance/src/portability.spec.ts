import { describe, expect, it } from '@jest/globals';
import { emptyRecords, type ExportRecords } from '@engram/portability';
import { fakeAwsAccessKeyId } from '@engram/testing';
import { redactRecords } from './portability.js';

const key = fakeAwsAccessKeyId(7);

/** An import with a secret in a memory's text and metadata and credentials in a document's URI. */
function records(): ExportRecords {
  const out = emptyRecords();
  out.memory.push({
    id: '01JF0000000000000000000002',
    orgId: '',
    scope: 'SELF',
    type: 'FACT',
    namespace: 'mem0',
    key: 'mem0/1',
    text: `Deploy key is ${key}`,
    evergreen: false,
    sourceKind: 'IMPORT',
    confidence: 1,
    status: 'ACTIVE',
    statusReason: '',
    evidence: { messageIds: [], chunkIds: [] },
    languageCode: '',
    metadata: { aws_key: key, mood: 'calm' },
    createdAt: 1,
    updatedAt: 1,
    version: 1,
  });
  out.document.push({
    id: '01JF0000000000000000000003',
    orgId: '',
    scope: 'SELF',
    displayName: 'notes',
    mimeType: 'text/plain',
    sourceUri: 'https://user:pa55word@example.com/notes.txt',
    metadata: {},
    contentHash: 'a'.repeat(64),
    sizeBytes: 1,
    charCount: 1,
    chunkCount: 0,
    state: 'READY',
    chunkSize: 1000,
    chunkOverlap: 0,
    keepTablesWhole: true,
    keepCodeWhole: true,
    failureReason: '',
    failureMessage: '',
    createdAt: 1,
    updatedAt: 1,
    version: 1,
  });
  return out;
}

describe('redactRecords', () => {
  it("redacts an import's free text and counts each changed field", () => {
    const { records: out, changed } = redactRecords(records(), { redactSecrets: true });
    expect(out.memory[0]!.text).not.toContain(key);
    expect(out.memory[0]!.text).toContain('[redacted:');
    expect(out.memory[0]!.metadata['aws_key']).not.toContain(key);
    expect(out.memory[0]!.metadata['mood']).toBe('calm');
    expect(out.document[0]!.sourceUri).toBe('https://example.com/notes.txt');
    expect(changed).toBe(3);
  });

  it("keeps the text as it is when the tenant's redaction is off, but never a URL's credentials", () => {
    const { records: out, changed } = redactRecords(records(), { redactSecrets: false });
    expect(out.memory[0]!.text).toBe(`Deploy key is ${key}`);
    expect(out.memory[0]!.metadata['aws_key']).toBe(key);
    expect(out.document[0]!.sourceUri).toBe('https://example.com/notes.txt');
    expect(changed).toBe(1);
  });

  it('changes nothing in what is already clean (an Engram export)', () => {
    const clean = redactRecords(records(), { redactSecrets: true }).records;
    expect(redactRecords(clean, { redactSecrets: true })).toEqual({ records: clean, changed: 0 });
  });
});
