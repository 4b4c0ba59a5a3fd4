/**
 * Precision and recall of the offline extractors (issue #6, docs/decisions/0013-offline-extractors.md).
 *
 *   node --conditions=@engram/source --import tsx bench/extractors.ts
 *     [--locomo ../shared/bench-data/locomo10.json] [--madial ../shared/bench-data/madial-bench/MADial-Bench-zh-dialogue.json]
 *     [--samples 30] [--seed 7] [--out bench/out/extractors.json]
 *
 * 1. The labelled sample (`services/governance/test/fixtures/labelled-sample.ts`, written for
 *    this project): TP/FP/FN, precision, recall and F1 per extractor, language and split, with the
 *    matching rules of `scoring.ts` (FACT: namespace + key + value gist; FORESIGHT: evidence message
 *    + date within a day; EVENT: evidence message, plus date accuracy; EPISODE: presence, plus
 *    coverage of the expected mentions). Every miss and spurious candidate is listed.
 * 2. LoCoMo (`--locomo`, read by path, never copied): every session is a MemCell, extracted twice —
 *    once with each speaker as the user (the other as the assistant), all turns at the session's
 *    start time. Its `observation` lists model-written facts per speaker with the turn they came
 *    from; a silver agreement is reported: of the user's turns that yield a FACT, EVENT or
 *    FORESIGHT, how many carry an observation ("silver precision"), and of the turns with an
 *    observation, how many yield one ("silver recall"). Observations are written by a model for
 *    almost every informative turn, so this is agreement on what is worth keeping, not accuracy.
 *    A seeded sample of candidates is printed for reading.
 * 3. MADial-Bench Chinese dialogues (`--madial`): candidate counts and a seeded sample, for reading.
 * 4. Time per MemCell (LoCoMo sessions): p50/p95/max of `extractOffline` with all four extractors.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  extractOffline,
  rates,
  scoreCase,
  toExtractionInput,
  total,
  type Candidate,
  type CaseScore,
  type Counts,
  type ExtractionInput,
  type ExtractorName,
} from '@engram/governance';
import { seededRandom, type Random } from '@engram/testing';
import { LABELLED_SAMPLE } from '../services/governance/test/fixtures/labelled-sample.js';
import { parseLocomoDate } from './lib/locomo.js';

const WORKSPACE = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ALL: readonly ExtractorName[] = ['FACT', 'FORESIGHT', 'EVENT', 'EPISODE'];

const { values: args } = parseArgs({
  options: {
    locomo: { type: 'string', default: resolve(WORKSPACE, '../shared/bench-data/locomo10.json') },
    madial: {
      type: 'string',
      default: resolve(WORKSPACE, '../shared/bench-data/madial-bench/MADial-Bench-zh-dialogue.json'),
    },
    samples: { type: 'string', default: '30' },
    seed: { type: 'string', default: '7' },
    out: { type: 'string', default: resolve(WORKSPACE, 'bench/out/extractors.json') },
  },
});
const sampleSize = Number(args.samples);

function sample<T>(items: readonly T[], n: number, random: Random): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy.slice(0, n);
}

/** A candidate as the reading samples show it (the FACT slot is `namespace/key`). */
function readingOf(candidate: Candidate) {
  return {
    type: candidate.type,
    slot: candidate.type === 'FACT' ? `${candidate.namespace ?? ''}/${candidate.key ?? ''}` : undefined,
    value: candidate.value,
    text: candidate.text,
    confidence: candidate.confidence,
  };
}

/** Prints a reading sample, each line tagged with `where` (the turn or the dialogue it came from). */
function printReading<R extends ReturnType<typeof readingOf> & { said: string }>(
  reading: readonly R[],
  where: (r: R) => string | number,
): void {
  console.log(`\n  Reading sample (${reading.length} candidates):`);
  for (const r of reading) {
    console.log(
      `    [${where(r)}] ${r.said}\n        → ${r.type} ${r.slot ?? ''} ${r.slot === undefined ? r.text : JSON.stringify(r.value)} (${r.confidence})`,
    );
  }
}

