/**
 * EVENT extractor: salient things that happened to the user, from their own first-person
 * statements ("I went to a support group yesterday", "我上周搬到了上海"). `occurredAt` is the
 * start of the past time expression resolved against the message's timestamp ("yesterday", "two
 * weeks ago", "上个月", "去年"), else the message time.
 *
 * Not every past-tense sentence is an event. A clause counts when its subject is the user, its
 * main verb is in the past (English: a past form or a present perfect, not negated, not "used to",
 * not a verb of saying or thinking; Chinese: a perfective 了/过 or a past time expression, not
 * negated with 不/没) and it is salient: it names a past time, or its verb is one of the
 * life-event verbs (moved, adopted, graduated, 搬, 辞职, 毕业…). Questions, hypotheticals,
 * reported speech, durations ("我们结婚五年了") and small talk are skipped.
 */
import {
  addDays,
  describeMention,
  findTimeMentions,
  fromLocal,
  localDateString,
  safeTimeZone,
  toLocal,
  type TimeMention,
} from '@engram/lexical';
import type { Candidate, ExtractionInput } from '../candidate.js';
import { goalOf } from './fact.js';
import { candidate, statementsOf, userMessages, type Clause, type Statement } from './statements.js';
import { isHedged, withDate } from './text.js';

const EXTRACTOR = 'offline.event';

const EN_IRREGULAR_PAST = new Set(
  (
    'went had got made saw met took came bought brought moved ran won lost gave found began became wrote ate drank ' +
    'flew drove spent paid sold broke fell left kept built sent caught taught fought threw rode swam sang sat stood ' +
    'woke wore tore hid bit shook forgot held led lent split spun struck stuck swung hung dug fed fled grew knew ' +
    'read quit set put cut hit hurt shut let beat bet cast cost burst spread upset did was were'
  ).split(' '),
);
const EN_IRREGULAR_PARTICIPLE = new Set(
  (
    'gone been had got gotten made seen met taken come bought brought moved run won lost given found begun become ' +
    'written eaten drunk flown driven spent paid sold broken fallen left kept built sent caught taught fought thrown ' +
    'ridden swum sung sat stood woken worn torn hidden bitten shaken forgotten held led grown known read quit set put ' +
    'cut hit hurt done finished started adopted'
  ).split(' '),
);
/** Past verbs that report thoughts or talk, not events. */
const EN_NOT_EVENTS = new Set(
  (
    'thought said told asked felt wanted needed meant forgot remembered knew liked loved hated hoped guessed wondered ' +
    'supposed used tried realized realised noticed figured believed understood mentioned wished preferred enjoyed ' +
    'expected imagined assumed decided planned was were did could would should might'
  ).split(' '),
);
const EN_SALIENT = new Set(
  (
    'moved adopted started finished graduated married bought sold quit joined won lost broke ran visited traveled ' +
    'travelled went attended passed failed completed launched published retired signed flew drove hiked climbed ' +
    'met began opened closed left received earned became built created wrote celebrated hosted organized organised ' +
    'organised divorced proposed engaged delivered gave finished crashed injured sprained recovered survived ' +
    'volunteered enrolled applied interviewed presented performed competed scored submitted defended '
  )
    .trim()
    .split(/\s+/u),
);
/** "had"/"got" are events only with a life-event object: "got married", "had a baby". */
const EN_LIFE_EVENT =
  /\b(?:got (?:married|engaged|divorced|promoted|hired|fired|laid off|accepted|admitted|a (?:new )?job|into|my (?:license|licence|degree|diploma|visa)|a (?:dog|cat|puppy|kitten))|had (?:a baby|twins|surgery|an operation|an accident|a (?:car )?crash|my (?:first|last))|just (?:[a-z]+ed|bought|sold|won|lost|began|broke|ran|went|met|left|got (?:married|engaged|promoted|hired)))\b/u;
/** Habits are not events: "I always…", "we usually…". */
const EN_HABITUAL =
  /\b(?:always|usually|often|normally|generally|every (?:day|week|morning|night|time)|each (?:day|week))\b/u;
const EN_SUBJECT_VERB =
  /^(?:i|we|me and my \w+|my \w+ and i)\s+(?:(?:just|finally|also|recently|actually|already|really|officially|eventually|then|once|both|even|somehow|accidentally|literally)\s+)*(\w+)(?:\s+(\w+))?(?:\s+(\w+))?/u;
const EN_LEADING =
  /^(?:(?:so|well|oh|and|but|also|anyway|honestly|actually|btw|guess what|fun fact|yesterday|today|tonight|last (?:night|week|weekend|month|year|\w+day)|this (?:morning|afternoon|evening|week|weekend|month|year)|(?:a|one|two|three|four|five|six|\d+) (?:days?|weeks?|months?|years?) ago|earlier(?: today)?|recently|finally|on \w+day)[,]?\s+)+/u;

