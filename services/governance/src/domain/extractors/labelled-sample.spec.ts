import { describe, expect, it } from '@jest/globals';
import { LABELLED_SAMPLE } from '../../../test/fixtures/labelled-sample.js';
import type { ExtractorName } from '../candidate.js';
import { extractOffline } from './index.js';
import { rates, scoreCase, toExtractionInput, total } from './scoring.js';

/**
 * Floors under the precision and recall measured on the labelled sample (docs/benchmarks.md,
 * `npm run bench:extractors`): every extractor measured 1.00 on both in both languages when this
 * was written. The margin allows about two FACT errors or one FORESIGHT/EVENT error per language
 * (those sets have 7–12 items) before the test fails, so a regression shows up as a red test and
 * an intended trade-off is a visible change of these numbers.
 */
const FLOORS: Readonly<Record<ExtractorName, { precision: number; recall: number }>> = {
  FACT: { precision: 0.95, recall: 0.95 },
  FORESIGHT: { precision: 0.9, recall: 0.9 },
  EVENT: { precision: 0.85, recall: 0.85 },
  EPISODE: { precision: 1, recall: 1 },
};
const ALL: readonly ExtractorName[] = ['FACT', 'FORESIGHT', 'EVENT', 'EPISODE'];

describe('the labelled sample', () => {
  const scores = LABELLED_SAMPLE.map((c) => scoreCase(c, extractOffline(toExtractionInput(c), ALL)));

  it('has about forty cases per language, each with unique ids', () => {
    expect(new Set(LABELLED_SAMPLE.map((c) => c.id)).size).toBe(LABELLED_SAMPLE.length);
    expect(LABELLED_SAMPLE.filter((c) => c.language === 'en').length).toBeGreaterThanOrEqual(40);
    expect(LABELLED_SAMPLE.filter((c) => c.language === 'zh').length).toBeGreaterThanOrEqual(40);
  });

  describe.each(['en', 'zh'] as const)('in %s', (language) => {
    it.each(ALL)('%s stays above its precision and recall floors', (extractor) => {
      const counts = total(
        scores.filter((s) => s.language === language),
        extractor,
      );
      const { precision, recall } = rates(counts);
      const errors = scores
        .filter((s) => s.language === language)
        .flatMap((s) => s.errors.filter((e) => e.type === extractor));
      // Below a floor, list what went wrong first: the failure message then shows the cases.
      if (precision < FLOORS[extractor].precision || recall < FLOORS[extractor].recall)
        expect(errors).toEqual([]);
      expect(precision).toBeGreaterThanOrEqual(FLOORS[extractor].precision);
      expect(recall).toBeGreaterThanOrEqual(FLOORS[extractor].recall);
    });
  });

  it('dates matched events correctly and covers the expected episode mentions', () => {
    const dates = scores.reduce(
      (sum, s) => ({
        labelled: sum.labelled + s.eventDates.labelled,
        correct: sum.correct + s.eventDates.correct,
      }),
      {
        labelled: 0,
        correct: 0,
      },
    );
    const mentions = scores.reduce(
      (sum, s) => ({ expected: sum.expected + s.mentions.expected, found: sum.found + s.mentions.found }),
      {
        expected: 0,
        found: 0,
      },
    );
    expect(dates.correct / dates.labelled).toBeGreaterThanOrEqual(0.9);
    expect(mentions.found / mentions.expected).toBeGreaterThanOrEqual(0.8);
  });
});
