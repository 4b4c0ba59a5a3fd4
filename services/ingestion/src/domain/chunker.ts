/**
 * The document chunker (blueprint §4, `ChunkingOptions` and `Chunk` in
 * proto/engram/ingestion/v1/document.proto). Pure and deterministic: the same text and options
 * always give the same chunks, which is what makes an interrupted ingestion resumable.
 *
 * All lengths and offsets are in Unicode code points of the (already normalized) text. Internally
 * the work is done on UTF-16 indices that always sit on code-point boundaries, and converted once
 * at the end.
 */
import { parseBlocks, type Block, type LinesBlock, type Span } from './markdown-blocks.js';

/**
 * The default chunk size in code points, chosen by the LoCoMo measurement of
 * docs/decisions/0009-chunking.md (`bench/chunk-size.ts`).
 */
export const DEFAULT_CHUNK_SIZE = 800;

/** The default overlap between neighbouring TEXT chunks, in code points (blueprint §4). */
export const DEFAULT_OVERLAP = 150;

/** What a chunk contains (`engram.ingestion.v1.ChunkKind` without the prefix). */
export type ChunkKind = 'TEXT' | 'TABLE' | 'CODE';

/**
 * One chunk of a document. With `T` the source text as an array of code points
 * (`Array.from(text)`):
 *
 * - `text === header + T.slice(startOffset, endOffset).join('')`, where `header` is the first
 *   `headerPrefixChars` code points of `text`: a copy of the table's header row, delimiter row and
 *   their line breaks, present only on TABLE chunks that continue a split table (otherwise empty).
 * - The first `overlapPrefixChars` code points of `T.slice(startOffset, endOffset)` are the overlap:
 *   the last `overlapPrefixChars` code points of the previous chunk's source range, so when it is
 *   non-zero `startOffset + overlapPrefixChars === previous.endOffset`. Only a TEXT chunk that
 *   follows a TEXT chunk has one.
 * - What the chunk adds is `[startOffset + overlapPrefixChars, endOffset)`: cite that range to
 *   point at the chunk's own text without its overlap. These ranges are disjoint, increase with
 *   `ordinal`, and everything of `T` outside all of them is whitespace (the gaps between
 *   paragraphs, rows or lines where no overlap bridges them, and leading and trailing whitespace).
 *   Concatenating them in order therefore rebuilds `T` up to whitespace-only gaps.
 * - `[...text].length <= chunkSize`, overlap and repeated header included.
 */
export interface ChunkPiece {
  /** Position in the document, 0-based and dense. */
  readonly ordinal: number;
  readonly kind: ChunkKind;
  /** Header copy (table continuations only) + the source range, overlap included. */
  readonly text: string;
  /** Start of the source range in code points, inclusive; the overlap included. */
  readonly startOffset: number;
  /** End of the source range in code points, exclusive. */
  readonly endOffset: number;
  /** Leading code points of the source range repeated from the previous chunk. */
  readonly overlapPrefixChars: number;
  /** Leading code points of `text` that are a copy of the table header, not in the range. */
  readonly headerPrefixChars: number;
  /**
   * The Markdown headings in force where the chunk's own text (after the overlap) begins — every
   * heading that starts at or before its first non-whitespace character — outermost first, marks
   * removed, each cut to 200 code points. Empty headings close deeper sections but are not listed.
   * Always empty without `markdown`.
   */
  readonly headingPath: readonly string[];
}

/** Options of {@link chunkText}; unset fields take the defaults of {@link resolveChunkOptions}. */
export interface ChunkTextOptions {
  /** Maximum code points of a chunk's `text`, overlap and repeated header included. Integer ≥ 1. */
  readonly chunkSize?: number;
  /** Code points a TEXT chunk repeats from its TEXT predecessor, at most; 0 to chunkSize / 2. */
  readonly overlap?: number;
  /** Markdown tables become TABLE chunks (whole when they fit). Only with `markdown`. */
  readonly keepTablesWhole?: boolean;
  /** Fenced code blocks become CODE chunks (whole when they fit). Only with `markdown`. */
  readonly keepCodeWhole?: boolean;
  /** Recognise Markdown (headings, tables, fences): `text/markdown` and converted `text/html`. */
  readonly markdown?: boolean;
}

