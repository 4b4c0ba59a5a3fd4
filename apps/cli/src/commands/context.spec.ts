import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from '@jest/globals';
import {
  BuildContextResponseSchema,
  ContextLayer,
  TraceItemKind,
  TraceReason,
} from '@engram/contracts/context';
import { traceRows } from './context.js';

describe('traceRows', () => {
  it('shows which items the prompt-injection detector flagged, with the patterns', () => {
    const item = {
      kind: TraceItemKind.CHUNK,
      layer: ContextLayer.RETRIEVED_KNOWLEDGE,
      tokens: 40,
      score: 0.9,
      included: true,
      reason: TraceReason.INCLUDED,
    };
    const response = create(BuildContextResponseSchema, {
      trace: [
        {
          ...item,
          id: 'documents/d/chunks/c1',
          injectionSuspected: true,
          injectionPatterns: ['ignore_instructions'],
        },
        { ...item, id: 'documents/d/chunks/c2' },
      ],
    });
    const reasons = traceRows(response).map((row) => row[4]);
    expect(reasons[0]).toMatch(/\(injection suspected: ignore_instructions\)$/);
    expect(reasons[1]).not.toMatch(/injection/);
  });
});
