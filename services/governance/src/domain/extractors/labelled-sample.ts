/**
 * A hand-labelled sample for the offline extractors: short conversations written for this project
 * (not taken from any data set), each with the candidates a careful human curator would expect.
 * `bench/extractors.ts` and `labelled-sample.spec.ts` score the extractors on it with the matching
 * rules of `scoring.ts`.
 *
 * Two splits: `dev` was used while building the extractors; `holdout` was written at the same time,
 * before any extractor code existed, and is scored but never tuned against. Times carry their
 * offset; expected dates are calendar dates in the case's time zone: `YYYY-MM-DD` (matched within a
 * day), `YYYY-MM` (the month) or `YYYY` (the year) for mentions like "next month" or "去年".
 *
 * Conventions of the labels: "next <weekday>" is that weekday in the following Monday-based week
 * ("下周三" likewise); "next week"/"下周" is that week's Monday; "last weekend"/"上周末" its
 * Saturday. Expected FACT gists list the value fields that must match (see `scoring.ts`).
 */
import { NAMESPACE, allergyKey, itemKey, languageKey, relationKey, GOAL_KEY } from './keys.js';

/** A message of a labelled conversation. */
export interface LabelledMessage {
  readonly role: 'USER' | 'ASSISTANT';
  readonly content: string;
  /** ISO 8601 with offset. */
  readonly at: string;
}

/** One expected candidate; `message` is the index of its evidence message in the case. */
export type ExpectedCandidate =
  | {
      readonly type: 'FACT';
      readonly message: number;
      readonly namespace: string;
      readonly key: string;
      readonly gist: Readonly<Record<string, string | number>>;
    }
  | { readonly type: 'FORESIGHT'; readonly message: number; readonly date: string }
  | { readonly type: 'EVENT'; readonly message: number; readonly date?: string }
  | { readonly type: 'EPISODE'; readonly mentions: readonly string[] };

/** A labelled conversation (one MemCell). */
export interface LabelledCase {
  readonly id: string;
  readonly language: 'en' | 'zh';
  readonly split: 'dev' | 'holdout';
  readonly timeZone: string;
  readonly messages: readonly LabelledMessage[];
  readonly expected: readonly ExpectedCandidate[];
}

const P = NAMESPACE.preference;
const PR = NAMESPACE.profile;
const R = NAMESPACE.relationship;
const G = NAMESPACE.goal;

/** Wednesday 28 January 2026, 10:00 in New York. */
const NY = '2026-01-28T10:00:00-05:00';
/** Wednesday 28 January 2026, 10:00 in Shanghai. */
const SH = '2026-01-28T10:00:00+08:00';

function user(content: string, at: string): LabelledMessage {
  return { role: 'USER', content, at };
}
function assistant(content: string, at: string): LabelledMessage {
  return { role: 'ASSISTANT', content, at };
}
function fact(
  message: number,
  namespace: string,
  key: string,
  gist: Readonly<Record<string, string | number>>,
): ExpectedCandidate {
  return { type: 'FACT', message, namespace, key, gist };
}
function single(
  id: string,
  language: 'en' | 'zh',
  timeZone: string,
  content: string,
  at: string,
  expected: readonly ExpectedCandidate[],
  split: 'dev' | 'holdout' = 'dev',
): LabelledCase {
  return { id, language, split, timeZone, messages: [user(content, at)], expected };
}

const NEW_YORK = 'America/New_York';

function holdout(cases: readonly LabelledCase[]): LabelledCase[] {
  return cases.map((c) => ({ ...c, split: 'holdout' }));
}
const SHANGHAI = 'Asia/Shanghai';

