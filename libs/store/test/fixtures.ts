import type { NewChunk, NewDocument, NewMemory } from '../src/index.js';

/** A document as ingestion would create it (tenant t1, alice's, SELF); `overrides` set the rest. */
export function newDocument(overrides: Partial<NewDocument> = {}): NewDocument {
  return {
    tenantId: 't1',
    ownerId: 'alice',
    orgId: '',
    scope: 'SELF',
    displayName: 'Handbook',
    mimeType: 'text/markdown',
    sourceUri: 'file:///handbook.md',
    metadata: {},
    contentHash: 'a'.repeat(64),
    sizeBytes: 1_234,
    charCount: 1_000,
    state: 'INGESTING',
    chunkSize: 1_000,
    chunkOverlap: 150,
    keepTablesWhole: true,
    keepCodeWhole: true,
    ...overrides,
  };
}

/** A random content hash, for documents that must not deduplicate. */
export const randomHash = () => Math.random().toString(16).slice(2).padEnd(64, '0').slice(0, 64);

/** The `ordinal`-th TEXT chunk of a document. */
export function newChunk(ordinal: number, overrides: Partial<NewChunk> = {}): NewChunk {
  return {
    ordinal,
    kind: 'TEXT',
    text: `paragraph ${ordinal}`,
    startOffset: ordinal * 100,
    endOffset: ordinal * 100 + 11,
    overlapPrefixChars: 0,
    headerPrefixChars: 0,
    tokenCount: 3,
    headingPath: [],
    ...overrides,
  };
}

/** A FACT memory as the user stated it (tenant t1, alice's, SELF); `overrides` set the rest. */
export function newMemory(text: string, overrides: Partial<NewMemory> = {}): NewMemory {
  return {
    tenantId: 't1',
    ownerId: 'alice',
    orgId: '',
    scope: 'SELF',
    type: 'FACT',
    namespace: 'user_preference',
    key: `k-${text}`,
    text,
    evergreen: false,
    sourceKind: 'EXPLICIT_USER_STATEMENT',
    confidence: 0.9,
    evidence: { messageIds: [], chunkIds: [] },
    languageCode: 'en',
    metadata: {},
    ...overrides,
  };
}
