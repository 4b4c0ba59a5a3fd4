// The labelled redaction corpus (issue 18): secret-bearing sentences of every shape and context
// the detectors claim, and look-alike clean sentences, in English and Chinese. Shared by the
// corpus test (`src/corpus.spec.ts`) and `npm run bench:redaction`.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  BASE62,
  fakeAwsAccessKeyId,
  fakeAwsSecretAccessKey,
  fakeOpenAiKey,
  randomString,
} from '@engram/testing';
import { detectSecrets } from '../../src/index.js';

/** One line of the corpus. `secret` is the marked secret (secret lines only), `text` the sentence. */
export interface CorpusLine {
  readonly language: 'en' | 'zh';
  readonly label: 'secret' | 'clean';
  readonly category: string;
  readonly text: string;
  /** Offsets of the secret in `text` (secret lines). */
  readonly span?: { readonly start: number; readonly end: number };
}

const HEX = '0123456789abcdef';
const join = (...parts: string[]): string => parts.join('');

// Synthetic credentials, built at run time; prefixes are concatenated so the source holds no key.
const FAKES: Record<string, (seed: number) => string> = {
  gitlab: (seed) => join('gl', 'pat-', randomString(BASE62 + '_-', 20, seed)),
  npm: (seed) => join('np', 'm_', randomString(BASE62, 36, seed)),
  huggingface: (seed) =>
    join('h', 'f_', randomString('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', 34, seed)),
  sendgrid: (seed) =>
    join('S', 'G.', randomString(BASE62, 22, seed), '.', randomString(BASE62 + '_-', 43, seed + 1)),
  slack_webhook: (seed) =>
    join(
      'https://hooks.',
      'slack.com/services/T',
      randomString('ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', 8, seed),
      '/B',
      randomString('ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', 10, seed + 1),
      '/',
      randomString(BASE62, 24, seed + 2),
    ),
  twilio: (seed) => join('S', 'K', randomString(HEX, 32, seed)),
  aws_secret: (seed) => fakeAwsSecretAccessKey(seed),
  aws_id: (seed) => fakeAwsAccessKeyId(seed),
  openai: (seed) => fakeOpenAiKey(seed),
};

function parse(language: 'en' | 'zh', source: string): CorpusLine[] {
  const lines: CorpusLine[] = [];
  let seed = language === 'en' ? 1000 : 5000;
  for (const raw of source.split('\n')) {
    if (raw.trim() === '' || raw.startsWith('#')) continue;
    const [label, category, sentence] = raw.split('\t');
    if ((label !== 'secret' && label !== 'clean') || category === undefined || sentence === undefined) {
      throw new Error(`corpus ${language}: malformed line ${JSON.stringify(raw)}`);
    }
    const filled = sentence.replace(/\{\{([a-z_]+)\}\}/g, (_, name: string) => {
      const fake = FAKES[name];
      if (fake === undefined) throw new Error(`corpus ${language}: unknown fake ${name}`);
      return fake(seed++);
    });
    const start = filled.indexOf('⟦');
    const end = filled.indexOf('⟧');
    const text = filled.replace('⟦', '').replace('⟧', '');
    if (label === 'secret') {
      if (start < 0 || end < start) throw new Error(`corpus ${language}: secret line without ⟦…⟧: ${raw}`);
      lines.push({ language, label, category, text, span: { start, end: end - 1 } });
    } else {
      lines.push({ language, label, category, text });
    }
  }
  return lines;
}

/** Every line of the corpus, English then Chinese. */
export function loadCorpus(): CorpusLine[] {
  const read = (name: string) => readFileSync(fileURLToPath(new URL(name, import.meta.url)), 'utf8');
  return [...parse('en', read('en.tsv')), ...parse('zh', read('zh.tsv'))];
}

/** Whether a secret line's secret is covered entirely by findings; whether a clean line has none. */
export function judgeLine(line: CorpusLine): boolean {
  const findings = detectSecrets(line.text);
  if (line.span === undefined) return findings.length === 0;
  const { start, end } = line.span;
  // Every character of the secret lies inside some finding.
  for (let i = start; i < end; i++) {
    if (!findings.some((f) => f.start <= i && i < f.end)) return false;
  }
  return true;
}

/** Detection and false-positive rates, overall and per language and category. */
export interface CorpusRates {
  readonly secretLines: number;
  readonly cleanLines: number;
  readonly detectionRate: number;
  readonly falsePositiveRate: number;
  readonly missed: readonly CorpusLine[];
  readonly falsePositives: readonly CorpusLine[];
  readonly byCategory: Record<string, { lines: number; label: 'secret' | 'clean'; rate: number }>;
}

export function corpusRates(lines: readonly CorpusLine[] = loadCorpus()): CorpusRates {
  const missed: CorpusLine[] = [];
  const falsePositives: CorpusLine[] = [];
  const tally = new Map<string, { lines: number; label: 'secret' | 'clean'; hits: number }>();
  for (const line of lines) {
    const ok = judgeLine(line);
    if (!ok) (line.label === 'secret' ? missed : falsePositives).push(line);
    const key = `${line.language}/${line.label}/${line.category}`;
    const entry = tally.get(key) ?? { lines: 0, label: line.label, hits: 0 };
    entry.lines++;
    // A secret line's hit is a detection; a clean line's hit is a false positive.
    if (line.label === 'secret' ? ok : !ok) entry.hits++;
    tally.set(key, entry);
  }
  const secretLines = lines.filter((l) => l.label === 'secret').length;
  const cleanLines = lines.length - secretLines;
  const byCategory: CorpusRates['byCategory'] = {};
  for (const [key, entry] of [...tally].sort(([a], [b]) => (a < b ? -1 : 1))) {
    byCategory[key] = { lines: entry.lines, label: entry.label, rate: entry.hits / entry.lines };
  }
  return {
    secretLines,
    cleanLines,
    detectionRate: (secretLines - missed.length) / secretLines,
    falsePositiveRate: falsePositives.length / cleanLines,
    missed,
    falsePositives,
    byCategory,
  };
}
