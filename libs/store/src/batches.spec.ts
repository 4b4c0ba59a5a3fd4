import { describe, expect, it } from '@jest/globals';
import { batches } from './batches.js';

describe('batches', () => {
  it('splits by count, and by weight with a heavy item alone in its run', () => {
    expect(batches([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(batches([], 2)).toEqual([]);
    expect(batches([1, 9, 1, 1], 10, 5, (n) => n)).toEqual([[1], [9], [1, 1]]);
  });
});
