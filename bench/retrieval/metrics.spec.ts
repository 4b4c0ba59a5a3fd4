import { describe, expect, it } from '@jest/globals';
import { DatasetError, parseDataset } from './dataset.js';
import { aggregate, bootstrapCi, gains, ndcgAtK, pairedBootstrapCi, recallAtK } from './metrics.js';

const LOG3 = Math.log2(3); // rank 2 discount: 1 / log2(3) ≈ 0.6309

describe('recallAtK', () => {
  it('counts the distinct evidence turns covered by the top k results', () => {
    const results = [['x'], ['a'], ['a', 'b']];
    expect(recallAtK(['a', 'b'], results, 1)).toBe(0);
    expect(recallAtK(['a', 'b'], results, 2)).toBe(0.5);
    expect(recallAtK(['a', 'b'], results, 3)).toBe(1);
    expect(recallAtK(['a', 'b'], results, 25)).toBe(1);
  });
  it('lets one result (a round) cover several evidence turns, and ignores duplicate evidence ids', () => {
    expect(recallAtK(['a', 'b', 'c'], [['a', 'b']], 1)).toBeCloseTo(2 / 3);
    expect(recallAtK(['a', 'a'], [['a']], 1)).toBe(1);
  });
  it('is 0 without evidence or results', () => {
    expect(recallAtK([], [['a']], 5)).toBe(0);
    expect(recallAtK(['a'], [], 5)).toBe(0);
  });
});

describe('gains and ndcgAtK', () => {
  it('gives gain 1 only to results that cover a not-yet-covered evidence turn', () => {
    expect(gains(['a', 'b'], [['x'], ['a'], ['a'], ['a', 'b']], 10)).toEqual([0, 1, 0, 1]);
  });
  it('matches hand-computed values', () => {
    // gains [0, 1, 1]: DCG = 1/log2(3) + 1/log2(4); IDCG (2 evidence turns) = 1 + 1/log2(3).
    expect(ndcgAtK(['a', 'b'], [['x'], ['a'], ['a', 'b']])).toBeCloseTo(
      (1 / LOG3 + 0.5) / (1 + 1 / LOG3),
      10,
    );
    // gains [1, 0, 1, 0]: DCG = 1 + 1/2; IDCG (3 evidence turns) = 1 + 1/log2(3) + 1/2 → 0.70392.
    expect(ndcgAtK(['a', 'b', 'c'], [['a'], ['z'], ['b'], ['a']])).toBeCloseTo(0.703918, 5);
    // One result covering both evidence turns counts once: 1 / (1 + 1/log2(3)) → 0.61315.
    expect(ndcgAtK(['a', 'b'], [['a', 'b']])).toBeCloseTo(0.613147, 5);
    expect(ndcgAtK(['a'], [['a'], ['b']])).toBe(1);
    expect(ndcgAtK(['a'], [['b']])).toBe(0);
    expect(ndcgAtK([], [['a']])).toBe(0);
  });
  it('only looks at the top k and caps the ideal at k', () => {
    const results = Array.from({ length: 12 }, (_, i) => [`t${i}`]);
    const evidence = results.map(([turn]) => turn!);
    expect(ndcgAtK(evidence, results, 10)).toBe(1);
    expect(ndcgAtK(['t11'], results, 10)).toBe(0);
  });
});

describe('aggregate', () => {
  it('averages per question, overall and per category', () => {
    const { overall, byCategory } = aggregate([
      { category: 'A', values: { r: 1, n: 0.5 } },
      { category: 'A', values: { r: 0, n: 0 } },
      { category: 'B', values: { r: 1, n: 1 } },
      { values: { r: 0.5, n: 0.5 } },
    ]);
    expect(overall).toEqual({ n: 4, mean: { r: 0.625, n: 0.5 } });
    expect(byCategory).toEqual({
      '(none)': { n: 1, mean: { r: 0.5, n: 0.5 } },
      A: { n: 2, mean: { r: 0.5, n: 0.25 } },
      B: { n: 1, mean: { r: 1, n: 1 } },
    });
  });
});

