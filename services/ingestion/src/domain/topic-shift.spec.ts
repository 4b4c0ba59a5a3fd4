import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { clampNote, MAX_NOTE_LENGTH, splitPositions, type JudgedMessage } from './boundary-judgement.js';
import {
  depthScores,
  depthThreshold,
  isLocalMinimum,
  MAX_WINDOW_CHARS,
  scoreGaps,
  selectSplits,
  windowTexts,
  type GapScore,
} from './topic-shift.js';

function message(sequence: number, role: JudgedMessage['role'], content = `m${sequence}`): JudgedMessage {
  return { sequence, role, content };
}

/** A user/assistant conversation of `rounds` rounds, sequences from 1. */
function rounds(count: number): JudgedMessage[] {
  return Array.from({ length: count * 2 }, (_, i) => message(i + 1, i % 2 === 0 ? 'USER' : 'ASSISTANT'));
}

describe('splitPositions', () => {
  it('allows a split only before a USER message, never at the start', () => {
    const messages = [
      message(1, 'USER'),
      message(2, 'ASSISTANT'),
      message(3, 'TOOL'),
      message(4, 'ASSISTANT'),
      message(5, 'USER'),
      message(6, 'SYSTEM'),
      message(7, 'USER'),
      message(8, 'ASSISTANT'),
    ];
    expect(splitPositions(messages)).toEqual([4, 6]);
  });

  it('finds none in a tail without a later user turn', () => {
    expect(splitPositions([message(1, 'USER'), message(2, 'ASSISTANT')])).toEqual([]);
    expect(splitPositions([])).toEqual([]);
  });
});

describe('depthScores', () => {
  it('measures a valley from the peaks reached by climbing both ways', () => {
    const depths = depthScores([0.9, 0.8, 0.3, 0.6, 0.7]);
    expect(depths[0]).toBeCloseTo(0, 10);
    // From 0.8: left climbs to 0.9, right falls at once.
    expect(depths[1]).toBeCloseTo(0.1, 10);
    // From 0.3: left climbs 0.8 → 0.9, right climbs 0.6 → 0.7.
    expect(depths[2]).toBeCloseTo(0.6 + 0.4, 10);
    // From 0.6: the left neighbour is lower (no climb), right climbs to 0.7.
    expect(depths[3]).toBeCloseTo(0.1, 10);
    expect(depths[4]).toBeCloseTo(0, 10);
  });

  it('stops climbing at the first fall, so a farther higher peak does not count', () => {
    // From 0.2 the left climb stops at 0.5 (0.4 before it is lower); 1.0 beyond is not reached.
    expect(depthScores([1.0, 0.4, 0.5, 0.2, 0.6])[3]).toBeCloseTo(0.3 + 0.4, 10);
  });

  it('is never negative', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { maxLength: 40 }), (series) =>
        depthScores(series).every((d) => d >= 0),
      ),
    );
  });
});

describe('isLocalMinimum', () => {
  it('takes a flat valley once, at its first point', () => {
    const series = [0.8, 0.4, 0.4, 0.9];
    expect(series.map((_, i) => isLocalMinimum(series, i))).toEqual([false, true, false, false]);
  });

  it('compares an end point with its one neighbour', () => {
    expect(isLocalMinimum([0.2, 0.5], 0)).toBe(true);
    expect(isLocalMinimum([0.5, 0.2], 1)).toBe(true);
    expect(isLocalMinimum([0.5], 0)).toBe(true);
    expect(isLocalMinimum([], 0)).toBe(false);
  });
});

describe('depthThreshold', () => {
  it('is the floor when relative thresholds are off or there is nothing to average', () => {
    expect(depthThreshold([0.1, 0.9], 0.2, null)).toBe(0.2);
    expect(depthThreshold([], 0.2, 0.5)).toBe(0.2);
  });

  it('is the mean plus the given standard deviations, never below the floor', () => {
    // mean 0.4, population sd 0.2
    expect(depthThreshold([0.2, 0.6], 0, 0.5)).toBeCloseTo(0.5, 10);
    expect(depthThreshold([0.2, 0.6], 0, 1)).toBeCloseTo(0.6, 10);
    expect(depthThreshold([0.2, 0.6], 0.55, 0.5)).toBe(0.55);
  });
});

/** Gaps at every other position (before the USER messages of `rounds`) from a similarity series. */
function gapsAt(positions: readonly number[], similarities: readonly number[]): GapScore[] {
  return scoreGaps(positions.map((position, i) => ({ position, similarity: similarities[i] ?? 0 })));
}

