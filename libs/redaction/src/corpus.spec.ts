import { describe, expect, it } from '@jest/globals';
import { corpusRates, loadCorpus } from '../test/corpus/load.js';

describe('the labelled redaction corpus (test/corpus, en and zh)', () => {
  const lines = loadCorpus();
  const rates = corpusRates(lines);

  it('holds at least 150 secret and 300 clean lines in both languages', () => {
    expect(rates.secretLines).toBeGreaterThanOrEqual(150);
    expect(rates.cleanLines).toBeGreaterThanOrEqual(300);
    for (const language of ['en', 'zh'] as const) {
      expect(lines.some((l) => l.language === language && l.label === 'secret')).toBe(true);
      expect(lines.some((l) => l.language === language && l.label === 'clean')).toBe(true);
    }
  });

  it('detects every secret line (the whole marked secret is inside a finding)', () => {
    expect(rates.missed.map((l) => `${l.language}/${l.category}: ${l.text}`)).toEqual([]);
    expect(rates.detectionRate).toBe(1);
  });

  it('finds something in under 1 % of the clean lines', () => {
    expect(rates.falsePositiveRate).toBeLessThan(0.01);
  });
});
