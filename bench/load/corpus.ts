/**
 * The seed corpus and the query source of the load benchmark, from the public evaluation sets read
 * by path (`../shared/bench-data`, never copied into the repository): LoCoMo's ten long English
 * conversations (turns, QA questions, observations, session summaries) and MADial-Bench's Chinese
 * dialogues and memories (bilingual like the product).
 *
 * `loadCorpus` is the only I/O; everything else is pure and seeded:
 *
 * - `planUsers`: who the seeded users are — user `u` is subject `load-u<u>` in org `org-<u % orgs>`,
 *   every fifth user (u % 5 = 4) speaks Chinese (MADial zh), the others replay LoCoMo conversation
 *   `u % 10` from a per-user offset with the two speakers renamed to the user's own pair of names
 *   (so no two users hold the same text). Per user the item budget ⌈items / users⌉ splits into
 *   60 % rounds (one per USER message), 30 % document chunks (one Markdown document of
 *   ≈ 650 code points per planned chunk: the chunker's 800 with 150 overlap) and 10 % memories
 *   written through governance's CreateMemory; every tenth user's document and the first memory of
 *   every fifth user are ORG-scoped. Memories that governance's extractors derive from the
 *   conversations come on top.
 * - `userMessages`, `userDocument`, `userMemories`: the content of one user.
 * - `QueryPool`: query texts that never repeat within a run — a LoCoMo question of the user's own
 *   conversation (names renamed) or a span of one of the user's own turns, inside one of several
 *   English or Chinese phrasings; a text already handed out is never handed out again.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseLine } from '../retrieval/convert-madial.js';

export interface CorpusConversation {
  /** The two LoCoMo speakers, in order of appearance. */
  readonly speakers: readonly [string, string];
  /** Every turn of every session, in order (image captions appended). */
  readonly turns: readonly string[];
  readonly questions: readonly string[];
  /** Observations and session summaries: the text of memories and documents. */
  readonly facts: readonly string[];
  readonly summaries: readonly string[];
}

export interface Corpus {
  readonly en: readonly CorpusConversation[];
  /** MADial zh dialogues: user lines and assistant lines alternate; the speaker is `Bart` or `Lisa`. */
  readonly zhDialogues: readonly (readonly string[])[];
  /** MADial zh memory events. */
  readonly zhFacts: readonly string[];
}

interface LocomoTurn {
  readonly text: string;
  readonly blip_caption?: string;
}
interface LocomoSample {
  readonly conversation: Record<string, unknown>;
  readonly qa: readonly { question: string }[];
  readonly observation?: Record<string, Record<string, readonly (readonly string[])[]>>;
  readonly session_summary?: Record<string, string>;
}

/** Reads LoCoMo and MADial zh from `dataDir` (default `../shared/bench-data` of the repository). */
export function loadCorpus(dataDir: string): Corpus {
  const locomo = JSON.parse(readFileSync(join(dataDir, 'locomo10.json'), 'utf8')) as LocomoSample[];
  const en = locomo.map((sample): CorpusConversation => {
    const c = sample.conversation;
    const sessions = Object.keys(c)
      .filter((k) => /^session_\d+$/.test(k) && Array.isArray(c[k]))
      .sort((a, b) => Number(a.slice(8)) - Number(b.slice(8)));
    const turns = sessions.flatMap((k) =>
      (c[k] as LocomoTurn[]).map((t) =>
        t.blip_caption === undefined ? t.text : `${t.text} [image: ${t.blip_caption}]`,
      ),
    );
    const facts = Object.values(sample.observation ?? {}).flatMap((bySpeaker) =>
      Object.values(bySpeaker).flatMap((list) => list.map((entry) => String(entry[0]))),
    );
    return {
      speakers: [String(c['speaker_a']), String(c['speaker_b'])],
      turns,
      questions: sample.qa.map((q) => q.question),
      facts,
      summaries: Object.values(sample.session_summary ?? {}),
    };
  });
  const lines = (file: string) =>
    readFileSync(join(dataDir, 'madial-bench', file), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as unknown);
  const zhDialogues = (lines('MADial-Bench-zh-dialogue.json') as { dialogue: string[] }[]).map((d) =>
    d.dialogue
      .filter((l) => !/^<(BOD|EOD)>/.test(l.trim()))
      .map((l) => parseLine(l).text)
      .filter((t) => t !== ''),
  );
  const zhFacts = (lines('MADial-Bench-zh-memory.json') as Record<string, { event: string }>[]).flatMap((m) =>
    Object.values(m).map((v) => v.event),
  );
  return { en, zhDialogues, zhFacts };
}