describe('selectSplits', () => {
  const positions = [2, 4, 6, 8, 10, 12, 14];

  it('splits at a deep enough local minimum', () => {
    const gaps = gapsAt(positions, [0.8, 0.8, 0.8, 0.3, 0.8, 0.8, 0.8]);
    expect(selectSplits(gaps, 16, { minDepth: 0.2, minSegment: 4 }).map((g) => g.position)).toEqual([8]);
    expect(selectSplits(gaps, 16, { minDepth: 1.1, minSegment: 4 })).toEqual([]);
  });

  it('never splits on a slope, only at the bottom of a valley', () => {
    const gaps = gapsAt(positions, [0.9, 0.7, 0.5, 0.3, 0.5, 0.7, 0.9]);
    expect(selectSplits(gaps, 16, { minDepth: 0, minSegment: 2 }).map((g) => g.position)).toEqual([8]);
  });

  it('keeps every segment at least minSegment messages long, deepest split first', () => {
    // Valleys at 4 (depth 0.6) and 8 (depth 1.0): 4 messages apart, so minSegment 6 keeps only
    // the deeper one; minSegment 4 keeps both.
    const gaps = gapsAt(positions, [0.9, 0.6, 0.9, 0.4, 0.9, 0.9, 0.9]);
    expect(selectSplits(gaps, 16, { minDepth: 0.1, minSegment: 6 }).map((g) => g.position)).toEqual([8]);
    expect(selectSplits(gaps, 16, { minDepth: 0.1, minSegment: 4 }).map((g) => g.position)).toEqual([4, 8]);
    // A valley at position 2 would leave a 2-message first segment.
    const early = gapsAt(positions, [0.2, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]);
    expect(selectSplits(early, 16, { minDepth: 0.1, minSegment: 4 })).toEqual([]);
    // …and one at 14 a 2-message last segment.
    const late = gapsAt(positions, [0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.2]);
    expect(selectSplits(late, 16, { minDepth: 0.1, minSegment: 4 })).toEqual([]);
  });

  it('applies the relative threshold over the tail', () => {
    const gaps = gapsAt(positions, [0.9, 0.7, 0.9, 0.3, 0.9, 0.8, 0.9]);
    const depths = gaps.map((g) => g.depth);
    expect(selectSplits(gaps, 16, { minDepth: 0, minSegment: 2 }).map((g) => g.position)).toEqual([4, 8, 12]);
    const threshold = depthThreshold(depths, 0, 1);
    const kept = selectSplits(gaps, 16, { minDepth: 0, minSegment: 2, relativeDepth: 1 });
    expect(kept.map((g) => g.position)).toEqual([8]);
    expect(kept.every((g) => g.depth >= threshold)).toBe(true);
  });

  it('only ever returns deep enough local minima with segments of minSegment (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 8 }),
        fc.double({ min: 0, max: 0.5, noNaN: true }),
        (similarities, minSegment, minDepth) => {
          const gapPositions = similarities.map((_, i) => 2 * (i + 1));
          const messageCount = 2 * (similarities.length + 1);
          const gaps = gapsAt(gapPositions, similarities);
          const chosen = selectSplits(gaps, messageCount, { minDepth, minSegment });
          const bounds = [0, ...chosen.map((g) => g.position), messageCount];
          // With no split there is one segment, the tail, whatever its length.
          for (let i = 1; chosen.length > 0 && i < bounds.length; i++) {
            if (bounds[i]! - bounds[i - 1]! < minSegment) return false;
          }
          return chosen.every((g) => {
            const i = gaps.indexOf(g);
            return i >= 0 && g.depth >= minDepth && isLocalMinimum(similarities, i);
          });
        },
      ),
    );
  });
});

describe('windowTexts', () => {
  it('joins the window messages on each side, nearest to the split point first', () => {
    const messages = rounds(3); // m1..m6, USER at 0, 2, 4
    expect(windowTexts(messages, [2, 4], 2)).toEqual([
      { position: 2, before: 'm2\nm1', after: 'm3\nm4' },
      { position: 4, before: 'm4\nm3', after: 'm5\nm6' },
    ]);
  });

  it('reads only user and assistant messages with text', () => {
    const messages = [
      message(1, 'USER', 'cook pasta'),
      message(2, 'TOOL', '{"result":1}'),
      message(3, 'ASSISTANT', '  '),
      message(4, 'SYSTEM', 'be brief'),
      message(5, 'ASSISTANT', 'boil water'),
      message(6, 'USER', 'fix my car'),
      message(7, 'ASSISTANT', 'check the battery'),
    ];
    expect(windowTexts(messages, [5], 3)).toEqual([
      { position: 5, before: 'boil water\ncook pasta', after: 'fix my car\ncheck the battery' },
    ]);
  });

  it('leaves out a position with nothing readable on one side', () => {
    const messages = [message(1, 'SYSTEM'), message(2, 'USER'), message(3, 'ASSISTANT')];
    expect(windowTexts(messages, [1], 2)).toEqual([]);
  });

  it('cuts a window at its far end', () => {
    const near = 'n'.repeat(MAX_WINDOW_CHARS - 10);
    const messages = [
      message(1, 'USER', 'f'.repeat(100)),
      message(2, 'ASSISTANT', near),
      message(3, 'USER', 'after'),
    ];
    const [texts] = windowTexts(messages, [2], 2);
    expect(Array.from(texts!.before)).toHaveLength(MAX_WINDOW_CHARS);
    expect(texts!.before.startsWith(near)).toBe(true);
  });
});

describe('clampNote', () => {
  it('keeps short notes and cuts long ones to the limit', () => {
    expect(clampNote('topic shift')).toBe('topic shift');
    const long = clampNote('话'.repeat(300));
    expect(Array.from(long)).toHaveLength(MAX_NOTE_LENGTH);
    expect(long.endsWith('…')).toBe(true);
  });
});
