/**
 * The deterministic offline extractors (blueprint §8: the embedded default without a language
 * model). Each reads one MemCell and proposes candidates; the hard rules decide what is written.
 * Decision record: docs/decisions/0013-offline-extractors.md; measured precision and recall:
 * docs/benchmarks.md (`npm run bench:extractors`).
 */
import type { Candidate, ExtractionInput, ExtractorName } from '../candidate.js';
import { extractEpisode } from './episode.js';
import { extractEvents } from './event.js';
import { extractFacts } from './fact.js';
import { extractForesight } from './foresight.js';
import { suppressedMessageIds } from './forget.js';

export { extractEpisode } from './episode.js';
export { extractEvents } from './event.js';
export { extractFacts, goalOf } from './fact.js';
export { forgetRequests, suppressedMessageIds, type ForgetRequest } from './forget.js';
export { extractForesight } from './foresight.js';
export {
  findDuration,
  findTimeMentions,
  type Duration,
  type Granularity,
  type TimeMention,
} from '@engram/lexical';
export { GOAL_KEY, NAMESPACE, allergyKey, itemKey, languageKey, relationKey } from './keys.js';
export { detectLanguage, splitSentences, type Lang } from './text.js';

const EXTRACTORS: Readonly<
  Record<ExtractorName, (input: ExtractionInput, suppressed: ReadonlySet<string>) => Candidate[]>
> = {
  EPISODE: extractEpisode,
  EVENT: extractEvents,
  FORESIGHT: extractForesight,
  FACT: extractFacts,
};

/**
 * Runs the requested offline extractors on a MemCell. Extractors not requested get an empty list.
 * Messages covered by a "don't remember this" request (`forgetRequests`) yield no candidate of any
 * type; callers that want to act on the requests themselves call `forgetRequests(input)`.
 */
export function extractOffline(
  input: ExtractionInput,
  extractors: readonly ExtractorName[],
): Record<ExtractorName, Candidate[]> {
  const suppressed = suppressedMessageIds(input);
  const result: Record<ExtractorName, Candidate[]> = { EPISODE: [], EVENT: [], FORESIGHT: [], FACT: [] };
  for (const name of new Set(extractors)) result[name] = EXTRACTORS[name](input, suppressed);
  return result;
}
