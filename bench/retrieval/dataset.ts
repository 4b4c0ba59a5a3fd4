/**
 * The generic retrieval-benchmark dataset: conversations to ingest and questions whose evidence is a
 * set of turn ids. Documented in bench/retrieval/README.md; converters for LoCoMo and MADial-Bench
 * write it, the retrieval benchmark reads it with `loadDataset`.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

/** ISO-8601 date-time with an explicit offset or `Z`, e.g. `2023-05-08T13:56:00Z`. */
const isoDateTime = z.iso.datetime({ offset: true });
const id = z.string().min(1, 'must be a non-empty string');

export const turnSchema = z.strictObject({
  /** Unique within its conversation; what questions cite as evidence. */
  id,
  /** Who speaks: the conversation's user, or the other side (appended as ASSISTANT). */
  role: z.enum(['user', 'assistant']),
  /** Display name of the speaker (LoCoMo names), sent as the message's participant name. */
  speaker: z.string().min(1).optional(),
  /** The message content exactly as it is appended (may be empty only if never cited). */
  text: z.string(),
});

export const sessionSchema = z.strictObject({
  /** Unique within its conversation. */
  id,
  /** When the session started; turns are in chronological order from there. */
  started_at: isoDateTime,
  turns: z.array(turnSchema).min(1, 'a session needs at least one turn'),
});

export const conversationSchema = z.strictObject({
  /** Unique within the dataset. */
  id,
  /** The user who owns the conversation; every question about it is searched as this user. */
  user: id,
  /** BCP-47 language tag of the texts (`en`, `zh`), informational. */
  lang: z.string().min(2).optional(),
  sessions: z.array(sessionSchema).min(1, 'a conversation needs at least one session'),
});

export const questionSchema = z.strictObject({
  /** Unique within the dataset. */
  id,
  /** The id of the conversation the question is about (and whose user asks it). */
  conversation: id,
  /** The query text sent to search. */
  question: z.string().min(1),
  /** Ids of turns of that conversation that hold the answer; non-empty, all must exist. */
  evidence: z.array(id).min(1, 'a question needs at least one evidence turn'),
  /**
   * Turns holding a statement that the evidence replaced (the recency set): the evidence should
   * outrank them. Optional; every id must name a turn and none may be evidence too.
   */
  superseded: z.array(id).min(1).optional(),
  /** Free-form label for per-category aggregation (LoCoMo: `multi-hop`, `temporal`, …). */
  category: z.string().min(1).optional(),
  /** When the question is asked (reference time for recency decay); absent: the harness's now. */
  asked_at: isoDateTime.optional(),
});

export const datasetSchema = z.strictObject({
  /** Short name used in reports, e.g. `locomo10`, `madial-zh`. */
  name: id,
  conversations: z.array(conversationSchema).min(1),
  questions: z.array(questionSchema).min(1),
});

export type Turn = z.infer<typeof turnSchema>;
export type Session = z.infer<typeof sessionSchema>;
export type Conversation = z.infer<typeof conversationSchema>;
export type Question = z.infer<typeof questionSchema>;
export type Dataset = z.infer<typeof datasetSchema>;

/** `conversations[2].sessions[0].turns[5].role` from a zod issue path. */
function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    out += typeof key === 'number' ? `[${key}]` : `${out === '' ? '' : '.'}${String(key)}`;
  }
  return out === '' ? '(root)' : out;
}

export class DatasetError extends Error {
  constructor(
    readonly source: string,
    readonly problems: readonly string[],
  ) {
    const shown = problems.slice(0, 20).join('\n  ');
    const more = problems.length > 20 ? `\n  … and ${problems.length - 20} more` : '';
    super(`${source}: invalid retrieval dataset (${problems.length} problems)\n  ${shown}${more}`);
    this.name = 'DatasetError';
  }
}

/**
 * Checks what the schema cannot: unique ids, questions referring to an existing conversation,
 * evidence ids naming turns of that conversation, sessions in chronological order, asked_at not
 * before the first session. Returns one message per problem, each with its JSON path.
 */
