import { describe, expect, it } from '@jest/globals';
import { GovernanceService } from '@engram/contracts/governance';
import { isEngramError } from '@engram/errors';
import {
  parseChunkName,
  parseDocumentName,
  parseMemCellName,
  parseMemoryName,
  parseMessageName,
  parseReindexJobName,
  parseRevisionName,
  parseSessionStateName,
} from './names.js';
import { DEFAULT_PAGE_LIMITS, methodKey, pageSize } from './wire.js';

const S = '01HZY6Q7V4N8M3K2J1H0G9F8E7';
const C = '01HZY6Q7V4N8M3K2J1H0G9F8E6';

function reasonOf(fn: () => unknown): { reason: string; metadata: unknown } {
  try {
    fn();
  } catch (error) {
    if (isEngramError(error)) return { reason: error.reason, metadata: error.metadata };
    throw error;
  }
  throw new Error('expected an EngramError');
}

describe('resource names', () => {
  it('parses every kind of name into its ids', () => {
    expect(parseMemoryName(`memories/${S}`)).toBe(S);
    expect(parseDocumentName(`documents/${S}`)).toBe(S);
    expect(parseReindexJobName(`reindexJobs/${S}`)).toBe(S);
    expect(parseSessionStateName(`sessions/${S}/state`)).toBe(S);
    expect(parseMessageName(`sessions/${S}/messages/${C}`)).toEqual({ sessionId: S, messageId: C });
    expect(parseMemCellName(`sessions/${S}/memCells/${C}`)).toEqual({ sessionId: S, memCellId: C });
    expect(parseChunkName(`documents/${S}/chunks/${C}`)).toEqual({ documentId: S, chunkId: C });
    expect(parseRevisionName(`memories/${S}/revisions/${C}`)).toEqual({ memoryId: S, revisionId: C });
  });

  it('answers FIELD_REQUIRED for an empty name and NAME_INVALID with the field and template otherwise', () => {
    expect(reasonOf(() => parseMemoryName(''))).toEqual({
      reason: 'FIELD_REQUIRED',
      metadata: { field: 'name' },
    });
    expect(reasonOf(() => parseMemCellName(`sessions/${S}/memCells/x`, 'mem_cell'))).toEqual({
      reason: 'NAME_INVALID',
      metadata: { field: 'mem_cell', pattern: 'sessions/{session}/memCells/{mem_cell}' },
    });
    // Not a prefix match: trailing segments are refused.
    expect(reasonOf(() => parseMemoryName(`memories/${S}/x`)).reason).toBe('NAME_INVALID');
  });
});

describe('wire helpers', () => {
  it('page sizes: 0 is the default, large ones are capped, negative ones are refused', () => {
    expect(pageSize(0, DEFAULT_PAGE_LIMITS)).toBe(50);
    expect(pageSize(7, DEFAULT_PAGE_LIMITS)).toBe(7);
    expect(pageSize(10_000, DEFAULT_PAGE_LIMITS)).toBe(500);
    expect(reasonOf(() => pageSize(-1, DEFAULT_PAGE_LIMITS)).reason).toBe('FIELD_INVALID');
  });

  it('method keys come from the descriptors', () => {
    expect(methodKey(GovernanceService.method.createMemory)).toBe(
      'engram.governance.v1.GovernanceService/CreateMemory',
    );
  });
});
