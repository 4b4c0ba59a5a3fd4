import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { isEngramError } from '@engram/runtime';
import { assemble } from './assembly.js';
import { bulletLine, factLine, HEADINGS, knowledgeLine, PROMPT_SEPARATOR, summaryPart } from './render.js';
import { tokenizerFor } from './tokenizer.js';
import {
  FILL_ORDER,
  LAYERS,
  type Assembly,
  type AssemblyInput,
  type KnowledgeCandidate,
  type LayerBudgetOverride,
  type OptionalLayer,
  type Tokenizer,
  type ToolCall,
  type TurnCandidate,
} from './types.js';

const S = 'sessions/s1';
const TOKENIZERS = {
  exactO200k: tokenizerFor('gpt-4o'),
  exactCl100k: tokenizerFor('gpt-4'),
  approximate: tokenizerFor('qwen-max'),
};
const DEFAULT_SHARES: Record<OptionalLayer, number> = {
  TOOLS: 0.1,
  KEY_POINTS: 0.05,
  OPEN_LOOPS: 0.05,
  SESSION_SUMMARY: 0.1,
  EVERGREEN_FACTS: 0.1,
  RETRIEVED_KNOWLEDGE: 0.25,
  RECENT_TURNS: 0.35,
};

/** Text built from pieces that stress BPE boundaries: newlines, `/`, punctuation, CJK, emoji. */
const piece = fc.constantFrom(
  'Hello',
  ' world',
  'the',
  ' ',
  '.',
  ',',
  '!',
  '?',
  '\n',
  '\n\n',
  '/',
  '//',
  '  ',
  '\t',
  '你好',
  '。',
  '世界',
  '😀',
  '<|endoftext|>',
  '123',
  '4567',
  "'s",
  '-',
  '#',
  '## ',
  '[1]',
  'é',
  'Ünïcode',
  ')',
  '"',
  '\r\n',
  '…',
  'lorem ipsum dolor sit amet, ',
);
const text = (maxLength = 20) => fc.array(piece, { maxLength }).map((p) => p.join(''));
const nonBlank = (maxLength = 20) => text(maxLength).map((t) => (t.trim() === '' ? `x${t}y` : t));

interface TurnDraft {
  readonly role: TurnCandidate['role'];
  readonly content: string;
  readonly named: boolean;
  readonly calls: number;
  readonly answer: number;
}
const turnDraft = fc.record({
  role: fc.constantFrom<TurnCandidate['role']>('USER', 'ASSISTANT', 'ASSISTANT', 'TOOL', 'TOOL', 'SYSTEM'),
  content: text(12),
  named: fc.boolean(),
  calls: fc.nat(2),
  answer: fc.integer({ min: -1, max: 3 }),
});

/** Turns with realistic tool use: TOOL messages answer one of the most recent calls (or none). */
function buildTurns(drafts: readonly TurnDraft[]): TurnCandidate[] {
  const recentCalls: string[] = [];
  return drafts.map((d, i) => {
    const calls: ToolCall[] =
      d.role === 'ASSISTANT'
        ? Array.from({ length: d.calls }, (_, k) => ({
            id: `c${i}_${k}`,
            name: `tool_${k}`,
            argumentsJson: k === 0 ? '{"q":"x"}' : '',
          }))
        : [];
    recentCalls.unshift(...calls.map((c) => c.id).reverse());
    const toolCallId = d.role === 'TOOL' && d.answer >= 0 ? (recentCalls[d.answer] ?? 'unknown') : '';
    const content =
      d.role === 'ASSISTANT' && calls.length > 0 ? d.content : d.content.trim() === '' ? 'x' : d.content;
    return {
      name: `${S}/messages/m${String(i).padStart(4, '0')}`,
      sequence: i + 1,
      role: d.role,
      content,
      participantName: d.named ? 'alice_1' : '',
      toolCallId,
      toolCalls: calls,
    };
  });
}

