import { describe, expect, it } from '@jest/globals';
import { seededRandom } from '@engram/testing';
import {
  CHUNK_STEP,
  planUsers,
  QueryPool,
  rename,
  span,
  userDocument,
  userMemories,
  userMessages,
  type Corpus,
} from './corpus.js';

// A small corpus shaped like the real one (the real files are read by path in the benchmark only).
const corpus: Corpus = {
  en: Array.from({ length: 3 }, (_, c) => ({
    speakers: ['Caroline', 'Melanie'] as const,
    turns: Array.from(
      { length: 200 },
      (_, i) => `Caroline and Melanie talk in conversation ${c}, turn ${i}: about painting and hiking trips`,
    ),
    questions: Array.from(
      { length: 40 },
      (_, i) => `When did Caroline go to event ${i} of conversation ${c}?`,
    ),
    facts: Array.from({ length: 30 }, (_, i) => `Melanie likes thing ${i} (conversation ${c}).`),
    summaries: Array.from({ length: 5 }, (_, i) => `Caroline and Melanie met for session ${i}. `.repeat(20)),
  })),
  zhDialogues: Array.from({ length: 10 }, (_, d) =>
    Array.from({ length: 10 }, (_, i) => `Bart说：第${d}段对话第${i}句，我们周末去杭州旅行吧。`),
  ),
  zhFacts: Array.from({ length: 10 }, (_, i) => `Bart在第${i}次活动中很开心。`),
};

describe('planUsers', () => {
  const plans = planUsers({ items: 3000, users: 50, orgs: 5, corpus });

  it('splits the item budget into rounds, chunks and memories and spreads users over orgs and languages', () => {
    expect(plans).toHaveLength(50);
    for (const p of plans) expect(p.rounds + p.chunks + p.memories).toBe(60);
    expect(plans[0]).toMatchObject({
      subject: 'load-u0',
      org: 'org-0',
      lang: 'en',
      rounds: 36,
      chunks: 18,
      memories: 6,
    });
    expect(plans[7]!.org).toBe('org-2');
    expect(plans.filter((p) => p.lang === 'zh')).toHaveLength(10);
    expect(plans.filter((p) => p.documentOrgScoped).map((p) => p.index)).toEqual([0, 10, 20, 30, 40]);
    expect(plans.filter((p) => p.firstMemoryOrgScoped)).toHaveLength(10);
    expect(new Set(plans.map((p) => p.org)).size).toBe(5);
  });

  it('gives every user their own names', () => {
    const names = plans.filter((p) => p.lang === 'en').map((p) => p.names[0]);
    expect(new Set(names).size).toBe(names.length);
    for (const p of plans) expect(p.names[0]).not.toBe(p.names[1]);
  });

  it('is deterministic', () => {
    expect(planUsers({ items: 3000, users: 50, orgs: 5, corpus })).toEqual(plans);
  });
});

describe('user content', () => {
  const plans = planUsers({ items: 3000, users: 50, orgs: 5, corpus });
  const en = plans[1]!;
  const zh = plans[4]!;

  it('renames the speakers', () => {
    expect(rename('Caroline met Melanie; Caroline left.', ['Caroline', 'Melanie'], ['Ann B', 'Zoe'])).toBe(
      'Ann B met Zoe; Ann B left.',
    );
  });

  it('alternates USER and ASSISTANT, one round per USER message, with the user’s names', () => {
    const messages = userMessages(corpus, en);
    expect(messages).toHaveLength(2 * en.rounds);
    expect(messages.filter((m) => m.role === 'user')).toHaveLength(en.rounds);
    expect(messages.every((m, i) => m.role === (i % 2 === 0 ? 'user' : 'assistant'))).toBe(true);
    expect(messages[0]!.text).toContain(en.names[0]);
    expect(messages.some((m) => m.text.includes('Caroline'))).toBe(false);
    const zhMessages = userMessages(corpus, zh);
    expect(zhMessages).toHaveLength(2 * zh.rounds);
    expect(zhMessages[0]!.text).toContain(zh.names[0]);
    // Later turns (the workload's appends) continue the conversation.
    expect(userMessages(corpus, en, 2, 2 * en.rounds)[0]!.text).not.toBe(messages[0]!.text);
  });

  it('sizes the document for the planned chunks, in the user’s language', () => {
    const doc = userDocument(corpus, en);
    expect(Array.from(doc).length).toBeGreaterThanOrEqual(en.chunks * CHUNK_STEP);
    expect(Array.from(doc).length).toBeLessThan(en.chunks * CHUNK_STEP + 2000);
    expect(doc.startsWith(`# Journal of ${en.names[0]}`)).toBe(true);
    expect(userDocument(corpus, zh)).toMatch(/的日记/);
  });

  it('writes distinct memories', () => {
    const memories = userMemories(corpus, en);
    expect(memories).toHaveLength(en.memories);
    expect(new Set(memories).size).toBe(memories.length);
    expect(userMemories(corpus, zh)[0]).toMatch(/记录1/);
  });
});

describe('span', () => {
  it('takes 4–9 words or 6–14 characters', () => {
    expect(span('a b c d e f g h i j k', 'en', 0, 0)).toBe('a b c d');
    expect(span('a b c d e f g h i j k', 'en', 0.999, 0.999).split(' ')).toHaveLength(9);
    expect(Array.from(span('一二三四五六七八九十一二三四五六', 'zh', 0, 0))).toHaveLength(6);
    expect(span('short', 'en', 0.5, 0.5)).toBe('short');
  });
});

describe('QueryPool', () => {
  it('never hands out the same text twice, in both languages', () => {
    const plans = planUsers({ items: 3000, users: 50, orgs: 5, corpus });
    const pool = new QueryPool(corpus);
    const random = seededRandom(3);
    const texts = Array.from({ length: 5000 }, (_, i) => pool.next(plans[i % plans.length]!, random));
    expect(new Set(texts).size).toBe(5000);
    expect(pool.size).toBe(5000);
    expect(texts.some((t) => /[\u4e00-\u9fff]/.test(t))).toBe(true);
    expect(texts.filter((_, i) => i % plans.length === 1).every((t) => !t.includes('Caroline'))).toBe(true);
  });
});