/**
 * Fills in the defaults, in one place: chunkSize DEFAULT_CHUNK_SIZE, overlap DEFAULT_OVERLAP but
 * never more than chunkSize / 2 (so that a small explicit size alone is valid), keepTablesWhole
 * and keepCodeWhole true, markdown false.
 *
 * The domain accepts any chunk size ≥ 1 (tests use small ones); the service's 200–8,000 range is
 * request validation and lives at the boundary.
 *
 * @throws RangeError when chunkSize is not an integer ≥ 1, or overlap not an integer within
 *   [0, floor(chunkSize / 2)].
 */
export function resolveChunkOptions(options: ChunkTextOptions = {}): Required<ChunkTextOptions> {
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  if (!Number.isInteger(chunkSize) || chunkSize < 1) {
    throw new RangeError(`chunkSize must be an integer ≥ 1, got ${chunkSize}`);
  }
  const maxOverlap = Math.floor(chunkSize / 2);
  const overlap = options.overlap ?? Math.min(DEFAULT_OVERLAP, maxOverlap);
  if (!Number.isInteger(overlap) || overlap < 0 || overlap > maxOverlap) {
    throw new RangeError(`overlap must be an integer within [0, ${maxOverlap}], got ${overlap}`);
  }
  return {
    chunkSize,
    overlap,
    keepTablesWhole: options.keepTablesWhole ?? true,
    keepCodeWhole: options.keepCodeWhole ?? true,
    markdown: options.markdown ?? false,
  };
}

/**
 * Splits a normalized document text into chunks (see {@link ChunkPiece} for how `text` relates to
 * the offsets). The rules, in order:
 *
 * 1. Blocks: paragraphs separated by blank lines; with `markdown` also headings (paragraphs of
 *    their own), pipe tables and fenced code blocks (see markdown-blocks.ts).
 * 2. Paragraphs and headings are packed greedily into TEXT chunks while the chunk — overlap and
 *    whitespace between paragraphs included — stays within `chunkSize`. A paragraph that does not
 *    fit in the current chunk starts a new one if it fits there (the overlap giving way, see 5);
 *    one that fits in no chunk is split into sentences, which are packed the same way (the first
 *    ones may fill the current chunk).
 * 3. Sentence ends: `。！？；` (also full-width `！？；`), and `.!?;` followed by whitespace or
 *    the end of the paragraph, the run of terminators and any closing quotes or brackets after it
 *    staying with the sentence. A `.` does not end a sentence after a known abbreviation (`e.g.`,
 *    `Dr.`, `etc.`, `No. 5`, …), a dotted initialism (`U.S.`, `a.m.`), a single capital initial
 *    (`J. Smith`) or a list number at the start of a line (`1. `). Numbers (`3.14`) and URLs
 *    (`example.com/a.b?c`) never split because their dots are not followed by whitespace; a dot
 *    right after a URL, before whitespace, ends the sentence.
 * 4. A sentence longer than a new chunk's room starts a chunk and is cut hard: at the last
 *    whitespace in the second half of the room, else after the last clause mark (`，、,：:`) there,
 *    else at the room's end — never inside a code point, and backing off a few code points so as
 *    not to separate a combining mark, variation selector or zero-width joiner from its base.
 * 5. Overlap: a TEXT chunk that follows a TEXT chunk starts with exactly the last `overlap` code
 *    points of the predecessor's source range (all of it when shorter). Where the split fell
 *    inside a paragraph (between sentences or in a hard cut) that is the whole rule. Where the new chunk begins with a paragraph (or a heading), the
 *    overlap gives way to it: the window is shrunk, down to nothing, so that the paragraph — or,
 *    for a paragraph split into sentences, its first sentence — fits whole when it would fit with
 *    no overlap; nothing was cut there, so only context is lost, never a whole paragraph.
 *    The overlap and the new text are contiguous, so the whitespace between them counts towards
 *    the size; when that whitespace is longer than `overlap`, or overlap plus whitespace would
 *    leave no room, the chunk has no overlap and starts at its new text.
 * 6. Tables (`keepTablesWhole`) and code (`keepCodeWhole`) that fit become one TABLE/CODE chunk.
 *    A longer code block is split between whole lines (fences are not repeated); a longer table
 *    between whole rows, every chunk after the first starting with a copy of the header and
 *    delimiter rows (`headerPrefixChars`), so every table chunk holds at most chunkSize − header
 *    code points of rows. A row or line longer than that room is cut hard as in 4, each piece a
 *    chunk of its own (a continuation piece of a row still gets the header). A table whose header
 *    takes more than half the chunk size is split like code: between rows, header not repeated.
 *    TABLE and CODE chunks, and the TEXT chunk after one, carry no overlap.
 *
 * Chunks never contain only whitespace; a whitespace-only text gives no chunks.
 *
 * @throws RangeError for invalid options (see {@link resolveChunkOptions}).
 */
