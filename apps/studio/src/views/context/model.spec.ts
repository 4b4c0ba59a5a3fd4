import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from '@jest/globals';
import {
  BuildContextResponseSchema,
  ContextLayer,
  TraceReason,
  TraceItemSchema,
} from '@engram/contracts/context';
import {
  buildContextRequest,
  EMPTY_CONTEXT_FORM,
  groupTrace,
  segmentsTotal,
  tokenSegments,
  traceCounts,
  traceLink,
} from './model.js';

describe('context form → request', () => {
  it('sends the message, the budget and the trace flag; nothing else by default', () => {
    const { request, problems } = buildContextRequest(
      { ...EMPTY_CONTEXT_FORM, userMessage: 'hi' },
      'sessions/S',
    );
    expect(problems).toEqual([]);
    expect(request).toEqual({
      session: 'sessions/S',
      userMessage: 'hi',
      budget: { totalTokens: 4000 },
      includeTrace: true,
    });
  });

  it('maps the options the user set', () => {
    const { request } = buildContextRequest(
      {
        ...EMPTY_CONTEXT_FORM,
        userMessage: 'hi',
        totalTokens: '500',
        reservedOutputTokens: '100',
        systemPrompt: 'Be brief.',
        model: ' gpt-4o ',
        knowledgeQuery: 'tea',
        knowledgeTopK: '3',
        knowledgeMinScore: '0',
        evergreenMinConfidence: '0.5',
        strict: true,
      },
      'sessions/S',
    );
    expect(request).toEqual({
      session: 'sessions/S',
      userMessage: 'hi',
      budget: { totalTokens: 500, reservedOutputTokens: 100 },
      includeTrace: true,
      model: 'gpt-4o',
      systemPrompt: 'Be brief.',
      knowledge: { query: 'tea', topK: 3, minScore: 0 },
      evergreenMinConfidence: 0.5,
      strict: true,
    });
  });

  it('reports numbers it cannot read', () => {
    const { problems } = buildContextRequest(
      { ...EMPTY_CONTEXT_FORM, userMessage: 'hi', totalTokens: '10.5', knowledgeMinScore: 'x' },
      'sessions/S',
    );
    expect(problems).toEqual(['totalTokens', 'knowledgeMinScore']);
  });
});

describe('tokens per layer', () => {
  it('adds up the used layers and the overhead to the total', () => {
    const response = create(BuildContextResponseSchema, {
      totalTokens: 60,
      overheadTokens: 6,
      layers: [
        { layer: ContextLayer.SYSTEM_PROMPT, usedTokens: 0 },
        { layer: ContextLayer.RETRIEVED_KNOWLEDGE, usedTokens: 40 },
        { layer: ContextLayer.USER_MESSAGE, usedTokens: 14 },
      ],
    });
    const segments = tokenSegments(response);
    expect(segments).toEqual([
      { key: 'RETRIEVED_KNOWLEDGE', value: 40 },
      { key: 'USER_MESSAGE', value: 14 },
      { key: 'OVERHEAD', value: 6 },
    ]);
    expect(segmentsTotal(segments)).toBe(response.totalTokens);
  });
});

describe('trace grouping', () => {
  const item = (id: string, layer: ContextLayer, included: boolean, reason: TraceReason) =>
    create(TraceItemSchema, { id, layer, included, reason });
  const trace = [
    item('memories/A', ContextLayer.RETRIEVED_KNOWLEDGE, true, TraceReason.INCLUDED),
    item('memories/B', ContextLayer.RETRIEVED_KNOWLEDGE, false, TraceReason.DROPPED_BELOW_THRESHOLD),
    item('memories/C', ContextLayer.RETRIEVED_KNOWLEDGE, true, TraceReason.INCLUDED),
    item('request/userMessage', ContextLayer.USER_MESSAGE, true, TraceReason.INCLUDED),
  ];

  it('groups by layer in order of appearance, included apart from dropped', () => {
    const groups = groupTrace(trace);
    expect(groups.map((g) => [g.layer, g.included.map((i) => i.id), g.dropped.map((i) => i.id)])).toEqual([
      [ContextLayer.RETRIEVED_KNOWLEDGE, ['memories/A', 'memories/C'], ['memories/B']],
      [ContextLayer.USER_MESSAGE, ['request/userMessage'], []],
    ]);
    expect(traceCounts(trace)).toEqual({ included: 3, dropped: 1 });
  });

  it('links resource ids to their Studio pages, not synthetic ids', () => {
    expect(traceLink('memories/A')).toEqual({ view: 'memories', rest: ['A'], query: {} });
    expect(traceLink('documents/D/chunks/C')).toEqual({ view: 'documents', rest: ['D'], query: {} });
    expect(traceLink('sessions/S/messages/M')).toEqual({ view: 'sessions', rest: ['S'], query: {} });
    expect(traceLink('request/userMessage')).toBeUndefined();
  });
});
