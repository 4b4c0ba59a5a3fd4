/**
 * FACT extractor: what the user says about themself, from USER messages only (what the assistant
 * says is not a fact about the user). Explicit preferences (how to answer, what they like, dislike
 * or avoid), identity (name, age, occupation, employer, where they live and come from, diet,
 * allergies, languages), relationships ("my wife Anna", "我女儿叫朵朵") and goals with their
 * period ("my goal for the next 30 days is…", TTL hint = the period).
 *
 * A sentence is read clause by clause. Skipped: questions (a polite request such as "could you keep
 * answers short?" still sets an answer preference), hypotheticals ("if I were…", "要是…"), reported
 * speech ("my brother thinks I…", "我妈说…") and clauses whose subject is someone else ("my friend
 * likes sushi", "我朋友喜欢火锅"). Negation sets the polarity ("I don't like X" → dislike); hedges
 * ("I think", "maybe", "好像", "不太") lower the confidence. Namespaces and keys: `keys.ts`.
 */
import {
  findDuration,
  findTimeMentions,
  safeTimeZone,
  type Duration,
  type TimeReference,
} from '@engram/lexical';
import type { Candidate, ExtractionInput, JsonValue } from '../candidate.js';
import { GOAL_KEY, NAMESPACE, allergyKey, itemKey, languageKey, relationKey } from './keys.js';
import {
  EN_OCCUPATIONS,
  EN_RELATIONS,
  LANGUAGES,
  LANGUAGE_NAMES,
  NOT_NAMES,
  ZH_KNOWN_EMPLOYERS,
  ZH_OCCUPATIONS,
  ZH_ORG_SUFFIXES,
  ZH_PETS,
  ZH_PLACES,
  ZH_RELATIONS,
  ZH_RELATION_WORD,
} from './lexicon.js';
import { candidate, statementsOf, userMessages, type Clause, type Statement } from './statements.js';
import { isHedged, subjectOf, type Lang } from './text.js';

const DAY_MS = 86_400_000;
const EXTRACTOR = 'offline.fact';

/** A fact found by one rule, before the shared candidate fields are added. */
export interface FactDraft {
  readonly namespace: string;
  readonly key: string;
  readonly value: { readonly [field: string]: JsonValue };
  readonly text: string;
  readonly confidence: number;
  readonly rule: string;
  readonly ttlHintMs?: number;
  readonly ttlReason?: string;
  readonly validFrom?: number;
  readonly validUntil?: number;
}

/** The first capture group that took part in a match (alternations leave the others undefined). */
function firstGroup(match: RegExpExecArray | null): string | undefined {
  if (match === null) return undefined;
  for (let i = 1; i < match.length; i++) {
    const group = match[i];
    if (group !== undefined) return group;
  }
  return undefined;
}

/** Confidence of a statement: the rule's base, lowered when hedged. */
function calibrated(base: number, hedged: boolean): number {
  return hedged ? Math.min(base, Math.max(0.5, base - 0.25)) : base;
}

// ---------------------------------------------------------------------------------------------
// Answer preferences (sentence level: they are requests to the assistant)

type Style = 'concise' | 'detailed' | 'formal' | 'casual' | 'plain';
const STYLE_ZH: Readonly<Record<Style, string>> = {
  concise: '简洁',
  detailed: '详细',
  formal: '正式',
  casual: '轻松随意',
  plain: '通俗易懂',
};

const EN_PERSISTENT =
  /\b(?:from now on|going forward|moving forward|in (?:the )?future|from here on(?: out)?|always|every time|each time|next time|in general|generally|by default|for all (?:your |future )?(?:answers|replies|responses)|all your (?:answers|replies|responses))\b/u;
const ZH_PERSISTENT = /(?:以后|今后|从现在开始|从现在起|从今天起|往后|之后都|每次|一直|总是|始终|都要|默认)/u;

const EN_STYLE_TARGET =
  /\b(?:answers?|repl(?:y|ies)|respon(?:d|ses?)|explain|explanations?|write|writing|keep it|keep them|keep things|be|intros?|summar(?:y|ies)|talk|speak|messages?|texts?)\b/u;
const EN_STYLE_ADDRESS =
  /\b(?:you|your|please|from now on|going forward|i prefer|i like|i want|i would like|i would prefer|i hate|i dislike|i need|i love)\b/u;
