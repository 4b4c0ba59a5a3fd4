/** Longest run of non-whitespace counted in one piece. */
export const MAX_RUN = 256;

const LONG_RUN = new RegExp(`\\S{${MAX_RUN + 1},}`, 'gu');
const HAS_LONG_RUN = new RegExp(`\\S{${MAX_RUN + 1}}`, 'u');
const PIECE = new RegExp(`[\\s\\S]{1,${MAX_RUN}}`, 'gu');

/**
 * Counts `text` with a BPE counter in pieces whose runs of non-whitespace are at most
 * {@link MAX_RUN} code points: BPE encoders take time quadratic in the length of one such run
 * (32,000 characters without a space: seconds of blocked event loop), and any message may contain
 * one. Ordinary text is counted whole, with the identical result; a long run is counted in pieces
 * of {@link MAX_RUN} code points, which can differ from the whole run's count by about a token per
 * cut (measured: both directions). Such runs are rare in real text (a base64 blob, a minified
 * line); the counts stay deterministic, so budgets built on them stay consistent.
 */
export function countInBoundedPieces(text: string, count: (piece: string) => number): number {
  if (!HAS_LONG_RUN.test(text)) return count(text);
  let total = 0;
  let last = 0;
  for (const match of text.matchAll(LONG_RUN)) {
    if (match.index > last) total += count(text.slice(last, match.index));
    for (const piece of match[0].match(PIECE) ?? []) total += count(piece);
    last = match.index + match[0].length;
  }
  if (last < text.length) total += count(text.slice(last));
  return total;
}
