import { describe, expect, it } from '@jest/globals';
import type { MemoryRecord, MessageRecord, SessionRecord } from '@engram/store';
import { dayText, memoryIndexText, previousTurn, roundDocument, roundIndexText } from './points.js';

const AT = Date.UTC(2023, 4, 8, 13, 56); // Monday 8 May 2023, 13:56 UTC

const session: SessionRecord = {
  id: 'S1',
  tenantId: 't',
  ownerId: 'caroline',
  displayName: '',
  languageCode: '',
  timeZone: 'UTC',
  metadata: {},
  status: 'ACTIVE',
  messageCount: 3,
  lastSequence: 3,
  openFromSequence: 1,
  activityAt: AT,
  createdAt: AT,
  updatedAt: AT,
  version: 1,
};

function message(
  sequence: number,
  role: MessageRecord['role'],
  content: string,
  participantName = '',
): MessageRecord {
  return {
    id: `M${sequence}`,
    tenantId: 't',
    sessionId: 'S1',
    sequence,
    role,
    content,
    participantName,
    toolCallId: '',
    toolCalls: [],
    tokenCount: 0,
    compacted: false,
    metadata: {},
    occurredAt: AT + sequence * 30_000,
    createdAt: AT,
  };
}

function memory(fields: Partial<MemoryRecord>): MemoryRecord {
  return {
    id: 'MEM',
    tenantId: 't',
    ownerId: 'caroline',
    orgId: '',
    scope: 'SELF',
    type: 'FACT',
    namespace: '',
    key: '',
    text: '',
    evergreen: false,
    sourceKind: 'EXTRACTED',
    confidence: 0.9,
    status: 'ACTIVE',
    statusReason: '',
    evidence: { messages: [] },
    languageCode: 'en',
    metadata: {},
    contentHash: '',
    createdAt: AT,
    updatedAt: AT,
    version: 1,
    ...fields,
  } as MemoryRecord;
}

describe('dayText', () => {
  it('names the calendar day in the zone, in the text language', () => {
    expect(dayText(AT, 'UTC', 'en')).toBe('Monday, 8 May 2023');
    expect(dayText(AT, 'UTC', 'zh')).toBe('2023年5月8日');
    // 23:30 UTC on 8 May is already 9 May in Shanghai.
    expect(dayText(Date.UTC(2023, 4, 8, 23, 30), 'Asia/Shanghai', 'en')).toBe('Tuesday, 9 May 2023');
    // An unknown zone falls back to UTC instead of failing the indexer.
    expect(dayText(AT, 'Not/AZone', 'en')).toBe('Monday, 8 May 2023');
  });
});

describe('round index text', () => {
  const question = message(1, 'ASSISTANT', 'How was the support group?', 'Melanie');
  const user = message(2, 'USER', 'Yes, last Tuesday! It was so powerful.', 'Caroline');
  const reply = message(3, 'ASSISTANT', "That's amazing!", 'Melanie');

  it('carries the day, the turn it answers and who said each line', () => {
    expect(roundIndexText(session, user, reply, question)).toBe(
      [
        'Monday, 8 May 2023',
        'Melanie: How was the support group?',
        'Caroline: Yes, last Tuesday! It was so powerful.',
        "Melanie: That's amazing!",
      ].join('\n'),
    );
  });

  it('names roles when there are no participant names, and leaves out what is missing', () => {
    const bare = message(1, 'USER', 'Hello there');
    expect(roundIndexText(session, bare, undefined, undefined)).toBe('Monday, 8 May 2023\nuser: Hello there');
  });

  it('is what the round point is indexed with', () => {
    const point = roundDocument(session, user, reply, question);
    expect(point.text).toBe(roundIndexText(session, user, reply, question));
    expect(point.payload).toMatchObject({
      kind: 'ROUND',
      sourceId: 'M2',
      sessionId: 'S1',
      ownerId: 'caroline',
    });
  });

  it('takes the last user or assistant message with content as the previous turn', () => {
    const tool = message(4, 'TOOL', '{"ok":true}');
    const empty = message(5, 'ASSISTANT', '   ');
    expect(previousTurn([question, user, tool, empty])?.id).toBe('M2');
    expect(previousTurn([question])?.id).toBe('M1');
    expect(previousTurn([tool, empty])).toBeUndefined();
    expect(previousTurn([])).toBeUndefined();
  });
});

describe('memoryIndexText', () => {
  it('renders a relationship fact as a sentence a question can match', () => {
    const text = memoryIndexText(
      memory({
        namespace: 'relationship',
        key: 'daughter.emma',
        value: { relation: 'daughter', name: 'Emma' },
        text: 'Daughter: Emma',
      }),
    );
    expect(text).toBe("Daughter: Emma\nMy daughter's name is Emma.");
  });

  it('spells out namespace, key and value of any other fact, even without text', () => {
    expect(
      memoryIndexText(
        memory({ namespace: 'user_preference', key: 'drink.tea', value: { item: 'green tea' } }),
      ),
    ).toBe('About user preference drink tea: item green tea');
    expect(
      memoryIndexText(
        memory({
          namespace: 'profile',
          key: 'home_city',
          value: '杭州',
          text: '住在杭州',
          languageCode: 'zh',
        }),
      ),
    ).toBe('住在杭州\n关于profile home city：杭州');
  });

  it('dates episodes and events, and leaves other memories as they are', () => {
    const at = Date.UTC(2023, 4, 8);
    expect(
      memoryIndexText(memory({ type: 'EPISODE', text: 'Went to the support group.', occurredAt: at })),
    ).toBe('Went to the support group.\n(Monday, 8 May 2023)');
    expect(memoryIndexText(memory({ type: 'SUMMARY', text: 'A summary.' }))).toBe('A summary.');
  });
});
