import { describe, expect, it } from '@jest/globals';
import { median, percentile, quantile } from './statistics.js';

describe('percentile (nearest rank)', () => {
  it('is the smallest value with p % at or below it', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1); // 1..100
    expect(percentile(sorted, 50)).toBe(50);
    expect(percentile(sorted, 95)).toBe(95);
    expect(percentile(sorted, 99)).toBe(99);
    expect(percentile(sorted, 100)).toBe(100);
    expect(percentile([5, 7, 9], 50)).toBe(7);
    expect(percentile([5, 7, 9], 99)).toBe(9);
    expect(percentile([4], 0)).toBe(4);
    expect(percentile([], 50)).toBeNaN();
  });
});

describe('quantile', () => {
  it('interpolates quantiles', () => {
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(quantile([1, 2, 3, 4], 0)).toBe(1);
    expect(quantile([1, 2, 3, 4], 1)).toBe(4);
    expect(quantile([], 0.5)).toBeNaN();
  });
});

describe('median', () => {
  it('is the middle value, or the mean of the two middle ones', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([440, 425])).toBe(432.5);
    expect(median([])).toBeNaN();
  });
});