function isEnglishPast(verb: string): boolean {
  return (
    EN_IRREGULAR_PAST.has(verb) ||
    (/^[a-z]{3,}ed$/u.test(verb) && !['need', 'feed', 'bleed', 'speed', 'seed'].includes(verb))
  );
}

function isParticiple(word: string): boolean {
  return EN_IRREGULAR_PARTICIPLE.has(word) || /^[a-z]{3,}ed$/u.test(word);
}

/** Why an English clause is an event ('' when it is not). */
function englishEventCue(clause: Clause, hasPastTime: boolean): string {
  const text = clause.lower.replace(EN_LEADING, '');
  if (/\bused to\b|\bwould have\b|\bshould have\b|\bcould have\b|\bmight have\b/u.test(text)) return '';
  const match = EN_SUBJECT_VERB.exec(text);
  if (match === null) return '';
  const verb = match[1] ?? '';
  const next = match[2] ?? '';
  const third = match[3] ?? '';
  if (next === 'not' || verb === 'never') return '';
  if (EN_HABITUAL.test(text)) return '';
  if (verb === 'have' || verb === 'has') {
    // A present perfect is an event when it names a time or a life event ("I've just adopted…",
    // "I have been to Japan"), not a state ("I've had some tough times").
    const participle = next === 'just' ? third : next;
    // "I've been to Japan" is an event; "I've been working on this for months" is not.
    if (participle === 'been') return third === 'to' ? 'present_perfect' : '';
    if (!isParticiple(participle)) return '';
    const pastForm = participle === 'begun' ? 'began' : participle;
    if (hasPastTime || EN_SALIENT.has(pastForm) || next === 'just') return 'present_perfect';
    return '';
  }
  if (
    (verb === 'was' || verb === 'were') &&
    hasPastTime &&
    /^(?:at|in|on|with|born|married|promoted|hired|fired|diagnosed|accepted|admitted|invited|there)$/u.test(
      next,
    )
  ) {
    return 'past_be';
  }
  if (!isEnglishPast(verb) || EN_NOT_EVENTS.has(verb)) return '';
  if (hasPastTime) return 'past_with_time';
  if (EN_SALIENT.has(verb) || EN_LIFE_EVENT.test(text)) return 'salient_verb';
  return '';
}

const ZH_NEGATED = /^(?:我|我们)?(?:[^，,]{0,4}?)(?:没有|没|不|未|别)(?!小心|少|错|久|停|断|到)/u;
const ZH_PERFECTIVE = /[\p{Script=Han}](?:了|过)(?!解|来|去|分|于|程|度|年|日|节)/u;
const ZH_DURATION_STATE =
  /(?:结婚|在一起|工作|住|学|认识|养|做|干|当|用|练|坚持|毕业|退休|来|搬来|离开|分手)了?\s*(?:\d+|[一二两三四五六七八九十几半]+)\s*(?:个)?(?:多)?(?:年|月|天|周|星期|小时)(?:多)?了/u;
const ZH_SALIENT =
  /(?:搬|买了|卖了|换了|辞职|离职|入职|毕业|结婚|离婚|订婚|生了|怀孕|领养|去了|去过|参加|完成|通过|考上|考过|拿到|跑了|丢了|住院|手术|出院|分手|学会|开了|升职|加薪|被裁|裁员|旅游|旅行|出差|看了|见了|认识了|体检|面试|报名|签了|获得|得了|赢了|输了|摔|骨折|生病|感冒|发烧|确诊|去世|出生|搬家|退休|创业|发表|上线了|拿了|中了|迟到|加入了|回了|回到)/u;
const ZH_SMALL_TALK =
  /^(?:我)?(?:知道了|明白了|懂了|收到了|好了|忘了|说了|试了|看了你|问了|想了想|觉得|记住了|听说|听人说|想起|记得)/u;
/** Habits are not events: "我晚上总是睡不好", "我每天都…". */
const ZH_HABITUAL = /(?:总是|经常|老是|常常|通常|每天|每次|每周|每晚|一般都|平时|天天)/u;

/** Why a Chinese clause is an event ('' when it is not). */
function chineseEventCue(clause: Clause, hasPastTime: boolean): string {
  const text = clause.coreCased.replace(/^(?:嗯|哦|对了|其实|然后|所以|不过|但是|而且|主要是)[，,]?/u, '');
  if (ZH_SMALL_TALK.test(text) || ZH_DURATION_STATE.test(text) || ZH_HABITUAL.test(text)) return '';
  if (ZH_NEGATED.test(text.replace(/^(?:[^我]{0,8}?)(?=我)/u, ''))) return '';
  const perfective = ZH_PERFECTIVE.test(text);
  const salient = ZH_SALIENT.test(text);
  if (hasPastTime && (perfective || salient)) return 'past_with_time';
  if (perfective && salient) return 'salient_verb';
  return '';
}

