import { describe, expect, it } from '@jest/globals';
import { FakeStore, context, evaluationOf, event, fact, testId } from '../../../test/fixtures/rules.js';
import { judge } from './engine.js';

describe('rule evidence', () => {
  it('rejects a malformed message id', async () => {
    const [judgement] = await judge(
      [fact({ evidence: { messageIds: ['sessions/x/messages/y'] } })],
      context(),
    );
    expect(judgement?.outcome).toBe('REJECTED');
    expect(judgement?.decidingRule).toBe('evidence');
    expect(evaluationOf(judgement, 'evidence')).toMatchObject({
      verdict: 'REJECTED',
      field: 'evidence.messages',
    });
    expect(judgement?.rejection?.reason).toBe('MEMORY_REJECTED');
  });

  it('rejects a malformed MemCell or chunk id', async () => {
    const [cell, chunk] = await judge(
      [
        fact({ evidence: { messageIds: [], memCellId: 'cell-1' } }),
        fact({ evidence: { messageIds: [], chunkIds: [testId(3), 'lower-case'] } }),
      ],
      context(),
    );
    expect(evaluationOf(cell, 'evidence').field).toBe('evidence.mem_cell');
    expect(evaluationOf(chunk, 'evidence').field).toBe('evidence.chunks');
  });

  it('requires an extracted candidate to cite its messages', async () => {
    const [judgement] = await judge([event({ evidence: { messageIds: [] } })], context({ mode: 'extract' }));
    expect(judgement?.outcome).toBe('REJECTED');
    expect(evaluationOf(judgement, 'evidence').note).toBe(
      'an extracted candidate must cite the messages it came from',
    );
  });

  it('accepts an extracted candidate citing only its MemCell', async () => {
    const [judgement] = await judge(
      [event({ evidence: { messageIds: [], memCellId: testId(9) } })],
      context({ mode: 'extract' }),
    );
    expect(judgement?.outcome).toBe('ACCEPTED');
  });

  it('accepts a proposal without evidence', async () => {
    const [judgement] = await judge([fact({ evidence: { messageIds: [] } })], context());
    expect(evaluationOf(judgement, 'evidence')).toEqual({
      rule: 'evidence',
      verdict: 'PASSED',
      note: 'no evidence given',
    });
  });

  it('checks form only when the lookups cannot tell whether references exist', async () => {
    const [judgement] = await judge([fact()], context({ store: new FakeStore(false) }));
    expect(evaluationOf(judgement, 'evidence').note).toBe('1 references, well formed');
  });

  it('rejects references the lookups report missing or invisible, without naming them', async () => {
    const store = new FakeStore(true);
    store.missing.add(testId(5));
    const [missing, found] = await judge(
      [
        fact({ evidence: { messageIds: [testId(4), testId(5)] } }),
        event({ evidence: { messageIds: [testId(4)] } }),
      ],
      context({ store }),
    );
    expect(missing?.outcome).toBe('REJECTED');
    expect(evaluationOf(missing, 'evidence').note).toBe(
      '1 of 2 evidence references do not exist or are not visible',
    );
    expect(evaluationOf(found, 'evidence')).toMatchObject({
      verdict: 'PASSED',
      note: '1 references, all found',
    });
  });
});
