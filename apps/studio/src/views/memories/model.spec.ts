import { create } from '@bufbuild/protobuf';
import { timestampDate, TimestampSchema } from '@bufbuild/protobuf/wkt';
import { describe, expect, it } from '@jest/globals';
import { Scope } from '@engram/contracts/common';
import {
  DecisionOutcome,
  DecisionSchema,
  EvidenceSchema,
  MemorySchema,
  MemoryStatus,
  MemoryType,
  RuleVerdict,
} from '@engram/contracts/governance';
import {
  allowedActions,
  createRequest,
  decisionSummary,
  EMPTY_FORM,
  enumList,
  evidenceMessages,
  filtersFromQuery,
  filtersToQuery,
  listRequest,
  memCellSession,
  newRequestId,
  NO_FILTERS,
  reasonRule,
  refusalRule,
  reviewRequest,
  splitList,
  updateRequest,
} from './model.js';

describe('filters', () => {
  it('reads the URL query, dropping unknown names and malformed dates', () => {
    const f = filtersFromQuery(
      new URLSearchParams(
        'type=FACT,bogus,event&status=DELETED,ACTIVE&ns=profile, user_preference&scope=SELF&from=2026-12-01&to=yesterday&evergreen=1',
      ),
    );
    expect(f).toEqual({
      types: [MemoryType.FACT, MemoryType.EVENT],
      statuses: [MemoryStatus.DELETED, MemoryStatus.ACTIVE],
      namespaces: ['profile', 'user_preference'],
      scopes: [Scope.SELF],
      from: '2026-12-01',
      to: '',
      evergreenOnly: true,
    });
  });

  it('round-trips through the query', () => {
    const f = {
      ...NO_FILTERS,
      types: [MemoryType.SUMMARY],
      statuses: [MemoryStatus.QUARANTINED],
      to: '2026-12-02',
    };
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(filtersToQuery(f))) if (v !== undefined) query.set(k, v);
    expect(query.toString()).toBe('type=SUMMARY&status=QUARANTINED&to=2026-12-02');
    expect(filtersFromQuery(query)).toEqual(f);
    expect(Object.values(filtersToQuery(NO_FILTERS)).every((v) => v === undefined)).toBe(true);
  });

  it('never accepts UNSPECIFIED or repeats', () => {
    expect(enumList(MemoryStatus, 'UNSPECIFIED,ACTIVE,active')).toEqual([MemoryStatus.ACTIVE]);
    expect(splitList(' a, b  a,,c ')).toEqual(['a', 'b', 'c']);
  });
});

describe('list requests', () => {
  it('sends only the filters that are set (empty statuses: the server default, ACTIVE)', () => {
    expect(listRequest(NO_FILTERS)).toEqual({ pageSize: 25, pageToken: '' });
  });

  it('maps every filter to its ListMemories field, with an inclusive local end date', () => {
    const r = listRequest(
      {
        types: [MemoryType.FACT],
        statuses: [MemoryStatus.ACTIVE, MemoryStatus.DELETED],
        namespaces: ['profile'],
        scopes: [Scope.SELF, Scope.ORG],
        from: '2026-12-01',
        to: '2026-12-02',
        evergreenOnly: true,
      },
      10,
    );
    expect(r).toMatchObject({
      pageSize: 10,
      types: [MemoryType.FACT],
      statuses: [MemoryStatus.ACTIVE, MemoryStatus.DELETED],
      namespaces: ['profile'],
      scopes: [Scope.SELF, Scope.ORG],
      evergreenOnly: true,
    });
    const start = r.createTime?.startTime;
    const end = r.createTime?.endTime;
    expect(start && timestampDate(create(TimestampSchema, start))).toEqual(new Date(2026, 11, 1));
    expect(end && timestampDate(create(TimestampSchema, end))).toEqual(new Date(2026, 11, 3));
  });

  it('lists the review queue by the QUARANTINED status', () => {
    expect(reviewRequest()).toEqual({ pageSize: 25, pageToken: '', statuses: [MemoryStatus.QUARANTINED] });
  });
});