const EN_FUTURE =
  /\b(?:will|going to|gonna|plan(?:ning)? to|have to|need to|about to|tomorrow|next|upcoming)\b/u;
const ZH_FUTURE = /(?:要|会|打算|准备|将|得|想|计划|约了|订了|预约|定了|安排了|报了名|买了.{0,4}票)/u;

/**
 * Whether a statement speaks of the past: an English clause of the user's with a past or perfect
 * main verb (and no future marker), a Chinese one with a perfective 了/过 and no future modal or
 * arrangement verb ("约了朋友" arranges something ahead).
 */
export function statesPast(statement: Statement): boolean {
  if (statement.language === 'en') {
    if (EN_FUTURE.test(statement.lower)) return false;
    // Any subject's tense counts: "My grandmother passed away in December" is behind.
    const words = statement.lower
      .replace(
        /\b(?:am|is|are|be|been|being|get|gets|getting|feel|feels|seem|seems)\s+(?:so\s+|very\s+|really\s+)?[a-z]+ed\b/gu,
        '',
      )
      .split(/[^a-z']+/u);
    return words.some(
      (w, i) =>
        EN_IRREGULAR_PAST.has(w) ||
        /^[a-z]{3,}ed$/u.test(w) ||
        ((w === 'have' || w === 'has') &&
          isParticiple(words[i + 1] === 'just' ? (words[i + 2] ?? '') : (words[i + 1] ?? ''))),
    );
  }
  if (ZH_FUTURE.test(statement.cased)) return false;
  return (
    ZH_PERFECTIVE.test(statement.cased) || /(?:昨天|上周|去年|上个月|之前|以前|刚才)/u.test(statement.cased)
  );
}

/** The first time expression of a statement that lies before the message (not after it). */
function pastMention(statement: Statement, timeZone: string): TimeMention | undefined {
  const reference = { occurredAt: statement.message.occurredAt, timeZone };
  const local = toLocal(statement.message.occurredAt, timeZone);
  const tomorrow = fromLocal(addDays(local, 1), timeZone);
  return findTimeMentions(statement.sentence.text, statement.language, reference, 'past').find(
    (m) =>
      m.from < statement.message.occurredAt &&
      m.until <= tomorrow &&
      !/^(?:今年|this year|今天|today|现在|now|right now|目前|currently|at the moment)$/iu.test(
        m.text.trim(),
      ) &&
      // "今晚…" said before the evening is ahead.
      !(/今晚|今天晚上|tonight|this evening/iu.test(m.text) && local.hour < 18),
  );
}

/** EVENT candidates of a MemCell: one per qualifying sentence. */
export function extractEvents(
  input: ExtractionInput,
  suppressed: ReadonlySet<string> = new Set(),
): Candidate[] {
  const timeZone = safeTimeZone(input.timeZone);
  const out: Candidate[] = [];
  for (const message of userMessages(input, suppressed)) {
    for (const statement of statementsOf(message, input.languageCode)) {
      if (statement.question || statement.hypothetical) continue;
      // A goal's period ("我的目标是今年考过…") is not an event; "我上个月辞职了，现在在准备考研" has one.
      const goal = goalOf(statement, timeZone);
      if (goal !== undefined && goal.rule !== 'goal.preparing') continue;
      const mention = pastMention(statement, timeZone);
      // Without a past date the sentence's tense decides: "项目下周五就要上线了" is ahead, and so is
      // "周五晚上七点我约了朋友吃饭" (a bare weekday with an arrangement verb).
      if ((mention === undefined || mention.ambiguous) && !statesPast(statement)) continue;
      let cue = '';
      for (const clause of statement.clauses) {
        if (clause.reported || clause.subject !== 'self') continue;
        cue =
          statement.language === 'en'
            ? englishEventCue(clause, mention !== undefined)
            : chineseEventCue(clause, mention !== undefined);
        if (cue !== '') break;
      }
      if (cue === '') continue;
      const occurredAt = mention?.from ?? message.occurredAt;
      const date =
        mention === undefined
          ? localDateString(message.occurredAt, timeZone)
          : describeMention(mention, timeZone);
      const hedged = statement.hedged || isHedged(statement.cased, statement.language);
      out.push(
        candidate(input, [message], statement.language, statement.sentence.text, {
          type: 'EVENT',
          text: withDate(statement.sentence.text, date, statement.language),
          sourceKind: 'EXPLICIT_USER_STATEMENT',
          confidence: (mention === undefined ? 0.7 : 0.8) - (hedged ? 0.2 : 0),
          occurredAt,
          rule: `event.${cue}`,
          extractor: EXTRACTOR,
          extraMetadata:
            mention === undefined
              ? { time_granularity: 'message' }
              : { time_expression: mention.text, time_granularity: mention.granularity },
        }),
      );
    }
  }
  return out;
}
