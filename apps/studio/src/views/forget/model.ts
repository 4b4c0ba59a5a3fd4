/** Pure logic of the Forget me view: the confirmation phrase, the receipt's counts and progress. */

/** What the user must type before the button enables. */
export function confirmationPhrase(subject: string): string {
  return `forget ${subject}`;
}

/** Whether `typed` is the phrase (surrounding and repeated spaces ignored; case matters: subjects are case-sensitive). */
export function phraseMatches(typed: string, phrase: string): boolean {
  const normal = (s: string) => s.trim().replace(/\s+/g, ' ');
  return phrase !== '' && normal(typed) === normal(phrase);
}

/** The ForgetCounts fields, in the order shown, with the part of Engram that erases each. */
export const COUNT_FIELDS = [
  { field: 'memories', by: 'governance' },
  { field: 'revisionsRedacted', by: 'governance' },
  { field: 'revisionActorsRedacted', by: 'governance' },
  { field: 'extractionJobs', by: 'governance' },
  { field: 'documents', by: 'ingestion' },
  { field: 'chunks', by: 'ingestion' },
  { field: 'sessions', by: 'ingestion' },
  { field: 'messages', by: 'ingestion' },
  { field: 'memCells', by: 'ingestion' },
  { field: 'sessionStates', by: 'context' },
  { field: 'vectorPoints', by: 'retrieval' },
] as const;
export type CountField = (typeof COUNT_FIELDS)[number]['field'];

/** The counts of a receipt as rows (field, who erases it, count); all zero when the receipt has none yet. */
export function countRows(
  counts: Partial<Readonly<Record<CountField, bigint>>> | undefined,
): readonly { readonly field: CountField; readonly by: string; readonly count: bigint }[] {
  return COUNT_FIELDS.map(({ field, by }) => ({ field, by, count: counts?.[field] ?? 0n }));
}

/** The sum of every count of a receipt. */
export function totalErased(counts: Partial<Readonly<Record<CountField, bigint>>> | undefined): bigint {
  return countRows(counts).reduce((sum, row) => sum + row.count, 0n);
}

/** Whether a receipt in this state will not change any more. */
export function receiptFinished(state: string): boolean {
  return state === 'COMPLETED';
}

/** The tag tone of a receipt state name. */
export function receiptTone(state: string): 'ok' | 'info' | 'plain' {
  if (state === 'COMPLETED') return 'ok';
  if (state === 'PENDING') return 'info';
  return 'plain';
}

/** How long the erasure took (or has taken so far), in seconds, from the receipt's times in epoch ms. */
export function elapsedSeconds(
  createMs: number | undefined,
  completeMs: number | undefined,
  nowMs: number,
): number | undefined {
  if (createMs === undefined) return undefined;
  return Math.max(0, ((completeMs ?? nowMs) - createMs) / 1000);
}
