/**
 * What the topic-shift judges (`topic-shift.ts`, offline; `model-boundary.ts`, a language model)
 * read and return. Both judge the open tail of a session after the rule-based boundaries
 * (`boundaries.ts`) and propose where a new topic starts inside it.
 */

/** The role of a message, as stored. */
export type JudgedRole = 'USER' | 'ASSISTANT' | 'SYSTEM' | 'TOOL';

/** What a judge reads of a message of the tail. */
export interface JudgedMessage {
  readonly sequence: number;
  readonly role: JudgedRole;
  readonly content: string;
}

/** A proposed boundary: the tail splits after the message with sequence `afterSequence`. */
export interface TopicSplit {
  readonly afterSequence: number;
  /** How strong the shift is, in the judge's own scale (the depth score; 1 for the model judge). */
  readonly score: number;
  /** Why, in at most {@link MAX_NOTE_LENGTH} characters (recorded with the MemCell). */
  readonly note: string;
}

/** A judge's answer: its splits, ascending by `afterSequence`. */
export interface TopicJudgement {
  readonly splits: TopicSplit[];
}

/** Longest {@link TopicSplit.note}. */
export const MAX_NOTE_LENGTH = 256;

/**
 * The positions (indexes into `messages`) where a split may fall: before every USER message but
 * the first message. A split never separates a user message from the replies that follow it, so
 * a segment always starts with a user turn (or is the tail's beginning).
 */
export function splitPositions(messages: readonly JudgedMessage[]): number[] {
  const positions: number[] = [];
  for (let i = 1; i < messages.length; i++) if (messages[i]?.role === 'USER') positions.push(i);
  return positions;
}

/** `note` cut to {@link MAX_NOTE_LENGTH} code points (an ellipsis marks a cut). */
export function clampNote(note: string): string {
  const points = Array.from(note);
  return points.length <= MAX_NOTE_LENGTH ? note : `${points.slice(0, MAX_NOTE_LENGTH - 1).join('')}…`;
}
