/**
 * Builds the recency dataset (bench/retrieval/README.md format, with `superseded` on every question)
 * from `pairs.ts`: one conversation per language, owned by its own user, spread over about six
 * months. Each statement is said in a session of its day between two small-talk rounds; the older
 * statement of a pair comes first, the newer `gapDays` later. The question is asked one day after
 * the last session; its evidence is the newer statement and `superseded` the older one.
 *
 *   npm run -s bench:recency:build -- [--out bench/out/recency.dataset.json]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  datasetCounts,
  parseDataset,
  type Conversation,
  type Dataset,
  type Question,
} from '../retrieval/dataset.js';
import { EN_FILLER, EN_PAIRS, ZH_FILLER, ZH_PAIRS, type RecencyPair } from './pairs.js';

const DAY = 86_400_000;
const START = Date.parse('2026-01-05T09:00:00Z');
const ACKS = {
  en: ['Got it, thanks for telling me.', 'Noted.', "Okay, I'll keep that in mind.", 'Thanks for the update.'],
  zh: ['好的，记住了。', '明白。', '收到，我记下了。', '谢谢你告诉我。'],
};
const REPLIES = {
  en: ['That sounds nice.', 'Oh, interesting!', 'Ha, I see.', 'Good to hear.'],
  zh: ['听起来不错。', '挺有意思的！', '哈哈，这样啊。', '那挺好的。'],
};

/** One language's conversation and questions. */
export function buildLanguage(
  lang: 'en' | 'zh',
  pairs: readonly RecencyPair[],
  filler: readonly string[],
): { conversation: Conversation; questions: Question[] } {
  // Statements by day: the older of pair i on day 3·i (spread over ~2.5 months), the newer after its gap.
  const byDay = new Map<number, { pair: RecencyPair; which: 'old' | 'new' }[]>();
  pairs.forEach((pair, i) => {
    const oldDay = 3 * i;
    for (const [day, which] of [
      [oldDay, 'old'],
      [oldDay + pair.gapDays, 'new'],
    ] as const) {
      const list = byDay.get(day) ?? [];
      list.push({ pair, which });
      byDay.set(day, list);
    }
  });
  const days = [...byDay.keys()].sort((a, b) => a - b);
  const turnOf = new Map<string, string>();
  let f = 0;
  let n = 0;
  const sessions = days.map((day) => {
    const turns: Conversation['sessions'][number]['turns'] = [];
    const push = (role: 'user' | 'assistant', text: string) => {
      const id = `t${++n}`;
      turns.push({ id, role, text });
      return id;
    };
    const smallTalk = () => {
      push('user', filler[f % filler.length]!);
      push('assistant', REPLIES[lang][f % REPLIES[lang].length]!);
      f += 1;
    };
    smallTalk();
    for (const { pair, which } of byDay.get(day)!) {
      turnOf.set(`${pair.id}|${which}`, push('user', pair[which]));
      push('assistant', ACKS[lang][n % ACKS[lang].length]!);
    }
    smallTalk();
    return { id: `day-${day}`, started_at: new Date(START + day * DAY).toISOString(), turns };
  });
  const askedAt = new Date(START + (days.at(-1)! + 1) * DAY).toISOString();
  const conversationId = `recency-${lang}`;
  return {
    conversation: { id: conversationId, user: `recency-user-${lang}`, lang, sessions },
    questions: pairs.map((pair) => ({
      id: `recency-${lang}-${pair.id}`,
      conversation: conversationId,
      question: pair.question,
      evidence: [turnOf.get(`${pair.id}|new`)!],
      superseded: [turnOf.get(`${pair.id}|old`)!],
      category: lang,
      asked_at: askedAt,
    })),
  };
}

export function buildRecencyDataset(): Dataset {
  const en = buildLanguage('en', EN_PAIRS, EN_FILLER);
  const zh = buildLanguage('zh', ZH_PAIRS, ZH_FILLER);
  return parseDataset(
    {
      name: 'recency',
      conversations: [en.conversation, zh.conversation],
      questions: [...en.questions, ...zh.questions],
    },
    'recency',
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: { out: { type: 'string', default: 'bench/out/recency.dataset.json' } },
  });
  const dataset = buildRecencyDataset();
  mkdirSync(dirname(resolve(values.out)), { recursive: true });
  writeFileSync(resolve(values.out), `${JSON.stringify(dataset, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(datasetCounts(dataset))}\n`);
}