const FIRST_NAMES = [
  'Aiko', 'Bruno', 'Chiara', 'Dmitri', 'Elena', 'Farid', 'Greta', 'Hugo', 'Ines', 'Jonas', 'Kavya',
  'Lars', 'Mei', 'Nadia', 'Omar', 'Priya', 'Quentin', 'Rosa', 'Soren', 'Tariq', 'Ulla', 'Viktor',
  'Wen', 'Ximena', 'Yusuf', 'Zofia', 'Anika', 'Bodhi', 'Carmen', 'Diego', 'Esme', 'Felix', 'Gaia',
  'Henrik', 'Ivy', 'Joao', 'Keiko', 'Leon', 'Maren', 'Nico', 'Olga', 'Pablo', 'Rahel', 'Sami',
]; // prettier-ignore
const ZH_NAMES = [
  '小明',
  '小红',
  '阿强',
  '丽丽',
  '大伟',
  '晓燕',
  '志华',
  '婷婷',
  '建国',
  '雅琪',
  '浩然',
  '欣怡',
];

export interface UserPlan {
  readonly index: number;
  readonly subject: string;
  readonly org: string;
  readonly lang: 'en' | 'zh';
  /** The LoCoMo conversation (en) or the first MADial dialogue (zh) this user replays. */
  readonly source: number;
  /** Where in the source the user's history starts (turn index, en). */
  readonly offset: number;
  /** The user's names for the two speakers (en: LoCoMo speakers a and b; zh: the MADial user). */
  readonly names: readonly [string, string];
  readonly rounds: number;
  readonly chunks: number;
  readonly memories: number;
  readonly documentOrgScoped: boolean;
  readonly firstMemoryOrgScoped: boolean;
}

/** Code points per planned chunk: the chunker's default size (800) minus its overlap (150). */
export const CHUNK_STEP = 650;

/** The seeded users (see the module comment). */
export function planUsers({
  items,
  users,
  orgs,
  corpus,
}: {
  items: number;
  users: number;
  orgs: number;
  corpus: Corpus;
}): UserPlan[] {
  const budget = Math.ceil(items / users);
  const memories = Math.max(1, Math.round(budget * 0.1));
  const chunks = Math.max(1, Math.round(budget * 0.3));
  const rounds = Math.max(1, budget - memories - chunks);
  return Array.from({ length: users }, (_, u): UserPlan => {
    const lang = u % 5 === 4 ? 'zh' : 'en';
    const en = corpus.en[u % corpus.en.length]!;
    const span = 2 * rounds;
    const room = Math.max(1, en.turns.length - span);
    const a = FIRST_NAMES[u % FIRST_NAMES.length]!;
    let b = FIRST_NAMES[(Math.floor(u / FIRST_NAMES.length) * 7 + u * 3 + 5) % FIRST_NAMES.length]!;
    if (b === a) b = FIRST_NAMES[(u + 1) % FIRST_NAMES.length]!;
    const zhName = `${ZH_NAMES[u % ZH_NAMES.length]}${Math.floor(u / ZH_NAMES.length) + 1}号`;
    return {
      index: u,
      subject: `load-u${u}`,
      org: `org-${u % orgs}`,
      lang,
      source: lang === 'en' ? u % corpus.en.length : (u * 13) % corpus.zhDialogues.length,
      offset: lang === 'en' ? (u * 37) % room : 0,
      names: lang === 'en' ? [`${a} ${surname(u)}`, b] : [zhName, '助手'],
      rounds,
      chunks,
      memories,
      documentOrgScoped: u % 10 === 0,
      firstMemoryOrgScoped: u % 5 === 0,
    };
  });
}

