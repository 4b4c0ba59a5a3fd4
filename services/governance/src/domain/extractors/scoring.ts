/**
 * How the offline extractors are scored on the labelled sample (the shape of its cases is defined
 * here; the cases are the test fixture `test/fixtures/labelled-sample.ts`), shared by
 * `bench/extractors.ts` and the regression test `labelled-sample.spec.ts` so both count the same way.
 *
 * Matching, one-to-one and greedy in candidate order, within a case:
 * - FACT: same namespace and key, the expected message among the evidence, and every gist field
 *   matches the value: numbers equal; strings compared after NFKC, lower case and removal of spaces
 *   and punctuation, the expected text contained in the extracted one and the extracted one at most
 *   max(2.5 × expected, expected + 25) characters (an over-long capture does not count).
 * - FORESIGHT: the expected message among the evidence and `validFrom`'s calendar date in the
 *   case's zone within one day of the expected `YYYY-MM-DD` (inside the month for `YYYY-MM`, the
 *   year for `YYYY`).
 * - EVENT: the expected message among the evidence. Separately, for matched events with a labelled
 *   date, whether `occurredAt` satisfies the same date rule (reported as date accuracy).
 * - EPISODE: an episode where one is expected is a true positive, one where none is expected a
 *   false positive; `mentions` coverage is the share of expected mentions found in its text.
 * Precision = TP / (TP + FP), recall = TP / (TP + FN); with nothing to count the value is 1.
 */
import { localDateString, safeTimeZone } from '@engram/lexical';
import type { Candidate, ExtractionInput, ExtractorName, JsonValue } from '../candidate.js';

/** A message of a labelled conversation. */
export interface LabelledMessage {
  readonly role: 'USER' | 'ASSISTANT';
  readonly content: string;
  /** ISO 8601 with offset. */
  readonly at: string;
}

/** One expected candidate; `message` is the index of its evidence message in the case. */
export type ExpectedCandidate =
  | {
      readonly type: 'FACT';
      readonly message: number;
      readonly namespace: string;
      readonly key: string;
      readonly gist: Readonly<Record<string, string | number>>;
    }
  | { readonly type: 'FORESIGHT'; readonly message: number; readonly date: string }
  | { readonly type: 'EVENT'; readonly message: number; readonly date?: string }
  | { readonly type: 'EPISODE'; readonly mentions: readonly string[] };

/** A labelled conversation (one MemCell). */
export interface LabelledCase {
  readonly id: string;
  readonly language: 'en' | 'zh';
  readonly split: 'dev' | 'holdout';
  readonly timeZone: string;
  readonly messages: readonly LabelledMessage[];
  readonly expected: readonly ExpectedCandidate[];
}

/** The MemCell a labelled case stands for; message ids are `<case>-m<index>`. */
export function toExtractionInput(labelled: LabelledCase): ExtractionInput {
  return {
    memCellId: `cell-${labelled.id}`,
    sessionId: `session-${labelled.id}`,
    languageCode: '',
    timeZone: labelled.timeZone,
    messages: labelled.messages.map((m, index) => ({
      id: messageId(labelled, index),
      sequence: index + 1,
      role: m.role,
      content: m.content,
      occurredAt: Date.parse(m.at),
    })),
  };
}

function messageId(labelled: LabelledCase, index: number): string {
  return `${labelled.id}-m${index}`;
}

/** Counts of one extractor on some cases. */
export interface Counts {
  tp: number;
  fp: number;
  fn: number;
}

/** What went wrong in a case, for the bench's error listing. */
export interface CaseErrors {
  readonly id: string;
  readonly type: ExtractorName;
  readonly missed: readonly string[];
  readonly spurious: readonly string[];
}

/** The score of one case. */
export interface CaseScore {
  readonly id: string;
  readonly language: 'en' | 'zh';
  readonly split: 'dev' | 'holdout';
  readonly counts: Record<ExtractorName, Counts>;
  readonly eventDates: { labelled: number; correct: number };
  readonly mentions: { expected: number; found: number };
  readonly errors: readonly CaseErrors[];
}

const TYPES: readonly ExtractorName[] = ['FACT', 'FORESIGHT', 'EVENT', 'EPISODE'];

function squash(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\s\p{P}\p{S}]+/gu, '');
}

/** Whether an extracted value field satisfies an expected gist field. */
export function gistMatches(actual: JsonValue | undefined, expected: string | number): boolean {
  if (typeof expected === 'number') return typeof actual === 'number' && actual === expected;
  if (typeof actual !== 'string') return false;
  const a = squash(actual);
  const e = squash(expected);
  return a.includes(e) && a.length <= Math.max(2.5 * e.length, e.length + 25);
}

