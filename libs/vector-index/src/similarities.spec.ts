import { describe, expect, it } from '@jest/globals';
import { NO_SIMILARITIES, SimilarityMatrix, VectorSimilarities } from './similarities.js';

describe('SimilarityMatrix', () => {
  it('looks scores up by id, either direction, none for a point with itself or an unknown one', () => {
    // Qdrant's offsets: (row, col) pairs of positions in `ids`; here only one direction of a–c.
    const m = new SimilarityMatrix(['a', 'b', 'c'], [0, 1, 0, 2], [1, 0, 2, 1], [0.5, 0.5, -0.25, 0.75]);
    expect(m.size).toBe(3);
    expect(m.of('a', 'b')).toBe(0.5);
    expect(m.of('c', 'a')).toBe(-0.25);
    expect(m.of('a', 'c')).toBe(-0.25);
    expect(m.of('b', 'c')).toBe(0.75);
    expect(m.of('a', 'a')).toBeUndefined();
    expect(m.of('a', 'zz')).toBeUndefined();
    expect(m.has('b')).toBe(true);
    expect(m.has('zz')).toBe(false);
  });

  it('leaves a pair without a score undefined and ignores positions outside the ids', () => {
    const m = new SimilarityMatrix(['a', 'b', 'c'], [0, 5], [1, 0], [0.5, 0.9]);
    expect(m.of('b', 'a')).toBe(0.5);
    expect(m.of('b', 'c')).toBeUndefined();
  });
});

describe('VectorSimilarities', () => {
  it('is the dot product of the vectors, symmetric, none with itself or a missing point', () => {
    const s = new VectorSimilarities(
      new Map([
        ['a', Float32Array.from([1, 0])],
        ['b', Float32Array.from([0.6, 0.8])],
      ]),
    );
    expect(s.size).toBe(2);
    expect(s.of('a', 'b')).toBeCloseTo(0.6, 6);
    expect(s.of('b', 'a')).toBe(s.of('a', 'b'));
    expect(s.of('a', 'a')).toBeUndefined();
    expect(s.of('a', 'c')).toBeUndefined();
  });

  it('leaves a lone vector out, as a distance matrix has no row for it', () => {
    const s = new VectorSimilarities(new Map([['a', Float32Array.from([1, 0])]]));
    expect(s.size).toBe(0);
    expect(s.has('a')).toBe(false);
  });

  it('refuses vectors of different dimensions', () => {
    const s = new VectorSimilarities(
      new Map([
        ['a', Float32Array.from([1, 0])],
        ['b', Float32Array.from([1, 0, 0])],
      ]),
    );
    expect(() => s.of('a', 'b')).toThrow(RangeError);
  });

  it('NO_SIMILARITIES has no point and no pair', () => {
    expect(NO_SIMILARITIES.size).toBe(0);
    expect(NO_SIMILARITIES.of('a', 'b')).toBeUndefined();
  });
});
