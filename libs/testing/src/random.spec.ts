import { describe, expect, it } from '@jest/globals';
import { choices, pick, seededRandom } from './random.js';

describe('seededRandom', () => {
  it('is reproducible with a seed and stays in [0, 1)', () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    const draws = Array.from({ length: 1000 }, () => a());
    expect(draws).toEqual(Array.from({ length: 1000 }, () => b()));
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...draws)).toBeLessThan(1);
  });

  it('is mulberry32: the sequence every seeded suite and benchmark was written against', () => {
    const random = seededRandom(42);
    expect([random(), random(), random()]).toEqual([
      0.6011037519201636, 0.44829055899754167, 0.8524657934904099,
    ]);
    // The seed is an unsigned 32-bit integer: -1 and 2^32 - 1 are the same seed.
    expect(seededRandom(-1)()).toBe(seededRandom(2 ** 32 - 1)());
  });
});

describe('choices', () => {
  it('draws like the loops it replaces: one draw per chance, pick and subset item', () => {
    const { chance, pick: pickOne, subset, pickN } = choices(seededRandom(3));
    const reference = seededRandom(3);
    expect(chance(0.5)).toBe(reference() < 0.5);
    const items = ['a', 'b', 'c', 'd'];
    expect(pickOne(items)).toBe(items[Math.floor(reference() * items.length)]);
    expect(subset(items, 0.5)).toEqual(items.filter(() => reference() < 0.5));
    const copy = [...items];
    const expected = [0, 1].map(() => copy.splice(Math.floor(reference() * copy.length), 1)[0]);
    expect(pickN(items, 2)).toEqual(expected);
  });

  it('picks distinct items, at most as many as there are', () => {
    const { pickN } = choices(seededRandom(11));
    const drawn = pickN([1, 2, 3], 5);
    expect([...drawn].sort()).toEqual([1, 2, 3]);
    expect(pick(seededRandom(1), ['only'])).toBe('only');
  });
});
