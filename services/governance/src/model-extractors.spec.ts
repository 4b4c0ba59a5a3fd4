import { describe, expect, it } from '@jest/globals';
import { OpenAIChatModel } from '@engram/llm';
import type { ExtractionInput } from './domain/candidate.js';
import { itemKey } from './domain/extractors/keys.js';
import type { AnswerCandidate } from './domain/prompts/index.js';
import {
  candidatesFromAnswer,
  canonicalSlot,
  createModelExtractor,
  showableMessages,
  type AnswerContext,
} from './model-extractors.js';

const DAY_MS = 86_400_000;
const AT = Date.parse('2025-03-03T09:00:00+08:00');

const input: ExtractionInput = {
  memCellId: '01JNCELL000000000000000000',
  sessionId: 'session-1',
  languageCode: '',
  timeZone: 'Asia/Shanghai',
  messages: [
    { id: 'm1', sequence: 1, role: 'USER', content: '  I quit my job last Friday. ', occurredAt: AT },
    { id: 'm2', sequence: 2, role: 'ASSISTANT', content: 'That is a big step.', occurredAt: AT + 60_000 },
    {
      id: 'm3',
      sequence: 3,
      role: 'USER',
      content: `I love tea. ${'x'.repeat(300)}`,
      occurredAt: AT + 120_000,
    },
  ],
};

const context: AnswerContext = {
  input,
  citable: new Set(['m1', 'm2', 'm3']),
  language: 'en',
  model: 'scripted-model',
  promptVersion: 'extract-v1',
};

const answered = (fields: Partial<AnswerCandidate> & Pick<AnswerCandidate, 'type'>): AnswerCandidate => ({
  text: 'The user quit their job.',
  source_kind: 'explicit_user_statement',
  scope_hint: 'self',
  confidence: 0.9,
  evidence_message_ids: ['m1'],
  ...fields,
});