const pct = (x: number) => x.toFixed(2);
const pad = (s: string | number, n: number) => String(s).padStart(n);

// ---------------------------------------------------------------------------------------------
// 1. The labelled sample

interface Row {
  readonly extractor: ExtractorName;
  readonly language: string;
  readonly split: string;
  readonly counts: Counts;
  readonly precision: number;
  readonly recall: number;
  readonly f1: number;
}

function labelledSample(): { rows: Row[]; scores: CaseScore[]; eventDates: unknown; mentions: unknown } {
  const scores = LABELLED_SAMPLE.map((c) => scoreCase(c, extractOffline(toExtractionInput(c), ALL)));
  const rows: Row[] = [];
  for (const split of ['dev', 'holdout', 'all']) {
    for (const language of ['en', 'zh', 'both']) {
      const subset = scores.filter(
        (s) => (split === 'all' || s.split === split) && (language === 'both' || s.language === language),
      );
      for (const extractor of ALL) {
        const counts = total(subset, extractor);
        rows.push({ extractor, language, split, counts, ...rates(counts) });
      }
    }
  }
  const eventDates = { labelled: 0, correct: 0 };
  const mentions = { expected: 0, found: 0 };
  for (const s of scores) {
    eventDates.labelled += s.eventDates.labelled;
    eventDates.correct += s.eventDates.correct;
    mentions.expected += s.mentions.expected;
    mentions.found += s.mentions.found;
  }
  console.log(`\nLabelled sample: ${LABELLED_SAMPLE.length} cases`);
  for (const split of ['dev', 'holdout', 'all']) {
    const cases = LABELLED_SAMPLE.filter((c) => split === 'all' || c.split === split);
    console.log(
      `\n  split ${split} (${cases.filter((c) => c.language === 'en').length} en, ${cases.filter((c) => c.language === 'zh').length} zh cases)`,
    );
    console.log('  extractor  lang    TP   FP   FN  precision  recall    F1');
    for (const r of rows.filter((row) => row.split === split)) {
      console.log(
        `  ${r.extractor.padEnd(10)} ${r.language.padEnd(5)} ${pad(r.counts.tp, 4)} ${pad(r.counts.fp, 4)} ${pad(r.counts.fn, 4)} ${pad(pct(r.precision), 10)} ${pad(pct(r.recall), 7)} ${pad(pct(r.f1), 5)}`,
      );
    }
  }
  console.log(
    `\n  EVENT date accuracy (matched events with a labelled date): ${eventDates.correct}/${eventDates.labelled}`,
  );
  console.log(`  EPISODE mention coverage: ${mentions.found}/${mentions.expected}`);
  const errors = scores.flatMap((s) => s.errors);
  console.log(`\n  Errors (${errors.length}):`);
  for (const e of errors) {
    for (const m of e.missed) console.log(`    ${e.id} ${e.type} missed   ${m}`);
    for (const m of e.spurious) console.log(`    ${e.id} ${e.type} spurious ${m}`);
  }
  return { rows, scores, eventDates, mentions };
}

// ---------------------------------------------------------------------------------------------
// 2. LoCoMo, silver agreement and reading sample

interface Turn {
  readonly speaker: string;
  readonly dia_id: string;
  readonly text: string;
}
interface LocomoSample {
  readonly sample_id?: string;
  readonly conversation: Record<string, unknown>;
  readonly observation?: Record<string, Record<string, readonly (readonly [string, string | string[]])[]>>;
}

/** A LoCoMo session start; a date LoCoMo spells otherwise falls back to 2023-01-01. */
function locomoTime(text: string): number {
  try {
    return parseLocomoDate(text);
  } catch {
    return Date.UTC(2023, 0, 1);
  }
}

