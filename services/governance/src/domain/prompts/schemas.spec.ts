import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import type { ExtractorName } from '../candidate.js';
import { ANSWER_SCHEMAS, ANSWER_SCHEMA_NAMES, MAX_CANDIDATES, answerSchema } from './schemas.js';

const EXTRACTORS: readonly ExtractorName[] = ['EPISODE', 'EVENT', 'FORESIGHT', 'FACT'];

type JsonSchema = Record<string, unknown>;

/** Every problem that OpenAI's strict `json_schema` mode would refuse, as paths. */
function strictProblems(node: unknown, path = '$'): string[] {
  if (Array.isArray(node)) return node.flatMap((item, i) => strictProblems(item, `${path}[${i}]`));
  if (typeof node !== 'object' || node === null) return [];
  const schema = node as JsonSchema;
  const problems: string[] = [];
  if (schema['type'] === 'object' || 'properties' in schema) {
    const properties = Object.keys(schema['properties'] ?? {});
    const required = (schema['required'] ?? []) as string[];
    if (schema['additionalProperties'] !== false) problems.push(`${path}: additionalProperties is not false`);
    for (const name of properties) {
      if (!required.includes(name)) problems.push(`${path}.${name}: not required`);
    }
    if (properties.length === 0) problems.push(`${path}: an object without properties`);
  }
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'propertyNames') problems.push(`${path}: propertyNames`);
    problems.push(...strictProblems(value, `${path}.${key}`));
  }
  return problems;
}

const jsonSchema = (extractor: ExtractorName): unknown =>
  z.toJSONSchema(ANSWER_SCHEMAS[extractor], { io: 'output' });

/** The JSON Schema of one candidate of an extractor's answer. */
function candidateItem(extractor: ExtractorName): { properties: JsonSchema; required: string[] } {
  const schema = jsonSchema(extractor) as {
    properties: { candidates: { items: { properties: JsonSchema; required: string[] } } };
  };
  return schema.properties.candidates.items;
}

const base = {
  text: 'The user wants concise answers.',
  source_kind: 'explicit_user_statement',
  scope_hint: 'self',
  confidence: 0.9,
  evidence_message_ids: ['m1'],
};
const fact = {
  ...base,
  type: 'FACT',
  namespace: 'user_preference',
  key: 'answer_style',
  value: [{ field: 'style', value: 'concise' }],
  ttl_days: null,
  ttl_reason: null,
  valid_from: null,
  valid_until: null,
};
const foresight = {
  ...base,
  type: 'FORESIGHT',
  valid_from: '2025-03-04T15:00:00+08:00',
  valid_until: '2025-03-05T00:00:00+08:00',
};

const issues = (extractor: ExtractorName, candidate: object): string[] =>
  answerSchema(extractor)
    .safeParse({ candidates: [candidate] })
    .error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`) ?? [];

describe('answer schemas', () => {
  it.each(EXTRACTORS)(
    'are strict-mode JSON Schemas (%s): closed objects, every property required',
    (extractor) => {
      expect(strictProblems(jsonSchema(extractor))).toEqual([]);
    },
  );

  it.each(EXTRACTORS)('have a response_format name the API accepts (%s)', (extractor) => {
    expect(ANSWER_SCHEMA_NAMES[extractor]).toMatch(/^[a-zA-Z0-9_-]{1,64}$/u);
  });

  it('mark optional fields nullable instead of leaving them out', () => {
    const item = candidateItem('FACT').properties;
    for (const field of ['ttl_days', 'ttl_reason', 'valid_from', 'valid_until']) {
      expect(item[field]).toMatchObject({ anyOf: expect.arrayContaining([{ type: 'null' }]) as unknown });
    }
    expect(item['scope_hint']).toEqual({ type: 'string', enum: ['self'] });
    expect(item['type']).toEqual({ type: 'string', enum: ['FACT'] });
  });

  it('accept a well-formed answer and an empty one', () => {
    expect(issues('FACT', fact)).toEqual([]);
    expect(issues('FORESIGHT', foresight)).toEqual([]);
    expect(answerSchema('EVENT').safeParse({ candidates: [] }).success).toBe(true);
  });

  it('cap the number of candidates (one EPISODE per MemCell)', () => {
    const episode = { ...base, type: 'EPISODE' };
    expect(answerSchema('EPISODE').safeParse({ candidates: [episode] }).success).toBe(true);
    expect(answerSchema('EPISODE').safeParse({ candidates: [episode, episode] }).success).toBe(false);
    expect(MAX_CANDIDATES.EPISODE).toBe(1);
  });

  it('require times with a UTC offset', () => {
    expect(issues('FORESIGHT', { ...foresight, valid_from: '2025-03-04T15:00:00' })).toEqual([
      expect.stringMatching(/^candidates\.0\.valid_from: must be an ISO 8601 date-time/u),
    ]);
    expect(issues('FORESIGHT', { ...foresight, valid_from: '2025-03-04' })).toHaveLength(1);
    expect(issues('FORESIGHT', { ...foresight, valid_from: '2025-03-04T15:00+08:00' })).toHaveLength(1);
    expect(issues('FORESIGHT', { ...foresight, valid_from: '2025-03-04T07:00:00Z' })).toEqual([]);
  });

  it('refuse a TTL without its reason, a window that ends before it starts, a FORESIGHT without a window', () => {
    expect(issues('FACT', { ...fact, ttl_days: 30 })).toEqual([
      'candidates.0.ttl_reason: ttl_days needs a ttl_reason',
    ]);
    expect(
      issues('FACT', {
        ...fact,
        valid_from: '2025-03-04T15:00:00+08:00',
        valid_until: '2025-03-04T07:00:00Z',
      }),
    ).toEqual(['candidates.0.valid_until: valid_until must be after valid_from']);
    expect(issues('FORESIGHT', { ...foresight, valid_from: null, valid_until: null })).toEqual([
      expect.stringMatching(/^candidates\.0\.valid_until: a FORESIGHT needs valid_from or valid_until/u),
    ]);
  });

  it('refuse keys outside the contract alphabet, other types and other scopes', () => {
    expect(issues('FACT', { ...fact, key: 'Answer Style' })).toHaveLength(1);
    expect(issues('FACT', { ...fact, type: 'EVENT' })).toHaveLength(1);
    expect(issues('FACT', { ...fact, scope_hint: 'org' })).toHaveLength(1);
    expect(issues('FACT', { ...fact, value: [] })).toHaveLength(1);
    expect(issues('FACT', { ...fact, evidence_message_ids: [] })).toHaveLength(1);
    expect(issues('EVENT', { ...base, type: 'EVENT', occurred_at: null, confidence: 1.2 })).toHaveLength(1);
  });
});