describe('candidatesFromAnswer', () => {
  it('converts an EVENT: its type, SELF, the source kind, epoch times, evidence and provenance', () => {
    const [event] = candidatesFromAnswer(
      'EVENT',
      {
        candidates: [
          answered({ type: 'EVENT', occurred_at: '2025-02-28T00:00:00+08:00', confidence: 0.856 }),
        ],
      },
      context,
    );
    expect(event).toEqual({
      type: 'EVENT',
      text: 'The user quit their job.',
      languageCode: 'en',
      sourceKind: 'EXPLICIT_USER_STATEMENT',
      scopeHint: 'SELF',
      confidence: 0.86,
      occurredAt: Date.parse('2025-02-27T16:00:00Z'),
      evidence: { messageIds: ['m1'], memCellId: input.memCellId, excerpt: 'I quit my job last Friday.' },
      metadata: { extractor: 'model.event', model: 'scripted-model', prompt_version: 'extract-v1' },
    });
  });

  it('dates an EVENT without a time, a FACT, a FORESIGHT and an EPISODE at the first evidence message of the user', () => {
    const at = (type: AnswerCandidate['type'], extra: Partial<AnswerCandidate> = {}) =>
      candidatesFromAnswer(
        type,
        { candidates: [answered({ type, evidence_message_ids: ['m3', 'm2'], ...extra })] },
        context,
      )[0]?.occurredAt;
    expect(at('EVENT', { occurred_at: null })).toBe(AT + 120_000);
    expect(at('EPISODE')).toBe(AT + 120_000);
    expect(at('EPISODE', { evidence_message_ids: ['m2'] })).toBe(AT + 60_000);
    expect(at('FORESIGHT', { valid_from: null, valid_until: '2025-03-08T00:00:00+08:00' })).toBe(
      AT + 120_000,
    );
    expect(
      at('FACT', {
        namespace: 'profile',
        key: 'occupation',
        value: [{ field: 'occupation', value: 'nurse' }],
      }),
    ).toBe(AT + 120_000);
  });

  it('keeps only evidence of the MemCell the model could see, in MemCell order, and drops what is left with none', () => {
    const found = candidatesFromAnswer(
      'EVENT',
      {
        candidates: [
          answered({ type: 'EVENT', evidence_message_ids: ['m3', 'nope', 'm1', 'm3'] }),
          answered({ type: 'EVENT', evidence_message_ids: ['01JNOTINTHISCELL0000000000'] }),
          answered({ type: 'EVENT', evidence_message_ids: ['m2'] }),
        ],
      },
      { ...context, citable: new Set(['m1', 'm3']) },
    );
    expect(found.map((c) => c.evidence.messageIds)).toEqual([['m1', 'm3']]);
  });

  it('quotes at most 200 characters of the first evidence message', () => {
    const [c] = candidatesFromAnswer(
      'EPISODE',
      { candidates: [answered({ type: 'EPISODE', evidence_message_ids: ['m3'] })] },
      context,
    );
    expect(Array.from(c?.evidence.excerpt ?? '')).toHaveLength(200);
    expect(c?.evidence.excerpt?.startsWith('I love tea.')).toBe(true);
    expect(c?.evidence.excerpt?.endsWith('…')).toBe(true);
  });

  it('converts a FACT: value fields to an object, TTL days to ms, the validity window to epoch ms', () => {
    const [goal] = candidatesFromAnswer(
      'FACT',
      {
        candidates: [
          answered({
            type: 'FACT',
            namespace: 'goal',
            key: 'current_goal',
            value: [
              { field: 'goal', value: ' solve 200 problems ' },
              { field: 'durationDays', value: 30 },
            ],
            text: 'Goal: solve 200 problems in 30 days.',
            ttl_days: 30,
            ttl_reason: 'the user said "next 30 days"',
            valid_from: '2025-03-03T09:00:00+08:00',
            valid_until: '2025-04-02T09:00:00+08:00',
          }),
        ],
      },
      context,
    );
    expect(goal).toMatchObject({
      type: 'FACT',
      namespace: 'goal',
      key: 'current_goal',
      value: { goal: 'solve 200 problems', durationDays: 30 },
      ttlHintMs: 30 * DAY_MS,
      ttlReason: 'the user said "next 30 days"',
      validFrom: AT,
      validUntil: AT + 30 * DAY_MS,
      occurredAt: AT,
    });
  });

  it('leaves out what a FACT did not say', () => {
    const [style] = candidatesFromAnswer(
      'FACT',
      {
        candidates: [
          answered({
            type: 'FACT',
            namespace: 'user_preference',
            key: 'answer_style',
            value: [{ field: 'style', value: 'concise' }],
            ttl_days: null,
            ttl_reason: null,
            valid_from: null,
            valid_until: null,
          }),
        ],
      },
      context,
    );
    expect(style).not.toHaveProperty('ttlHintMs');
    expect(style).not.toHaveProperty('ttlReason');
    expect(style).not.toHaveProperty('validFrom');
    expect(style).not.toHaveProperty('validUntil');
  });

  it('keeps the later of two FACTs for one slot, and only FACTs are merged', () => {
    const style = (value: string, evidence: string) =>
      answered({
        type: 'FACT',
        namespace: 'user_preference',
        key: 'answer_style',
        value: [{ field: 'style', value }],
        evidence_message_ids: [evidence],
      });
    const job = answered({
      type: 'FACT',
      namespace: 'profile',
      key: 'occupation',
      value: [{ field: 'occupation', value: 'nurse' }],
    });
    const facts = candidatesFromAnswer(
      'FACT',
      { candidates: [style('detailed', 'm1'), job, style('concise', 'm3')] },
      context,
    );
    expect(facts.map((f) => [f.key, f.value])).toEqual([
      ['occupation', { occupation: 'nurse' }],
      ['answer_style', { style: 'concise' }],
    ]);
    const events = candidatesFromAnswer(
      'EVENT',
      { candidates: [answered({ type: 'EVENT' }), answered({ type: 'EVENT' })] },
      context,
    );
    expect(events).toHaveLength(2);
  });

  it('maps source kinds and takes the language of the text, else the prompt’s', () => {
    const found = candidatesFromAnswer(
      'EVENT',
      {
        candidates: [
          answered({ type: 'EVENT', source_kind: 'inferred', text: '用户上周五辞职了。' }),
          answered({ type: 'EVENT', source_kind: 'assistant', text: '2025-02-28' }),
        ],
      },
      { ...context, language: 'zh', omittedMessages: 12 },
    );
    expect(found.map((c) => [c.sourceKind, c.languageCode])).toEqual([
      ['INFERRED', 'zh'],
      ['ASSISTANT', 'zh'],
    ]);
    expect(found[0]?.metadata).toMatchObject({ omitted_messages: '12' });
  });
});

