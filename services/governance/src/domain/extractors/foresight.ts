/**
 * FORESIGHT extractor: plans and appointments the user states ("I have a dentist appointment next
 * Tuesday at 3pm", "下周三我要去北京出差"), with `validFrom`/`validUntil` from the time expression
 * resolved against the message's own timestamp in the session's zone (`dates.ts`).
 *
 * A sentence qualifies when it is the user's statement (not a question — "remind me that…" is an
 * imperative, not a question — not hypothetical, not someone else's words), speaks in the first
 * person ("I", "we", "my exam", "我", or no subject in Chinese), is not a goal's period ("my goal for
 * the next 30 days" is a FACT), and names a time that starts after the message. "My son turns 8 on
 * Friday" counts: a family event is the user's to plan for; "He is flying on Friday" does not.
 */
import { describeMention, findTimeMentions, safeTimeZone, type TimeMention } from '@engram/lexical';
import type { Candidate, ExtractionInput } from '../candidate.js';
import { statesPast } from './event.js';
import { goalOf } from './fact.js';
import { candidate, statementsOf, userMessages, type Statement } from './statements.js';
import { withDate } from './text.js';

const EXTRACTOR = 'offline.foresight';

const EN_FIRST_PERSON = /\b(?:i|me|my|mine|we|us|our)\b/u;
const ZH_FIRST_PERSON = /我|咱/u;
/** A goal's or a habit's period, not a date: "the next 30 days", "every day", "两周内". */
const PERIOD_MENTION =
  /^(?:(?:for|in|within|over|during)\s+)?(?:the\s+)?(?:next|past|coming|last)\s+\d+|^\d+\s*(?:个)?(?:天|周|月|年)(?:内|之内|以内)$/iu;
const CURRENT_PERIOD = /\b(?:this|today|tonight)\b|今天|今晚|这周|本周|这个|本月|今年/iu;
const EN_TENTATIVE =
  /\b(?:thinking (?:of|about)|might|maybe|perhaps|possibly|considering|hope to|hoping to|not sure)\b/u;
const ZH_TENTATIVE = /(?:可能|也许|说不定|考虑|想着|不一定|还没定|看情况)/u;
/** "周末我们总是一起玩", "we always meet on Fridays": a habit, not a plan. */
const HABITUAL =
  /\b(?:always|usually|often|every (?:day|week|weekend|morning|night|time)|each (?:day|week))\b|总是|经常|老是|常常|通常|每天|每周|每次|天天/u;

function speaksForSelf(statement: Statement): boolean {
  if (statement.language === 'en') return EN_FIRST_PERSON.test(statement.lower);
  if (ZH_FIRST_PERSON.test(statement.cased)) return true;
  // Chinese drops the subject: "明天要去医院" is the speaker's plan unless it names someone else.
  return statement.clauses.every((c) => c.subject !== 'other');
}

/** The first time expression of a statement that lies ahead of the message, if any. */
export function futureMention(statement: Statement, timeZone: string): TimeMention | undefined {
  const reference = { occurredAt: statement.message.occurredAt, timeZone };
  const mentions = findTimeMentions(statement.sentence.text, statement.language, reference, 'future');
  const now = statement.message.occurredAt;
  const ahead = mentions.find((m) => m.from > now && !PERIOD_MENTION.test(m.text.trim()));
  if (ahead !== undefined) return ahead;
  // "my upcoming show this month", "这个月我要去上海": the current week, month or year, with an
  // explicit future cue, is a plan for the rest of that period.
  const cue =
    statement.language === 'en' ? EN_FUTURE_CUE.test(statement.lower) : ZH_FUTURE_CUE.test(statement.cased);
  const current = mentions.find(
    (m) =>
      cue &&
      COARSE.has(m.granularity) &&
      m.from <= now &&
      now < m.until &&
      !PERIOD_MENTION.test(m.text.trim()),
  );
  return current === undefined ? undefined : { ...current, from: now };
}

const COARSE: ReadonlySet<string> = new Set(['week', 'weekend', 'month', 'year']);
const EN_FUTURE_CUE =
  /\b(?:will|going to|gonna|upcoming|plan(?:ning)? to|planning|can't wait|cannot wait|looking forward|excited for|scheduled|booked)\b/u;
const ZH_FUTURE_CUE = /(?:要|打算|准备|计划|将|会去|安排|期待|等不及)/u;

function isTentative(statement: Statement): boolean {
  return statement.language === 'en'
    ? EN_TENTATIVE.test(statement.lower)
    : ZH_TENTATIVE.test(statement.cased);
}

function confidenceOf(mention: TimeMention, statement: Statement): number {
  const base =
    mention.granularity === 'minute' || mention.granularity === 'day'
      ? 0.85
      : mention.granularity === 'week' || mention.granularity === 'weekend'
        ? 0.8
        : 0.7;
  return statement.hedged || isTentative(statement) ? base - 0.2 : base;
}

/** FORESIGHT candidates of a MemCell: one per qualifying sentence, for its first future date. */
export function extractForesight(
  input: ExtractionInput,
  suppressed: ReadonlySet<string> = new Set(),
): Candidate[] {
  const timeZone = safeTimeZone(input.timeZone);
  const out: Candidate[] = [];
  for (const message of userMessages(input, suppressed)) {
    for (const statement of statementsOf(message, input.languageCode)) {
      const remindMe = /^(?:please\s+)?remind me\b|提醒我/u.test(statement.lower);
      if ((statement.question && !remindMe) || statement.hypothetical) continue;
      if (statement.reported && statement.clauses.every((c) => c.reported)) continue;
      if (!speaksForSelf(statement) || goalOf(statement, timeZone) !== undefined) continue;

      const mention = futureMention(statement, timeZone);
      // "On Friday I went…": a bare weekday in a past-tense sentence is behind, not ahead.
      // "…tried snowshoeing this weekend": a period that includes now, with a past tense, is behind.
      if (
        mention === undefined ||
        ((mention.ambiguous || CURRENT_PERIOD.test(mention.text)) && statesPast(statement))
      ) {
        continue;
      }
      // The habit must be in the clause with the date: "…on February 12, so I study every day" plans.
      const at = statement.sentence.start + mention.index;
      const clause =
        statement.clauses.find((c) => c.span.start <= at && at < c.span.end) ?? statement.clauses[0];
      if (clause !== undefined && HABITUAL.test(clause.lower)) continue;
      const date = describeMention(mention, timeZone);
      out.push(
        candidate(input, [message], statement.language, statement.sentence.text, {
          type: 'FORESIGHT',
          text: withDate(statement.sentence.text, date, statement.language),
          sourceKind: 'EXPLICIT_USER_STATEMENT',
          confidence: confidenceOf(mention, statement),
          occurredAt: message.occurredAt,
          validFrom: mention.from,
          validUntil: mention.until,
          rule: `foresight.${mention.granularity}`,
          extractor: EXTRACTOR,
          extraMetadata: { time_expression: mention.text, time_granularity: mention.granularity },
        }),
      );
    }
  }
  return out;
}
