import { describe, expect, it } from '@jest/globals';
import type { Candidate, ExtractionInput, SourceMessage } from '../candidate.js';
import { extractFacts } from './fact.js';
import { itemKey, relationKey } from './keys.js';

const DAY_MS = 86_400_000;
const AT = '2026-01-28T09:00:00Z';

function cell(
  timeZone: string,
  ...messages: readonly (readonly [SourceMessage['role'], string, string?])[]
): ExtractionInput {
  return {
    memCellId: 'cell-1',
    sessionId: 'session-1',
    languageCode: '',
    timeZone,
    messages: messages.map(([role, content, at], i) => ({
      id: `m${i + 1}`,
      sequence: i + 1,
      role,
      content,
      occurredAt: Date.parse(at ?? AT),
    })),
  };
}

const facts = (content: string, timeZone = 'UTC') => extractFacts(cell(timeZone, ['USER', content]));
const slots = (content: string, timeZone = 'UTC') =>
  facts(content, timeZone).map((f) => `${f.namespace ?? ''}/${f.key ?? ''}`);
const only = (content: string, timeZone = 'UTC'): Candidate => {
  const found = facts(content, timeZone);
  expect(found).toHaveLength(1);
  return found[0]!;
};

describe('the blueprint §7 example', () => {
  const cases = [
    [
      'en',
      'From now on please answer more concisely. My goal for the next 30 days is to solve 200 problems.',
      'UTC',
    ],
    // The second seed's original wording.
    ['zh', '以后请你回答时更简洁一点。我最近 30 天目标是刷 200 道题。', 'Asia/Shanghai'],
  ] as const;

  it.each(cases)('yields exactly the preference and the goal (%s)', (language, content, timeZone) => {
    const found = facts(content, timeZone);
    expect(found).toHaveLength(2);
    const [style, goal] = found;
    expect(style).toMatchObject({
      type: 'FACT',
      namespace: 'user_preference',
      key: 'answer_style',
      value: { style: 'concise' },
      sourceKind: 'EXPLICIT_USER_STATEMENT',
      scopeHint: 'SELF',
      languageCode: language,
      evidence: { messageIds: ['m1'], memCellId: 'cell-1' },
    });
    expect(style!.confidence).toBeGreaterThanOrEqual(0.9);
    expect(style!.ttlHintMs).toBeUndefined();
    expect(goal).toMatchObject({
      type: 'FACT',
      namespace: 'goal',
      key: 'current_goal',
      value: {
        goal: language === 'en' ? 'solve 200 problems' : '刷 200 道题',
        durationDays: 30,
        period: language === 'en' ? 'next 30 days' : '最近 30 天',
      },
      ttlHintMs: 30 * DAY_MS,
      ttlReason: language === 'en' ? 'the user said "next 30 days"' : 'the user said "最近 30 天"',
      validFrom: Date.parse(AT),
      validUntil: Date.parse(AT) + 30 * DAY_MS,
      sourceKind: 'EXPLICIT_USER_STATEMENT',
    });
    expect(goal!.confidence).toBeGreaterThanOrEqual(0.9);
  });
});

describe('answer preferences', () => {
  it('calibrates confidence: persistent requests highest, one-off requests lower, hedged lowest', () => {
    expect(only('From now on, keep it brief.').confidence).toBe(0.95);
    expect(only('Keep your replies short please.').confidence).toBe(0.8);
    expect(only('Maybe you could keep the answers a bit shorter?').confidence).toBeLessThan(0.8);
  });

  it('reads the style asked for, including negated cues', () => {
    expect(only('Please stop being so brief, I need more detail.').value).toEqual({ style: 'detailed' });
    expect(only('Going forward, please give me more detailed explanations with examples.').value).toEqual({
      style: 'detailed',
    });
    expect(only('从现在开始，回答的时候不要用太多专业术语。').value).toEqual({ style: 'plain' });
    expect(only('以后别那么啰嗦。').value).toEqual({ style: 'concise' });
    expect(only('回答能不能短一点？').value).toEqual({ style: 'concise' });
  });

  it('reads the answer language', () => {
    expect(only('Please reply in English.')).toMatchObject({
      key: 'answer_language',
      value: { language: 'en' },
    });
    expect(only('请用中文回答我的问题。')).toMatchObject({
      key: 'answer_language',
      value: { language: 'zh' },
    });
  });

  it('ignores "short" and "long" that are not about answers', () => {
    expect(facts('I ran a short race this morning.')).toEqual([]);
    expect(facts('The queue at the bank was so long.')).toEqual([]);
  });
});