const SURNAMES = [
  'Almeida',
  'Berg',
  'Costa',
  'Dahl',
  'Eriksen',
  'Fischer',
  'Garcia',
  'Haas',
  'Ito',
  'Jensen',
];
function surname(u: number): string {
  return `${SURNAMES[u % SURNAMES.length]!}${u >= SURNAMES.length ? `-${Math.floor(u / SURNAMES.length)}` : ''}`;
}

/** The user's text with the source speakers' names replaced by the user's own. */
export function rename(text: string, from: readonly string[], to: readonly string[]): string {
  let out = text;
  from.forEach((name, i) => {
    const replacement = to[i];
    if (name !== '' && replacement !== undefined) out = out.split(name).join(replacement);
  });
  return out;
}

const zhSpeakers = ['Bart', 'Lisa'];

/** The user's conversation: `2 × rounds` messages, USER and ASSISTANT alternating, from `start`. */
export function userMessages(
  corpus: Corpus,
  plan: UserPlan,
  count = 2 * plan.rounds,
  start = 0,
): { role: 'user' | 'assistant'; text: string }[] {
  const out: { role: 'user' | 'assistant'; text: string }[] = [];
  if (plan.lang === 'en') {
    const conversation = corpus.en[plan.source]!;
    const turns = conversation.turns;
    for (let i = 0; i < count; i++) {
      const text = turns[(plan.offset + start + i) % turns.length]!;
      out.push({
        role: i % 2 === 0 ? 'user' : 'assistant',
        text: rename(text, conversation.speakers, plan.names),
      });
    }
    return out;
  }
  // zh: the MADial dialogues one after the other from the user's own, renamed.
  let d = plan.source;
  let skipped = 0;
  while (out.length < count) {
    const dialogue = corpus.zhDialogues[d % corpus.zhDialogues.length]!;
    const pairs = Math.floor(dialogue.length / 2) * 2;
    for (let i = 0; i < pairs && out.length < count; i++) {
      if (skipped < start) {
        skipped++;
        continue;
      }
      out.push({
        role: out.length % 2 === 0 ? 'user' : 'assistant',
        text: rename(dialogue[i]!, zhSpeakers, [plan.names[0], plan.names[0]]),
      });
    }
    d++;
  }
  return out;
}

/** The user's Markdown document, ≈ `chunks × CHUNK_STEP` code points of their own facts and summaries. */
export function userDocument(corpus: Corpus, plan: UserPlan): string {
  const target = plan.chunks * CHUNK_STEP;
  const parts: string[] = [];
  let size = 0;
  let k = 0;
  const title = plan.lang === 'en' ? `# Journal of ${plan.names[0]}\n\n` : `# ${plan.names[0]}的日记\n\n`;
  size += Array.from(title).length;
  while (size < target) {
    let section: string;
    if (plan.lang === 'en') {
      const c = corpus.en[plan.source]!;
      const summary = c.summaries[(plan.index + k) % c.summaries.length] ?? '';
      const facts = [0, 1, 2].map((j) => c.facts[(plan.index * 3 + k * 3 + j) % c.facts.length] ?? '');
      section = rename(
        `## Part ${k + 1}\n\n${summary}\n\n${facts.map((f) => `- ${f}`).join('\n')}\n\n`,
        c.speakers,
        plan.names,
      );
    } else {
      const dialogue = corpus.zhDialogues[(plan.source + k) % corpus.zhDialogues.length]!;
      const fact = corpus.zhFacts[(plan.index + k) % corpus.zhFacts.length] ?? '';
      section = rename(`## 第${k + 1}部分\n\n${fact}\n\n${dialogue.join('\n\n')}\n\n`, zhSpeakers, [
        plan.names[0],
        plan.names[0],
      ]);
    }
    parts.push(section);
    size += Array.from(section).length;
    k++;
  }
  return title + parts.join('');
}

