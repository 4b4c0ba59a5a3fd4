/**
 * Text handling shared by the offline extractors: a per-message language guess, sentence and
 * clause splitting over Chinese and Latin punctuation, and the cues that decide whether a clause is
 * the user's own statement (questions, hypotheticals, reported speech, hedges, the grammatical
 * subject). Offsets are UTF-16 indexes into the original text, so excerpts quote it exactly.
 */

import type { Lang, Span } from '@engram/lexical';

export { detectLanguage, splitSentences, type Lang, type Span } from '@engram/lexical';

/**
 * Clauses of a sentence: split at commas, colons, enumeration commas and dashes, and before
 * "but"/"and I"/"so I"-style conjunctions and 但是/不过/可是/而且/所以. Clauses keep offsets into the
 * sentence's source text (`offset` is the sentence's start).
 */
export function splitClauses(sentence: Span): Span[] {
  const text = sentence.text;
  const cuts: number[] = [0];
  const separators =
    /[,，:：、;；]|\s[—–-]\s|—|\s+(?=(?:but|and|so|because|while|though|although|whereas)\s+(?:i|i'm|i've|i'd|i'll|we|we're|my|now|then|also|he|she|they|it)\b)|\s+(?=but\b)|(?=但是|不过|可是|而且|所以|因为)/giu;
  for (const match of text.matchAll(separators)) {
    const at = match.index;
    cuts.push(at, at + match[0].length);
  }
  cuts.push(text.length);
  const clauses: Span[] = [];
  for (let i = 0; i + 1 < cuts.length; i += 2) {
    const from = cuts[i] ?? 0;
    const to = cuts[i + 1] ?? text.length;
    const raw = text.slice(from, to);
    const trimmed = raw.trim().replace(/[.!?。！？…]+$/u, '');
    if (trimmed === '') continue;
    const lead = raw.length - raw.trimStart().length;
    const start = sentence.start + from + lead;
    clauses.push({ text: trimmed, start, end: start + trimmed.length });
  }
  return clauses;
}

/** NFKC, straight apostrophes, collapsed spaces: what the patterns run on. */
export function normalize(text: string): string {
  return text
    .normalize('NFKC')
    .replace(/[‘’`´]/gu, "'")
    .replace(/[“”]/gu, '"')
    .replace(/\s+/gu, ' ')
    .trim();
}

const EN_QUESTION_START =
  /^(?:(?:hey|hi|hello|so|ok|okay|and|but|also|oh|well|btw|um|uh)[,!]?\s+)*(?:(?:what|where|when|why|who|whom|whose|which|how)(?:'s|'re|'d|\s+(?:is|are|was|were|do|does|did|can|could|would|will|should|much|many|long|often|about|come))|(?:do|does|did|is|are|was|were|can|could|would|will|should|shall|may|have|has|had|am)\s+(?:you|i|we|they|he|she|it|there|this|that|my|your)\b)/iu;
const ZH_QUESTION_WORDS =
  /(?:什么|为什么|怎么|怎样|哪|谁|多少|几点|几号|是不是|有没有|能不能|可不可以|要不要|会不会|吗|么|呢)[\s。.!！~～]*$/u;
const ZH_QUESTION_ANYWHERE = /(?:什么|为什么|怎么样|哪里|哪儿|哪个|多少|几点)/u;

/** A question asks; it does not state. Requests ("could you answer shorter?") are questions too. */
export function isQuestion(sentence: string, language: Lang): boolean {
  const text = normalize(sentence);
  if (/[?？]\s*["'”’)）]*\s*$/u.test(sentence)) return true;
  if (language === 'en') return EN_QUESTION_START.test(text);
  return ZH_QUESTION_WORDS.test(text) || (ZH_QUESTION_ANYWHERE.test(text) && !/^我/u.test(text));
}

/** "Can/could/would you … (please)" and "能不能/可以…吗": a polite request, not a real question. */
export function isPoliteRequest(sentence: string, language: Lang): boolean {
  const text = normalize(sentence);
  if (language === 'en')
    return /^(?:(?:please|so|ok|okay|and|also),?\s+)?(?:can|could|would|will)\s+you\b|^(?:maybe|perhaps)\s+you\s+(?:could|can|should)\b/iu.test(
      text,
    );
  return (
    /(?:能不能|能否|可不可以|可以|能|麻烦|请).{0,20}(?:吗|么|吧)?[?？]?$/u.test(text) &&
    /你|您|请|麻烦|^(?:回答|回复|以后|今后)/u.test(text)
  );
}

const EN_HEDGES =
  /\b(?:i think|i guess|i suppose|i believe|i feel like|maybe|perhaps|probably|possibly|might|not sure|not really sure|kind of|kinda|sort of|i'm not sure|it seems|seems like|i'd say)\b/iu;
const ZH_HEDGES = /(?:我觉得|我感觉|我猜|好像|可能|也许|大概|或许|似乎|应该是|不太确定|不确定|说不定)/u;

/** "I think", "maybe", "好像", "可能": the speaker is not sure, so confidence drops. */
export function isHedged(text: string, language: Lang): boolean {
  return language === 'en' ? EN_HEDGES.test(normalize(text)) : ZH_HEDGES.test(text);
}

const EN_HYPOTHETICAL =
  /\b(?:if|unless|suppose|imagine)\b.*\b(?:were|would|'d|could|will|'ll)\b|\bi wish\b|\bi would\s+(?!like\b|love\b|prefer\b)\w+|\bi'd\s+(?!like\b|love\b|prefer\b|rather\b)\w+|\bif only\b/iu;
const ZH_HYPOTHETICAL = /(?:如果|(?<![主还就总只可不硬真])要是|假如|假设|万一|倘若|假使)/u;

/** "If I were rich I'd…", "要是…的话": not a statement of fact. */
export function isHypothetical(text: string, language: Lang): boolean {
  return language === 'en' ? EN_HYPOTHETICAL.test(normalize(text)) : ZH_HYPOTHETICAL.test(text);
}

/** People a speaker refers to with "my …" / "我…": their statements are not the user's. */
export const EN_PERSON_NOUNS =
  'wife|husband|spouse|partner|boyfriend|girlfriend|fianc[eé]e?|mom|mum|mother|dad|father|parents?|son|daughter|kids?|children|child|baby|brother|sister|siblings?|grandma|grandmother|grandpa|grandfather|aunt|uncle|cousin|nephew|niece|friends?|best friend|buddy|colleague|coworker|co-worker|boss|manager|teacher|doctor|therapist|roommate|flatmate|neighbou?r|classmate|ex|family|in-laws|dog|cat|puppy|kitten|pet|team|mentor|landlord|students?|clients?|customers?|girlfriend|teammate';
export const ZH_PERSON_NOUNS =
  '老婆|妻子|太太|爱人|老公|丈夫|先生|媳妇|男朋友|女朋友|男友|女友|对象|未婚夫|未婚妻|妈妈|妈|母亲|老妈|爸爸|爸|父亲|老爸|爸妈|父母|儿子|女儿|孩子|小孩|宝宝|娃|哥哥|哥|弟弟|弟|姐姐|姐|妹妹|妹|奶奶|爷爷|外婆|姥姥|外公|姥爷|叔叔|阿姨|舅舅|姑姑|表哥|表姐|表弟|表妹|堂哥|堂姐|朋友|闺蜜|兄弟|哥们|同事|老板|领导|上司|经理|老师|医生|室友|舍友|邻居|同学|前任|家人|家里人|狗|猫|狗狗|猫咪|宠物|团队|客户|学生|导师';

const EN_REPORTING = new RegExp(
  `(?:^|\\b)(?:[Hh]e|[Ss]he|[Tt]hey|[Ss]omeone|[Pp]eople|[Ee]veryone|(?:[Mm]y|[Oo]ur|[Hh]is|[Hh]er|[Tt]heir)\\s+(?:${EN_PERSON_NOUNS})|\\p{Lu}\\p{Ll}+)(?:\\s+\\p{Lu}\\p{Ll}+)?\\s+(?:said|says|say|thinks|think|thought|told me|tells me|believes|believe|feels|claims|claimed|mentioned|reckons|insists|wants me|wanted me|keeps saying)\\b`,
  'u',
);
const ZH_REPORTING = new RegExp(
  `(?:他|她|他们|她们|人家|别人|大家|我(?:的)?(?:${ZH_PERSON_NOUNS}))(?:也|总|老|一直|还)?(?:说|觉得|认为|以为|告诉我|跟我说|让我|要我|希望我|劝我)`,
  'u',
);

/** "My brother thinks I…", "Sarah said…", "我妈说我…": someone else's words. */
export function isReportedSpeech(text: string, language: Lang): boolean {
  return language === 'en' ? EN_REPORTING.test(normalize(text)) : ZH_REPORTING.test(text);
}

/** Whose statement a clause is. */
export type Subject = 'self' | 'other' | 'addressee' | 'none';

const EN_LEADING =
  /^(?:(?:hi|hey|hello|oh|ah|well|so|also|and|but|btw|by the way|anyway|honestly|actually|basically|yeah|yes|no|ok|okay|thanks|thank you|lol|haha|um|uh|just|now|then|plus|still|finally|recently|lately|today|tonight|tomorrow|yesterday|this (?:morning|afternoon|evening|week|weekend|month|year)|last (?:night|week|weekend|month|year|\w+day)|next (?:week|weekend|month|year|\w+day)|on \w+day|in \w+|not sure if this matters|for what it's worth|to be honest|fun fact|guess what)[,!]?\s+)+/iu;
const EN_SELF =
  /^(?:i|i'm|i've|i'll|i'd|im|ive|we|we're|we've|we'll|we'd|me and|myself|my (?!(?:own )?(?:$PERSON)\b)\w+|our (?!(?:$PERSON)\b)\w+)\b/iu;
const EN_SELF_PATTERN = new RegExp(EN_SELF.source.replaceAll('$PERSON', EN_PERSON_NOUNS), 'iu');
const EN_COMPOUND_SELF = new RegExp(
  `^(?:my|our)\\s+(?:${EN_PERSON_NOUNS})(?:\\s+\\p{Lu}\\p{Ll}+)?\\s+and\\s+i\\b`,
  'iu',
);
const EN_ADDRESSEE =
  /^(?:please|pls|plz|kindly|remind|keep|answer|reply|respond|call|use|give|write|be|stop|don't|do not|never|always|make|try|tell|explain|speak|talk|avoid|can you|could you|would you|will you|you)\b/iu;
const EN_OTHER =
  /^(?:he|she|they|it|this|that|there|these|those|his|her|their|someone|everyone|people|\p{Lu}\p{Ll}+)\b/u;

const ZH_LEADING =
  /^(?:(?:嗯|恩|哦|噢|啊|哈+|呃|对了|另外|其实|然后|所以|但是|不过|可是|而且|主要是|说实话|老实说|顺便说一下|顺便|对|好|好的|是的|最近|平时|现在|以后|今后|从现在开始|从现在起|今天|明天|后天|大后天|昨天|前天|今晚|昨晚|明早|刚才|刚刚|之前|以前|上午|下午|晚上|早上|中午|今年|去年|明年|前年|这个月|上个月|下个月|本月|这周|本周|上周|下周|这个周末|上周末|下周末|周末|[上下这本]?[个]?(?:周|星期|礼拜)[一二三四五六日天]|\d{1,2}月\d{1,2}[日号]|[一二三四五六七八九十\d]+(?:天|周|个月|年)(?:前|后|以后|之后|以前|之前)|在\S{1,6}的时候)[，,、\s]*)+/u;
const ZH_SELF_RELATION = new RegExp(`^(?:我|我们)(?:的)?(?:${ZH_PERSON_NOUNS})`, 'u');

/**
 * The subject of a clause: `self` (I, we, my + a thing: "my exam"; 我, 我们), `other` (he, Sarah,
 * my brother, 我妈), `addressee` (an imperative or "you": a request to the assistant), `none` (no
 * explicit subject, common in Chinese).
 */
export function subjectOf(clause: string, language: Lang): Subject {
  if (language === 'en') {
    const text = stripLeading(normalize(clause), 'en');
    if (EN_COMPOUND_SELF.test(text)) return 'self';
    if (/^(?:my|our)\s/iu.test(text) && !EN_SELF_PATTERN.test(text)) return 'other';
    if (EN_SELF_PATTERN.test(text)) return 'self';
    if (EN_ADDRESSEE.test(text)) return 'addressee';
    if (EN_OTHER.test(text)) return 'other';
    return 'none';
  }
  const text = stripLeading(clause, 'zh');
  if (/^(?:我们家|我家)/u.test(text)) return 'self';
  if (ZH_SELF_RELATION.test(text)) return 'other';
  if (/^(?:我|我们|咱们|咱|本人)/u.test(text)) return 'self';
  if (/^(?:你|您|请|麻烦|帮我|给我|别|不要|以后|回答|回复)/u.test(text)) return 'addressee';
  if (/^(?:他|她|它|他们|她们|人家|别人|大家|这|那|有人|有个|有一个|有些|有位)/u.test(text)) return 'other';
  return 'none';
}

/**
 * A clause without its leading discourse markers and time adverbials ("but now I live…" → "I
 * live…", "其实我…" → "我…"): what subject detection and the rules anchor on.
 */
export function stripLeading(clause: string, language: Lang): string {
  return language === 'en' ? clause.replace(EN_LEADING, '').trim() : clause.replace(ZH_LEADING, '').trim();
}

/** A sentence with its date in brackets, as a candidate's text reads in its language. */
export function withDate(sentence: string, date: string, language: Lang): string {
  return language === 'en' ? `${sentence} (${date})` : `${sentence}（${date}）`;
}

/** Code points, not UTF-16 units: a cut never splits a surrogate pair. */
export function truncate(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  return `${chars.slice(0, max - 1).join('')}…`;
}