export function chunkText(text: string, options: ChunkTextOptions = {}): ChunkPiece[] {
  const resolved = resolveChunkOptions(options);
  const source = new SourceText(text);
  const blocks = parseBlocks(text, {
    markdown: resolved.markdown,
    tables: resolved.markdown && resolved.keepTablesWhole,
    code: resolved.markdown && resolved.keepCodeWhole,
  });
  const chunker = new Chunker(source, resolved.chunkSize, resolved.overlap);
  for (const block of blocks) {
    if (block.kind === 'code') chunker.addLines('CODE', block.lines);
    else if (block.kind === 'table') chunker.addTable(block);
    else chunker.addParagraph(block.start, block.end);
  }
  chunker.flush();
  return chunker.finish(new HeadingTrail(blocks));
}

/** A chunk before conversion: UTF-16 indices, the overlap in code points. */
interface RawChunk {
  readonly kind: ChunkKind;
  readonly start: number;
  readonly end: number;
  readonly overlap: number;
  /** Where the chunk's own text begins (after the overlap). */
  readonly ownStart: number;
  readonly header: string;
}

/** The open TEXT chunk: `[start, end)`, its first `overlap` code points repeated. */
interface OpenChunk {
  start: number;
  end: number;
  overlap: number;
  ownStart: number;
}

class Chunker {
  private readonly chunks: RawChunk[] = [];
  private open: OpenChunk | undefined;
  /** The last TEXT chunk's range, while nothing else has been emitted after it. */
  private predecessor: Span | undefined;

  constructor(
    private readonly source: SourceText,
    private readonly size: number,
    private readonly overlap: number,
  ) {}

  /** Packs a paragraph or heading `[start, end)` (trimmed) into TEXT chunks. */
  addParagraph(start: number, end: number): void {
    if (this.tryPack(start, end, true)) return;
    const sentences = splitSentences(this.source, start, end);
    if (sentences.length > 1) {
      for (const sentence of sentences)
        this.addSentence(sentence.start, sentence.end, sentence.start === start);
    } else {
      this.addSentence(start, end, true);
    }
  }

  /** Emits the open TEXT chunk, if any. */
  flush(): void {
    const open = this.open;
    if (open === undefined) return;
    this.push('TEXT', open.start, open.end, open.overlap, open.ownStart, '');
    this.predecessor = { start: open.start, end: open.end };
    this.open = undefined;
  }