describe('likes, dislikes and things avoided', () => {
  it('gives like and dislike of one thing the same slot, so the later supersedes', () => {
    expect(only('I prefer tea over coffee.')).toMatchObject({
      key: 'item.tea',
      value: { item: 'tea', sentiment: 'like', over: 'coffee' },
    });
    expect(only("I don't like tea anymore.")).toMatchObject({
      key: 'item.tea',
      value: { sentiment: 'dislike' },
    });
    expect(only('我喜欢喝茶。')).toMatchObject({ key: 'item.tea', value: { item: '茶', sentiment: 'like' } });
  });

  it('handles negation and avoidance', () => {
    expect(only("I don't like horror movies at all.").value).toEqual({
      item: 'horror movies',
      sentiment: 'dislike',
    });
    expect(only("I'm not really into sports.").value).toEqual({ item: 'sports', sentiment: 'dislike' });
    expect(only("I don't drink.").value).toEqual({ item: 'alcohol', sentiment: 'avoid' });
    expect(only('我不吃辣。')).toMatchObject({
      key: itemKey('spicy food'),
      value: { item: '辣', sentiment: 'avoid' },
    });
    expect(only('我从来不喝酒。').value).toEqual({ item: '酒', sentiment: 'avoid' });
    expect(only('我对海鲜不太感冒。').value).toEqual({ item: '海鲜', sentiment: 'dislike' });
  });

  it('splits lists and keeps company out of the item', () => {
    expect(slots('I really enjoy hiking and photography.')).toEqual(
      [itemKey('hiking'), itemKey('photography')].map((k) => `user_preference/${k}`),
    );
    expect(facts('我平时喜欢跑步和游泳。').map((f) => (f.value as { item: string }).item)).toEqual([
      '跑步',
      '游泳',
    ]);
    expect(facts('我喜欢去公园和朋友们玩。').map((f) => (f.value as { item: string }).item)).toEqual([
      '公园',
    ]);
  });

  it('lowers the confidence of hedged statements only', () => {
    expect(only('I think I might like jazz, not sure yet.').confidence).toBeLessThanOrEqual(0.7);
    expect(only('I like jazz.').confidence).toBe(0.9);
    // The hedge of another clause does not soften this one.
    expect(only('我喜欢画画，但我不确定他们是否也喜欢。').confidence).toBe(0.9);
  });

  it('skips questions, other people, hypotheticals, reported speech and "favourite X" phrases', () => {
    for (const text of [
      'Do you like jazz?',
      'My sister loves horror movies.',
      'Sarah said she hates long meetings.',
      'He told me he likes pizza.',
      'I love you!',
      "I'd like a summary of this article.",
      'If I were rich I would love caviar.',
      '你喜欢什么颜色？',
      '我朋友特别喜欢吃火锅，我倒是一般。',
      '我老公不吃香菜。',
      '他说他喜欢吃辣。',
      '今晚最喜欢的动画片不播了。',
    ]) {
      expect([text, facts(text)]).toEqual([text, []]);
    }
  });

  it('never reads the assistant as the user', () => {
    const input = cell(
      'UTC',
      ['USER', 'Can you recommend a book about habits?'],
      ['ASSISTANT', 'Sure. I really like Atomic Habits, and I am a big fan of its chapter on identity.'],
    );
    expect(extractFacts(input)).toEqual([]);
  });
});

describe('profile', () => {
  it('reads names, ages and occupations', () => {
    expect(only("Hi! I'm Daniel, by the way.")).toMatchObject({ key: 'name', value: { name: 'Daniel' } });
    expect(only("My name's Tom.")).toMatchObject({ key: 'name', value: { name: 'Tom' } });
    expect(only('Call me Liz.')).toMatchObject({ key: 'preferred_name', value: { name: 'Liz' } });
    expect(only('以后叫我小林就行。')).toMatchObject({ key: 'preferred_name', value: { name: '小林' } });
    expect(only("I'm 29 years old.")).toMatchObject({ key: 'age', value: { age: 29 } });
    expect(only('我今年刚满三十岁。')).toMatchObject({ key: 'age', value: { age: 30 } });
    expect(slots('我叫王小明，今年二十八岁，在杭州做前端开发。')).toEqual([
      'profile/name',
      'profile/age',
      'profile/occupation',
    ]);
    expect(facts("I'm a software engineer at Google.").map((f) => f.value)).toEqual([
      { occupation: 'software engineer' },
      { employer: 'Google' },
    ]);
    expect(facts('我在字节跳动上班，做产品经理。').map((f) => f.value)).toEqual([
      { employer: '字节跳动' },
      { occupation: '产品经理' },
    ]);
  });

  it('does not take nationalities, moods or cities for names and employers', () => {
    expect(facts("I'm Canadian.")).toEqual([]);
    expect(facts("I'm so tired today.")).toEqual([]);
    expect(slots('我在杭州工作。')).not.toContain('profile/employer');
  });

  it('reads where the user lives and comes from, not where they used to live', () => {
    expect(only('I used to live in Boston, but now I live in Seattle.')).toMatchObject({
      key: 'location',
      value: { place: 'Seattle' },
    });
    expect(facts("I'm from Toronto but I live in Vancouver now.").map((f) => [f.key, f.value])).toEqual([
      ['hometown', { place: 'Toronto' }],
      ['location', { place: 'Vancouver' }],
    ]);
    expect(facts('我是四川人，现在住在深圳。').map((f) => [f.key, f.value])).toEqual([
      ['hometown', { place: '四川' }],
      ['location', { place: '深圳' }],
    ]);
    expect(facts('我以前住在南京。')).toEqual([]);
  });

  it('reads diet, allergies and languages', () => {
    expect(only("I'm vegetarian, so no meat recipes please.").value).toEqual({ diet: 'vegetarian' });
    expect(only("I'm allergic to peanuts.")).toMatchObject({
      key: 'allergy.peanut',
      value: { allergen: 'peanuts' },
    });
    expect(facts('我会说粤语和英语，母语是普通话。').map((f) => [f.key, f.value])).toEqual([
      ['language.yue', { language: 'yue', level: 'speaks' }],
      ['language.en', { language: 'en', level: 'speaks' }],
      ['language.zh', { language: 'zh', level: 'native' }],
    ]);
  });
});