const ENGLISH: readonly LabelledCase[] = [
  single(
    'en-01',
    'en',
    'UTC',
    'From now on please answer more concisely. My goal for the next 30 days is to solve 200 problems.',
    '2026-01-28T09:00:00Z',
    [
      fact(0, P, 'answer_style', { style: 'concise' }),
      fact(0, G, GOAL_KEY, { goal: 'solve 200 problems', durationDays: 30 }),
    ],
  ),
  single('en-02', 'en', NEW_YORK, 'I prefer tea over coffee, honestly.', NY, [
    fact(0, P, itemKey('tea'), { item: 'tea', sentiment: 'like' }),
  ]),
  single('en-03', 'en', NEW_YORK, "I don't like horror movies at all.", NY, [
    fact(0, P, itemKey('horror movies'), { item: 'horror movies', sentiment: 'dislike' }),
  ]),
  single('en-04', 'en', NEW_YORK, "My friend Sarah loves sushi, but I can't stand raw fish.", NY, [
    fact(0, P, itemKey('raw fish'), { item: 'raw fish', sentiment: 'dislike' }),
    fact(0, R, relationKey('friend', 'Sarah'), { name: 'Sarah' }),
  ]),
  single('en-05', 'en', NEW_YORK, "Hi! I'm Daniel, by the way.", NY, [
    fact(0, PR, 'name', { name: 'Daniel' }),
  ]),
  single('en-06', 'en', NEW_YORK, "I'm 34 and I work as a nurse in Leeds.", NY, [
    fact(0, PR, 'age', { age: 34 }),
    fact(0, PR, 'occupation', { occupation: 'nurse' }),
  ]),
  single('en-07', 'en', NEW_YORK, 'We just moved to Denver last month.', NY, [
    { type: 'EVENT', message: 0, date: '2025-12' },
    fact(0, PR, 'location', { place: 'Denver' }),
  ]),
  single('en-08', 'en', NEW_YORK, 'My wife Anna and I are celebrating our anniversary this Saturday.', NY, [
    fact(0, R, relationKey('wife', 'Anna'), { name: 'Anna' }),
    { type: 'FORESIGHT', message: 0, date: '2026-01-31' },
  ]),
  single('en-09', 'en', NEW_YORK, 'I have a dentist appointment next Tuesday at 3pm.', NY, [
    { type: 'FORESIGHT', message: 0, date: '2026-02-03' },
  ]),
  single('en-10', 'en', NEW_YORK, 'Do you think I should go to the dentist next week?', NY, []),
  single(
    'en-11',
    'en',
    'UTC',
    'I went to a support group yesterday. It was really helpful.',
    '2026-03-01T15:00:00Z',
    [{ type: 'EVENT', message: 0, date: '2026-02-28' }],
  ),
  {
    id: 'en-12',
    language: 'en',
    split: 'dev',
    timeZone: NEW_YORK,
    messages: [
      user('Can you recommend a good book about building habits?', NY),
      assistant(
        'Sure — Atomic Habits by James Clear is a popular choice. I really like its chapter on identity-based habits.',
        '2026-01-28T10:00:20-05:00',
      ),
      user("Thanks, I'll check it out.", '2026-01-28T10:01:00-05:00'),
    ],
    expected: [{ type: 'EPISODE', mentions: ['Atomic Habits'] }],
  },
  single('en-13', 'en', NEW_YORK, 'My daughter is called Lily and she just started kindergarten.', NY, [
    fact(0, R, relationKey('daughter', 'Lily'), { name: 'Lily' }),
  ]),
  single('en-14', 'en', NEW_YORK, "Please don't remember this, but I'm going through a divorce.", NY, []),
  single('en-15', 'en', NEW_YORK, "I'm allergic to peanuts.", NY, [
    fact(0, PR, allergyKey('peanuts'), { allergen: 'peanut' }),
  ]),
  single('en-16', 'en', NEW_YORK, "I'm flying to Tokyo on March 5th for a conference.", NY, [
    { type: 'FORESIGHT', message: 0, date: '2026-03-05' },
  ]),
  single('en-17', 'en', NEW_YORK, 'I think I might like jazz, not sure yet.', NY, [
    fact(0, P, itemKey('jazz'), { item: 'jazz', sentiment: 'like' }),
  ]),
  single('en-18', 'en', NEW_YORK, 'My brother thinks I should quit my job.', NY, []),
  single('en-19', 'en', NEW_YORK, 'I quit my job last Friday!', NY, [
    { type: 'EVENT', message: 0, date: '2026-01-23' },
  ]),
  single(
    'en-20',
    'en',
    NEW_YORK,
    'Could you keep your answers short from now on? Long replies are hard to read on my phone.',
    NY,
    [fact(0, P, 'answer_style', { style: 'concise' })],
  ),
  single('en-21', 'en', NEW_YORK, 'Please reply in English.', NY, [
    fact(0, P, 'answer_language', { language: 'en' }),
  ]),
  single(
    'en-22',
    'en',
    'UTC',
    "Tomorrow I'm meeting my old roommate for lunch at noon.",
    '2026-01-31T20:00:00Z',
    [{ type: 'FORESIGHT', message: 0, date: '2026-02-01' }],
  ),
  single('en-23', 'en', NEW_YORK, "What's the weather like in Paris tomorrow?", NY, []),
  single('en-24', 'en', NEW_YORK, 'I used to live in Boston, but now I live in Seattle.', NY, [
    fact(0, PR, 'location', { place: 'Seattle' }),
  ]),
  single('en-25', 'en', NEW_YORK, "I'm from Brazil originally.", NY, [
    fact(0, PR, 'hometown', { place: 'Brazil' }),
  ]),
  single('en-26', 'en', NEW_YORK, "I don't drink alcohol.", NY, [
    fact(0, P, itemKey('alcohol'), { item: 'alcohol', sentiment: 'avoid' }),
  ]),
  {
    id: 'en-27',
    language: 'en',
    split: 'dev',
    timeZone: NEW_YORK,
    messages: [
      user('I ran my first marathon two weeks ago and my knee still hurts.', NY),
      assistant('Congratulations! Rest and ice should help with the knee.', '2026-01-28T10:00:30-05:00'),
      user("Thanks. I'm planning to run another one in October.", '2026-01-28T10:02:00-05:00'),
    ],
    expected: [
      { type: 'EVENT', message: 0, date: '2026-01-14' },
      { type: 'FORESIGHT', message: 2, date: '2026-10' },
      { type: 'EPISODE', mentions: ['marathon'] },
    ],
  },
  single('en-28', 'en', NEW_YORK, 'Honestly I hate it when answers are super long.', NY, [
    fact(0, P, 'answer_style', { style: 'concise' }),
  ]),
  single(
    'en-29',
    'en',
    NEW_YORK,
    "My name is Priya Sharma and I'm a data scientist at a fintech startup.",
    NY,
    [
      fact(0, PR, 'name', { name: 'Priya Sharma' }),
      fact(0, PR, 'occupation', { occupation: 'data scientist' }),
    ],
  ),
  single('en-30', 'en', NEW_YORK, "I'm so tired today.", NY, []),
  single(
    'en-31',
    'en',
    NEW_YORK,
    "I've been learning Spanish for a year, and my goal is to be fluent by the end of this year.",
    NY,
    [
      fact(0, G, GOAL_KEY, { goal: 'fluent' }),
      fact(0, PR, languageKey('es'), { language: 'es', level: 'learning' }),
    ],
  ),
  single('en-32', 'en', NEW_YORK, 'Remind me that I have a job interview on Thursday at 10am.', NY, [
    { type: 'FORESIGHT', message: 0, date: '2026-01-29' },
  ]),
  single('en-33', 'en', NEW_YORK, 'I just adopted a cat named Miso!', NY, [
    { type: 'EVENT', message: 0, date: '2026-01-28' },
    fact(0, R, relationKey('cat', 'Miso'), { name: 'Miso' }),
  ]),
  {
    id: 'en-34',
    language: 'en',
    split: 'dev',
    timeZone: NEW_YORK,
    messages: [
      user('hey how are you doing', NY),
      assistant("I'm doing well, thanks! How can I help you today?", '2026-01-28T10:00:10-05:00'),
      user('just wanted to chat lol', '2026-01-28T10:00:40-05:00'),
    ],
    expected: [],
  },
  single('en-35', 'en', NEW_YORK, "If I were rich I'd buy a boat.", NY, []),
  single('en-36', 'en', NEW_YORK, 'My son Max turns 8 on Friday.', NY, [
    fact(0, R, relationKey('son', 'Max'), { name: 'Max' }),
    { type: 'FORESIGHT', message: 0, date: '2026-01-30' },
  ]),
  single('en-37', 'en', NEW_YORK, "I'm vegetarian, so no meat recipes please.", NY, [
    fact(0, PR, 'diet', { diet: 'vegetarian' }),
  ]),
  single(
    'en-38',
    'en',
    NEW_YORK,
    'Last night I finally finished reading War and Peace.',
    '2026-01-28T08:00:00-05:00',
    [{ type: 'EVENT', message: 0, date: '2026-01-27' }],
  ),
  single('en-39', 'en', NEW_YORK, 'Sarah said she hates long meetings.', NY, []),
  single('en-40', 'en', NEW_YORK, "I live in Austin, Texas, and I'm a high school teacher.", NY, [
    fact(0, PR, 'location', { place: 'Austin' }),
    fact(0, PR, 'occupation', { occupation: 'teacher' }),
  ]),
  single(
    'en-41',
    'en',
    NEW_YORK,
    'Going forward, please give me more detailed explanations with examples.',
    NY,
    [fact(0, P, 'answer_style', { style: 'detailed' })],
  ),
  single('en-42', 'en', NEW_YORK, "Not sure if this matters, but I don't really like spicy food.", NY, [
    fact(0, P, itemKey('spicy food'), { item: 'spicy food', sentiment: 'dislike' }),
  ]),
  single('en-43', 'en', NEW_YORK, 'My exam is on February 12, so I need to study every day until then.', NY, [
    { type: 'FORESIGHT', message: 0, date: '2026-02-12' },
  ]),
  single('en-44', 'en', NEW_YORK, 'I got promoted to senior engineer yesterday!', NY, [
    { type: 'EVENT', message: 0, date: '2026-01-27' },
    fact(0, PR, 'occupation', { occupation: 'senior engineer' }),
  ]),
  single('en-45', 'en', NEW_YORK, "Don't save this: my bank PIN is 4821.", NY, []),
  single('en-46', 'en', NEW_YORK, "I don't remember where I parked my car yesterday.", NY, []),
  // The same instant seen from two zones: 02:00 on 1 April in Shanghai, 18:00 on 31 March in UTC.
  single('en-47', 'en', SHANGHAI, "I'm seeing my doctor tomorrow morning.", '2026-03-31T18:00:00Z', [
    { type: 'FORESIGHT', message: 0, date: '2026-04-02' },
  ]),
  single('en-48', 'en', 'UTC', "I'm seeing my doctor tomorrow morning.", '2026-03-31T18:00:00Z', [
    { type: 'FORESIGHT', message: 0, date: '2026-04-01' },
  ]),
];

