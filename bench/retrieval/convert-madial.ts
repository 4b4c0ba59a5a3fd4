/**
 * Converts MADial-Bench (hejunqing/MADial-Bench, NAACL 2025) into the generic retrieval dataset
 * (bench/retrieval/README.md), one dataset per language. Read by path, never copied.
 *
 *   node --conditions=@engram/source --import tsx bench/retrieval/convert-madial.ts
 *     [--data ../shared/bench-data/madial-bench] [--lang zh|en] [--query last-user|history]
 *     [--out bench/out/madial-<lang>.dataset.json]
 *
 * Upstream structure (JSON lines):
 * - `MADial-Bench-<lang>-memory.json`: one `{"<id>": {time: "YYYY-MM-DD", scene, emotion, event}}`
 *   per line (zh also carries `user-id`); `event` is a third-person sentence about the child
 *   ("Bart danced at the Christmas party and felt very happy.").
 * - `MADial-Bench-<lang>-dialogue.json`: one dialogue per line: `dialogue` = lines `<BOD>`,
 *   `<Name>: "text"` / `<Assistant>: "text"` …, `<EOD>`; `test-turn` = indices into `dialogue` of
 *   the assistant turns that should recall a memory; `relevant-id` = the memory ids to recall;
 *   `user-id` = the child (1 Bart, 2 Lisa). The authors' retrieval (reference_top20_*) ranks the
 *   memories of the dialogue's user with the dialogue up to the first test turn as the query, and
 *   Recall@k = |top-k ∩ relevant| / |relevant| (recomputes their published 0.694 / 0.824 for
 *   OpenAI zh).
 *
 * Mapping:
 * - One conversation per upstream user (`madial-<lang>-user-<n>`, user `madial-user-<n>`): each of
 *   that user's memories becomes its own session (`memory-<id>`, started_at = the memory's date at
 *   12:00 UTC, sessions sorted by date) with one user turn (`m<id>`, speaker = the child's name,
 *   text = `event`). A memory is thus one round and one turn, and evidence recall over turns equals
 *   the authors' memory Recall@k.
 * - The en memory file has no `user-id`; a memory belongs to the user whose name its event
 *   mentions (Bart or Lisa — every en memory names exactly one, consistent with the zh user-ids).
 * - One question per dialogue (`madial-<lang>-d<line>`): question = with `--query last-user`
 *   (default) the last user turn before the first test turn (quotes and tag stripped); with
 *   `--query history` the whole dialogue before the first test turn, one `Name: text` line per turn
 *   (the authors' query). Evidence = the `relevant-id` memories' turn ids. asked_at = one day after
 *   the user's latest memory. The current dialogue itself is not ingested.
 * - Roles in dialogue lines: the `<Tag>` when present; a few en lines have no tag and take the role
 *   of the alternation (odd index user, even index assistant).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { datasetCounts, parseDataset, type Conversation, type Dataset, type Question } from './dataset.js';

const WORKSPACE = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface MadialMemory {
  readonly time: string;
  readonly scene: string;
  readonly emotion: string;
  readonly event: string;
  readonly 'user-id'?: number;
}
interface MadialDialogue {
  readonly dialogue: readonly string[];
  readonly 'test-turn': readonly number[];
  readonly 'relevant-id': readonly number[];
  readonly 'user-id': number;
}

export type QueryMode = 'last-user' | 'history';

function readJsonLines(path: string): unknown[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as unknown);
}

const TAGGED = /^\s*<([^>]+)>\s*[:：]\s*([\s\S]*)$/;

/** A dialogue line → speaker tag (if any) and text without the surrounding quotes. */
export function parseLine(line: string): { tag?: string; text: string } {
  const match = TAGGED.exec(line);
  const body = (match === null ? line : match[2]!).trim();
  const text = body.replace(/^["“<]\s*/, '').replace(/\s*["”>]$/, '');
  return match === null ? { text } : { tag: match[1]!.trim(), text };
}

export interface DialogueTurn {
  readonly role: 'user' | 'assistant';
  readonly speaker: string;
  readonly text: string;
}

/** The turns strictly before the first test turn (without `<BOD>`), with roles. */
export function dialogueBeforeTest(dialogue: MadialDialogue, userName: string): DialogueTurn[] {
  const end = Math.min(...dialogue['test-turn']);
  const turns: DialogueTurn[] = [];
  for (let index = 1; index < end; index++) {
    const { tag, text } = parseLine(dialogue.dialogue[index] ?? '');
    const role =
      tag === undefined
        ? index % 2 === 1
          ? 'user'
          : 'assistant'
        : tag === 'Assistant'
          ? 'assistant'
          : 'user';
    turns.push({ role, speaker: role === 'user' ? userName : 'Assistant', text });
  }
  return turns;
}

export interface MadialStats {
  memories: number;
  dialogues: number;
  untaggedLines: number;
  questionsWithoutUserTurn: number;
}

const NAMES: Readonly<Record<number, string>> = { 1: 'Bart', 2: 'Lisa' };