export function crossCheck(dataset: Dataset): string[] {
  const problems: string[] = [];
  const turnsByConversation = new Map<string, Set<string>>();
  const firstStart = new Map<string, number>();
  for (const [c, conversation] of dataset.conversations.entries()) {
    const at = `conversations[${c}]`;
    if (turnsByConversation.has(conversation.id)) {
      problems.push(`${at}.id: duplicate conversation id ${JSON.stringify(conversation.id)}`);
      continue;
    }
    const turnIds = new Set<string>();
    const sessionIds = new Set<string>();
    let previous = -Infinity;
    for (const [s, session] of conversation.sessions.entries()) {
      if (sessionIds.has(session.id)) {
        problems.push(`${at}.sessions[${s}].id: duplicate session id ${JSON.stringify(session.id)}`);
      }
      sessionIds.add(session.id);
      const start = Date.parse(session.started_at);
      if (start < previous) {
        problems.push(
          `${at}.sessions[${s}].started_at: ${session.started_at} is before the previous session`,
        );
      }
      previous = Math.max(previous, start);
      for (const [t, turn] of session.turns.entries()) {
        if (turnIds.has(turn.id)) {
          problems.push(`${at}.sessions[${s}].turns[${t}].id: duplicate turn id ${JSON.stringify(turn.id)}`);
        }
        turnIds.add(turn.id);
      }
    }
    turnsByConversation.set(conversation.id, turnIds);
    firstStart.set(conversation.id, Date.parse(conversation.sessions[0]!.started_at));
  }
  const questionIds = new Set<string>();
  for (const [q, question] of dataset.questions.entries()) {
    const at = `questions[${q}]`;
    if (questionIds.has(question.id)) {
      problems.push(`${at}.id: duplicate question id ${JSON.stringify(question.id)}`);
    }
    questionIds.add(question.id);
    const turnIds = turnsByConversation.get(question.conversation);
    if (turnIds === undefined) {
      problems.push(`${at}.conversation: no conversation ${JSON.stringify(question.conversation)}`);
      continue;
    }
    for (const [e, evidence] of question.evidence.entries()) {
      if (!turnIds.has(evidence)) {
        problems.push(
          `${at}.evidence[${e}]: no turn ${JSON.stringify(evidence)} in conversation ${JSON.stringify(question.conversation)}`,
        );
      }
    }
    if (new Set(question.evidence).size !== question.evidence.length) {
      problems.push(`${at}.evidence: duplicate turn ids`);
    }
    for (const [e, replaced] of (question.superseded ?? []).entries()) {
      if (!turnIds.has(replaced)) {
        problems.push(
          `${at}.superseded[${e}]: no turn ${JSON.stringify(replaced)} in conversation ${JSON.stringify(question.conversation)}`,
        );
      } else if (question.evidence.includes(replaced)) {
        problems.push(`${at}.superseded[${e}]: ${JSON.stringify(replaced)} is also evidence`);
      }
    }
    if (
      question.asked_at !== undefined &&
      Date.parse(question.asked_at) < firstStart.get(question.conversation)!
    ) {
      problems.push(`${at}.asked_at: ${question.asked_at} is before the conversation's first session`);
    }
  }
  return problems;
}

/** Validates parsed JSON as a dataset; throws a DatasetError listing every problem with its path. */
export function parseDataset(value: unknown, source = 'dataset'): Dataset {
  const parsed = datasetSchema.safeParse(value);
  if (!parsed.success) {
    throw new DatasetError(
      source,
      parsed.error.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`),
    );
  }
  const problems = crossCheck(parsed.data);
  if (problems.length > 0) throw new DatasetError(source, problems);
  return parsed.data;
}

/** Reads and validates a dataset file (JSON). */
export function loadDataset(path: string): Dataset {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new DatasetError(path, [`not readable as JSON: ${(error as Error).message}`]);
  }
  return parseDataset(value, path);
}

/** Counts for printing: conversations, sessions, turns, questions overall and per category. */
export function datasetCounts(dataset: Dataset): {
  conversations: number;
  sessions: number;
  turns: number;
  questions: number;
  evidenceTurns: number;
  questionsPerCategory: Record<string, number>;
} {
  let sessions = 0;
  let turns = 0;
  for (const conversation of dataset.conversations) {
    sessions += conversation.sessions.length;
    for (const session of conversation.sessions) turns += session.turns.length;
  }
  const questionsPerCategory: Record<string, number> = {};
  let evidenceTurns = 0;
  for (const question of dataset.questions) {
    const category = question.category ?? '(none)';
    questionsPerCategory[category] = (questionsPerCategory[category] ?? 0) + 1;
    evidenceTurns += question.evidence.length;
  }
  return {
    conversations: dataset.conversations.length,
    sessions,
    turns,
    questions: dataset.questions.length,
    evidenceTurns,
    questionsPerCategory,
  };
}