interface Extracted {
  readonly turn: string;
  readonly text: string;
  readonly candidate: Candidate;
}

function locomo(path: string, random: () => number): unknown {
  const samples = JSON.parse(readFileSync(path, 'utf8')) as LocomoSample[];
  const times: number[] = [];
  let userTurns = 0;
  let firing = 0;
  let firingObserved = 0;
  let observed = 0;
  let observedFiring = 0;
  const perType: Record<ExtractorName, number> = { FACT: 0, FORESIGHT: 0, EVENT: 0, EPISODE: 0 };
  const extracted: Extracted[] = [];
  let cells = 0;
  for (const s of samples) {
    const speakers = [s.conversation['speaker_a'], s.conversation['speaker_b']] as string[];
    const sessionKeys = Object.keys(s.conversation).filter((k) => /^session_\d+$/u.test(k));
    for (const key of sessionKeys) {
      const turns = s.conversation[key] as Turn[];
      const dateTime = s.conversation[`${key}_date_time`];
      const start = locomoTime(typeof dateTime === 'string' ? dateTime : '');
      const observations = s.observation?.[`${key}_observation`] ?? {};
      for (const user of speakers) {
        const observedTurns = new Set(
          (observations[user] ?? [])
            .flatMap(([, ids]) => (Array.isArray(ids) ? ids : [ids]))
            .map((id) => id.trim()),
        );
        const input: ExtractionInput = {
          memCellId: `${s.sample_id ?? 'conv'}-${key}-${user}`,
          sessionId: `${s.sample_id ?? 'conv'}-${key}`,
          languageCode: 'en',
          timeZone: 'UTC',
          messages: turns.map((t, i) => ({
            id: t.dia_id,
            sequence: i + 1,
            role: t.speaker === user ? 'USER' : 'ASSISTANT',
            content: t.text,
            occurredAt: start + i * 30_000,
            participantName: t.speaker,
          })),
        };
        const began = performance.now();
        const output = extractOffline(input, ALL);
        times.push(performance.now() - began);
        cells++;
        const byTurn = new Map<string, Candidate[]>();
        for (const type of ALL) {
          perType[type] += output[type].length;
          if (type === 'EPISODE') continue;
          for (const c of output[type]) {
            for (const id of c.evidence.messageIds) byTurn.set(id, [...(byTurn.get(id) ?? []), c]);
          }
        }
        for (const t of turns) {
          if (t.speaker !== user) continue;
          userTurns++;
          const fired = byTurn.has(t.dia_id);
          const isObserved = observedTurns.has(t.dia_id);
          if (fired) firing++;
          if (fired && isObserved) firingObserved++;
          if (isObserved) observed++;
          if (isObserved && fired) observedFiring++;
          for (const c of byTurn.get(t.dia_id) ?? [])
            extracted.push({ turn: t.dia_id, text: t.text, candidate: c });
        }
      }
    }
  }
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  const silver = {
    userTurns,
    turnsWithCandidates: firing,
    silverPrecision: firing === 0 ? 0 : firingObserved / firing,
    silverRecall: observed === 0 ? 0 : observedFiring / observed,
    observedTurns: observed,
  };
  console.log(`\nLoCoMo (${samples.length} conversations, ${cells} MemCells = sessions × 2 speakers)`);
  console.log(
    `  candidates: FACT ${perType.FACT}, FORESIGHT ${perType.FORESIGHT}, EVENT ${perType.EVENT}, EPISODE ${perType.EPISODE}`,
  );
  console.log(
    `  user turns ${userTurns}; with a FACT/EVENT/FORESIGHT ${firing}; with an observation ${observed}` +
      `\n  silver precision ${pct(silver.silverPrecision)} (turns with a candidate that have an observation)` +
      `\n  silver recall    ${pct(silver.silverRecall)} (turns with an observation that yield a candidate)`,
  );
  console.log(
    `  time per MemCell (all four extractors): p50 ${at(0.5).toFixed(2)} ms, p95 ${at(0.95).toFixed(2)} ms, max ${(sorted[sorted.length - 1] ?? 0).toFixed(2)} ms`,
  );
  const reading = sample(extracted, sampleSize, random).map((e) => ({
    turn: e.turn,
    said: e.text,
    ...readingOf(e.candidate),
  }));
  printReading(reading, (r) => r.turn);
  return {
    perType,
    silver,
    timeMs: { p50: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1] ?? 0, cells },
    reading,
  };
}

