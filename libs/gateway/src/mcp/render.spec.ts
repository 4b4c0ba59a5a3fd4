import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from '@jest/globals';
import { ItemKind } from '@engram/contracts/common';
import {
  DecisionOutcome,
  ExtractionJobSchema,
  ExtractionJobState,
  MemoryType,
} from '@engram/contracts/governance';
import { MemCellSchema, MemCellStatus, MessageSchema } from '@engram/contracts/ingestion';
import { SearchResponseSchema } from '@engram/contracts/retrieval';
import type { RememberOutcome } from '../remember.js';
import { rememberText, searchText } from './render.js';
import { STORED_DATA_NOTICE } from './results.js';

const outcome = (over: Partial<RememberOutcome>): RememberOutcome => ({
  session: 'sessions/s1',
  message: create(MessageSchema, { name: 'sessions/s1/messages/1', content: 'hello' }),
  redacted: false,
  memCell: create(MemCellSchema, { name: 'sessions/s1/memCells/c1', status: MemCellStatus.EXTRACTED }),
  job: undefined,
  waitSeconds: 45,
  ...over,
});

describe('rememberText', () => {
  it('lists each decision with its rule and memory, the content quoted as stored data', () => {
    const job = create(ExtractionJobSchema, {
      name: 'extractionJobs/j1',
      state: ExtractionJobState.SUCCEEDED,
      candidates: [{ type: MemoryType.FACT, text: 'prefers tea' }],
      decisions: [
        {
          candidateIndex: 0,
          outcome: DecisionOutcome.ACCEPTED,
          rule: 'schema',
          memory: { name: 'memories/m1', type: MemoryType.FACT, text: 'prefers tea' },
        },
      ],
    });
    const text = rememberText(outcome({ job }));
    expect(text).toContain('1 decision(s):');
    expect(text).toContain(STORED_DATA_NOTICE);
    expect(text).toContain('ACCEPTED (rule schema) → memories/m1: "prefers tea"');
  });

  it('says when a secret was redacted and when the extraction is still running', () => {
    const job = create(ExtractionJobSchema, { name: 'extractionJobs/j2', state: ExtractionJobState.RUNNING });
    const text = rememberText(
      outcome({
        redacted: true,
        message: create(MessageSchema, { content: 'my key is [redacted:openai_key]' }),
        job,
      }),
    );
    expect(text).toContain(
      'A secret was redacted before storing; stored as "my key is [redacted:openai_key]".',
    );
    expect(text).toContain('Extraction extractionJobs/j2 is still RUNNING after 45s');
  });

  it('says when there was nothing to extract', () => {
    expect(rememberText(outcome({ memCell: undefined }))).toBe(
      'Nothing to extract: the session had no open messages.',
    );
  });
});

describe('searchText', () => {
  it('flags a degraded answer and quotes each result', () => {
    const response = create(SearchResponseSchema, {
      results: [
        {
          rank: 1,
          kind: ItemKind.ROUND,
          name: 'sessions/s1/rounds/1',
          score: 0.5,
          item: { case: 'round', value: { text: 'we talked "kettles"' } },
        },
      ],
      stats: { degraded: true, degradedMessage: 'embedder unavailable' },
    });
    const text = searchText('kettle', response);
    expect(text.split('\n')[0]).toBe('1 result(s) for "kettle" (degraded: embedder unavailable).');
    expect(text).toContain('1. round sessions/s1/rounds/1 score 0.500: "we talked \\"kettles\\""');
  });

  it('says there is nothing when there are no results', () => {
    expect(searchText('x', create(SearchResponseSchema, {}))).toBe('0 result(s) for "x".');
  });
});