  /**
   * Emits a code block (or a table split like code) whole if it fits, otherwise as chunks of whole
   * lines; a line longer than a chunk is cut hard into chunks of its own.
   */
  addLines(kind: 'CODE' | 'TABLE', lines: readonly Span[]): void {
    this.flush();
    this.predecessor = undefined;
    const { source, size } = this;
    const first = lines[0];
    const last = lines.at(-1);
    if (first === undefined || last === undefined) return;
    if (source.count(first.start, last.end) <= size) {
      this.push(kind, first.start, last.end, 0, first.start, '');
      return;
    }
    let run: Span | undefined;
    for (const line of lines) {
      if (source.isBlank(line.start, line.end)) continue; // blank lines fall in a chunk or a gap
      if (run !== undefined && source.count(run.start, line.end) <= size) {
        run = { start: run.start, end: line.end };
        continue;
      }
      if (run !== undefined) this.push(kind, run.start, run.end, 0, run.start, '');
      run = undefined;
      if (source.count(line.start, line.end) <= size) {
        run = line;
        continue;
      }
      for (const piece of this.cutLine(line, size))
        this.push(kind, piece.start, piece.end, 0, piece.start, '');
    }
    if (run !== undefined) this.push(kind, run.start, run.end, 0, run.start, '');
  }

  /** Emits a table: whole, or split between rows with the header repeated. */
  addTable(table: LinesBlock<'table'>): void {
    const { source, size } = this;
    const rows = table.lines.slice(2);
    const firstRow = rows[0];
    if (firstRow === undefined || source.count(table.start, table.end) <= size) {
      this.addLines('TABLE', table.lines);
      return;
    }
    // Header and delimiter rows with their line breaks: exactly what precedes the first row.
    const header = source.text.slice(table.start, firstRow.start);
    const headerLength = source.count(table.start, firstRow.start);
    const room = size - headerLength;
    // The first chunk's range runs from the header through the first row's indentation.
    const indent = source.count(firstRow.start, source.skipWhitespace(firstRow.start, firstRow.end));
    if (headerLength * 2 > size || indent >= room) {
      this.addLines('TABLE', table.lines);
      return;
    }
    this.flush();
    this.predecessor = undefined;
    const firstChunk = this.chunks.length;
    const isFirst = (): boolean => this.chunks.length === firstChunk;
    const emit = (span: Span): void => {
      // The first chunk holds the header in its own range; the others get a copy.
      if (isFirst()) this.push('TABLE', table.start, span.end, 0, table.start, '');
      else this.push('TABLE', span.start, span.end, 0, span.start, header);
    };
    let run: Span | undefined;
    for (const row of rows) {
      if (run !== undefined && source.count(run.start, row.end) <= room) {
        run = { start: run.start, end: row.end };
        continue;
      }
      if (run !== undefined) emit(run);
      run = undefined;
      if (source.count(row.start, row.end) <= room) {
        run = row;
        continue;
      }
      for (const piece of this.cutLine(row, room, isFirst() ? room - indent : room)) emit(piece);
    }
    if (run !== undefined) emit(run);
  }

  /** Converts the chunks to code-point offsets and attaches heading paths. */
  finish(headings: HeadingTrail): ChunkPiece[] {
    const { source } = this;
    return this.chunks.map((chunk, ordinal) => ({
      ordinal,
      kind: chunk.kind,
      text: chunk.header + source.text.slice(chunk.start, chunk.end),
      startOffset: source.offset(chunk.start),
      endOffset: source.offset(chunk.end),
      overlapPrefixChars: chunk.overlap,
      headerPrefixChars: Array.from(chunk.header).length,
      headingPath: headings.at(source.skipWhitespace(chunk.ownStart, chunk.end)),
    }));
  }

  /** A sentence (or an unsplittable paragraph) `[start, end)`. */
  private addSentence(start: number, end: number, paragraphStart: boolean): void {
    if (this.tryPack(start, end, paragraphStart)) return;
    // Longer than any chunk's room: cut hard, each piece in a new chunk; the last piece stays open.
    this.flush();
    let position = start;
    for (;;) {
      const next = this.startAt(position, paragraphStart && position === start, end);
      const room = this.size - this.source.count(next.start, position);
      if (this.source.count(position, end) <= room) {
        this.open = { ...next, end };
        return;
      }
      const cut = cutHard(this.source, position, end, room);
      this.open = { ...next, end: cut.end };
      this.flush();
      position = cut.next;
    }
  }