describe('bootstrap', () => {
  it('gives a zero-width interval for constant values and a sensible one otherwise', () => {
    expect(bootstrapCi([0.5, 0.5, 0.5])).toEqual({ mean: 0.5, low: 0.5, high: 0.5 });
    // 400 Bernoulli values with p = 0.5: standard error 0.025, so the 95 % interval is ≈ ±0.049.
    const values = Array.from({ length: 400 }, (_, i) => i % 2);
    const ci = bootstrapCi(values, { resamples: 2000, seed: 1 });
    expect(ci.mean).toBe(0.5);
    expect(ci.low).toBeGreaterThan(0.44);
    expect(ci.low).toBeLessThan(0.47);
    expect(ci.high).toBeGreaterThan(0.53);
    expect(ci.high).toBeLessThan(0.56);
    expect(bootstrapCi(values, { seed: 3 })).toEqual(bootstrapCi(values, { seed: 3 }));
  });
  it('pairs differences', () => {
    const ci = pairedBootstrapCi([1, 1, 1, 0], [0, 0, 0, 0]);
    expect(ci.mean).toBe(0.75);
    expect(ci.low).toBeGreaterThanOrEqual(0);
    expect(() => pairedBootstrapCi([1], [])).toThrow(/equal lengths/);
  });
});

describe('parseDataset', () => {
  const valid = () => ({
    name: 'tiny',
    conversations: [
      {
        id: 'c1',
        user: 'u1',
        sessions: [
          {
            id: 's1',
            started_at: '2023-05-08T13:56:00Z',
            turns: [
              { id: 't1', role: 'user', speaker: 'Ann', text: 'I adopted a cat.' },
              { id: 't2', role: 'assistant', text: 'Nice!' },
            ],
          },
        ],
      },
    ],
    questions: [{ id: 'q1', conversation: 'c1', question: 'What pet?', evidence: ['t1'], category: 'x' }],
  });
  it('accepts a valid dataset', () => {
    expect(parseDataset(valid()).questions[0]!.evidence).toEqual(['t1']);
  });
  it('reports schema problems with their path', () => {
    const data = valid();
    (data.conversations[0]!.sessions[0]!.turns[0] as { role: string }).role = 'system';
    data.conversations[0]!.sessions[0]!.started_at = '8 May 2023';
    expect(() => parseDataset(data)).toThrow(DatasetError);
    expect(() => parseDataset(data)).toThrow(/conversations\[0\]\.sessions\[0\]\.turns\[0\]\.role/);
    expect(() => parseDataset(data)).toThrow(/conversations\[0\]\.sessions\[0\]\.started_at/);
  });
  it('reports evidence naming no turn, unknown conversations and duplicate ids', () => {
    const data = valid();
    data.questions.push({
      id: 'q1',
      conversation: 'c1',
      question: 'Again?',
      evidence: ['t9'],
      category: 'x',
    });
    data.questions.push({ id: 'q3', conversation: 'c2', question: 'Who?', evidence: ['t1'], category: 'x' });
    let message = '';
    try {
      parseDataset(data);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/questions\[1\]\.id: duplicate question id "q1"/);
    expect(message).toMatch(/questions\[1\]\.evidence\[0\]: no turn "t9" in conversation "c1"/);
    expect(message).toMatch(/questions\[2\]\.conversation: no conversation "c2"/);
  });
  it('rejects empty evidence and unknown fields', () => {
    const data = valid();
    data.questions[0]!.evidence = [];
    expect(() => parseDataset(data)).toThrow(
      /questions\[0\]\.evidence: a question needs at least one evidence turn/,
    );
    expect(() => parseDataset({ ...valid(), extra: 1 })).toThrow(/extra/);
  });
});
