/**
 * Detection and false-positive rates of `@engram/redaction` on its labelled corpus
 * (libs/redaction/test/corpus: English and Chinese sentences bearing secrets of every shape and
 * context the detectors claim, and look-alike clean sentences). Issue 18; decision 0028.
 *
 *   npm run bench:redaction -- [--out bench/out/redaction.json]
 *
 * A secret line counts as detected when every character of its marked secret lies inside a
 * finding (so a partial redaction is a miss); a clean line counts as a false positive when any
 * finding at all is reported in it. Prints the rates per language, label and category, and writes
 * them, with the missed and falsely flagged lines, as JSON.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { corpusRates } from '../libs/redaction/test/corpus/load.js';

const outIndex = process.argv.indexOf('--out');
const out = outIndex > 0 ? (process.argv[outIndex + 1] ?? '') : 'bench/out/redaction.json';

const started = performance.now();
const rates = corpusRates();
const ms = performance.now() - started;
const pct = (rate: number) => `${(rate * 100).toFixed(1)} %`;

console.log(
  `redaction corpus: ${rates.secretLines} secret lines, detection ${pct(rates.detectionRate)}; ` +
    `${rates.cleanLines} clean lines, false positives ${pct(rates.falsePositiveRate)} (${ms.toFixed(0)} ms)`,
);
console.log('');
console.log('language/label/category                       lines   rate');
for (const [key, entry] of Object.entries(rates.byCategory)) {
  const what = entry.label === 'secret' ? 'detected' : 'flagged';
  console.log(`${key.padEnd(44)} ${String(entry.lines).padStart(6)}   ${pct(entry.rate)} ${what}`);
}
for (const line of rates.missed) console.log(`missed  ${line.language}/${line.category}: ${line.text}`);
for (const line of rates.falsePositives)
  console.log(`flagged ${line.language}/${line.category}: ${line.text}`);

mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  JSON.stringify(
    {
      secretLines: rates.secretLines,
      cleanLines: rates.cleanLines,
      detectionRate: rates.detectionRate,
      falsePositiveRate: rates.falsePositiveRate,
      byCategory: rates.byCategory,
      // Clean lines only: secret lines hold synthetic credentials, which are not written out.
      falsePositives: rates.falsePositives.map((l) => ({
        language: l.language,
        category: l.category,
        text: l.text,
      })),
      missed: rates.missed.map((l) => ({ language: l.language, category: l.category })),
    },
    null,
    2,
  ) + '\n',
);
console.log(`\nwrote ${out}`);