const overrides = fc
  .array(
    fc.record({
      layer: fc.constantFrom(...FILL_ORDER),
      share: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
      maxTokens: fc.option(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 600 })), {
        nil: undefined,
        freq: 2,
      }),
    }),
    { maxLength: 4 },
  )
  .map((entries) => {
    const unique = [...new Map(entries.map((e) => [e.layer, e])).values()];
    const sum = unique.reduce((x, e) => x + (e.share ?? 0), 0);
    return unique.map((e): LayerBudgetOverride => ({
      layer: e.layer,
      ...(e.share === undefined ? {} : { share: sum > 1 ? e.share / sum / 1.000001 : e.share }),
      ...(e.maxTokens === undefined ? {} : { maxTokens: e.maxTokens }),
    }));
  });

function arbitraryInput(turnCount: { min: number; max: number }): fc.Arbitrary<AssemblyInput> {
  return fc
    .record({
      tokenizer: fc.constantFrom(...Object.values(TOKENIZERS)),
      systemPrompt: fc.oneof(fc.constant(''), text(15)),
      userMessage: nonBlank(10),
      tools: fc.array(
        fc.record({
          description: text(6),
          schema: fc.constantFrom(
            '',
            '{"type":"object","properties":{"a":{"type":"string","enum":["x","y"]}}}',
          ),
        }),
        { maxLength: 4 },
      ),
      toolRendering: fc.constantFrom<AssemblyInput['toolRendering']>('PARAMETER', 'SYSTEM_MESSAGE'),
      keyPoints: fc.array(nonBlank(8), { maxLength: 6 }),
      openLoops: fc.array(nonBlank(8), { maxLength: 6 }),
      summary: fc.oneof(fc.constant(''), text(60)),
      facts: fc.oneof(
        fc.array(
          fc.record({
            text: nonBlank(8),
            confidence: fc.double({ min: 0, max: 1, noNaN: true }),
            updatedAt: fc.nat(10),
          }),
          { maxLength: 6 },
        ),
        fc.constantFrom('DISABLED' as const, 'UNAVAILABLE' as const),
      ),
      knowledge: fc.oneof(
        fc.array(
          fc.record({
            kind: fc.constantFrom<KnowledgeCandidate['kind']>('MEMORY', 'CHUNK', 'ROUND'),
            score: fc.double({ min: 0, max: 1, noNaN: true }),
            text: nonBlank(15),
            time: fc.option(fc.integer({ min: 0, max: 4_000_000_000_000 }), { nil: undefined }),
            ref: fc.nat(30),
            evidence: fc.array(fc.nat(30), { maxLength: 2 }),
          }),
          { maxLength: 8 },
        ),
        fc.constantFrom('DISABLED' as const, 'UNAVAILABLE' as const),
      ),
      turns: fc.array(turnDraft, { minLength: turnCount.min, maxLength: turnCount.max }),
      duplicateUser: fc.boolean(),
      totalTokens: fc.integer({ min: 1, max: 4000 }),
      reserved: fc.integer({ min: 0, max: 300 }),
      layers: overrides,
      topK: fc.integer({ min: 1, max: 5 }),
      minScore: fc.double({ min: 0, max: 0.6, noNaN: true }),
      minConfidence: fc.double({ min: 0, max: 1, noNaN: true }),
      summaryMemory: fc.boolean(),
    })
    .map((r): AssemblyInput => {
      let turns = buildTurns(r.turns);
      if (r.duplicateUser) {
        turns = [
          ...turns,
          {
            ...buildTurns([{ role: 'USER', content: r.userMessage, named: false, calls: 0, answer: -1 }])[0]!,
            name: `${S}/messages/zzzz`,
            sequence: turns.length + 1,
          },
        ];
      }
      const turnName = (i: number) => turns[i % Math.max(turns.length, 1)]?.name ?? `${S}/messages/none`;
      const knowledge: AssemblyInput['knowledge'] =
        typeof r.knowledge === 'string'
          ? r.knowledge === 'DISABLED'
            ? { status: 'DISABLED' }
            : { status: 'UNAVAILABLE', detail: 'retrieval unreachable' }
          : {
              status: 'OK',
              items: r.knowledge.map((k, i) => ({
                name:
                  k.kind === 'ROUND'
                    ? turnName(k.ref)
                    : k.kind === 'CHUNK'
                      ? `documents/d/chunks/${i}`
                      : `memories/k${i}`,
                kind: k.kind,
                score: k.score,
                text: k.text,
                ...(k.time === undefined ? {} : { time: k.time }),
                ...(k.kind === 'MEMORY'
                  ? { confidence: 0.8, evidenceMessages: k.evidence.map(turnName) }
                  : {}),
              })),
            };
      const uniqueKnowledge: AssemblyInput['knowledge'] =
        knowledge.status === 'OK'
          ? { status: 'OK', items: [...new Map(knowledge.items.map((k) => [k.name, k])).values()] }
          : knowledge;
      return {
        sessionName: S,
        systemPrompt: r.systemPrompt,
        userMessage: r.userMessage,
        tools: r.tools.map((t, i) => ({
          name: `tool_${i}`,
          description: t.description,
          parametersJsonSchema: t.schema,
        })),
        toolRendering: r.toolRendering,
        keyPoints: r.keyPoints.map((t, i) => ({ id: `k${i}`, text: t })),
        openLoops: r.openLoops.map((t, i) => ({ id: `o${i}`, text: t })),
        summary: r.summary,
        summaryMemory: r.summaryMemory ? 'memories/k0' : '',
        facts:
          typeof r.facts === 'string'
            ? r.facts === 'DISABLED'
              ? { status: 'DISABLED' }
              : { status: 'UNAVAILABLE', detail: 'governance unreachable' }
            : { status: 'OK', items: r.facts.map((f, i) => ({ name: `memories/f${i}`, ...f })) },
        knowledge: uniqueKnowledge,
        turns,
        uncompactedMessageCount: turns.length,
        budget: {
          totalTokens: r.totalTokens,
          reservedOutputTokens: Math.min(r.reserved, r.totalTokens - 1),
          layers: r.layers,
        },
        defaultShares: DEFAULT_SHARES,
        knowledgeTopK: r.topK,
        knowledgeMinScore: r.minScore,
        evergreenMinConfidence: r.minConfidence,
        tokenizer: r.tokenizer,
      };
    });
}