/** The texts of the user's CreateMemory calls (distinct within the user). */
export function userMemories(corpus: Corpus, plan: UserPlan): string[] {
  const out: string[] = [];
  for (let i = 0; i < plan.memories; i++) {
    if (plan.lang === 'en') {
      const c = corpus.en[plan.source]!;
      const fact = c.facts[(plan.index * 7 + i * 11) % c.facts.length]!;
      out.push(rename(`${fact} (note ${i + 1})`, c.speakers, plan.names));
    } else {
      const fact = corpus.zhFacts[(plan.index * 7 + i * 11) % corpus.zhFacts.length]!;
      out.push(`${rename(fact, zhSpeakers, [plan.names[0], plan.names[0]])}（记录${i + 1}）`);
    }
  }
  return out;
}

const EN_FRAMES = [
  (q: string) => q,
  (q: string) => `Do you remember: ${q}`,
  (q: string) => `${q} Remind me please.`,
  (q: string) => `Quick question — ${q}`,
  (q: string) => `what did we say about "${q}"`,
  (q: string) => `${q} (from our earlier chats)`,
  (q: string) => `我之前提到过：${q}`,
  (q: string) => `Can you look up ${q}`,
];
const ZH_FRAMES = [
  (q: string) => `我之前说过“${q}”吗？`,
  (q: string) => `关于${q}的记录`,
  (q: string) => `还记得${q}这件事吗`,
  (q: string) => `帮我找一下：${q}`,
  (q: string) => `上次聊到${q}，后来怎么样了？`,
  (q: string) => `Remember when I said ${q}?`,
];

/** A span of 4–9 words (en) or 6–14 characters (zh) of `text`, at a position drawn from `u`. */
export function span(text: string, lang: 'en' | 'zh', u: number, v: number): string {
  if (lang === 'zh') {
    const chars = Array.from(text.replace(/\s+/g, ''));
    const length = Math.min(chars.length, 6 + Math.floor(v * 9));
    const from = Math.floor(u * Math.max(1, chars.length - length + 1));
    return chars.slice(from, from + length).join('');
  }
  const words = text.split(/\s+/).filter((w) => w !== '');
  const length = Math.min(words.length, 4 + Math.floor(v * 6));
  const from = Math.floor(u * Math.max(1, words.length - length + 1));
  return words.slice(from, from + length).join(' ');
}

/** Query texts that never repeat within a run (see the module comment). */
export class QueryPool {
  private readonly seen = new Set<string>();
  private readonly zhTurns = new Map<number, string[]>();
  /** Draws that produced a text already handed out (and were drawn again). */
  collisions = 0;

  constructor(private readonly corpus: Corpus) {}

  get size(): number {
    return this.seen.size;
  }

  /** A query for `plan`'s user, never returned before by this pool; `random` is the caller's seeded source. */
  next(plan: UserPlan, random: () => number): string {
    for (let attempt = 0; ; attempt++) {
      const text = this.draw(plan, random, attempt);
      if (!this.seen.has(text)) {
        this.seen.add(text);
        return text;
      }
      this.collisions++;
    }
  }

  private draw(plan: UserPlan, random: () => number, attempt: number): string {
    const suffix = attempt >= 8 ? ` #${attempt}` : ''; // a last resort that is still unique
    if (plan.lang === 'zh') {
      let turns = this.zhTurns.get(plan.index);
      if (turns === undefined) {
        turns = userMessages(this.corpus, plan).map((m) => m.text);
        this.zhTurns.set(plan.index, turns);
      }
      const turn = turns[Math.floor(random() * turns.length)]!;
      const frame = ZH_FRAMES[Math.floor(random() * ZH_FRAMES.length)]!;
      return frame(span(turn, 'zh', random(), random())) + suffix;
    }
    const c = this.corpus.en[plan.source]!;
    const frame = EN_FRAMES[Math.floor(random() * EN_FRAMES.length)]!;
    if (random() < 0.5) {
      const question = c.questions[Math.floor(random() * c.questions.length)]!;
      return frame(rename(question, c.speakers, plan.names)) + suffix;
    }
    const turn = c.turns[(plan.offset + Math.floor(random() * 2 * plan.rounds)) % c.turns.length]!;
    return frame(rename(span(turn, 'en', random(), random()), c.speakers, plan.names)) + suffix;
  }
}
