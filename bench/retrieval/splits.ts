/**
 * The fixed tuning / report split of every benchmark set (issue 16): defaults are chosen on the
 * tuning part only, and both parts are reported. Fixed here, by the dataset's own ids, so that no
 * run can move a question from one part to the other.
 *
 * - LoCoMo (`locomo10`): conversations 0–4 in file order tune, 5–9 report.
 * - MADial-Bench (`madial-zh`, `madial-en`): dialogues with an even line number (`…-d<line>`) tune,
 *   odd report; every dialogue searches the same per-user memories.
 * - The recency set (`recency`): pairs alternate, the first of each language tuning.
 * - Any other set: the parity of a hash of the question id.
 */
import type { Dataset, Question } from './dataset.js';

export type Split = 'tune' | 'report';

function hashParity(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619) >>> 0;
  return h & 1;
}

/** The split of every question of `dataset`, by question id. */
export function splitsOf(dataset: Dataset): Map<string, Split> {
  const out = new Map<string, Split>();
  const conversationIndex = new Map(dataset.conversations.map((c, i) => [c.id, i]));
  const seenPerConversation = new Map<string, number>();
  for (const q of dataset.questions) {
    out.set(q.id, splitOfQuestion(dataset.name, q, conversationIndex, seenPerConversation));
  }
  return out;
}

function splitOfQuestion(
  name: string,
  q: Question,
  conversationIndex: ReadonlyMap<string, number>,
  seenPerConversation: Map<string, number>,
): Split {
  if (name.startsWith('locomo')) return (conversationIndex.get(q.conversation) ?? 0) < 5 ? 'tune' : 'report';
  if (name.startsWith('madial')) {
    const line = /-d(\d+)$/.exec(q.id);
    if (line !== null) return Number(line[1]) % 2 === 0 ? 'tune' : 'report';
  }
  if (name === 'recency') {
    const seen = seenPerConversation.get(q.conversation) ?? 0;
    seenPerConversation.set(q.conversation, seen + 1);
    return seen % 2 === 0 ? 'tune' : 'report';
  }
  return hashParity(q.id) === 0 ? 'tune' : 'report';
}