const CHINESE: readonly LabelledCase[] = [
  // The second seed's example, in its original wording.
  single('zh-01', 'zh', SHANGHAI, '以后请你回答时更简洁一点。我最近 30 天目标是刷 200 道题。', SH, [
    fact(0, P, 'answer_style', { style: 'concise' }),
    fact(0, G, GOAL_KEY, { goal: '刷200道题', durationDays: 30 }),
  ]),
  single('zh-02', 'zh', SHANGHAI, '我喜欢喝绿茶。', SH, [
    fact(0, P, itemKey('绿茶'), { item: '绿茶', sentiment: 'like' }),
  ]),
  single('zh-03', 'zh', SHANGHAI, '我不吃辣。', SH, [
    fact(0, P, itemKey('辣'), { item: '辣', sentiment: 'avoid' }),
  ]),
  single('zh-04', 'zh', SHANGHAI, '我叫王小明，今年二十八岁，在杭州做前端开发。', SH, [
    fact(0, PR, 'name', { name: '王小明' }),
    fact(0, PR, 'age', { age: 28 }),
    fact(0, PR, 'occupation', { occupation: '前端开发' }),
  ]),
  single('zh-05', 'zh', SHANGHAI, '我女儿叫朵朵，今年上小学一年级。', SH, [
    fact(0, R, relationKey('daughter', '朵朵'), { name: '朵朵' }),
  ]),
  single('zh-06', 'zh', SHANGHAI, '下周三我要去北京出差。', SH, [
    { type: 'FORESIGHT', message: 0, date: '2026-02-04' },
  ]),
  single('zh-07', 'zh', SHANGHAI, '我上周搬到了上海。', SH, [
    { type: 'EVENT', message: 0, date: '2026-01-19' },
    fact(0, PR, 'location', { place: '上海' }),
  ]),
  single('zh-08', 'zh', SHANGHAI, '我朋友特别喜欢吃火锅，我倒是一般。', SH, []),
  single('zh-09', 'zh', SHANGHAI, '你喜欢什么颜色？', SH, []),
  single('zh-10', 'zh', SHANGHAI, '明天下午三点我有个面试，有点紧张。', '2026-01-31T20:00:00+08:00', [
    { type: 'FORESIGHT', message: 0, date: '2026-02-01' },
  ]),
  single('zh-11', 'zh', SHANGHAI, '这个别记哈，我最近在偷偷找工作。', SH, []),
  single('zh-12', 'zh', SHANGHAI, '我不记得上次把钥匙放哪了。', SH, []),
  single('zh-13', 'zh', SHANGHAI, '我老婆叫李娜，我们结婚五年了。', SH, [
    fact(0, R, relationKey('wife', '李娜'), { name: '李娜' }),
  ]),
  single('zh-14', 'zh', SHANGHAI, '我是四川人，现在住在深圳。', SH, [
    fact(0, PR, 'hometown', { place: '四川' }),
    fact(0, PR, 'location', { place: '深圳' }),
  ]),
  single('zh-15', 'zh', SHANGHAI, '请用英文回答我的问题。', SH, [
    fact(0, P, 'answer_language', { language: 'en' }),
  ]),
  single('zh-16', 'zh', SHANGHAI, '回答详细一点，最好举几个例子。', SH, [
    fact(0, P, 'answer_style', { style: 'detailed' }),
  ]),
  single('zh-17', 'zh', SHANGHAI, '我昨天去医院做了体检。', '2026-03-01T09:00:00+08:00', [
    { type: 'EVENT', message: 0, date: '2026-02-28' },
  ]),
  {
    id: 'zh-18',
    language: 'zh',
    split: 'dev',
    timeZone: SHANGHAI,
    messages: [
      user('能推荐几本关于时间管理的书吗？', SH),
      assistant('可以看看《搞定》和《番茄工作法图解》，我个人很喜欢后者。', '2026-01-28T10:00:20+08:00'),
      user('好的，谢谢，我去找来看看。', '2026-01-28T10:01:00+08:00'),
    ],
    expected: [{ type: 'EPISODE', mentions: ['时间管理'] }],
  },
  single('zh-19', 'zh', SHANGHAI, '我对猫毛过敏。', SH, [
    fact(0, PR, allergyKey('猫毛'), { allergen: '猫毛' }),
  ]),
  single('zh-20', 'zh', SHANGHAI, '我是一名小学老师。', SH, [
    fact(0, PR, 'occupation', { occupation: '老师' }),
  ]),
  single('zh-21', 'zh', SHANGHAI, '我打算下个月去日本旅游。', SH, [
    { type: 'FORESIGHT', message: 0, date: '2026-02' },
  ]),
  single('zh-22', 'zh', SHANGHAI, '我妈说我应该多运动。', SH, []),
  single('zh-23', 'zh', SHANGHAI, '我上个月辞职了，现在在准备考研。', SH, [
    { type: 'EVENT', message: 0, date: '2025-12' },
    fact(0, G, GOAL_KEY, { goal: '考研' }),
  ]),
  single('zh-24', 'zh', SHANGHAI, '我不太喜欢看恐怖片。', SH, [
    fact(0, P, itemKey('恐怖片'), { item: '恐怖片', sentiment: 'dislike' }),
  ]),
  single('zh-25', 'zh', SHANGHAI, '从现在开始，回答的时候不要用太多专业术语。', SH, [
    fact(0, P, 'answer_style', { style: 'plain' }),
  ]),
  single('zh-26', 'zh', SHANGHAI, '周五晚上七点我约了朋友吃饭。', SH, [
    { type: 'FORESIGHT', message: 0, date: '2026-01-30' },
  ]),
  single('zh-27', 'zh', SHANGHAI, '我去年在成都跑了人生第一个全程马拉松。', SH, [
    { type: 'EVENT', message: 0, date: '2025' },
  ]),
  single('zh-28', 'zh', SHANGHAI, '哈哈哈好的', SH, []),
  single('zh-29', 'zh', SHANGHAI, '我儿子叫乐乐，我女儿叫果果。', SH, [
    fact(0, R, relationKey('son', '乐乐'), { name: '乐乐' }),
    fact(0, R, relationKey('daughter', '果果'), { name: '果果' }),
  ]),
  single('zh-30', 'zh', SHANGHAI, '我的目标是今年考过雅思7分。', SH, [
    fact(0, G, GOAL_KEY, { goal: '雅思7分' }),
  ]),
  single('zh-31', 'zh', SHANGHAI, '我平时喜欢跑步和游泳。', SH, [
    fact(0, P, itemKey('跑步'), { item: '跑步', sentiment: 'like' }),
    fact(0, P, itemKey('游泳'), { item: '游泳', sentiment: 'like' }),
  ]),
  {
    id: 'zh-32',
    language: 'zh',
    split: 'dev',
    timeZone: SHANGHAI,
    messages: [
      user('我的手机号是13812345678。', SH),
      assistant('好的，已经看到了。', '2026-01-28T10:00:10+08:00'),
      user('不要记住我刚才说的电话号码。', '2026-01-28T10:00:30+08:00'),
    ],
    expected: [],
  },
  single('zh-33', 'zh', SHANGHAI, '我后天早上八点的飞机去广州。', SH, [
    { type: 'FORESIGHT', message: 0, date: '2026-01-30' },
  ]),
  single('zh-34', 'zh', SHANGHAI, '我觉得他可能不喜欢我。', SH, []),
  single('zh-35', 'zh', SHANGHAI, '我在字节跳动上班，做产品经理。', SH, [
    fact(0, PR, 'employer', { employer: '字节跳动' }),
    fact(0, PR, 'occupation', { occupation: '产品经理' }),
  ]),
  single('zh-36', 'zh', SHANGHAI, '以后叫我小林就行。', SH, [
    fact(0, PR, 'preferred_name', { name: '小林' }),
  ]),
  single('zh-37', 'zh', SHANGHAI, '我不喝咖啡，一喝就睡不着。', SH, [
    fact(0, P, itemKey('咖啡'), { item: '咖啡', sentiment: 'avoid' }),
  ]),
  single('zh-38', 'zh', SHANGHAI, '三天前我在地铁上丢了钱包。', SH, [
    { type: 'EVENT', message: 0, date: '2026-01-25' },
  ]),
  single('zh-39', 'zh', SHANGHAI, '今天天气真好啊。', SH, []),
  single('zh-40', 'zh', SHANGHAI, '我接下来三个月要减掉十斤。', SH, [
    fact(0, G, GOAL_KEY, { goal: '减掉十斤' }),
  ]),
  single('zh-41', 'zh', SHANGHAI, '我下周要搬家。', SH, [
    { type: 'FORESIGHT', message: 0, date: '2026-02-02' },
  ]),
  {
    id: 'zh-42',
    language: 'zh',
    split: 'dev',
    timeZone: SHANGHAI,
    messages: [
      user('最近工作压力好大，天天加班。', SH),
      assistant('听起来很辛苦，要注意休息。有什么具体让你压力大的事吗？', '2026-01-28T10:00:20+08:00'),
      user('主要是项目下周五就要上线了，我负责的模块还没测完。', '2026-01-28T10:01:30+08:00'),
    ],
    expected: [
      { type: 'FORESIGHT', message: 2, date: '2026-02-06' },
      { type: 'EPISODE', mentions: ['上线'] },
    ],
  },
  single('zh-43', 'zh', SHANGHAI, '我们家养了一只金毛，叫豆豆。', SH, [
    fact(0, R, relationKey('dog', '豆豆'), { name: '豆豆' }),
  ]),
  single('zh-44', 'zh', SHANGHAI, '我明天早上要去看医生。', '2026-03-31T18:00:00Z', [
    { type: 'FORESIGHT', message: 0, date: '2026-04-02' },
  ]),
  single('zh-45', 'zh', 'UTC', '我明天早上要去看医生。', '2026-03-31T18:00:00Z', [
    { type: 'FORESIGHT', message: 0, date: '2026-04-01' },
  ]),
  single('zh-46', 'zh', SHANGHAI, '我会说粤语和英语，母语是普通话。', SH, [
    fact(0, PR, languageKey('yue'), { language: 'yue', level: 'speaks' }),
    fact(0, PR, languageKey('en'), { language: 'en', level: 'speaks' }),
    fact(0, PR, languageKey('zh'), { language: 'zh', level: 'native' }),
  ]),
];

