/**
 * "Don't remember this" / "别记这个": requests not to keep something. The offline extractors
 * propose nothing from the messages a request covers, and `forgetRequests` reports each request so
 * the caller (the hard rules, the job record) can act on it — for instance to look for memories
 * written from earlier MemCells.
 *
 * Scope: a request that points back ("forget what I just said", "不要记住我刚才说的…", a message
 * that is nothing but the request) covers its own message and every earlier user message of the
 * MemCell — a MemCell is one topic, and forgetting too much is the safe error. Otherwise ("Don't
 * save this: my PIN is …", "这个别记哈，我最近…") it covers its own message only.
 *
 * Not requests: "I don't remember where I parked", "我不记得了", "I forgot my keys".
 */
import type { ExtractionInput } from '../candidate.js';
import { expandContractions } from './statements.js';
import { detectLanguage, normalize, splitSentences, truncate } from './text.js';

/** A request not to remember something. */
export interface ForgetRequest {
  /** The message that asks. */
  readonly messageId: string;
  /** `message`: only that message; `previous`: it and every earlier user message of the MemCell. */
  readonly scope: 'message' | 'previous';
  /** Every message the request covers (the offline extractors skip them). */
  readonly coveredMessageIds: readonly string[];
  /** The sentence that asks, at most 200 characters. */
  readonly excerpt: string;
}

const EN_REQUEST =
  /(?:^|[,;:]\s*|\b(?:please|so|and|but|oh|also|just|pls|kindly)\s+)(?:do not|never)\s+(?:ever\s+)?(?:remember|save|store|record|keep|log|memori[sz]e|note|write down|write)\b|\b(?:you|u)\s+(?:do not need to|do not have to|need not|should not|must not|shouldn't|mustn't)\s+(?:remember|save|store|record|keep|note)\b|\bno need to (?:remember|save|store|record|keep|note)\b|^(?:please\s+|pls\s+|and\s+|so\s+)?forget\b|\b(?:please|can you|could you|would you)\s+forget\b|\boff the record\b|\bnot for (?:the )?(?:record|memory)\b|\bkeep (?:this|that|it) (?:off the record|between us)\b/iu;
const EN_BACKWARD =
  /\bforget (?:it|that|everything|all)\b|\bwhat i (?:just |have )?(?:said|told you|wrote|mentioned|shared)\b|\b(?:that|the last|earlier|above|previous)\b(?! (?:is|was)\b)/iu;

const ZH_REQUEST =
  /(?:别|不要|不用|无需|不必|不需要|请勿|勿|千万别)(?:帮我|给我|把(?:它|这|这个|这些|那|那个)?)?(?:记住|记下来|记下|记录|记|保存|存下来|存|记得)|(?:^|[，,。:：])\s*(?:请|你|麻烦|帮我)?(?:把.{0,20})?(?:忘掉|忘记|忘了吧|删掉|删了吧)|(?:忘掉|忘记)(?:我)?(?:刚才|刚刚|之前|前面|上面)/u;
const ZH_BACKWARD = /(?:刚才|刚刚|之前|前面|上面|上一条|刚说的|说过的)/u;

function isRequest(sentence: string, language: 'en' | 'zh'): boolean {
  if (language === 'en') return EN_REQUEST.test(expandContractions(normalize(sentence)).toLowerCase());
  return ZH_REQUEST.test(normalize(sentence));
}

/** Every forget request in a MemCell's user messages, in message order. */
export function forgetRequests(input: ExtractionInput): ForgetRequest[] {
  const requests: ForgetRequest[] = [];
  const earlierUserIds: string[] = [];
  for (const message of input.messages) {
    if (message.role !== 'USER') continue;
    const language = detectLanguage(message.content, input.languageCode);
    const sentences = splitSentences(message.content);
    const asking = sentences.find((s) => isRequest(s.text, language));
    if (asking !== undefined) {
      const backward = language === 'en' ? EN_BACKWARD : ZH_BACKWARD;
      // A message that is only the request ("Don't remember that.") points back; one that goes on
      // ("这个别记哈，我最近…", "Don't save this: …") introduces what follows.
      const wholeMessage = sentences.length === 1 && !/[:：,，;；]/u.test(asking.text);
      const pointsBack = backward.test(normalize(asking.text).toLowerCase()) || wholeMessage;
      const scope = pointsBack && earlierUserIds.length > 0 ? 'previous' : 'message';
      requests.push({
        messageId: message.id,
        scope,
        coveredMessageIds: scope === 'previous' ? [...earlierUserIds, message.id] : [message.id],
        excerpt: truncate(asking.text, 200),
      });
    }
    earlierUserIds.push(message.id);
  }
  return requests;
}

/** The ids of every message some forget request covers. */
export function suppressedMessageIds(input: ExtractionInput): Set<string> {
  return new Set(forgetRequests(input).flatMap((r) => r.coveredMessageIds));
}