export function convertMadial(
  memoryLines: readonly unknown[],
  dialogues: readonly MadialDialogue[],
  lang: string,
  query: QueryMode,
): { dataset: Dataset; stats: MadialStats } {
  const memories = new Map<number, MadialMemory & { userId: number }>();
  for (const line of memoryLines) {
    for (const [key, value] of Object.entries(line as Record<string, MadialMemory>)) {
      const named = Object.entries(NAMES).filter(([, name]) => value.event.includes(name));
      const userId = value['user-id'] ?? (named.length === 1 ? Number(named[0]![0]) : undefined);
      if (userId === undefined) throw new Error(`memory ${key}: cannot tell whose memory it is`);
      memories.set(Number(key), { ...value, userId });
    }
  }
  const conversations: Conversation[] = [];
  const latest = new Map<number, number>();
  for (const userId of [...new Set([...memories.values()].map((m) => m.userId))].sort((a, b) => a - b)) {
    const mine = [...memories.entries()]
      .filter(([, memory]) => memory.userId === userId)
      .sort(([ia, a], [ib, b]) => a.time.localeCompare(b.time) || ia - ib);
    latest.set(userId, Date.parse(`${mine.at(-1)![1].time}T12:00:00Z`));
    conversations.push({
      id: `madial-${lang}-user-${userId}`,
      user: `madial-user-${userId}`,
      lang,
      sessions: mine.map(([id, memory]) => ({
        id: `memory-${id}`,
        started_at: `${memory.time}T12:00:00Z`,
        turns: [
          {
            id: `m${id}`,
            role: 'user' as const,
            speaker: NAMES[userId] ?? `user-${userId}`,
            text: memory.event,
          },
        ],
      })),
    });
  }
  const stats: MadialStats = {
    memories: memories.size,
    dialogues: dialogues.length,
    untaggedLines: 0,
    questionsWithoutUserTurn: 0,
  };
  const questions: Question[] = [];
  for (const [index, dialogue] of dialogues.entries()) {
    const userId = dialogue['user-id'];
    const turns = dialogueBeforeTest(dialogue, NAMES[userId] ?? `user-${userId}`);
    for (let i = 1; i < Math.min(...dialogue['test-turn']); i++) {
      if (parseLine(dialogue.dialogue[i] ?? '').tag === undefined) stats.untaggedLines++;
    }
    const lastUser = turns.findLast((turn) => turn.role === 'user');
    if (lastUser === undefined) stats.questionsWithoutUserTurn++;
    const text =
      query === 'history' || lastUser === undefined
        ? turns.map((turn) => `${turn.speaker}: ${turn.text}`).join('\n')
        : lastUser.text;
    for (const id of dialogue['relevant-id']) {
      if (memories.get(id)?.userId !== userId)
        throw new Error(`dialogue ${index}: memory ${id} is not user ${userId}'s`);
    }
    questions.push({
      id: `madial-${lang}-d${index}`,
      conversation: `madial-${lang}-user-${userId}`,
      question: text,
      evidence: [...new Set(dialogue['relevant-id'])].map((id) => `m${id}`),
      asked_at: new Date(latest.get(userId)! + 86_400_000).toISOString().replace('.000Z', 'Z'),
    });
  }
  const name = `madial-${lang}${query === 'history' ? '-history' : ''}`;
  return { dataset: { name, conversations, questions }, stats };
}

function main(): void {
  const { values: args } = parseArgs({
    options: {
      data: { type: 'string', default: resolve(WORKSPACE, '../shared/bench-data/madial-bench') },
      lang: { type: 'string', default: 'zh' },
      query: { type: 'string', default: 'last-user' },
      out: { type: 'string' },
    },
  });
  if (args.lang !== 'zh' && args.lang !== 'en') throw new Error(`--lang must be zh or en, not ${args.lang}`);
  if (args.query !== 'last-user' && args.query !== 'history') {
    throw new Error(`--query must be last-user or history, not ${args.query}`);
  }
  const out = args.out ?? resolve(WORKSPACE, `bench/out/madial-${args.lang}.dataset.json`);
  const memoryLines = readJsonLines(join(args.data, `MADial-Bench-${args.lang}-memory.json`));
  const dialogues = readJsonLines(
    join(args.data, `MADial-Bench-${args.lang}-dialogue.json`),
  ) as MadialDialogue[];
  const { dataset, stats } = convertMadial(memoryLines, dialogues, args.lang, args.query);
  parseDataset(dataset, `converted MADial-Bench ${args.lang}`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(dataset, null, 1)}\n`);
  const counts = datasetCounts(dataset);
  console.log(`MADial-Bench ${args.lang} → ${out} (query: ${args.query})`);
  console.table({
    conversations: counts.conversations,
    'sessions (memories)': counts.sessions,
    turns: counts.turns,
    questions: counts.questions,
    'evidence turns': counts.evidenceTurns,
    'untagged dialogue lines before the test turn': stats.untaggedLines,
    'questions without a user turn (history used)': stats.questionsWithoutUserTurn,
  });
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