const ENGLISH_HOLDOUT: readonly LabelledCase[] = holdout([
  single('enh-01', 'en', NEW_YORK, 'From now on, keep it brief — no long intros please.', NY, [
    fact(0, P, 'answer_style', { style: 'concise' }),
  ]),
  single('enh-02', 'en', NEW_YORK, "My husband Tom is a chef, and I'm a pharmacist.", NY, [
    fact(0, R, relationKey('husband', 'Tom'), { name: 'Tom' }),
    fact(0, PR, 'occupation', { occupation: 'pharmacist' }),
  ]),
  single('enh-03', 'en', NEW_YORK, "I'm heading to my sister's wedding in Lisbon on June 14.", NY, [
    { type: 'FORESIGHT', message: 0, date: '2026-06-14' },
  ]),
  single('enh-04', 'en', NEW_YORK, 'Last weekend I went hiking with my dad.', NY, [
    { type: 'EVENT', message: 0, date: '2026-01-24' },
  ]),
  single('enh-05', 'en', NEW_YORK, 'I absolutely love Korean food.', NY, [
    fact(0, P, itemKey('Korean food'), { item: 'korean food', sentiment: 'like' }),
  ]),
  single('enh-06', 'en', NEW_YORK, 'What time is it in London right now?', NY, []),
  single('enh-07', 'en', NEW_YORK, 'My goal this month is to read four books.', NY, [
    fact(0, G, GOAL_KEY, { goal: 'read four books' }),
  ]),
  single(
    'enh-08',
    'en',
    NEW_YORK,
    "I'm not a morning person, so please don't suggest early workouts.",
    NY,
    [],
  ),
  single('enh-09', 'en', NEW_YORK, "We're having a team offsite on the 20th of February.", NY, [
    { type: 'FORESIGHT', message: 0, date: '2026-02-20' },
  ]),
  single('enh-10', 'en', NEW_YORK, 'Please forget what I said about my ex.', NY, []),
  single('enh-11', 'en', NEW_YORK, 'I grew up in a small town in Ohio.', NY, [
    fact(0, PR, 'hometown', { place: 'Ohio' }),
  ]),
  {
    id: 'enh-12',
    language: 'en',
    split: 'holdout',
    timeZone: NEW_YORK,
    messages: [
      user('I started a new job at Spotify two weeks ago.', NY),
      assistant('Congrats! How is it going so far?', '2026-01-28T10:00:15-05:00'),
      user('Pretty good, but the commute is long.', '2026-01-28T10:01:00-05:00'),
    ],
    expected: [
      { type: 'EVENT', message: 0, date: '2026-01-14' },
      fact(0, PR, 'employer', { employer: 'Spotify' }),
      { type: 'EPISODE', mentions: ['Spotify'] },
    ],
  },
]);