const EN_STYLES: readonly (readonly [Style, RegExp])[] = [
  [
    'plain',
    /\b(?:plain (?:english|language|words)|simple (?:terms|language|words)|no jargon|without (?:the |any )?jargon|less jargon|avoid(?:ing)? (?:the )?jargon|layman'?s terms|like i am five|eli5|less technical)\b/u,
  ],
  [
    'detailed',
    /\b(?:more details?|more detailed|in (?:more )?detail|detailed|thorough(?:ly)?|in[- ]depth|elaborate|longer (?:answers|replies|responses|explanations)|step[- ]by[- ]step|with (?:more )?examples|more examples|expand on)\b/u,
  ],
  [
    'concise',
    /\b(?:concise(?:ly)?|brief(?:ly)?|short(?:er)?|succinct(?:ly)?|to the point|less verbose|fewer words|tl;?dr|terse|shorten|too long|super long|so long|very long|long[- ]winded|wordy|verbose|long (?:intros?|answers|replies|responses|explanations)|get to the point|cut to the chase|no fluff)\b/u,
  ],
  ['formal', /\b(?:more formal(?:ly)?|formal (?:tone|language|style)|be formal|professional tone)\b/u],
  ['casual', /\b(?:casual(?:ly)?|informal(?:ly)?|less formal|relaxed tone|friendly tone|like a friend)\b/u],
];
/** "don't be so brief": a negated positive cue flips concise and detailed. */
const EN_NEGATED_BEFORE = /\b(?:not|never|stop|less)\s+(?:\w+\s+){0,3}$/u;
const EN_POSITIVE_CUES = /^(?:concise|brief|short|succinct|detailed|thorough|elaborate)/u;

const ZH_STYLE_TARGET = /(?:回答|回复|答复|说|讲|解释|写|输出|你|内容|话)/u;
const ZH_STYLES: readonly (readonly [Style, RegExp])[] = [
  ['plain', /(?:通俗|大白话|(?:不要|别|少)用.{0,5}术语|术语少|简单易懂|浅显|说人话)/u],
  [
    'detailed',
    /(?:详细|具体一点|具体些|具体点|展开讲|展开说|多讲|多说点|全面一点|深入|举(?:几个|个|点|些)?例子|多举例)/u,
  ],
  [
    'concise',
    /(?:简洁|简短|简单点|简单一点|简单些|精简|短一点|短一些|短点|短些|尽量短|言简意赅|直接说重点|说重点|啰嗦|废话|不要太长|别太长|太长了|简明|少说)/u,
  ],
  ['formal', /(?:正式一点|正式些|正式点|书面一点|书面语)/u],
  ['casual', /(?:随意一点|口语化|轻松一点|活泼一点|像朋友一样)/u],
];

function answerStyle(statement: Statement): FactDraft | undefined {
  const { language, lower, cased } = statement;
  let style: Style | undefined;
  if (language === 'en') {
    const toAssistant = statement.request || statement.clauses.some((c) => c.subject === 'addressee');
    if (!EN_STYLE_TARGET.test(lower) && !toAssistant) return undefined;
    if (!toAssistant && !EN_STYLE_ADDRESS.test(lower)) return undefined;
    for (const [candidateStyle, pattern] of EN_STYLES) {
      const match = pattern.exec(lower);
      if (match === null) continue;
      style = candidateStyle;
      if (EN_POSITIVE_CUES.test(match[0]) && EN_NEGATED_BEFORE.test(lower.slice(0, match.index))) {
        style = candidateStyle === 'concise' ? 'detailed' : candidateStyle === 'detailed' ? 'concise' : style;
      }
      break;
    }
  } else {
    const toAssistant = statement.request || statement.clauses.some((c) => c.subject === 'addressee');
    if (!ZH_STYLE_TARGET.test(cased) && !toAssistant && !ZH_PERSISTENT.test(cased)) return undefined;
    // "你喜欢简单的东西吗" asks; "以后请简洁点" requests; a Chinese sentence about someone else is skipped.
    if (statement.clauses.every((c) => c.subject === 'other')) return undefined;
    for (const [candidateStyle, pattern] of ZH_STYLES) {
      if (pattern.test(cased)) {
        style = candidateStyle;
        break;
      }
    }
  }
  if (style === undefined) return undefined;
  const persistent = language === 'en' ? EN_PERSISTENT.test(lower) : ZH_PERSISTENT.test(cased);
  const general = language === 'en' && /\bi (?:hate|dislike|prefer|like|love)\b/u.test(lower);
  const base = persistent ? 0.95 : general ? 0.85 : 0.8;
  return {
    namespace: NAMESPACE.preference,
    key: 'answer_style',
    value: { style },
    text: language === 'en' ? `Prefers ${style} answers` : `偏好${STYLE_ZH[style]}的回答`,
    confidence: calibrated(base, statement.hedged),
    rule: `preference.answer_style${persistent ? '.persistent' : ''}`,
  };
}

const EN_LANGUAGE_NAMES = Object.keys(LANGUAGES)
  .filter((name) => /^[a-z]+$/u.test(name))
  .join('|');
const EN_ANSWER_LANGUAGE = new RegExp(
  `\\b(?:(?:reply|respond|answer|write|speak|talk|text)(?: to me| me)?(?: back)? (?:only )?in (${EN_LANGUAGE_NAMES})|in (${EN_LANGUAGE_NAMES}),? please|use (${EN_LANGUAGE_NAMES}))\\b`,
  'u',
);
const ZH_LANGUAGE_NAMES = Object.keys(LANGUAGES)
  .filter((name) => !/^[a-z]+$/u.test(name))
  .join('|');
const ZH_ANSWER_LANGUAGE = new RegExp(
  `用(${ZH_LANGUAGE_NAMES})(?:来|给我)?(?:回答|回复|说|写|交流|跟我说|和我说|聊|讲)|(?:回答|回复).{0,6}用(${ZH_LANGUAGE_NAMES})`,
  'u',
);

function answerLanguage(statement: Statement): FactDraft | undefined {
  const match =
    statement.language === 'en'
      ? EN_ANSWER_LANGUAGE.exec(statement.lower)
      : ZH_ANSWER_LANGUAGE.exec(statement.cased);
  if (match === null) return undefined;
  const name = firstGroup(match) ?? '';
  const code = LANGUAGES[name];
  if (code === undefined) return undefined;
  const persistent =
    statement.language === 'en' ? EN_PERSISTENT.test(statement.lower) : ZH_PERSISTENT.test(statement.cased);
  const names = LANGUAGE_NAMES[code] ?? [code, code];
  return {
    namespace: NAMESPACE.preference,
    key: 'answer_language',
    value: { language: code },
    text: statement.language === 'en' ? `Wants answers in ${names[0]}` : `希望用${names[1]}回答`,
    confidence: calibrated(persistent ? 0.95 : 0.8, statement.hedged),
    rule: 'preference.answer_language',
  };
}

// ---------------------------------------------------------------------------------------------
// Likes, dislikes, things avoided

type Sentiment = 'like' | 'dislike' | 'avoid';

const EN_ADVERBS =
  '(?:(?:really|absolutely|totally|truly|just|also|still|do|kind of|kinda|sort of|might|may|probably|definitely|actually|genuinely|honestly|personally|generally|usually|always|especially|so|secretly|even|super|seriously|now|quite|pretty much|very much|much)\\s+)*';
const EN_ITEM_VERBS: readonly (readonly [Sentiment, string])[] = [
  [
    'dislike',
    '(?:hate|dislike|detest|loathe|despise|cannot stand|can not stand|cannot bear|do not (?:really |much |particularly |even )?(?:like|enjoy|love|care for)|never liked|am not (?:really |a )?(?:huge |big |massive )?(?:fan of|into|keen on)|am not crazy about)',
  ],
  [
    'avoid',
    '(?:do not (?:eat|drink)|never (?:eat|drink)|cannot (?:eat|drink)|no longer (?:eat|drink)|stopped (?:eating|drinking)|avoid|stay away from)',
  ],
  [
    'like',
    '(?:like|love|enjoy|adore|prefer|dig|am into|am really into|am a (?:huge |big |massive )?fan of|am obsessed with|am crazy about|am a sucker for)',
  ],
];
const EN_ITEM_PATTERNS = EN_ITEM_VERBS.map(
  ([sentiment, verbs]) =>
    [sentiment, new RegExp(`^(?:i|we)\\s+${EN_ADVERBS}${verbs}(?:\\s+(.+))?$`, 'u')] as const,
);
const EN_HEDGE_PREFIX =
  /^(?:(?:i think|i guess|i suppose|i believe|i feel like|maybe|perhaps|honestly|probably|to be honest|i would say)\s*,?\s+)+/u;
const EN_ITEM_STOP =
  /^(?:you|it|this|that|them|him|her|these|those|it when|when|how|what|the way|the idea|to think|being|myself|yourself|everything|nothing|anything|something|one|people|him|us|(?:their|his|her|its|our|your)\s|my (?:wife|husband|job|life|family|kids)|(?:the )?(?:feeling|smell|sound|look|taste|idea|thought|fact|way|vibe|vibes|energy|atmosphere|experience|moment|time|times|part|rest|sight|view)s?)\b/u;
const EN_ITEM_CUT =
  /\s+(?:but|because|since|although|though|when|while|so|as|which|that|who|if|unless|except|and i|and we|for (?:breakfast|lunch|dinner))\b.*$/u;
const EN_ITEM_TRAIL =
  /\s+(?:at all|very much|so much|a lot|a ton|too|either|anymore|any more|honestly|though|in general|these days|nowadays|lately|really|much|more than anything|most of all|the most|best|anyway|actually|originally|myself|now|personally|not sure yet|i think|i guess)$/u;

/** "to cook" → "cooking", "to run" → "running". */
function gerund(verb: string): string {
  if (verb.endsWith('ie')) return `${verb.slice(0, -2)}ying`;
  if (verb.endsWith('e') && !verb.endsWith('ee')) return `${verb.slice(0, -1)}ing`;
  if (/^[^aeiou]*[aeiou][bdgmnprt]$/u.test(verb)) return `${verb}${verb.slice(-1)}ing`;
  return `${verb}ing`;
}

function cleanEnglishItem(raw: string, prefer: boolean): { items: string[]; over?: string } {
  // "the smell and taste it adds": a relative clause ends the item.
  let item = raw
    .replace(EN_ITEM_CUT, '')
    .replace(/\s+(?:it|he|she)\s+[a-z]{2,}(?:s|ed)\b.*$/u, '')
    .replace(/\s+itself$/u, '')
    .trim();
  let over: string | undefined;
  const preferred = prefer
    ? /^(.+?)\s+(?:over|to|more than|rather than|instead of)\s+(.+)$/u.exec(item)
    : null;
  if (preferred !== null) {
    item = preferred[1] ?? item;
    over = preferred[2];
  }
  for (let i = 0; i < 3; i++) item = item.replace(EN_ITEM_TRAIL, '').trim();
  item = item.replace(/^(?:to\s+)(\w+)/u, (_m, verb: string) => gerund(verb));
  item = item.replace(/^(?:the|a|an|some|any|all)\s+/u, '');
  if (item === '' || EN_ITEM_STOP.test(item)) return { items: [] };
  const parts = item
    .split(/\s*,\s*|\s+(?:and|or|nor)\s+/u)
    .map((p) => p.replace(/^(?:the|a|an|some|any)\s+/u, '').trim())
    .filter((p) => p !== '');
  if (parts.some((p) => p.split(' ').length > 4)) return { items: [] };
  return over === undefined ? { items: parts } : { items: parts, over };
}

const ZH_ADVERBS =
  '(?:平时|平常|一直|从小|从小就|本来|本来就|其实|真的|特别|非常|很|超级|超|挺|还挺|还是|比较|最|也|都|还|更|蛮|相当|巨|贼|就|向来|一向|天生|尤其|从来|根本|完全|已经)*';
const ZH_ITEM_VERBS: readonly (readonly [Sentiment, string, number])[] = [
  ['dislike', '(?:不太喜欢|不怎么喜欢|不大喜欢|不喜欢|不爱|讨厌|受不了|反感|烦|怕|最怕|厌恶|接受不了)', 0.9],
  ['avoid', '(?:不吃|不喝|不抽|从不吃|从不喝|戒了|忌口|不能吃|不能喝|吃不了|喝不了|不碰|不沾)', 0.9],
  ['like', '(?:喜欢|爱|热爱|偏爱|钟爱|迷上了|爱上了|超爱|最爱|偏好|更喜欢|比较喜欢)', 0.9],
];
const ZH_ITEM_PATTERNS = ZH_ITEM_VERBS.map(
  ([sentiment, verbs, base]) =>
    [
      sentiment,
      new RegExp(`^(?:我|我们)?${ZH_ADVERBS}${verbs}(?:吃|喝|看|听|玩|去|做|用|穿|逛)?(.*)$`, 'u'),
      base,
    ] as const,
);
const ZH_ITEM_STOP = /^(?:你|您|他|她|它|这个|那个|这样|那样|自己|我|我们|他们|这种|那种|一般)/u;

function cleanChineseItem(raw: string): string[] {
  // "最喜欢的是X" names X; "最喜欢的动画片不播了" uses 喜欢 as "favourite" and names nothing.
  if (/^的/u.test(raw) && !/^的(?:就)?是/u.test(raw)) return [];
  const item = raw
    .replace(/^的(?:就)?是/u, '')
    .replace(/^(?:和|跟|与).{1,6}?一起/u, '')
    .replace(/(?:了|的|啊|哈|呀|呢|吧|哦|嘛|啦|的东西|之类的|什么的|等等)+$/u, '')
    .replace(/^(?:去|吃|喝|看|听|玩)(?!得)/u, '')
    .replace(/^(?:一些|一个|一种|一点|这些|那些)/u, '')
    .trim();
  if (item === '' || ZH_ITEM_STOP.test(item) || /^(?:玩)?得/u.test(item)) return [];
  // "去公园和朋友们玩": 和 + people + a verb is company, not a second item.
  const alone = item.replace(/(?:和|跟|与)[^和跟与]{1,6}(?:一起)?(?:玩|聊天|聊|做|去|吃饭|逛街|出去)$/u, '');
  const parts = alone.split(/和|跟|与|还有|以及|、|或者|或/u).filter((p) => p !== '');
  if (parts.some((p) => Array.from(p).length > 10)) return [];
  return parts;
}

function itemFacts(clause: Clause, statement: Statement): FactDraft[] {
  // A hedge in another clause ("…, but I'm not sure they like it too") does not soften this one.
  const hedged = isHedged(clause.cased, statement.language);
  const facts: FactDraft[] = [];
  if (statement.language === 'en') {
    const text = clause.core.replace(EN_HEDGE_PREFIX, '');
    for (const [sentiment, pattern] of EN_ITEM_PATTERNS) {
      const match = pattern.exec(text);
      if (match === null) continue;
      let raw = match[1] ?? '';
      // "I don't drink" (no object) is about alcohol.
      if (raw === '' && sentiment === 'avoid' && /\bdrink/u.test(text)) raw = 'alcohol';
      const { items, over } = cleanEnglishItem(raw, /\bprefer\b/u.test(text));
      const softened = /\b(?:do not really|not really|kind of|kinda|sort of|might|may|probably)\b/u.test(
        text,
      );
      for (const item of items) {
        const value: Record<string, JsonValue> = { item, sentiment };
        if (over !== undefined) value['over'] = over;
        facts.push({
          namespace: NAMESPACE.preference,
          key: itemKey(item),
          value,
          text: `${sentiment === 'like' ? 'Likes' : sentiment === 'dislike' ? 'Dislikes' : 'Avoids'} ${item}`,
          confidence: calibrated(softened ? 0.8 : 0.9, hedged),
          rule: `preference.item.${sentiment}`,
        });
      }
      break;
    }
    return facts;
  }
  const interest =
    /^(?:我|我们)?(?:一直|从小|其实|真的)*对(.{1,10}?)(不太|不怎么|不是很|没什么|没有|没|不|很|特别|非常|挺|比较)?(感冒|感兴趣|有兴趣|兴趣)/u.exec(
      clause.coreCased,
    );
  if (interest?.[1] !== undefined) {
    const negated = /不|没/u.test(interest[2] ?? '');
    // "不感冒" is the idiom for "not into"; "感兴趣" without a negation is interest.
    const sentiment: Sentiment = negated ? 'dislike' : interest[3] === '感冒' ? 'like' : 'like';
    if (!(interest[3] === '感冒' && !negated)) {
      for (const item of cleanChineseItem(interest[1])) {
        facts.push({
          namespace: NAMESPACE.preference,
          key: itemKey(item),
          value: { item, sentiment },
          text: `对${item}${sentiment === 'like' ? '感兴趣' : '不感兴趣'}`,
          confidence: calibrated(/不太|不怎么|不是很/u.test(interest[2] ?? '') ? 0.8 : 0.85, hedged),
          rule: `preference.item.${sentiment}`,
        });
      }
      return facts;
    }
  }
  for (const [sentiment, pattern, base] of ZH_ITEM_PATTERNS) {
    const match = pattern.exec(clause.coreCased.replace(/^(?:我觉得|我感觉|其实|说实话|老实说)/u, ''));
    if (match === null) continue;
    const softened = /不太|不怎么|不大|比较/u.test(clause.cased);
    for (const item of cleanChineseItem(match[1] ?? '')) {
      facts.push({
        namespace: NAMESPACE.preference,
        key: itemKey(item),
        value: { item, sentiment },
        text: `${sentiment === 'like' ? '喜欢' : sentiment === 'dislike' ? '不喜欢' : '不吃/不碰'}${item}`,
        confidence: calibrated(softened ? base - 0.1 : base, hedged),
        rule: `preference.item.${sentiment}`,
      });
    }
    break;
  }
  return facts;
}

// ---------------------------------------------------------------------------------------------
// Profile

const NAME = "\\p{Lu}[\\p{L}'-]+";
const EN_NAME_STATEMENTS: readonly (readonly [key: 'name' | 'preferred_name', RegExp])[] = [
  ['name', new RegExp(`\\b[Mm]y (?:full |first )?name is (${NAME}(?: ${NAME}){0,2})`, 'u')],
  ['name', new RegExp(`^(?:I am|This is|It is) (${NAME}(?: ${NAME})?)$`, 'u')],
  ['preferred_name', new RegExp(`\\b(?:[Pp]lease |[Yy]ou can |[Jj]ust )?[Cc]all me (${NAME})`, 'u')],
  ['preferred_name', new RegExp(`\\b(?:[Ee]veryone|[Pp]eople|[Mm]y friends) calls? me (${NAME})`, 'u')],
];

function nameFacts(clause: Clause, statement: Statement): FactDraft[] {
  const facts: FactDraft[] = [];
  if (statement.language === 'en') {
    for (const [key, pattern] of EN_NAME_STATEMENTS) {
      const match = pattern.exec(clause.coreCased);
      const name = match?.[1];
      if (name === undefined || name.split(' ').some((w) => NOT_NAMES.has(w))) continue;
      facts.push(nameFact(key, name, 'en', statement.hedged));
      break;
    }
    return facts;
  }
  const preferred = /(?<!我)叫我([\p{Script=Han}A-Za-z]{1,4}?)(?:就行|就好|就可以|吧|好了|就成|$)/u.exec(
    clause.cased,
  );
  if (preferred?.[1] !== undefined) return [nameFact('preferred_name', preferred[1], 'zh', statement.hedged)];
  const name =
    /^(?:我|本人)(?:叫|的名字(?:是|叫)|名字(?:是|叫))([\p{Script=Han}]{2,4}|[A-Za-z]+(?: [A-Za-z]+)?)$/u.exec(
      clause.cased,
    );
  if (name?.[1] !== undefined) return [nameFact('name', name[1], 'zh', statement.hedged)];
  return facts;
}

function nameFact(key: 'name' | 'preferred_name', name: string, language: Lang, hedged: boolean): FactDraft {
  const text =
    key === 'name'
      ? language === 'en'
        ? `Name: ${name}`
        : `名字：${name}`
      : language === 'en'
        ? `Prefers to be called ${name}`
        : `希望被称呼为${name}`;
  return {
    namespace: NAMESPACE.profile,
    key,
    value: { name },
    text,
    confidence: calibrated(0.95, hedged),
    rule: `profile.${key}`,
  };
}

function ageFact(clause: Clause, statement: Statement): FactDraft | undefined {
  let age: number | undefined;
  if (statement.language === 'en') {
    const match =
      /^i am (\d{1,3})(?: years? old| yo| y\/o)?$/u.exec(clause.core) ??
      /\bi am (\d{1,3}) years? old\b/u.exec(clause.core) ??
      /\bi (?:just )?turned (\d{1,3})\b(?! (?:minutes|hours|days|weeks|months|%))/u.exec(clause.core);
    if (match?.[1] !== undefined) age = Number(match[1]);
  } else {
    const match =
      /^(?:我)?(?:今年|现在|已经|刚|刚刚|刚满|满|快)*(\d{1,3}|[一二两三四五六七八九十]{1,4})(?:周)?岁(?:了|啦)?$/u.exec(
        clause.cased,
      ) ??
      /^(?:我)?(?:今年|现在)(?:已经)?(\d{1,3}|[一二两三四五六七八九十]{1,4})(?:了|啦)$/u.exec(clause.cased);
    if (match?.[1] !== undefined) age = zhNumber(match[1]);
  }
  if (age === undefined || !Number.isFinite(age) || age < 3 || age > 120) return undefined;
  return {
    namespace: NAMESPACE.profile,
    key: 'age',
    value: { age },
    text: statement.language === 'en' ? `Age: ${age}` : `年龄：${age}岁`,
    confidence: calibrated(0.9, statement.hedged),
    rule: 'profile.age',
  };
}

const ZH_NUMERALS: Readonly<Record<string, number>> = {
  一: 1,
  二: 2,
  两: 2,
  三: 3,
  四: 4,
  五: 5,
  六: 6,
  七: 7,
  八: 8,
  九: 9,
};

function zhNumber(text: string): number {
  if (/^\d+$/u.test(text)) return Number(text);
  let total = 0;
  let current = 0;
  for (const ch of text) {
    if (ch === '十') {
      total += (current === 0 ? 1 : current) * 10;
      current = 0;
    } else current = ZH_NUMERALS[ch] ?? 0;
  }
  return total + current;
}

const EN_TRAILING_TIME =
  /\s+(?:yesterday|today|last (?:week|month|year|night)|this (?:week|month|year)|recently|just now|\d+ (?:days|weeks|months|years) ago)$/u;

function occupationFact(clause: Clause, statement: Statement): FactDraft | undefined {
  let occupation: string | undefined;
  let rule = 'profile.occupation';
  if (statement.language === 'en') {
    const text = clause.core;
    const workAs = /\bi (?:currently |now )?(?:work|am working) as (?:a |an )?(.+)$/u.exec(text);
    const promoted =
      /\bi (?:just )?(?:got promoted|was promoted|have been promoted) to (?:a |an )?(.+)$/u.exec(text);
    const became = /\bi (?:just )?became (?:a |an )(.+)$/u.exec(text);
    const jobIs = /\bmy (?:job|occupation|profession) is (?:being )?(?:a |an )?(.+)$/u.exec(text);
    const iAm = /^i am (?:a |an )(.+)$/u.exec(text.replace(EN_HEDGE_PREFIX, ''));
    const retired = /^i am (?:now )?retired\b/u.test(text);
    const raw = (workAs ?? promoted ?? became ?? jobIs ?? iAm)?.[1];
    if (retired) occupation = 'retired';
    else if (raw !== undefined) {
      const phrase = raw
        .replace(/\s+(?:at|for|in|with|and|who|since|because|but|from|on|by|so)\b.*$/u, '')
        .replace(EN_TRAILING_TIME, '')
        .replace(/\s+by (?:profession|trade)$/u, '')
        .trim();
      const words = phrase.split(' ');
      const head = (words[words.length - 1] ?? '').replace(/s$/u, '');
      const known = EN_OCCUPATIONS.has(head) || EN_OCCUPATIONS.has(words[words.length - 1] ?? '');
      if (words.length <= 4 && phrase !== '' && (known || workAs !== null || jobIs !== null))
        occupation = phrase;
      if (promoted !== null) rule = 'profile.occupation.promoted';
    }
  } else {
    const text = clause.coreCased;
    const iAm = /^(?:我)?是(?:一名|一个|一位|个|名)?(.{1,10}?)(?:啊|呀|哦)?$/u.exec(text);
    const job = /^(?:我)?(?:的工作|的职业|工作|职业)是(.{1,10})$/u.exec(text);
    const doing =
      /^(?:我)?(?:现在|目前)?(?:在.{1,12}?)?(?:做|当|干)(?:一名|一个|个)?(.{1,10}?)(?:工作|的|这一行)?$/u.exec(
        text,
      );
    const doer = /^(?:我)?是(?:做|干|搞)(.{1,10}?)的$/u.exec(text);
    const raw = (doer ?? job ?? iAm ?? doing)?.[1];
    if (raw !== undefined && ZH_OCCUPATIONS.some((word) => raw.endsWith(word))) occupation = raw;
    if (/^(?:我)?(?:已经)?退休了?$/u.test(text)) occupation = '退休';
  }
  if (occupation === undefined) return undefined;
  return {
    namespace: NAMESPACE.profile,
    key: 'occupation',
    value: { occupation },
    text: statement.language === 'en' ? `Works as ${occupation}` : `职业：${occupation}`,
    confidence: calibrated(rule === 'profile.occupation' ? 0.9 : 0.85, statement.hedged),
    rule,
  };
}

const EN_ORG = "(\\p{Lu}[\\p{L}\\d&.'-]*(?:\\s+(?:\\p{Lu}[\\p{L}\\d&.'-]*|of|&)){0,3})";
const EN_EMPLOYER = new RegExp(
  `\\b(?:I|we) (?:currently |now |still )?(?:work|am working|have worked|intern|am interning)\\s+(?:at|for)\\s+${EN_ORG}|\\b(?:job|position|role|internship|gig)\\s+(?:at|with)\\s+${EN_ORG}|\\bI (?:just )?joined\\s+${EN_ORG}|\\bI am an? [\\p{L} ]{2,30} (?:at|for)\\s+${EN_ORG}`,
  'u',
);

function employerFact(clause: Clause, statement: Statement): FactDraft | undefined {
  let employer: string | undefined;
  if (statement.language === 'en') {
    const match = EN_EMPLOYER.exec(clause.coreCased);
    employer = firstGroup(match);
    if (employer !== undefined && NOT_NAMES.has(employer.split(' ')[0] ?? '')) employer = undefined;
  } else {
    const match = /^(?:我)?(?:现在|目前|一直)?在(.{2,12}?)(?:上班|工作|实习|任职|打工)/u.exec(
      clause.coreCased,
    );
    const place = match?.[1];
    if (place !== undefined && (ZH_ORG_SUFFIXES.test(place) || ZH_KNOWN_EMPLOYERS.includes(place)))
      employer = place;
  }
  if (employer === undefined) return undefined;
  return {
    namespace: NAMESPACE.profile,
    key: 'employer',
    value: { employer },
    text: statement.language === 'en' ? `Works at ${employer}` : `工作单位：${employer}`,
    confidence: calibrated(0.85, statement.hedged),
    rule: 'profile.employer',
  };
}

const EN_PLACE = "(\\p{Lu}[\\p{L}.'-]*(?:\\s+(?:\\p{Lu}[\\p{L}.'-]*|de|del|la|upon|on)){0,3})";
const EN_LIVES = new RegExp(
  `^(?:I|We) (?:currently |now |still |actually )?(?:live|am living|are living|am based|are based|reside|am staying|are staying) (?:in|at|near|outside|outside of) (?:the )?${EN_PLACE}`,
  'u',
);
const EN_MOVED = new RegExp(
  `^(?:I|We) (?:just |recently |finally |have )*(?:moved|relocated|have moved|have relocated) (?:back )?(?:to|into) (?:the )?${EN_PLACE}`,
  'u',
);
const EN_FROM = new RegExp(
  `^(?:I am|I come|We are|We come) (?:originally |actually )?from (?:the )?${EN_PLACE}|^I (?:grew up|was born|was raised)(?: and raised)? (?:in|on)\\b[^\\p{Lu}]{0,40}${EN_PLACE}`,
  'u',
);

const ZH_PLACE_END = /(?:了|的|这边|那边|附近|一带|市区|郊区|啊|呀|哦)+$/u;

function placeFacts(clause: Clause, statement: Statement): FactDraft[] {
  const facts: FactDraft[] = [];
  const push = (key: 'location' | 'hometown', place: string, confidence: number, rule: string): void => {
    const text =
      statement.language === 'en'
        ? key === 'location'
          ? `Lives in ${place}`
          : `From ${place}`
        : key === 'location'
          ? `现居${place}`
          : `来自${place}`;
    facts.push({
      namespace: NAMESPACE.profile,
      key,
      value: { place },
      text,
      confidence: calibrated(confidence, statement.hedged),
      rule,
    });
  };
  if (statement.language === 'en') {
    const text = clause.coreCased.replace(/^(?:currently|actually)\s+/iu, '');
    if (/\bused to\b/u.test(clause.lower)) return facts;
    const lives = EN_LIVES.exec(text);
    if (lives?.[1] !== undefined && !NOT_NAMES.has(lives[1]))
      push('location', lives[1], 0.9, 'profile.location');
    const moved = EN_MOVED.exec(text);
    if (moved?.[1] !== undefined && !NOT_NAMES.has(moved[1]))
      push('location', moved[1], 0.85, 'profile.location.moved');
    const from = EN_FROM.exec(text);
    const origin = firstGroup(from);
    if (origin !== undefined && !NOT_NAMES.has(origin)) push('hometown', origin, 0.9, 'profile.hometown');
    return facts;
  }
  const text = clause.coreCased;
  if (/以前|之前|曾经|小时候/u.test(text)) return facts;
  const lives = /(?:住在|住|生活在|定居在|定居于|定居|常驻)(.{1,10})$/u.exec(text);
  if (lives?.[1] !== undefined && /^(?:我|我们)?(?:现在|目前|一直|都)?(?:住|生活|定居|常驻)/u.test(text)) {
    const place = lives[1].replace(ZH_PLACE_END, '').replace(/^在/u, '');
    if (place !== '') push('location', place, 0.9, 'profile.location');
  }
  const moved = /(?:搬到|搬去|搬来|迁到|调到)了?(.{1,10})$/u.exec(text);
  if (moved?.[1] !== undefined) {
    const place = moved[1].replace(ZH_PLACE_END, '').replace(/(?:住|生活|工作)$/u, '');
    if (place !== '' && !/^(?:这|那|哪)/u.test(place))
      push('location', place, 0.85, 'profile.location.moved');
  }
  const native = /^(?:我)?是(.{1,6}?)人$/u.exec(text);
  if (native?.[1] !== undefined && ZH_PLACES.some((p) => native[1]?.startsWith(p) === true)) {
    push('hometown', native[1], 0.9, 'profile.hometown');
  }
  const origin = /(?:来自|老家(?:是|在)|出生在|出生于|生在|在(.{1,8}?)长大)(.{0,10})$/u.exec(text);
  if (origin !== null && native === null) {
    const place = (origin[1] ?? origin[2] ?? '').replace(ZH_PLACE_END, '').replace(/(?:长大|出生)$/u, '');
    if (place !== '') push('hometown', place, 0.9, 'profile.hometown');
  }
  return facts;
}

function dietAndAllergyFacts(clause: Clause, statement: Statement): FactDraft[] {
  const facts: FactDraft[] = [];
  const hedged = statement.hedged;
  if (statement.language === 'en') {
    const diet =
      /^i am (?:a |an |strictly |fully |mostly )?(vegetarian|vegan|pescatarian|pescetarian|halal|kosher)\b/u.exec(
        clause.core,
      );
    if (diet?.[1] !== undefined) {
      facts.push({
        namespace: NAMESPACE.profile,
        key: 'diet',
        value: { diet: diet[1] },
        text: `Diet: ${diet[1]}`,
        confidence: calibrated(0.9, hedged),
        rule: 'profile.diet',
      });
    }
    const allergy =
      /^i am (?:severely |very |deathly |a bit |slightly |really )?allergic to (.+)$/u.exec(clause.core) ??
      /^i have (?:a |an )?(?:severe |bad |mild )?([\p{L} ]{2,20}) allergy\b/u.exec(clause.core);
    if (allergy?.[1] !== undefined) {
      const allergen = allergy[1]
        .replace(/\s+(?:and|but|so)\b.*$/u, '')
        .replace(/^(?:the )/u, '')
        .trim();
      if (allergen !== '' && allergen.split(' ').length <= 3) facts.push(allergyFact(allergen, 'en', hedged));
    }
    return facts;
  }
  if (/^(?:我)?(?:吃素|是素食(?:主义)?者|只吃素)/u.test(clause.coreCased)) {
    facts.push({
      namespace: NAMESPACE.profile,
      key: 'diet',
      value: { diet: 'vegetarian' },
      text: '饮食：素食',
      confidence: calibrated(0.9, hedged),
      rule: 'profile.diet',
    });
  }
  const allergy = /^(?:我)?对(.{1,10}?)(?:严重|有点|比较|很|特别|会)?过敏/u.exec(clause.coreCased);
  if (allergy?.[1] !== undefined) facts.push(allergyFact(allergy[1], 'zh', hedged));
  return facts;
}

function allergyFact(allergen: string, language: Lang, hedged: boolean): FactDraft {
  return {
    namespace: NAMESPACE.profile,
    key: allergyKey(allergen),
    value: { allergen },
    text: language === 'en' ? `Allergic to ${allergen}` : `对${allergen}过敏`,
    confidence: calibrated(0.9, hedged),
    rule: 'profile.allergy',
  };
}

const EN_LANGUAGE_LIST = `((?:${EN_LANGUAGE_NAMES})(?:(?:,\\s*|\\s+and\\s+|\\s+or\\s+)(?:${EN_LANGUAGE_NAMES}))*)`;
const ZH_LANGUAGE_LIST = `((?:${ZH_LANGUAGE_NAMES})(?:(?:和|跟|、|以及|还有)(?:${ZH_LANGUAGE_NAMES}))*)`;

function languageFacts(clause: Clause, statement: Statement): FactDraft[] {
  const found: { code: string; level: 'native' | 'speaks' | 'learning' }[] = [];
  const collect = (list: string | undefined, level: 'native' | 'speaks' | 'learning'): void => {
    if (list === undefined) return;
    const names =
      statement.language === 'en'
        ? list.split(/\s*,\s*|\s+and\s+|\s+or\s+/u)
        : list.split(/和|跟|、|以及|还有/u);
    for (const name of names) {
      const code = LANGUAGES[name.trim()];
      if (code !== undefined) found.push({ code, level });
    }
  };
  if (statement.language === 'en') {
    const text = clause.core;
    collect(
      new RegExp(`\\bmy (?:native|first|mother) (?:language|tongue) is ${EN_LANGUAGE_LIST}`, 'u').exec(
        text,
      )?.[1],
      'native',
    );
    collect(new RegExp(`^i am (?:a )?native ${EN_LANGUAGE_LIST} speaker`, 'u').exec(text)?.[1], 'native');
    collect(
      new RegExp(`^i (?:can )?(?:speak|am fluent in) ${EN_LANGUAGE_LIST}`, 'u').exec(text)?.[1],
      'speaks',
    );
    collect(
      new RegExp(
        `^i (?:have been |am |started |just started )(?:learning|studying) ${EN_LANGUAGE_LIST}`,
        'u',
      ).exec(text)?.[1],
      'learning',
    );
  } else {
    const text = clause.coreCased;
    collect(new RegExp(`(?:母语|第一语言)是${ZH_LANGUAGE_LIST}`, 'u').exec(text)?.[1], 'native');
    collect(
      new RegExp(`^(?:我)?(?:会说|会讲|能说|能讲|说得一口流利的|精通)${ZH_LANGUAGE_LIST}`, 'u').exec(
        text,
      )?.[1],
      'speaks',
    );
    collect(
      new RegExp(`^(?:我)?(?:最近|现在|正在|在)*(?:学|学习)${ZH_LANGUAGE_LIST}`, 'u').exec(text)?.[1],
      'learning',
    );
  }
  return found.map(({ code, level }) => {
    const names = LANGUAGE_NAMES[code] ?? [code, code];
    const levelText =
      statement.language === 'en'
        ? {
            native: `Native ${names[0]} speaker`,
            speaks: `Speaks ${names[0]}`,
            learning: `Learning ${names[0]}`,
          }[level]
        : { native: `母语是${names[1]}`, speaks: `会说${names[1]}`, learning: `在学${names[1]}` }[level];
    return {
      namespace: NAMESPACE.profile,
      key: languageKey(code),
      value: { language: code, level },
      text: levelText,
      confidence: calibrated(level === 'learning' ? 0.85 : 0.9, statement.hedged),
      rule: `profile.language.${level}`,
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Relationships (sentence level: "my wife Anna and I…", "我女儿叫朵朵")

const EN_RELATION_WORDS = Object.keys(EN_RELATIONS)
  .sort((a, b) => b.length - a.length)
  .join('|');
const EN_RELATION_MODIFIERS =
  '(?:(?:best|old|little|big|older|younger|baby|eldest|oldest|youngest|new|twin|step|lovely)\\s+)*';
const EN_RELATION_NAME = "(\\p{Lu}\\p{Ll}[\\p{L}'-]*(?:\\s+\\p{Lu}\\p{Ll}[\\p{L}'-]*)?)";
const EN_RELATION_PATTERNS: readonly RegExp[] = [
  new RegExp(
    `\\b[Mm]y\\s+${EN_RELATION_MODIFIERS}(${EN_RELATION_WORDS})(?:'s name is|\\s+is called|\\s+is named|\\s+named|\\s+called|,)?\\s+${EN_RELATION_NAME}`,
    'u',
  ),
  new RegExp(
    `\\b(?:I|We) (?:have|got|adopted|just adopted|just got|rescued) (?:a|an|two|three|one)\\s+${EN_RELATION_MODIFIERS}(?:[\\p{Ll}-]+\\s+)?(${EN_RELATION_WORDS})\\s+(?:named|called)\\s+${EN_RELATION_NAME}`,
    'u',
  ),
];
const EN_HAVE_RELATION = new RegExp(
  `\\b(?:I|We) have (?:a|an)\\s+${EN_RELATION_MODIFIERS}(${EN_RELATION_WORDS})\\b(?!\\s+(?:named|called|who|that))`,
  'u',
);

function relationFact(
  relation: string,
  name: string | undefined,
  language: Lang,
  confidence: number,
  rule: string,
): FactDraft {
  const value: Record<string, JsonValue> = { relation };
  if (name !== undefined) value['name'] = name;
  const word =
    language === 'en'
      ? relation.charAt(0).toUpperCase() + relation.slice(1)
      : (ZH_RELATION_WORD[relation] ?? relation);
  const text =
    name === undefined
      ? language === 'en'
        ? `Has a ${relation}`
        : `有${word}`
      : language === 'en'
        ? `${word}: ${name}`
        : `${word}：${name}`;
  return {
    namespace: NAMESPACE.relationship,
    key: relationKey(relation, name),
    value,
    text,
    confidence,
    rule,
  };
}

function relationshipFacts(statement: Statement): FactDraft[] {
  const facts: FactDraft[] = [];
  const confidence = calibrated(0.9, statement.hedged);
  if (statement.language === 'en') {
    for (const pattern of EN_RELATION_PATTERNS) {
      for (const match of statement.cased.matchAll(new RegExp(pattern.source, 'gu'))) {
        const relation = EN_RELATIONS[(match[1] ?? '').toLowerCase()];
        const name = match[2]
          ?.split(/\s+/u)
          .filter((w) => !NOT_NAMES.has(w))
          .join(' ');
        if (relation === undefined || name === undefined || name === '') continue;
        facts.push(relationFact(relation, name, 'en', confidence, 'relationship.named'));
      }
    }
    if (facts.length === 0) {
      const has = EN_HAVE_RELATION.exec(statement.cased);
      const relation = has?.[1] === undefined ? undefined : EN_RELATIONS[has[1].toLowerCase()];
      if (relation !== undefined)
        facts.push(
          relationFact(relation, undefined, 'en', calibrated(0.85, statement.hedged), 'relationship.has'),
        );
    }
    return facts;
  }
  const words = ZH_RELATIONS.map(([w]) => w).join('|');
  const named = new RegExp(
    `我(?:的|们的)?(${words})(?:的名字|名字)?(?:叫做|叫|名叫|是)([\\p{Script=Han}]{1,4}?|[A-Za-z]+)(?=$|[，,。.!！？?、\\s]|今年|现在|是|在|了|啊|呀|吧|呢|也|和|，)`,
    'gu',
  );
  for (const clause of statement.clauses) {
    for (const match of clause.cased.matchAll(named)) {
      const relation = ZH_RELATIONS.find(([w]) => w === match[1])?.[1];
      const name = match[2];
      if (relation === undefined || name === undefined || /^(?:一个|一名|个|我|他|她)/u.test(name)) continue;
      facts.push(relationFact(relation, name, 'zh', confidence, 'relationship.named'));
    }
  }
  const pets = ZH_PETS.map(([w]) => w).join('|');
  const pet = new RegExp(
    `(?:养了|养着|有|领养了|收养了|捡了)(?:一只|一条|只|条|一个|两只)?(?:[\\p{Script=Han}]{0,3}?)(${pets})[，,]?\\s*(?:它)?(?:叫|名叫|名字叫)([\\p{Script=Han}A-Za-z]{1,4})`,
    'u',
  ).exec(statement.cased);
  const housePet = new RegExp(
    `^(?:我|我们)(?:家|家的|的)(?:那只|的)?(${pets})(?:叫|名叫|名字叫)([\\p{Script=Han}A-Za-z]{1,4})`,
    'u',
  ).exec(statement.cased);
  const housePetRelation = ZH_PETS.find(([w]) => w === housePet?.[1])?.[1];
  if (housePetRelation !== undefined && housePet?.[2] !== undefined) {
    facts.push(relationFact(housePetRelation, housePet[2], 'zh', confidence, 'relationship.pet'));
  }
  if (pet !== null && /^(?:我|我们|我家|我们家)/u.test(statement.cased)) {
    const relation = ZH_PETS.find(([w]) => w === pet[1])?.[1];
    if (relation !== undefined && pet[2] !== undefined) {
      facts.push(relationFact(relation, pet[2], 'zh', confidence, 'relationship.pet'));
    }
  }
  if (facts.length === 0) {
    const has = new RegExp(
      `^(?:我)(?:有|有一个|有个|有一位)(?:一个|个|两个)?(${words})(?:$|[，,。])`,
      'u',
    ).exec(statement.cased);
    const relation = has?.[1] === undefined ? undefined : ZH_RELATIONS.find(([w]) => w === has[1])?.[1];
    if (relation !== undefined)
      facts.push(
        relationFact(relation, undefined, 'zh', calibrated(0.85, statement.hedged), 'relationship.has'),
      );
  }
  return facts;
}

// ---------------------------------------------------------------------------------------------
// Goals

const EN_GOAL =
  /\bmy (?:main |big |biggest |current |personal |new |only |next |ultimate |short[- ]term |long[- ]term )?(?:goal|aim|target|objective|resolution|new year's resolution|mission|challenge)\b(.*?)\b(?:is|will be)\s+(?:to\s+)?(.+)$/u;
const EN_WANT_WITH_PERIOD =
  /\bi (?:want|hope|aim|am aiming|am trying|would like|am determined|am hoping|really want)\s+to\s+(.+)$/u;
const EN_PREPARING = /\bi am (?:preparing|studying|training|prepping|cramming) for (?:the |my |an? )?(.+)$/u;
const ZH_GOAL = /(?:目标|小目标|心愿|愿望|flag)(?:是|就是|:|为)\s*(.+)$/u;
const ZH_WANT =
  /^(?:我)?(?:内|里|之内|以内)?\s*(?:我)?(?:要|想|打算|准备|争取|计划|得|必须|一定要|希望|努力|力争)(.+)$/u;
const ZH_PREPARING = /(?:正在|在)?(?:准备|备考|备战)(.{1,12}?)$/u;
const ZH_EXAM = /(?:考|试|赛|面试|答辩|雅思|托福|GRE|GMAT|证|马拉松)/u;

function cleanGoal(raw: string, duration: Duration | undefined, language: Lang): string {
  let goal = raw;
  if (duration !== undefined) goal = goal.replace(duration.text, ' ');
  goal =
    language === 'en'
      ? goal
          .replace(/\s+(?:so|because|since|but|and then|which)\b.*$/u, '')
          .replace(/\b(?:by the end of (?:the|this) (?:week|month|year)|this (?:week|month|year))\b/gu, '')
          .replace(/[.!?]+$/u, '')
      : goal
          .replace(/(?:今年|这个月|本月|这周|本周|之内|以内)/gu, '')
          .replace(/^(?:在|内|里|要|想|能)+/u, '')
          .replace(/[。！？!?,，]+$/u, '');
  return goal.replace(/\s+/gu, ' ').trim();
}

const EN_DEADLINE = /\b(?:by|before|until|till)\s+(?:the\s+)?(.{3,40})$/u;
const ZH_DEADLINE = /(?:在|到)?([^，,。]{2,10}?)(?:之前|以前|前)|到([^，,。]{2,8}?)(?:为止)?$/u;

/** A goal's deadline ("by June", "before the summer", "年底前", "到下个月") as a period. */
function deadlineOf(goal: string, language: Lang, reference: TimeReference): Duration | undefined {
  const match = language === 'en' ? EN_DEADLINE.exec(goal) : ZH_DEADLINE.exec(goal);
  if (match === null) return undefined;
  const when = match[1] ?? match[2] ?? '';
  const mention = findTimeMentions(when, language, reference, 'future').find(
    (m) => m.until > reference.occurredAt,
  );
  if (mention === undefined) return undefined;
  const days = Math.max(1, Math.round((mention.until - reference.occurredAt) / DAY_MS));
  return { text: match[0].trim(), days, until: mention.until };
}

/**
 * The goal a sentence states, if any (`goal/current_goal`). The foresight extractor uses it too:
 * a goal's period ("the next 30 days") is not an appointment.
 */
export function goalOf(statement: Statement, timeZone: string): FactDraft | undefined {
  if (statement.question || statement.hypothetical || statement.reported) return undefined;
  const reference = { occurredAt: statement.message.occurredAt, timeZone: safeTimeZone(timeZone) };
  const { language } = statement;
  let goal: string | undefined;
  let duration: Duration | undefined;
  let base = 0.88;
  let rule = 'goal.stated';
  if (language === 'en') {
    const text = statement.cased.replace(/[.!?]+$/u, '');
    const lower = text.toLowerCase();
    const stated = EN_GOAL.exec(lower);
    if (stated !== null) {
      duration = findDuration(`${stated[1] ?? ''} ${stated[2] ?? ''}`, 'en', reference);
      goal = cleanGoal(text.slice(lower.length - (stated[2] ?? '').length), duration, 'en');
    } else {
      const want = EN_WANT_WITH_PERIOD.exec(lower);
      duration = want === null ? undefined : findDuration(want[1] ?? '', 'en', reference);
      if (want !== null && duration !== undefined) {
        goal = cleanGoal(text.slice(lower.length - (want[1] ?? '').length), duration, 'en');
        base = 0.8;
        rule = 'goal.intent_with_period';
      } else {
        const preparing = EN_PREPARING.exec(lower);
        if (
          preparing?.[1] !== undefined &&
          /\b(?:exam|test|marathon|race|interview|competition|bar|sat|gre|gmat|ielts|toefl|certification)\b/u.test(
            preparing[1],
          )
        ) {
          goal = cleanGoal(`pass ${text.slice(lower.length - preparing[1].length)}`, undefined, 'en');
          base = 0.75;
          rule = 'goal.preparing';
        }
      }
    }
  } else {
    const text = statement.cased;
    const stated = ZH_GOAL.exec(text);
    const before = stated === null ? '' : text.slice(0, stated.index);
    if (
      stated?.[1] !== undefined &&
      subjectOf(before, 'zh') !== 'other' &&
      !/(?:他|她|他们|朋友|同事)的?$/u.test(before)
    ) {
      duration = findDuration(text, 'zh', reference);
      goal = cleanGoal(stated[1], duration, 'zh');
    } else {
      duration = findDuration(text, 'zh', reference);
      if (duration !== undefined && statement.clauses[0]?.subject !== 'other') {
        const rest = text.slice(text.indexOf(duration.text) + duration.text.length);
        const want = ZH_WANT.exec(rest) ?? ZH_WANT.exec(text.replace(duration.text, ''));
        if (want?.[1] !== undefined && !/^(?:去|到|来|回)/u.test(want[1])) {
          goal = cleanGoal(want[1], duration, 'zh');
          base = 0.8;
          rule = 'goal.intent_with_period';
        }
      }
      if (goal === undefined) {
        for (const clause of statement.clauses) {
          const preparing = ZH_PREPARING.exec(clause.cased);
          if (clause.subject === 'self' && preparing?.[1] !== undefined && ZH_EXAM.test(preparing[1])) {
            goal = cleanGoal(preparing[1], undefined, 'zh');
            duration = undefined;
            base = 0.75;
            rule = 'goal.preparing';
            break;
          }
        }
      }
    }
  }
  if (goal !== undefined && duration === undefined) {
    duration = deadlineOf(goal, language, reference);
    if (duration !== undefined) goal = cleanGoal(goal, duration, language);
  }
  if (goal === undefined || goal === '' || Array.from(goal).length > 120) return undefined;
  const value: Record<string, JsonValue> = { goal };
  const period = duration?.text.replace(/^(?:for|over|in|within|during)\s+(?:the\s+)?/iu, '');
  if (duration !== undefined && period !== undefined) {
    value['durationDays'] = duration.days;
    value['period'] = period;
  }
  const text =
    language === 'en'
      ? `Goal: ${goal}${period === undefined ? '' : ` (${period})`}`
      : `目标：${goal}${period === undefined ? '' : `（${period}）`}`;
  return {
    namespace: NAMESPACE.goal,
    key: GOAL_KEY,
    value,
    text,
    confidence: calibrated(
      duration === undefined ? base : Math.max(base, rule === 'goal.stated' ? 0.91 : base),
      statement.hedged,
    ),
    rule,
    ...(duration === undefined || period === undefined
      ? {}
      : {
          ttlHintMs: duration.days * DAY_MS,
          ttlReason: `the user said "${period}"`,
          validFrom: statement.message.occurredAt,
          validUntil: duration.until,
        }),
  };
}

// ---------------------------------------------------------------------------------------------
// The extractor

const CLAUSE_RULES: readonly ((
  clause: Clause,
  statement: Statement,
) => FactDraft | FactDraft[] | undefined)[] = [
  itemFacts,
  nameFacts,
  ageFact,
  occupationFact,
  employerFact,
  placeFacts,
  dietAndAllergyFacts,
  languageFacts,
];

/** Every fact draft of one statement. */
function factsOf(statement: Statement, timeZone: string): FactDraft[] {
  if (statement.hypothetical) return [];
  const drafts: FactDraft[] = [];
  const addressed = !statement.question || statement.request;
  if (addressed) {
    const style = answerStyle(statement);
    if (style !== undefined) drafts.push(style);
    const language = answerLanguage(statement);
    if (language !== undefined) drafts.push(language);
  }
  if (statement.question) return drafts;
  // Preferred names are requests ("以后叫我小林就行"), so they are read whatever the subject.
  for (const clause of statement.clauses) {
    if (clause.reported) continue;
    if (clause.subject !== 'self') {
      if (clause.subject === 'addressee')
        drafts.push(...nameFacts(clause, statement).filter((f) => f.key === 'preferred_name'));
      continue;
    }
    for (const rule of CLAUSE_RULES) {
      const found = rule(clause, statement);
      if (found === undefined) continue;
      drafts.push(...(Array.isArray(found) ? found : [found]));
    }
  }
  if (!statement.reported) drafts.push(...relationshipFacts(statement));
  const goal = goalOf(statement, timeZone);
  if (goal !== undefined) drafts.push(goal);
  return drafts;
}

/**
 * FACT candidates of a MemCell. One candidate per `namespace/key`: when a slot is stated twice, the
 * later statement wins (as the hard rules' supersede would decide).
 */
export function extractFacts(
  input: ExtractionInput,
  suppressed: ReadonlySet<string> = new Set(),
): Candidate[] {
  const bySlot = new Map<string, Candidate>();
  for (const message of userMessages(input, suppressed)) {
    for (const statement of statementsOf(message, input.languageCode)) {
      for (const draft of factsOf(statement, input.timeZone)) {
        const { rule, ...fields } = draft;
        bySlot.delete(`${draft.namespace}/${draft.key}`);
        bySlot.set(
          `${draft.namespace}/${draft.key}`,
          candidate(input, [message], statement.language, statement.sentence.text, {
            ...fields,
            type: 'FACT',
            sourceKind: 'EXPLICIT_USER_STATEMENT',
            occurredAt: message.occurredAt,
            rule,
            extractor: EXTRACTOR,
            ...(statement.hedged ? { extraMetadata: { hedged: 'true' } } : {}),
          }),
        );
      }
    }
  }
  return [...bySlot.values()];
}