  /**
   * Adds `[start, end)` to the open chunk if it fits, or starts a new chunk with it if it fits
   * there (after the overlap); false when it fits in neither.
   */
  private tryPack(start: number, end: number, paragraphStart: boolean): boolean {
    const { source, size } = this;
    const open = this.open;
    if (open !== undefined && source.count(open.start, end) <= size) {
      open.end = end;
      return true;
    }
    const next = this.startAt(start, paragraphStart, end);
    if (source.count(next.start, end) > size) return false;
    this.flush();
    this.open = { ...next, end };
    return true;
  }

  /**
   * Where a new TEXT chunk whose own text begins at `position` starts: at its overlap with the
   * open chunk or the previous TEXT chunk, or at `position` when there is none (rule 5). At the
   * start of a paragraph (`paragraphStart`) the overlap gives way to the unit `[position, end)`
   * being placed: it is capped so that the unit fits whole when it fits without any overlap.
   */
  private startAt(
    position: number,
    paragraphStart: boolean,
    end: number,
  ): { start: number; overlap: number; ownStart: number } {
    const { source, size } = this;
    const previous = this.open ?? this.predecessor;
    const none = { start: position, overlap: 0, ownStart: position };
    if (previous === undefined || this.overlap === 0) return none;
    const gap = source.count(previous.end, position);
    if (gap > this.overlap) return none;
    let max = this.overlap;
    const length = source.count(position, end);
    if (paragraphStart && length <= size) {
      // Fits alone: keep only as much overlap (and the whitespace it brings) as leaves room for it.
      const room = size - gap - length;
      if (room <= 0) return none;
      max = Math.min(max, room);
    }
    const overlap = overlapStart(source, previous, max);
    if (overlap.length === 0 || overlap.length + gap >= size) return none;
    return { start: overlap.start, overlap: overlap.length, ownStart: previous.end };
  }

  /**
   * Pieces of an over-long line or row, from its first non-whitespace character, cut hard: the
   * first piece at most `firstRoom` code points, the others at most `room`.
   */
  private *cutLine(line: Span, room: number, firstRoom = room): Generator<Span> {
    const { source } = this;
    let position = source.skipWhitespace(line.start, line.end);
    const end = source.trimEnd(position, line.end);
    let limit = firstRoom;
    while (position < end) {
      if (source.count(position, end) <= limit) {
        yield { start: position, end };
        return;
      }
      const cut = cutHard(source, position, end, limit);
      yield { start: position, end: cut.end };
      position = cut.next;
      limit = room;
    }
  }

  private push(
    kind: ChunkKind,
    start: number,
    end: number,
    overlap: number,
    ownStart: number,
    header: string,
  ): void {
    this.chunks.push({ kind, start, end, overlap, ownStart, header });
  }
}

/**
 * The overlap a chunk takes from `previous`: exactly the last `max` code points of its source
 * range (all of it when shorter), so that removing overlaps reproduces the source exactly.
 */
function overlapStart(source: SourceText, previous: Span, max: number): { start: number; length: number } {
  const length = Math.min(max, source.count(previous.start, previous.end));
  if (length === 0) return { start: previous.end, length: 0 };
  return { start: source.back(previous.end, length), length };
}

// ---------------------------------------------------------------------------------------------
// Sentences