/** Tokens a layer uses besides its items: its heading, or the tools' fixed costs. */
function layerOverhead(a: Assembly, input: AssemblyInput, layer: (typeof LAYERS)[number]): number {
  const tk = input.tokenizer;
  const included = a.trace.some((t) => t.layer === layer && t.included);
  if (!included) return 0;
  if (layer === 'TOOLS') {
    return input.toolRendering === 'PARAMETER'
      ? (tk.toolListOverheadTokens ?? 0)
      : tk.tokensPerMessage + tk.count(HEADINGS.TOOLS);
  }
  return layer in HEADINGS ? tk.count(HEADINGS[layer as keyof typeof HEADINGS]) : 0;
}

function checkInvariants(input: AssemblyInput, a: Assembly): void {
  const tk: Tokenizer = input.tokenizer;
  const exact = !tk.approximate;
  // Accounting.
  const parameterTools =
    input.toolRendering === 'PARAMETER' ? a.layers.find((l) => l.layer === 'TOOLS')!.usedTokens : 0;
  expect(a.totalTokens).toBe(
    a.messageTokens.reduce((x, y) => x + y, 0) + parameterTools + tk.replyPrimingTokens,
  );
  expect(a.totalTokens).toBe(a.layers.reduce((x, l) => x + l.usedTokens, 0) + a.overheadTokens);
  expect(a.totalTokens).toBeLessThanOrEqual(a.budgetTokens);
  expect(a.messageTokens).toHaveLength(a.messages.length);
  expect(a.layers.map((l) => l.layer)).toEqual([...LAYERS]);
  for (const usage of a.layers) {
    const items = a.trace.filter((t) => t.layer === usage.layer);
    const included = items.filter((t) => t.included);
    expect(usage.usedTokens).toBeLessThanOrEqual(usage.budgetTokens);
    expect(usage.itemsIncluded).toBe(included.length);
    expect(usage.itemsDropped).toBe(items.length - included.length);
    expect(included.reduce((x, t) => x + t.tokens, 0) + layerOverhead(a, input, usage.layer)).toBe(
      usage.usedTokens,
    );
    expect(new Set(items.map((t) => t.id)).size).toBe(items.length);
  }
  // Every message is counted as sent (exactly; per part for the approximate tokenizer).
  a.messages.forEach((m, i) => {
    // Composed system messages are counted per part: for the approximate tokenizer, at least the whole.
    if (exact || m.role !== 'SYSTEM') expect(a.messageTokens[i]).toBe(tk.countMessage(m));
    else expect(a.messageTokens[i]).toBeGreaterThanOrEqual(tk.countMessage(m));
  });
  // The user message is last and verbatim.
  expect(a.messages.at(-1)).toEqual({
    role: 'USER',
    content: input.userMessage,
    name: '',
    toolCallId: '',
    toolCalls: [],
  });
  // The system message: prompt first, then sections in layer order.
  const systemUsed = a.layers.slice(0, 6).some((l) => l.usedTokens > 0);
  if (systemUsed) {
    const content = a.messages[0]!.content;
    expect(a.messages[0]!.role).toBe('SYSTEM');
    expect(content.startsWith(input.systemPrompt)).toBe(true);
    const rest = content.slice(input.systemPrompt.length);
    const positions = (
      ['KEY_POINTS', 'OPEN_LOOPS', 'SESSION_SUMMARY', 'EVERGREEN_FACTS', 'RETRIEVED_KNOWLEDGE'] as const
    )
      .filter((l) => a.layers.find((u) => u.layer === l)!.usedTokens > 0)
      .map((l) => rest.indexOf(`${input.systemPrompt === '' ? '' : '\n'}${HEADINGS[l]}`));
    expect(positions.every((p) => p >= 0)).toBe(true);
    expect([...positions].sort((x, y) => x - y)).toEqual(positions);
  }
  // Trace grouped by layer in assembly order.
  const order = a.trace.map((t) => LAYERS.indexOf(t.layer));
  expect([...order].sort((x, y) => x - y)).toEqual(order);
  // Included turns are a contiguous tail (the stored copy of the user message aside).
  const included = new Set(a.trace.filter((t) => t.layer === 'RECENT_TURNS' && t.included).map((t) => t.id));
  const last = input.turns.at(-1);
  const end =
    last?.role === 'USER' && last.content === input.userMessage ? input.turns.length - 1 : input.turns.length;
  const tail = input.turns.slice(end - included.size, end).map((t) => t.name);
  expect(tail.every((n) => included.has(n))).toBe(true);
  // Valid for chat-completions: tool messages follow their call; every kept call is answered.
  a.messages.forEach((m, i) => {
    if (m.role === 'TOOL') {
      let j = i - 1;
      while (j >= 0 && a.messages[j]!.role === 'TOOL') j--;
      expect(a.messages[j]?.role).toBe('ASSISTANT');
      expect(a.messages[j]!.toolCalls.map((c) => c.id)).toContain(m.toolCallId);
    }
    if (m.role === 'ASSISTANT') {
      const answers: string[] = [];
      for (let j = i + 1; a.messages[j]?.role === 'TOOL'; j++) answers.push(a.messages[j]!.toolCallId);
      expect([...answers].sort()).toEqual(m.toolCalls.map((c) => c.id).sort());
    }
    if (!(m.role === 'ASSISTANT' && m.toolCalls.length > 0)) expect(m.content).not.toBe('');
  });
}