describe('canonicalSlot', () => {
  it('derives item, allergy, language and relationship keys from the value as the offline extractors do', () => {
    expect(
      canonicalSlot('user_preference', 'item.green_tea_drink', { item: '茶', sentiment: 'like' }).key,
    ).toBe('item.tea');
    expect(canonicalSlot('user_preference', 'item.luosifen', { item: '螺蛳粉', sentiment: 'like' }).key).toBe(
      itemKey('螺蛳粉'),
    );
    expect(canonicalSlot('profile', 'allergy.peanuts', { allergen: 'peanuts' }).key).toBe('allergy.peanut');
    expect(canonicalSlot('profile', 'language.french', { language: 'fr', level: 'learning' }).key).toBe(
      'language.fr',
    );
    expect(canonicalSlot('relationship', 'wife.anna', { relation: 'Wife', name: 'Anna' })).toEqual({
      namespace: 'relationship',
      key: 'wife',
      value: { relation: 'wife', name: 'Anna' },
    });
    expect(canonicalSlot('relationship', 'daughter', { relation: 'daughter', name: '朵朵' }).key).toBe(
      'daughter.zh-6735-6735',
    );
  });

  it('keeps the model’s key for every other slot, or when the value lacks the field', () => {
    expect(canonicalSlot('user_preference', 'answer_style', { style: 'concise' }).key).toBe('answer_style');
    expect(canonicalSlot('goal', 'current_goal', { goal: 'x' }).key).toBe('current_goal');
    expect(canonicalSlot('user_preference', 'item.tea', { sentiment: 'like' }).key).toBe('item.tea');
    expect(canonicalSlot('relationship', 'mentor', { relation: '导师' }).key).toBe('mentor');
    expect(canonicalSlot('work', 'project', { project: 'Apollo' }).key).toBe('project');
  });
});

describe('showableMessages', () => {
  it('leaves out empty messages and those a "don’t remember this" request covers', () => {
    const cell: ExtractionInput = {
      ...input,
      messages: [
        { id: 'a', sequence: 1, role: 'USER', content: 'I live in Berlin.', occurredAt: AT },
        {
          id: 'b',
          sequence: 2,
          role: 'USER',
          content: "Don't save this: my PIN is [redacted:pin].",
          occurredAt: AT,
        },
        { id: 'c', sequence: 3, role: 'ASSISTANT', content: '   ', occurredAt: AT },
        { id: 'd', sequence: 4, role: 'USER', content: 'I work as a nurse.', occurredAt: AT },
      ],
    };
    expect(showableMessages(cell).map((m) => m.id)).toEqual(['a', 'd']);
  });
});

describe('createModelExtractor', () => {
  const model = new OpenAIChatModel({ baseURL: 'http://127.0.0.1:9/v1', model: 'unused' });

  it('refuses options it cannot work with', () => {
    expect(() => createModelExtractor(model, { maxMessageChars: 10 })).toThrow(RangeError);
    expect(() => createModelExtractor(model, { maxTranscriptChars: 500, maxMessageChars: 1_000 })).toThrow(
      /maxTranscriptChars/u,
    );
    expect(() => createModelExtractor(model, { maxAttempts: 0 })).toThrow(/maxAttempts/u);
    expect(() => createModelExtractor(model, { temperature: -1 })).toThrow(/temperature/u);
    expect(typeof createModelExtractor(model)).toBe('function');
  });
});