/** Whether an instant falls on the expected date (`YYYY-MM-DD` ± 1 day, `YYYY-MM`, `YYYY`). */
export function dateMatches(epochMs: number | undefined, expected: string, timeZone: string): boolean {
  if (epochMs === undefined) return false;
  const actual = localDateString(epochMs, safeTimeZone(timeZone));
  if (expected.length === 4 || expected.length === 7) return actual.startsWith(expected);
  const days = Math.abs(Date.parse(`${actual}T00:00:00Z`) - Date.parse(`${expected}T00:00:00Z`)) / 86_400_000;
  return days <= 1;
}

function describe(candidate: Candidate): string {
  if (candidate.type === 'FACT') {
    return `${candidate.namespace ?? ''}/${candidate.key ?? ''} ${JSON.stringify(candidate.value)}`;
  }
  return `${candidate.type} ${candidate.text}`;
}

function describeExpected(expected: ExpectedCandidate): string {
  switch (expected.type) {
    case 'FACT':
      return `${expected.namespace}/${expected.key} ${JSON.stringify(expected.gist)} (m${expected.message})`;
    case 'FORESIGHT':
      return `FORESIGHT ${expected.date} (m${expected.message})`;
    case 'EVENT':
      return `EVENT ${expected.date ?? ''} (m${expected.message})`;
    case 'EPISODE':
      return `EPISODE mentioning ${expected.mentions.join(', ')}`;
  }
}

function matches(labelled: LabelledCase, expected: ExpectedCandidate, candidate: Candidate): boolean {
  if (expected.type !== candidate.type) return false;
  if (expected.type === 'EPISODE') return true;
  if (!candidate.evidence.messageIds.includes(messageId(labelled, expected.message))) return false;
  switch (expected.type) {
    case 'FACT': {
      if (candidate.namespace !== expected.namespace || candidate.key !== expected.key) return false;
      const value = candidate.value;
      if (value === undefined || value === null || typeof value !== 'object' || Array.isArray(value))
        return false;
      return Object.entries(expected.gist).every(([field, gist]) => gistMatches(value[field], gist));
    }
    case 'FORESIGHT':
      return dateMatches(candidate.validFrom, expected.date, labelled.timeZone);
    case 'EVENT':
      return true;
  }
}

/** Scores one case's extractor output against its labels. */
export function scoreCase(
  labelled: LabelledCase,
  output: Readonly<Record<ExtractorName, readonly Candidate[]>>,
): CaseScore {
  const counts = Object.fromEntries(TYPES.map((t) => [t, { tp: 0, fp: 0, fn: 0 }])) as Record<
    ExtractorName,
    Counts
  >;
  const eventDates = { labelled: 0, correct: 0 };
  const mentions = { expected: 0, found: 0 };
  const errors: CaseErrors[] = [];
  for (const type of TYPES) {
    const expected = labelled.expected.filter((e) => e.type === type);
    const remaining = [...output[type]];
    const missed: string[] = [];
    for (const e of expected) {
      const at = remaining.findIndex((c) => matches(labelled, e, c));
      if (at < 0) {
        counts[type].fn++;
        missed.push(describeExpected(e));
        continue;
      }
      const [found] = remaining.splice(at, 1);
      counts[type].tp++;
      if (e.type === 'EVENT' && e.date !== undefined) {
        eventDates.labelled++;
        if (dateMatches(found?.occurredAt, e.date, labelled.timeZone)) eventDates.correct++;
      }
      if (e.type === 'EPISODE') {
        mentions.expected += e.mentions.length;
        const text = squash(found?.text ?? '');
        mentions.found += e.mentions.filter((m) => text.includes(squash(m))).length;
      }
    }
    counts[type].fp += remaining.length;
    if (missed.length > 0 || remaining.length > 0) {
      errors.push({ id: labelled.id, type, missed, spurious: remaining.map(describe) });
    }
  }
  return {
    id: labelled.id,
    language: labelled.language,
    split: labelled.split,
    counts,
    eventDates,
    mentions,
    errors,
  };
}

/** Precision, recall and F1 of some counts. */
export interface Rates {
  readonly precision: number;
  readonly recall: number;
  readonly f1: number;
}

export function rates(counts: Counts): Rates {
  const precision = counts.tp + counts.fp === 0 ? 1 : counts.tp / (counts.tp + counts.fp);
  const recall = counts.tp + counts.fn === 0 ? 1 : counts.tp / (counts.tp + counts.fn);
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  return { precision, recall, f1 };
}

/** Sums the counts of one extractor over some case scores. */
export function total(scores: readonly CaseScore[], type: ExtractorName): Counts {
  const sum = { tp: 0, fp: 0, fn: 0 };
  for (const s of scores) {
    sum.tp += s.counts[type].tp;
    sum.fp += s.counts[type].fp;
    sum.fn += s.counts[type].fn;
  }
  return sum;
}
