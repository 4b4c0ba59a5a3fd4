/**
 * Pure logic of the Sessions view: resource names, where MemCell boundaries fall between the
 * loaded messages, extraction jobs per MemCell, candidates zipped with their decisions, and when a
 * deep-linked message needs more pages.
 */

/** The least of a message this logic needs. */
export interface SequencedMessage {
  readonly sequence: bigint;
}

/** The least of a MemCell this logic needs. */
export interface CellRange {
  readonly name: string;
  readonly firstSequence: bigint;
  readonly lastSequence: bigint;
}

/** The least of an extraction job this logic needs. */
export interface JobLike {
  readonly name: string;
  readonly memCell: string;
}

/** `sessions/<id>` for an id taken from the route. */
export function sessionName(id: string): string {
  return `sessions/${id}`;
}

/** The id of `sessions/<id>` (or of any child name `sessions/<id>/…`); '' if not a session name. */
export function sessionId(name: string): string {
  const match = /^sessions\/([^/]+)/.exec(name);
  return match?.[1] ?? '';
}

/** `sessions/<id>/state`, the context service's state of the session. */
export function sessionStateName(id: string): string {
  return `${sessionName(id)}/state`;
}

/**
 * The `message` query parameter of a deep link as a sequence (1-based); undefined when absent or
 * not a positive integer.
 */
export function parseSequence(value: string | null | undefined): bigint | undefined {
  if (value === null || value === undefined || !/^\d{1,18}$/.test(value.trim())) return undefined;
  const n = BigInt(value.trim());
  return n >= 1n ? n : undefined;
}

/** One row of the timeline: a message, or a boundary after the last message of a MemCell. */
export type TimelineItem<M extends SequencedMessage, C extends CellRange> =
  | { readonly kind: 'message'; readonly message: M; readonly cell: C | undefined }
  | { readonly kind: 'boundary'; readonly cell: C }
  | { readonly kind: 'open-tail'; readonly fromSequence: bigint };

/** The MemCell a sequence falls in, if any (cells are sorted and do not overlap). */
export function cellOf<C extends CellRange>(cells: readonly C[], sequence: bigint): C | undefined {
  let lo = 0;
  let hi = cells.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const cell = cells[mid];
    if (cell === undefined) break;
    if (sequence < cell.firstSequence) hi = mid - 1;
    else if (sequence > cell.lastSequence) lo = mid + 1;
    else return cell;
  }
  return undefined;
}

/**
 * The timeline of the loaded messages (ascending by sequence): each message with its MemCell, a
 * boundary right after the message that ends a MemCell, and an open-tail marker before the first
 * loaded message that belongs to no MemCell. Boundaries of cells whose last message is not loaded
 * yet are not drawn (they appear when that page is loaded).
 */
export function buildTimeline<M extends SequencedMessage, C extends CellRange>(
  messages: readonly M[],
  cells: readonly C[],
): TimelineItem<M, C>[] {
  const sortedCells = [...cells].sort((a, b) => compareBig(a.firstSequence, b.firstSequence));
  const sortedMessages = [...messages].sort((a, b) => compareBig(a.sequence, b.sequence));
  const items: TimelineItem<M, C>[] = [];
  let openTailShown = false;
  let previous: bigint | undefined;
  for (const message of sortedMessages) {
    if (message.sequence === previous) continue; // a page boundary repeated a message
    previous = message.sequence;
    const cell = cellOf(sortedCells, message.sequence);
    if (cell === undefined && !openTailShown) {
      items.push({ kind: 'open-tail', fromSequence: message.sequence });
      openTailShown = true;
    }
    items.push({ kind: 'message', message, cell });
    if (cell !== undefined && cell.lastSequence === message.sequence) items.push({ kind: 'boundary', cell });
  }
  return items;
}

/**
 * Extraction jobs per MemCell name, each list newest first (the order ListExtractionJobs
 * returns, kept), jobs of the same name once.
 */
export function jobsByMemCell<J extends JobLike>(jobs: readonly J[]): Map<string, J[]> {
  const byCell = new Map<string, J[]>();
  const seen = new Set<string>();
  for (const job of jobs) {
    if (seen.has(job.name)) continue;
    seen.add(job.name);
    const list = byCell.get(job.memCell);
    if (list === undefined) byCell.set(job.memCell, [job]);
    else list.push(job);
  }
  return byCell;
}

/** A candidate together with the decision about it (by `candidate_index`). */
export interface CandidateRow<C, D> {
  readonly index: number;
  readonly candidate: C | undefined;
  readonly decision: D | undefined;
}

/**
 * Candidates zipped with their decisions: one row per candidate in job order, plus a row for any
 * decision whose index points at no candidate (candidates are hidden from non-owners).
 */
export function candidateRows<C, D extends { readonly candidateIndex: number }>(
  candidates: readonly C[],
  decisions: readonly D[],
): CandidateRow<C, D>[] {
  const byIndex = new Map<number, D>();
  for (const d of decisions) if (!byIndex.has(d.candidateIndex)) byIndex.set(d.candidateIndex, d);
  const rows: CandidateRow<C, D>[] = candidates.map((candidate, index) => ({
    index,
    candidate,
    decision: byIndex.get(index),
  }));
  const extra = [...byIndex.keys()].filter((i) => i < 0 || i >= candidates.length).sort((a, b) => a - b);
  for (const index of extra) rows.push({ index, candidate: undefined, decision: byIndex.get(index) });
  return rows;
}

/** How a decision outcome is coloured: written (ok), refused (warn), held for review (info). */
export function outcomeTone(outcomeName: string): 'ok' | 'warn' | 'info' | 'plain' {
  if (outcomeName === 'ACCEPTED' || outcomeName === 'SUPERSEDED') return 'ok';
  if (outcomeName === 'REJECTED') return 'warn';
  if (outcomeName === 'QUARANTINED') return 'info';
  return 'plain';
}

/** An enum value's name without its prefix: `DECISION_OUTCOME_ACCEPTED` → `ACCEPTED`. */
export function stripPrefix(name: string, prefix: string): string {
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

/**
 * Whether the timeline must load another page before a deep-linked sequence can be shown: the
 * target is not among the loaded messages, is beyond the last loaded one, and more pages exist.
 */
export function needsMorePages(
  loaded: readonly SequencedMessage[],
  target: bigint | undefined,
  hasNextPage: boolean,
): boolean {
  if (target === undefined || !hasNextPage) return false;
  let last = 0n;
  for (const m of loaded) {
    if (m.sequence === target) return false;
    if (m.sequence > last) last = m.sequence;
  }
  return target > last;
}

/** The DOM id of a message row, for deep links and scrolling. */
export function messageAnchor(sequence: bigint): string {
  return `message-${sequence.toString()}`;
}

function compareBig(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