function run(input: AssemblyInput): Assembly | undefined {
  try {
    return assemble(input);
  } catch (error) {
    if (!isEngramError(error) || error.reason !== 'BUDGET_TOO_SMALL') throw error;
    expect(Number(error.metadata['required_tokens'])).toBeGreaterThan(
      Number(error.metadata['budget_tokens']),
    );
    return undefined;
  }
}

describe('assembly properties', () => {
  it('never exceeds the budget and always balances its accounting', () => {
    fc.assert(
      fc.property(arbitraryInput({ min: 0, max: 12 }), (input) => {
        const a = run(input);
        if (a !== undefined) checkInvariants(input, a);
      }),
      { numRuns: 150 },
    );
  });

  it('holds for a 500-turn session', () => {
    fc.assert(
      fc.property(arbitraryInput({ min: 500, max: 500 }), (input) => {
        const a = run({ ...input, budget: { ...input.budget, totalTokens: input.budget.totalTokens * 5 } });
        if (a !== undefined) checkInvariants(input, a);
      }),
      { numRuns: 8 },
    );
  });

  it('truncates a newest turn that alone exceeds the budget to fit, or drops it', () => {
    fc.assert(
      fc.property(
        arbitraryInput({ min: 0, max: 3 }),
        nonBlank(20),
        fc.integer({ min: 1, max: 400 }),
        fc.constantFrom<TurnCandidate['role']>('USER', 'ASSISTANT', 'TOOL'),
        (base, chunk, cap, role) => {
          const big: TurnCandidate = {
            name: `${S}/messages/big`,
            sequence: 1000,
            role,
            content: chunk.repeat(60),
            participantName: role === 'TOOL' ? 'search' : '',
            toolCallId: role === 'TOOL' ? 'c0_0' : '',
            toolCalls: [],
          };
          const input: AssemblyInput = {
            ...base,
            userMessage: `${base.userMessage}?`,
            turns: [...base.turns, big],
            budget: {
              totalTokens: 100_000,
              reservedOutputTokens: 0,
              layers: [{ layer: 'RECENT_TURNS', maxTokens: cap }],
            },
          };
          const a = run(input);
          if (a === undefined) return;
          checkInvariants(input, a);
          const item = a.trace.find((t) => t.id === big.name)!;
          if (item.reason === 'TRUNCATED') {
            expect(item.tokens).toBeGreaterThanOrEqual(32);
            expect(a.messages.some((m) => /\[… \d+ tokens omitted …\]/.test(m.content))).toBe(true);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('is deterministic: the same input gives the same output', () => {
    fc.assert(
      fc.property(arbitraryInput({ min: 0, max: 8 }), (input) => {
        const a = run(input);
        const b = run(input);
        expect(b).toEqual(a);
      }),
      { numRuns: 40 },
    );
  });

  it('counts a whole system message exactly as the sum of its rendered parts', () => {
    const knowledgeItem = fc.record({
      kind: fc.constantFrom<KnowledgeCandidate['kind']>('MEMORY', 'CHUNK', 'ROUND'),
      text: text(15),
      title: fc.option(text(3), { nil: undefined }),
      time: fc.option(fc.integer({ min: 0, max: 4_000_000_000_000 }), { nil: undefined }),
    });
    fc.assert(
      fc.property(
        text(20),
        fc.array(text(8), { maxLength: 4 }),
        text(40),
        fc.array(knowledgeItem, { maxLength: 4 }),
        (prompt, bullets, summary, items) => {
          const parts = [
            ...(prompt === '' ? [] : [prompt + PROMPT_SEPARATOR]),
            HEADINGS.KEY_POINTS,
            ...bullets.map(bulletLine),
            HEADINGS.SESSION_SUMMARY,
            summaryPart(summary.trim() === '' ? 'x' : summary),
            HEADINGS.EVERGREEN_FACTS,
            ...bullets.map((b, i) => factLine(b, i % 2 === 0)),
            HEADINGS.RETRIEVED_KNOWLEDGE,
            ...items.map((k, i) =>
              knowledgeLine(i + 1, { name: `memories/${i}`, score: 1, ...k }, i % 2 === 1),
            ),
          ];
          for (const tk of [TOKENIZERS.exactO200k, TOKENIZERS.exactCl100k]) {
            expect(tk.count(parts.join(''))).toBe(parts.reduce((x, p) => x + tk.count(p), 0));
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