// ---------------------------------------------------------------------------------------------
// 3. MADial-Bench Chinese dialogues, for reading

interface MadialDialogue {
  readonly dialogue: readonly string[];
  readonly id: number;
}

function madial(path: string, random: () => number): unknown {
  const dialogues = readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as MadialDialogue);
  const perType: Record<ExtractorName, number> = { FACT: 0, FORESIGHT: 0, EVENT: 0, EPISODE: 0 };
  const extracted: { dialogue: number; said: string; candidate: Candidate }[] = [];
  let userMessages = 0;
  const at = Date.UTC(2024, 0, 10, 4);
  for (const d of dialogues) {
    const messages = d.dialogue
      .map((line) => /^<([^>]+)>:\s*"?(.*?)"?\s*$/u.exec(line.trim()))
      .filter((m): m is RegExpExecArray => m !== null && m[1] !== 'BOD' && m[1] !== 'EOD')
      .map((m, i) => ({
        id: `d${d.id}-${i}`,
        sequence: i + 1,
        role: m[1] === 'Assistant' ? ('ASSISTANT' as const) : ('USER' as const),
        content: m[2] ?? '',
        occurredAt: at + i * 30_000,
      }));
    userMessages += messages.filter((m) => m.role === 'USER').length;
    const output = extractOffline(
      {
        memCellId: `madial-${d.id}`,
        sessionId: `madial-${d.id}`,
        languageCode: 'zh',
        timeZone: 'Asia/Shanghai',
        messages,
      },
      ALL,
    );
    for (const type of ALL) {
      perType[type] += output[type].length;
      if (type === 'EPISODE') continue;
      for (const c of output[type]) {
        const said = messages.find((m) => m.id === c.evidence.messageIds[0])?.content ?? '';
        extracted.push({ dialogue: d.id, said, candidate: c });
      }
    }
  }
  console.log(`\nMADial-Bench zh (${dialogues.length} dialogues, ${userMessages} user messages)`);
  console.log(
    `  candidates: FACT ${perType.FACT}, FORESIGHT ${perType.FORESIGHT}, EVENT ${perType.EVENT}, EPISODE ${perType.EPISODE}`,
  );
  const reading = sample(extracted, sampleSize, random).map((e) => ({
    dialogue: e.dialogue,
    said: e.said,
    ...readingOf(e.candidate),
  }));
  printReading(reading, (r) => r.dialogue);
  return { dialogues: dialogues.length, userMessages, perType, reading };
}

// ---------------------------------------------------------------------------------------------

const started = performance.now();
const labelled = labelledSample();
const seed = Number(args.seed);
const locomoResult = args.locomo === '' ? undefined : locomo(args.locomo, seededRandom(seed));
const madialResult = args.madial === '' ? undefined : madial(args.madial, seededRandom(seed + 1));
console.log(`\n${((performance.now() - started) / 1000).toFixed(1)} s`);

mkdirSync(dirname(args.out), { recursive: true });
writeFileSync(
  args.out,
  JSON.stringify(
    {
      date: new Date().toISOString(),
      node: process.version,
      labelled: {
        rows: labelled.rows,
        eventDates: labelled.eventDates,
        mentions: labelled.mentions,
        errors: labelled.scores.flatMap((s) => s.errors),
      },
      locomo: locomoResult,
      madial: madialResult,
    },
    null,
    2,
  ),
);
console.log(`wrote ${args.out}`);