const CJK_TERMINATORS = new Set(['。', '！', '？', '；']);
const LATIN_TERMINATORS = new Set(['.', '!', '?', ';']);
const CLOSERS = new Set(Array.from(`"')]}’”»›」』）］｝》〉】〕〗〙〛`));
const OPENERS = /^["'([{‘“«‹「『（［｛《〈【〔〖〘〚]+/u;

/** Abbreviations (lower case, without the final dot) after which a `.` never ends a sentence. */
const ABBREVIATIONS = new Set([
  'mr',
  'mrs',
  'ms',
  'mx',
  'dr',
  'prof',
  'sr',
  'jr',
  'st',
  'mt',
  'vs',
  'etc',
  'cf',
  'al',
  'approx',
  'ca',
  'dept',
  'est',
  'inc',
  'ltd',
  'corp',
  'jan',
  'feb',
  'apr',
  'aug',
  'sep',
  'sept',
  'oct',
  'nov',
  'dec',
  'ph.d',
]);
/** Abbreviations that are only abbreviations before a number (`No. 5`, `p. 12`, `Fig. 3`). */
const NUMBER_ABBREVIATIONS = new Set([
  'no',
  'nos',
  'vol',
  'vols',
  'p',
  'pp',
  'fig',
  'figs',
  'eq',
  'sec',
  'ch',
  'art',
]);
const DOTTED_INITIALISM = /^(?:\p{L}\.)+\p{L}$/u;
const SINGLE_INITIAL = /^\p{Lu}$/u;
const DIGITS = /^\p{Nd}+$/u;

/**
 * The sentences of a paragraph by rule 3 of {@link chunkText}, surrounding whitespace removed —
 * what the chunker splits an over-long paragraph into. Exported for tests and diagnostics.
 */
export function sentencesOf(paragraph: string): string[] {
  const source = new SourceText(paragraph);
  const start = source.skipWhitespace(0, paragraph.length);
  const end = source.trimEnd(start, paragraph.length);
  if (start === end) return [];
  return splitSentences(source, start, end).map(({ start: from, end: to }) => paragraph.slice(from, to));
}

/**
 * Splits a paragraph `[start, end)` (trimmed) into sentences (trimmed), by rule 3 of
 * {@link chunkText}. Returns the paragraph itself when it has no sentence end inside.
 */
function splitSentences(source: SourceText, start: number, end: number): Span[] {
  const { text } = source;
  const sentences: Span[] = [];
  let sentenceStart = start;
  let index = start;
  while (index < end) {
    const char = text.charAt(index);
    const cjk = CJK_TERMINATORS.has(char);
    if (!cjk && !LATIN_TERMINATORS.has(char)) {
      index++;
      continue;
    }
    // The run of terminators ("?!", "……。"), then closing quotes and brackets.
    let after = index + 1;
    let anyCjk = cjk;
    while (
      after < end &&
      (CJK_TERMINATORS.has(text.charAt(after)) || LATIN_TERMINATORS.has(text.charAt(after)))
    ) {
      anyCjk ||= CJK_TERMINATORS.has(text.charAt(after));
      after++;
    }
    const singleDot = char === '.' && after === index + 1;
    while (after < end && CLOSERS.has(text.charAt(after))) after++;
    const isEnd =
      after < end &&
      (anyCjk || isWhitespace(source.codePointAt(after))) &&
      !(singleDot && isAbbreviation(source, index, after, start));
    if (isEnd) {
      sentences.push({ start: sentenceStart, end: after });
      sentenceStart = source.skipWhitespace(after, end);
    }
    index = after;
  }
  if (sentenceStart < end) sentences.push({ start: sentenceStart, end });
  return sentences;
}

/**
 * Whether the single `.` at `dot` closes an abbreviation rather than a sentence: the word before
 * it (back to whitespace, opening quotes and brackets removed) is a known abbreviation, a dotted
 * initialism, a single capital letter, or a number that begins its line (a list item).
 */
function isAbbreviation(source: SourceText, dot: number, after: number, paragraphStart: number): boolean {
  const { text } = source;
  let wordStart = dot;
  while (wordStart > paragraphStart && !isWhitespace(source.codePointBefore(wordStart))) {
    wordStart = source.previous(wordStart);
  }
  const word = text.slice(wordStart, dot).replace(OPENERS, '');
  if (word === '') return false;
  const lower = word.toLowerCase();
  if (ABBREVIATIONS.has(lower) || DOTTED_INITIALISM.test(word) || SINGLE_INITIAL.test(word)) return true;
  if (NUMBER_ABBREVIATIONS.has(lower)) {
    const next = source.skipWhitespace(after, text.length);
    return next < text.length && /\p{Nd}/u.test(String.fromCodePoint(source.codePointAt(next)));
  }
  return (
    DIGITS.test(word) && (wordStart === 0 || text[wordStart - 1] === '\n' || wordStart === paragraphStart)
  );
}

// ---------------------------------------------------------------------------------------------
// Hard cuts

const CLAUSE_MARKS = new Set(['，', '、', ',', '：', ':'].map((mark) => mark.codePointAt(0)));
const MAX_EXTENDER_BACKOFF = 16;

/**
 * Cuts `[position, end)` (starting with non-whitespace, longer than `room` code points) so that
 * the first piece `[position, result.end)` has at most `room` code points and ends with
 * non-whitespace; `result.next` is where the rest begins (its first non-whitespace character).
 */
function cutHard(
  source: SourceText,
  position: number,
  end: number,
  room: number,
): { end: number; next: number } {
  const limit = source.advance(position, room);
  const floor = source.advance(position, Math.ceil(room / 2));
  // At whitespace: the last whitespace in (floor, limit], limit itself included.
  for (let at = limit; at > floor; at = source.previous(at)) {
    if (isWhitespace(source.codePointAt(at))) {
      const pieceEnd = source.trimEnd(position, at);
      if (pieceEnd > position) return { end: pieceEnd, next: source.skipWhitespace(at, end) };
    }
  }
  // After a clause mark.
  for (let at = limit; at > floor; at = source.previous(at)) {
    if (CLAUSE_MARKS.has(source.codePointBefore(at))) {
      return { end: at, next: source.skipWhitespace(at, end) };
    }
  }
  // Anywhere, but not between a base character and what extends it (unless that is all there is).
  const separable = (at: number): boolean =>
    !isExtender(source.codePointAt(at)) && source.codePointBefore(at) !== ZWJ;
  let at = limit;
  for (let steps = 0; steps < MAX_EXTENDER_BACKOFF && at > position && !separable(at); steps++) {
    at = source.previous(at);
  }
  if (at <= position || !separable(at)) at = limit;
  return { end: source.trimEnd(position, at), next: source.skipWhitespace(at, end) };
}

// ---------------------------------------------------------------------------------------------
// Headings

const MAX_HEADING_CHARS = 200;

/** The heading trail at increasing positions (one forward pass over the heading blocks). */
class HeadingTrail {
  private readonly headings: Extract<Block, { kind: 'heading' }>[];
  private next = 0;
  private readonly stack: { level: number; title: string }[] = [];

  constructor(blocks: readonly Block[]) {
    this.headings = blocks.filter((block) => block.kind === 'heading');
  }

  /** The trail after every heading that starts at or before `position` (non-decreasing calls). */
  at(position: number): string[] {
    for (let heading = this.headings[this.next]; heading !== undefined && heading.start <= position;) {
      while ((this.stack.at(-1)?.level ?? 0) >= heading.level) this.stack.pop();
      this.stack.push({
        level: heading.level,
        title: Array.from(heading.title).slice(0, MAX_HEADING_CHARS).join(''),
      });
      heading = this.headings[++this.next];
    }
    return this.stack.map((entry) => entry.title).filter((title) => title !== '');
  }
}

// ---------------------------------------------------------------------------------------------
// Code points

const ZWJ = 0x200d;

/** JavaScript's `\s`, spelled out (it is called for every character of a hard cut). */
function isWhitespace(codePoint: number): boolean {
  if (codePoint < 0x80) return codePoint === 0x20 || (codePoint >= 0x09 && codePoint <= 0x0d);
  return (
    codePoint === 0xa0 ||
    codePoint === 0x1680 ||
    (codePoint >= 0x2000 && codePoint <= 0x200a) ||
    codePoint === 0x2028 ||
    codePoint === 0x2029 ||
    codePoint === 0x202f ||
    codePoint === 0x205f ||
    codePoint === 0x3000 ||
    codePoint === 0xfeff
  );
}

// Alternatives rather than one class: a class holding a joiner or a selector reads as a sequence.
const EXTENDER =
  /\p{M}|\u200D|[\uFE00-\uFE0F]|[\u{1F3FB}-\u{1F3FF}]|[\u{E0020}-\u{E007F}]|[\u{E0100}-\u{E01EF}]/u;

/** Characters that attach to the one before them: marks, joiners, selectors, skin tones, tags. */
function isExtender(codePoint: number): boolean {
  return codePoint >= 0x300 && EXTENDER.test(String.fromCodePoint(codePoint));
}

/**
 * The text with code-point arithmetic on UTF-16 indices. Every index handled is on a code-point
 * boundary. When the text has no surrogates, code points and UTF-16 units coincide and no table
 * is built; otherwise a prefix table maps UTF-16 indices to code-point offsets.
 */
class SourceText {
  private readonly prefix: Uint32Array | undefined;

  constructor(readonly text: string) {
    // Without the u flag the class matches single UTF-16 units, so pairs are found too.
    if (/[\uD800-\uDFFF]/.test(text)) {
      const prefix = new Uint32Array(text.length + 1);
      let count = 0;
      for (let i = 0; i < text.length; i++, count++) {
        prefix[i] = count;
        if (isHighSurrogate(text.charCodeAt(i)) && isLowSurrogate(text.charCodeAt(i + 1)))
          prefix[++i] = count;
      }
      prefix[text.length] = count;
      this.prefix = prefix;
    }
  }

  /** Code-point offset of a UTF-16 index. */
  offset(index: number): number {
    return this.prefix?.[index] ?? index;
  }

  /** Code points in `[from, to)`. */
  count(from: number, to: number): number {
    return this.offset(to) - this.offset(from);
  }

  /** The index `n` code points after `index` (at most the end of the text). */
  advance(index: number, n: number): number {
    let at = index;
    for (let k = 0; k < n && at < this.text.length; k++) at = this.next(at);
    return at;
  }

  /** The index `n` code points before `index` (at least 0). */
  back(index: number, n: number): number {
    let at = index;
    for (let k = 0; k < n && at > 0; k++) at = this.previous(at);
    return at;
  }

  next(index: number): number {
    return (
      index +
      (isHighSurrogate(this.text.charCodeAt(index)) && isLowSurrogate(this.text.charCodeAt(index + 1))
        ? 2
        : 1)
    );
  }

  previous(index: number): number {
    return (
      index -
      (isLowSurrogate(this.text.charCodeAt(index - 1)) && isHighSurrogate(this.text.charCodeAt(index - 2))
        ? 2
        : 1)
    );
  }

  codePointAt(index: number): number {
    return this.text.codePointAt(index) ?? 0;
  }

  codePointBefore(index: number): number {
    return index <= 0 ? 0 : this.codePointAt(this.previous(index));
  }

  /** The first index in `[from, to)` holding non-whitespace, or `to`. */
  skipWhitespace(from: number, to: number): number {
    let at = from;
    while (at < to && isWhitespace(this.codePointAt(at))) at = this.next(at);
    return at;
  }

  /** The end of `[from, to)` with trailing whitespace removed. */
  trimEnd(from: number, to: number): number {
    let at = to;
    while (at > from && isWhitespace(this.codePointBefore(at))) at = this.previous(at);
    return at;
  }

  isBlank(from: number, to: number): boolean {
    return this.skipWhitespace(from, to) === to;
  }
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}
