/**
 * What the rule-based extractors read: each user message of a MemCell cut into sentences and
 * clauses, with the cues that decide whether a clause is the user's own statement, and the one way
 * every extractor builds a candidate (evidence, excerpt, language, provenance metadata).
 */
import type { Candidate, ExtractionInput, SourceMessage } from '../candidate.js';
import {
  detectLanguage,
  isHedged,
  isHypothetical,
  isPoliteRequest,
  isQuestion,
  isReportedSpeech,
  normalize,
  splitClauses,
  splitSentences,
  stripLeading,
  subjectOf,
  truncate,
  type Lang,
  type Span,
  type Subject,
} from './text.js';

/** A clause of a user sentence. */
export interface Clause {
  readonly span: Span;
  /** NFKC text with English contractions expanded ("I'm" → "I am"), case kept. */
  readonly cased: string;
  /** `cased`, lower-cased. */
  readonly lower: string;
  /** `cased` without leading discourse markers and time adverbials (`stripLeading`). */
  readonly coreCased: string;
  /** `coreCased`, lower-cased: what most patterns run on. */
  readonly core: string;
  /** Its subject; a clause without one inherits the previous clause's (Chinese drops "我"). */
  readonly subject: Subject;
  readonly reported: boolean;
}

/** A sentence of a user message with its cues. */
export interface Statement {
  readonly message: SourceMessage;
  readonly language: Lang;
  readonly sentence: Span;
  readonly cased: string;
  readonly lower: string;
  readonly question: boolean;
  readonly request: boolean;
  readonly hedged: boolean;
  readonly hypothetical: boolean;
  readonly reported: boolean;
  readonly clauses: readonly Clause[];
}

const CONTRACTIONS: readonly (readonly [RegExp, string])[] = [
  [/\b(i)'m\b/giu, '$1 am'],
  [/\b(you|we|they)'re\b/giu, '$1 are'],
  [/\b(i|you|we|they)'ve\b/giu, '$1 have'],
  [/\b(i|you|we|they|he|she|it)'ll\b/giu, '$1 will'],
  [/\b(i|you|we|they|he|she)'d\b/giu, '$1 would'],
  [/\b(it|that|what|there|he|she|who|where|here)'s\b/giu, '$1 is'],
  [/\bcan't\b/giu, 'cannot'],
  [/\bwon't\b/giu, 'will not'],
  [/\bshan't\b/giu, 'shall not'],
  [/\b(do|does|did|is|are|was|were|have|has|had|should|would|could|must|need)n't\b/giu, '$1 not'],
  [/\b(im)\b/gu, 'i am'],
  [/\b(dont)\b/giu, 'do not'],
  [/\b(didnt)\b/giu, 'did not'],
  [/\b(cant)\b/giu, 'cannot'],
  [/\blet's\b/giu, 'let us'],
  [/\bname's\b/giu, 'name is'],
];

/** English contractions written out, so patterns need one form. */
export function expandContractions(text: string): string {
  let out = text;
  for (const [pattern, replacement] of CONTRACTIONS) out = out.replace(pattern, replacement);
  return out;
}

function prepare(text: string, language: Lang): string {
  const normalized = normalize(text);
  return language === 'en' ? expandContractions(normalized) : normalized;
}

/** The sentences of one message, with their clauses and cues. */
export function statementsOf(message: SourceMessage, languageHint: string): Statement[] {
  const language = detectLanguage(message.content, languageHint);
  const statements: Statement[] = [];
  for (const sentence of splitSentences(message.content)) {
    const cased = prepare(sentence.text, language);
    const clauses: Clause[] = [];
    let previous: Subject = language === 'zh' ? 'self' : 'none';
    let reportedSoFar = false;
    for (const span of splitClauses(sentence)) {
      const clauseCased = prepare(span.text, language);
      const own = subjectOf(clauseCased, language);
      const subject: Subject = own === 'none' ? previous : own;
      // Reported speech covers the clauses after the reporting verb until a new subject takes over.
      const reported: boolean = isReportedSpeech(clauseCased, language) || (reportedSoFar && own === 'none');
      reportedSoFar = reported;
      const coreCased = stripLeading(clauseCased, language);
      clauses.push({
        span,
        cased: clauseCased,
        lower: clauseCased.toLowerCase(),
        coreCased,
        core: coreCased.toLowerCase(),
        subject,
        reported,
      });
      previous = subject;
    }
    statements.push({
      message,
      language,
      sentence,
      cased,
      lower: cased.toLowerCase(),
      question: isQuestion(sentence.text, language),
      request: isPoliteRequest(sentence.text, language),
      hedged: isHedged(cased, language),
      hypothetical: isHypothetical(cased, language),
      reported: isReportedSpeech(cased, language),
      clauses,
    });
  }
  return statements;
}

/** The user messages of a MemCell with content, minus those a forget request covers. */
export function userMessages(input: ExtractionInput, suppressed: ReadonlySet<string>): SourceMessage[] {
  return input.messages.filter((m) => m.role === 'USER' && m.content.trim() !== '' && !suppressed.has(m.id));
}

/** Limits of the candidate fields the extractors fill. */
export const EXCERPT_MAX_CHARS = 200;
export const EPISODE_MAX_CHARS = 500;

/** The fields every extractor sets itself; the rest come from `candidate()`. */
export type CandidateFields = Omit<Candidate, 'evidence' | 'languageCode' | 'scopeHint' | 'metadata'> & {
  readonly rule: string;
  readonly extractor: string;
  readonly extraMetadata?: Readonly<Record<string, string>>;
};

/**
 * A candidate with the shared parts filled in: evidence (message ids, the MemCell, an excerpt of
 * at most 200 characters), the language, scope hint SELF and provenance metadata
 * (`extractor`, `rule`).
 */
export function candidate(
  input: ExtractionInput,
  messages: readonly SourceMessage[],
  language: Lang,
  excerpt: string,
  fields: CandidateFields,
): Candidate {
  const { rule, extractor, extraMetadata, ...rest } = fields;
  return {
    ...rest,
    confidence: Math.round(rest.confidence * 100) / 100,
    languageCode: language,
    scopeHint: 'SELF',
    evidence: {
      messageIds: messages.map((m) => m.id),
      memCellId: input.memCellId,
      excerpt: truncate(excerpt.trim(), EXCERPT_MAX_CHARS),
    },
    metadata: { extractor, rule, ...extraMetadata },
  };
}