describe('the Remember form', () => {
  it('writes a FACT statement with its value as {"value": text} when no JSON is given', () => {
    const built = createRequest(
      {
        ...EMPTY_FORM,
        text: ' The user prefers concise answers. ',
        namespace: 'user_preference',
        key: 'answer_style',
      },
      'rid',
    );
    expect(built).toEqual({
      ok: true,
      request: {
        requestId: 'rid',
        validateOnly: false,
        memory: {
          type: MemoryType.FACT,
          text: 'The user prefers concise answers.',
          namespace: 'user_preference',
          key: 'answer_style',
          value: { value: 'The user prefers concise answers.' },
        },
      },
    });
  });

  it('takes a JSON object value, the evergreen pin, a confidence and validate-only', () => {
    const built = createRequest(
      {
        ...EMPTY_FORM,
        namespace: 'profile',
        key: 'city',
        value: '{"city": "Lyon"}',
        confidence: '0.3',
        evergreen: true,
        validateOnly: true,
      },
      'rid',
    );
    expect(built.ok && built.request.memory).toEqual({
      type: MemoryType.FACT,
      namespace: 'profile',
      key: 'city',
      value: { city: 'Lyon' },
      evergreen: true,
      confidence: 0.3,
    });
    expect(built.ok && built.request.validateOnly).toBe(true);
  });

  it('needs text for the other types and never sends FACT fields or evergreen with them', () => {
    expect(createRequest({ ...EMPTY_FORM, type: MemoryType.EVENT }, 'r')).toEqual({
      ok: false,
      problem: 'textRequired',
    });
    const built = createRequest(
      { ...EMPTY_FORM, type: MemoryType.EVENT, text: 'Met Bob.', namespace: 'x', key: 'y', evergreen: true },
      'r',
    );
    expect(built.ok && built.request.memory).toEqual({ type: MemoryType.EVENT, text: 'Met Bob.' });
  });

  it('refuses a value that is not an object and a confidence that is not a number', () => {
    expect(createRequest({ ...EMPTY_FORM, value: '[1]' }, 'r')).toEqual({
      ok: false,
      problem: 'valueNotObject',
    });
    expect(createRequest({ ...EMPTY_FORM, value: '{' }, 'r')).toEqual({
      ok: false,
      problem: 'valueNotObject',
    });
    expect(createRequest({ ...EMPTY_FORM, text: 'x', confidence: 'high' }, 'r')).toEqual({
      ok: false,
      problem: 'confidenceNotNumber',
    });
    expect(createRequest({ ...EMPTY_FORM }, 'r')).toEqual({ ok: false, problem: 'textRequired' });
  });

  it('makes request ids the server accepts', () => {
    expect(newRequestId()).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });
});

describe('updates', () => {
  const memory = create(MemorySchema, {
    name: 'memories/01J',
    type: MemoryType.FACT,
    text: 'old',
    evergreen: false,
    etag: 'e1',
    status: MemoryStatus.ACTIVE,
  });

  it('masks only the changed fields, conditional on the etag', () => {
    expect(updateRequest(memory, { text: ' new ' })).toEqual({
      memory: { name: 'memories/01J', text: 'new' },
      updateMask: { paths: ['text'] },
      etag: 'e1',
    });
    expect(updateRequest(memory, { evergreen: true })).toEqual({
      memory: { name: 'memories/01J', evergreen: true },
      updateMask: { paths: ['evergreen'] },
      etag: 'e1',
    });
    expect(updateRequest(memory, { text: 'old', evergreen: false })).toBeUndefined();
  });

  it('offers the actions the status allows', () => {
    expect(allowedActions(memory)).toEqual({ edit: true, pin: true, remove: true, restore: false });
    expect(allowedActions({ type: MemoryType.EVENT, status: MemoryStatus.ACTIVE }).pin).toBe(false);
    expect(allowedActions({ type: MemoryType.FACT, status: MemoryStatus.DELETED })).toEqual({
      edit: false,
      pin: false,
      remove: false,
      restore: true,
    });
    expect(allowedActions({ type: MemoryType.FACT, status: MemoryStatus.SUPERSEDED }).edit).toBe(false);
  });
});

describe('decisions and refusals', () => {
  it('summarises a quarantine with the rule and the notes of the rules that acted', () => {
    const decision = create(DecisionSchema, {
      outcome: DecisionOutcome.QUARANTINED,
      rule: 'pii_denial',
      reason: 'Quarantined: matched category pii.email_address.',
      evaluations: [
        { rule: 'schema', verdict: RuleVerdict.PASSED },
        { rule: 'pii_denial', verdict: RuleVerdict.QUARANTINED, note: 'matched category pii.email_address' },
        { rule: 'ttl_cap', verdict: RuleVerdict.ADJUSTED, note: '' },
        { rule: 'quota', verdict: RuleVerdict.NOT_EVALUATED },
      ],
    });
    expect(decisionSummary(decision)).toEqual({
      outcome: 'QUARANTINED',
      tone: 'warn',
      rule: 'pii_denial',
      reason: 'Quarantined: matched category pii.email_address.',
      notes: ['pii_denial: matched category pii.email_address', 'ttl_cap'],
    });
    expect(decisionSummary(create(DecisionSchema, { outcome: DecisionOutcome.ACCEPTED })).tone).toBe('ok');
    expect(decisionSummary(create(DecisionSchema, { outcome: DecisionOutcome.MERGED_DUPLICATE })).tone).toBe(
      'info',
    );
  });

  it('finds the refusing rule in the error metadata', () => {
    expect(refusalRule({ rule: 'confidence_threshold' })).toBe('confidence_threshold');
    expect(refusalRule({ field: 'memory.namespace' })).toBe('schema');
    expect(refusalRule({})).toBeUndefined();
    expect(reasonRule('prompt_injection: text that instructs the model')).toBe('prompt_injection');
    expect(reasonRule('deleted by its owner')).toBeUndefined();
  });
});

describe('evidence', () => {
  it('keeps well-formed message names with their session', () => {
    const evidence = create(EvidenceSchema, {
      messages: ['sessions/S1/messages/M1', 'bogus', 'sessions/S2/messages/M2/x'],
      memCell: 'sessions/S1/memCells/C1',
    });
    expect(evidenceMessages(evidence)).toEqual([
      { name: 'sessions/S1/messages/M1', sessionId: 'S1', messageId: 'M1' },
    ]);
    expect(evidenceMessages(undefined)).toEqual([]);
    expect(memCellSession(evidence.memCell)).toBe('S1');
  });
});