const CHINESE_HOLDOUT: readonly LabelledCase[] = holdout([
  single('zhh-01', 'zh', SHANGHAI, '以后回答尽量短一点，直接说重点。', SH, [
    fact(0, P, 'answer_style', { style: 'concise' }),
  ]),
  single('zhh-02', 'zh', SHANGHAI, '我男朋友叫阿杰，他是程序员。', SH, [
    fact(0, R, relationKey('boyfriend', '阿杰'), { name: '阿杰' }),
  ]),
  single('zhh-03', 'zh', SHANGHAI, '我五月三号要去参加同学的婚礼。', SH, [
    { type: 'FORESIGHT', message: 0, date: '2026-05-03' },
  ]),
  single('zhh-04', 'zh', SHANGHAI, '上周末我带爸妈去了趟杭州。', SH, [
    { type: 'EVENT', message: 0, date: '2026-01-24' },
  ]),
  single('zhh-05', 'zh', SHANGHAI, '我超级爱吃榴莲。', SH, [
    fact(0, P, itemKey('榴莲'), { item: '榴莲', sentiment: 'like' }),
  ]),
  single('zhh-06', 'zh', SHANGHAI, '北京今天多少度？', SH, []),
  single('zhh-07', 'zh', SHANGHAI, '这个月我的目标是每天背50个单词。', SH, [
    fact(0, G, GOAL_KEY, { goal: '每天背50个单词' }),
  ]),
  single('zhh-08', 'zh', SHANGHAI, '我跟你说个秘密，你别记下来：我其实不喜欢我现在的工作。', SH, []),
  single('zhh-09', 'zh', SHANGHAI, '我们公司下个月十号开年会。', SH, [
    { type: 'FORESIGHT', message: 0, date: '2026-02-10' },
  ]),
  single('zhh-10', 'zh', SHANGHAI, '我老家在东北，大学是在武汉读的。', SH, [
    fact(0, PR, 'hometown', { place: '东北' }),
  ]),
  single('zhh-11', 'zh', SHANGHAI, '我今年35了，在一家医院当护士。', SH, [
    fact(0, PR, 'age', { age: 35 }),
    fact(0, PR, 'occupation', { occupation: '护士' }),
  ]),
  {
    id: 'zhh-12',
    language: 'zh',
    split: 'holdout',
    timeZone: SHANGHAI,
    messages: [
      user('我两周前换了新工作，去了一家做AI的创业公司。', SH),
      assistant('恭喜！新工作感觉怎么样？', '2026-01-28T10:00:15+08:00'),
      user('还不错，就是通勤有点远。', '2026-01-28T10:01:00+08:00'),
    ],
    expected: [
      { type: 'EVENT', message: 0, date: '2026-01-14' },
      { type: 'EPISODE', mentions: ['新工作'] },
    ],
  },
]);

/** Every labelled case: English and Chinese, dev and holdout. */
export const LABELLED_SAMPLE: readonly LabelledCase[] = [
  ...ENGLISH,
  ...CHINESE,
  ...ENGLISH_HOLDOUT,
  ...CHINESE_HOLDOUT,
];
