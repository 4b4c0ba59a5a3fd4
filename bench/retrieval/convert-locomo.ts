/**
 * Converts LoCoMo (snap-research/LoCoMo `data/locomo10.json`) into the generic retrieval dataset
 * (bench/retrieval/README.md). The data is read by path and never copied into the repository.
 *
 *   node --conditions=@engram/source --import tsx bench/retrieval/convert-locomo.ts
 *     [--data ../shared/bench-data/locomo10.json] [--roles speaker-a] [--out bench/out/locomo.dataset.json]
 *
 * - One conversation per sample (`locomo-<sample_id>`), owned by a synthetic user
 *   (`locomo-user-<sample_id>`), language `en`.
 * - Roles (`--roles`): `speaker-a` (default) makes speaker_a the user and speaker_b the assistant in
 *   every session, so a round (user message + first assistant reply) pairs A's turn with B's answer;
 *   since LoCoMo turns strictly alternate, every turn is in a round except B's opening turn in the
 *   sessions B opens (counted as `turnsOutsideRounds`). `opener` makes whoever opens each session the
 *   user in that session, so every turn is in a round, at the price of the user changing sides.
 * - Sessions `session_N`, started_at from `session_N_date_time` ("1:56 pm on 8 May, 2023", read as UTC).
 * - Turns: id = `dia_id`, speaker = the LoCoMo name, text = the turn's text plus ` [image: caption]`
 *   when it carries a `blip_caption`.
 * - Questions: the `qa` items of categories 1–4 (category 5, adversarial, excluded), with the
 *   category names of the LoCoMo README (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop).
 *   Evidence = the `dia_id`s; a malformed id or one naming no turn is dropped and counted; a
 *   question left without evidence is dropped and counted. asked_at = one day after the start of
 *   the conversation's last session.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseLocomoDate } from '../lib/locomo.js';
import { datasetCounts, parseDataset, type Conversation, type Dataset, type Question } from './dataset.js';

const WORKSPACE = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

const CATEGORIES: Readonly<Record<number, string>> = {
  1: 'multi-hop',
  2: 'temporal',
  3: 'open-domain',
  4: 'single-hop',
};

interface LocomoTurn {
  readonly speaker: string;
  readonly dia_id: string;
  readonly text: string;
  readonly blip_caption?: string;
}
interface LocomoQa {
  readonly question: string;
  readonly evidence?: readonly string[];
  readonly category: number;
}
interface LocomoSample {
  readonly sample_id: string;
  readonly conversation: Record<string, unknown>;
  readonly qa: readonly LocomoQa[];
}

export { parseLocomoDate };

export type RoleMapping = 'speaker-a' | 'opener';

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
const DIA_ID = /^D\d+:\d+$/;

export interface LocomoStats {
  turnsWithImage: number;
  turnsOutsideRounds: number;
  category5Excluded: number;
  evidenceMalformed: string[];
  evidenceMissing: string[];
  questionsWithoutEvidence: string[];
}

export function convertLocomo(
  samples: readonly LocomoSample[],
  roles: RoleMapping,
): { dataset: Dataset; stats: LocomoStats } {
  const stats: LocomoStats = {
    turnsWithImage: 0,
    turnsOutsideRounds: 0,
    category5Excluded: 0,
    evidenceMalformed: [],
    evidenceMissing: [],
    questionsWithoutEvidence: [],
  };
  const conversations: Conversation[] = [];
  const questions: Question[] = [];
  for (const sample of samples) {
    const c = sample.conversation;
    const speakerA = String(c['speaker_a']);
    const conversationId = `locomo-${sample.sample_id}`;
    const sessions: Conversation['sessions'] = [];
    const turnIds = new Set<string>();
    let lastStart = 0;
    for (let n = 1; Array.isArray(c[`session_${n}`]); n++) {
      const turns = c[`session_${n}`] as LocomoTurn[];
      if (turns.length === 0) continue;
      const start = parseLocomoDate(String(c[`session_${n}_date_time`]));
      lastStart = Math.max(lastStart, start);
      const userSpeaker = roles === 'opener' ? turns[0]!.speaker : speakerA;
      if (turns[0]!.speaker !== userSpeaker) stats.turnsOutsideRounds++;
      sessions.push({
        id: `session_${n}`,
        started_at: iso(start),
        turns: turns.map((turn) => {
          turnIds.add(turn.dia_id);
          if (turn.blip_caption !== undefined) stats.turnsWithImage++;
          return {
            id: turn.dia_id,
            role: turn.speaker === userSpeaker ? ('user' as const) : ('assistant' as const),
            speaker: turn.speaker,
            text: turn.blip_caption === undefined ? turn.text : `${turn.text} [image: ${turn.blip_caption}]`,
          };
        }),
      });
    }
    conversations.push({
      id: conversationId,
      user: `locomo-user-${sample.sample_id}`,
      lang: 'en',
      sessions,
    });
    const askedAt = iso(lastStart + 86_400_000);
    for (const [index, qa] of sample.qa.entries()) {
      const category = CATEGORIES[qa.category];
      if (category === undefined) {
        stats.category5Excluded++;
        continue;
      }
      const id = `${conversationId}-q${index}`;
      const evidence: string[] = [];
      for (const raw of qa.evidence ?? []) {
        if (!DIA_ID.test(raw)) stats.evidenceMalformed.push(`${id}: ${JSON.stringify(raw)}`);
        else if (!turnIds.has(raw)) stats.evidenceMissing.push(`${id}: ${raw}`);
        else if (!evidence.includes(raw)) evidence.push(raw);
      }
      if (evidence.length === 0) {
        stats.questionsWithoutEvidence.push(id);
        continue;
      }
      questions.push({
        id,
        conversation: conversationId,
        question: qa.question,
        evidence,
        category,
        asked_at: askedAt,
      });
    }
  }
  return {
    dataset: { name: `locomo10${roles === 'opener' ? '-opener' : ''}`, conversations, questions },
    stats,
  };
}

function main(): void {
  const { values: args } = parseArgs({
    options: {
      data: { type: 'string', default: resolve(WORKSPACE, '../shared/bench-data/locomo10.json') },
      roles: { type: 'string', default: 'speaker-a' },
      out: { type: 'string', default: resolve(WORKSPACE, 'bench/out/locomo.dataset.json') },
    },
  });
  if (args.roles !== 'speaker-a' && args.roles !== 'opener') {
    throw new Error(`--roles must be speaker-a or opener, not ${args.roles}`);
  }
  const samples = JSON.parse(readFileSync(args.data, 'utf8')) as LocomoSample[];
  const { dataset, stats } = convertLocomo(samples, args.roles);
  parseDataset(dataset, 'converted LoCoMo');
  mkdirSync(dirname(args.out), { recursive: true });
  writeFileSync(args.out, `${JSON.stringify(dataset, null, 1)}\n`);
  const counts = datasetCounts(dataset);
  console.log(`LoCoMo → ${args.out} (roles: ${args.roles})`);
  console.table({
    conversations: counts.conversations,
    sessions: counts.sessions,
    turns: counts.turns,
    'turns with image caption': stats.turnsWithImage,
    'turns outside rounds': stats.turnsOutsideRounds,
    questions: counts.questions,
    'evidence turns': counts.evidenceTurns,
    'category 5 excluded': stats.category5Excluded,
    'evidence ids malformed (dropped)': stats.evidenceMalformed.length,
    'evidence ids naming no turn (dropped)': stats.evidenceMissing.length,
    'questions left without evidence (dropped)': stats.questionsWithoutEvidence.length,
  });
  console.table(counts.questionsPerCategory);
  for (const line of [...stats.evidenceMalformed, ...stats.evidenceMissing])
    console.log(`  dropped evidence ${line}`);
  for (const id of stats.questionsWithoutEvidence) console.log(`  dropped question ${id}`);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