describe('relationships', () => {
  it('reads named relations, one slot per person for relations one can have several of', () => {
    expect(facts('My wife Anna and I are celebrating our anniversary this Saturday.')).toEqual([
      expect.objectContaining({
        namespace: 'relationship',
        key: 'wife',
        value: { relation: 'wife', name: 'Anna' },
      }),
    ]);
    expect(facts('我儿子叫乐乐，我女儿叫果果。').map((f) => f.key)).toEqual([
      relationKey('son', '乐乐'),
      relationKey('daughter', '果果'),
    ]);
    expect(only('I just adopted a cat named Miso!')).toMatchObject({
      key: 'cat.miso',
      value: { relation: 'cat', name: 'Miso' },
    });
    expect(only('我家猫叫咪咪。')).toMatchObject({
      key: relationKey('cat', '咪咪'),
      value: { name: '咪咪' },
    });
    expect(only('我有一个弟弟。')).toMatchObject({ key: 'brother', value: { relation: 'brother' } });
  });

  it('does not take the relative’s own facts for the user’s', () => {
    expect(slots("My husband Tom is a chef, and I'm a pharmacist.")).toEqual([
      'profile/occupation',
      'relationship/husband',
    ]);
    expect(
      facts("My husband Tom is a chef, and I'm a pharmacist.").find((f) => f.key === 'occupation')?.value,
    ).toEqual({
      occupation: 'pharmacist',
    });
  });
});

describe('goals', () => {
  it('turns the stated period into a TTL hint and a validity window', () => {
    const goal = only('我接下来三个月要减掉十斤。', 'Asia/Shanghai');
    expect(goal).toMatchObject({
      key: 'current_goal',
      value: { goal: '减掉十斤', durationDays: 90 },
      ttlHintMs: 90 * DAY_MS,
    });
    expect(only('My goal is to run a half marathon by June.')).toMatchObject({
      value: { goal: 'run a half marathon', period: 'by June' },
    });
    expect(only('我的目标是年底前存够十万块。', 'Asia/Shanghai').value).toMatchObject({
      goal: '存够十万块',
      period: '年底前',
    });
  });

  it('keeps a goal without a period, without a TTL', () => {
    const goal = only('现在在准备考研。', 'Asia/Shanghai');
    expect(goal).toMatchObject({ key: 'current_goal', value: { goal: '考研' } });
    expect(goal.ttlHintMs).toBeUndefined();
  });

  it('does not read plans, past aims or other people’s goals as the user’s goal', () => {
    expect(slots("I'm going to Berlin next Friday for a job interview.")).toEqual([]);
    expect(slots('My aim was to show warmth and love.')).toEqual([]);
    expect(slots('他的目标是考上清华。')).toEqual([]);
  });
});

describe('one candidate per slot', () => {
  it('keeps the later statement of a slot said twice', () => {
    const input = cell(
      'UTC',
      ['USER', 'I live in Boston.', '2026-01-28T09:00:00Z'],
      ['ASSISTANT', 'Nice city!', '2026-01-28T09:00:10Z'],
      ['USER', 'Actually, scratch that: I live in Denver.', '2026-01-28T09:01:00Z'],
    );
    const found = extractFacts(input);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      key: 'location',
      value: { place: 'Denver' },
      evidence: { messageIds: ['m3'] },
    });
  });
});
