/**
 * The synthetic, deterministic data of the performance benchmark: short mixed Chinese/English
 * memories, queries over the same vocabulary, conversation turns and Markdown documents. Seeded
 * PRNG only: the same seed gives the same data in every run.
 */
import { pick, seededRandom } from '@engram/testing';

const EN_THINGS = [
  'green tea',
  'black coffee',
  'the Lisbon trip',
  'the database migration',
  'the weekly report',
  'the budget review',
  'piano lessons',
  'the gym',
  'running in the park',
  'the new laptop',
  'Python',
  'TypeScript',
  'Kubernetes',
  'the dentist',
  'the quarterly planning',
  'sushi',
  'vegetarian food',
  'the book club',
  'jazz concerts',
  'the kids school',
  'the flight to Tokyo',
  'the hotel booking',
  'photography',
  'the release checklist',
  'the on-call rotation',
  'hiking',
  'the design review',
  'the insurance claim',
  'Spanish classes',
  'the garden',
];
const EN_TEMPLATES = [
  (x: string) => `The user prefers ${x} over the alternatives.`,
  (x: string) => `User mentioned that ${x} is planned for next week.`,
  (x: string) => `Remember that the user dislikes talking about ${x} in the morning.`,
  (x: string) => `The user asked to be reminded about ${x} every Friday.`,
  (x: string) => `User said ${x} went well and wants to continue it.`,
  (x: string) => `The user is worried about ${x} and the deadline.`,
  (x: string) => `User spent the weekend on ${x} with a friend.`,
  (x: string) => `The user's goal for this month involves ${x}.`,
];
const ZH_THINGS = [
  '绿茶',
  '咖啡',
  '里斯本旅行',
  '数据库迁移',
  '周报',
  '预算评审',
  '钢琴课',
  '健身房',
  '跑步',
  '新电脑',
  '编程',
  '牙医预约',
  '季度计划',
  '寿司',
  '素食',
  '读书会',
  '爵士音乐会',
  '孩子的学校',
  '去东京的航班',
  '酒店预订',
  '摄影',
  '上线清单',
  '值班安排',
  '爬山',
  '设计评审',
  '保险理赔',
  '西班牙语课',
  '花园',
];
const ZH_TEMPLATES = [
  (x: string) => `用户更喜欢${x}。`,
  (x: string) => `用户提到下周要安排${x}。`,
  (x: string) => `用户希望每周五提醒他关于${x}的事情。`,
  (x: string) => `用户说${x}进展顺利，想继续。`,
  (x: string) => `用户有点担心${x}和截止日期。`,
  (x: string) => `用户周末和朋友一起忙${x}。`,
];
const TIMES = [
  '',
  ' since last spring',
  ' this quarter',
  ' after the holidays',
  ' most evenings',
  ' on weekdays',
];

/** One memory's text (mixed zh/en, ~8–20 tokens). */
export function memoryText(random: () => number): string {
  if (random() < 0.35) return pick(random, ZH_TEMPLATES)(pick(random, ZH_THINGS));
  const text = pick(random, EN_TEMPLATES)(pick(random, EN_THINGS));
  return text.replace(/\.$/, `${pick(random, TIMES)}.`);
}

const EN_QUERIES = [
  (x: string) => `what does the user think about ${x}`,
  (x: string) => `when is ${x}`,
  (x: string) => `does the user like ${x}?`,
  (x: string) => `remind me about ${x}`,
  (x: string) => `${x} plans`,
];
const ZH_QUERIES = [
  (x: string) => `用户对${x}怎么看`,
  (x: string) => `${x}什么时候`,
  (x: string) => `关于${x}的安排`,
];

/** `count` search queries over the vocabulary of the memories. */
export function queries(count: number, seed = 7): string[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () =>
    random() < 0.35
      ? pick(random, ZH_QUERIES)(pick(random, ZH_THINGS))
      : pick(random, EN_QUERIES)(pick(random, EN_THINGS)),
  );
}

/** `count` conversation turns, user and assistant alternating (user first). */
export function turns(count: number, seed = 11): { role: 'user' | 'assistant'; text: string }[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, (_, i) => {
    const thing = pick(random, EN_THINGS);
    return i % 2 === 0
      ? { role: 'user' as const, text: `${pick(random, EN_QUERIES)(thing)}? ${memoryText(random)}` }
      : {
          role: 'assistant' as const,
          text: `Noted about ${thing}. ${memoryText(random)} Anything else you want me to keep in mind?`,
        };
  });
}

/** A Markdown document of about `bytes` UTF-8 bytes: headings, paragraphs, a list, mixed zh/en. */
export function markdownDocument(bytes: number, seed: number): string {
  const random = seededRandom(seed);
  const parts: string[] = [`# Notes ${seed}\n`];
  let size = Buffer.byteLength(parts[0]!);
  let section = 0;
  while (size < bytes) {
    const block =
      random() < 0.15
        ? `\n## Section ${++section}\n`
        : random() < 0.2
          ? `\n${Array.from({ length: 4 }, () => `- ${memoryText(random)}`).join('\n')}\n`
          : `\n${Array.from({ length: 3 + Math.floor(random() * 4) }, () => memoryText(random)).join(' ')}\n`;
    parts.push(block);
    size += Buffer.byteLength(block);
  }
  return parts.join('');
}
