/**
 * Block structure of a document for the chunker: paragraphs and, in Markdown, ATX and setext
 * headings, GFM pipe tables and fenced code blocks. A deliberately small subset of CommonMark/GFM
 * — just enough to keep tables and code whole and to track headings; everything else (lists,
 * quotes, HTML, indented code) is paragraph text. Pure; positions are UTF-16 indices into the
 * text (the chunker converts them to code points).
 */

/** A half-open range of UTF-16 indices, `[start, end)`. */
export interface Span {
  readonly start: number;
  readonly end: number;
}

/**
 * A block of the document. Every non-whitespace character of the text lies in exactly one block,
 * and blocks are in text order and do not overlap; what lies between them is whitespace.
 *
 * - `paragraph` and `heading`: from the first to just after the last non-whitespace character.
 * - `code` and `table`: from the start of the first line (indentation included) to the last
 *   non-whitespace character of the last line; `lines` are the block's lines the same way (from
 *   the line's start to its last non-whitespace character; empty for a blank line). A code block
 *   includes its fences; a table's `lines[0]` is the header row and `lines[1]` the delimiter row.
 */
export type Block =
  | { readonly kind: 'paragraph'; readonly start: number; readonly end: number }
  | {
      readonly kind: 'heading';
      readonly start: number;
      readonly end: number;
      /** 1–6 (setext: 1 for `===`, 2 for `---`). */
      readonly level: number;
      /** Heading marks removed, trimmed, inner line breaks of a setext heading become spaces. */
      readonly title: string;
    }
  | LinesBlock<'code'>
  | LinesBlock<'table'>;

/** A block made of whole lines: a fenced code block or a table. */
export interface LinesBlock<Kind extends 'code' | 'table'> {
  readonly kind: Kind;
  readonly start: number;
  readonly end: number;
  readonly lines: readonly Span[];
}

/** What `parseBlocks` recognises. */
export interface BlockOptions {
  /** Recognise Markdown at all (headings, fences, tables). False: paragraphs only. */
  readonly markdown: boolean;
  /** Emit pipe tables as `table` blocks; otherwise their lines are paragraph text. */
  readonly tables: boolean;
  /**
   * Emit fenced code as `code` blocks; otherwise the fenced lines become paragraphs (split at blank
   * lines). Fences are recognised either way, so a `# comment` inside code is never a heading.
   */
  readonly code: boolean;
}

const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})(.*)$/u;
const FENCE_CLOSE = /^ {0,3}(`{3,}|~{3,})[ \t]*$/u;
const ATX_HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$/u;
const ATX_CLOSING = /(?:^|[ \t]+)#+$/u;
const SETEXT_UNDERLINE = /^ {0,3}(=+|-+)[ \t]*$/u;
// A line that starts a list item or a quote cannot be a setext heading's text (a `---` after a
// list is a thematic break).
const LIST_OR_QUOTE = /^ {0,3}(?:[-+*>]|\d{1,9}[.)])(?:[ \t]|$)/u;
const DELIMITER_CELL = /^[ \t]*:?-+:?[ \t]*$/u;
const BLANK = /^\s*$/u;

/** Splits the text into blocks; see {@link Block}. Linear in the length of the text. */
export function parseBlocks(text: string, options: BlockOptions): Block[] {
  const lines = splitLines(text);
  const blocks: Block[] = [];
  let paragraph: Line[] = []; // the open paragraph's lines

  const flushParagraph = (): void => {
    const first = paragraph[0];
    const last = paragraph.at(-1);
    if (first !== undefined && last !== undefined)
      pushTrimmed(blocks, text, 'paragraph', first.start, last.end);
    paragraph = [];
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line === undefined) break;
    if (BLANK.test(line.text)) {
      flushParagraph();
      continue;
    }
    if (!options.markdown) {
      paragraph.push(line);
      continue;
    }

    const [, marker = '', info = ''] = FENCE_OPEN.exec(line.text) ?? [];
    if (marker !== '' && !(marker.startsWith('`') && info.includes('`'))) {
      flushParagraph();
      const last = findFenceEnd(lines, i, marker);
      const fenced = lines.slice(i, last + 1);
      if (options.code) blocks.push(linesBlock('code', text, fenced));
      else pushParagraphs(blocks, text, fenced);
      i = last;
      continue;
    }

    const [, hashes = '', rest = ''] = ATX_HEADING.exec(line.text) ?? [];
    if (hashes !== '') {
      flushParagraph();
      const title = rest.replace(ATX_CLOSING, '').trim();
      pushTrimmed(blocks, text, 'heading', line.start, line.end, hashes.length, title);
      continue;
    }

    const [, underline = ''] = SETEXT_UNDERLINE.exec(line.text) ?? [];
    const first = paragraph[0];
    if (underline !== '' && first !== undefined && !LIST_OR_QUOTE.test(first.text)) {
      const title = paragraph.map((l) => l.text.trim()).join(' ');
      pushTrimmed(blocks, text, 'heading', first.start, line.end, underline.startsWith('=') ? 1 : 2, title);
      paragraph = [];
      continue;
    }

    if (options.tables && isTableStart(line.text, lines[i + 1]?.text ?? '')) {
      flushParagraph();
      let last = i + 1;
      while (isTableRow(lines[last + 1]?.text ?? '')) last++;
      blocks.push(linesBlock('table', text, lines.slice(i, last + 1)));
      i = last;
      continue;
    }

    paragraph.push(line);
  }
  flushParagraph();
  return blocks;
}

interface Line extends Span {
  readonly text: string;
}

/** The lines of the text, split at `\n` (the text is normalized: no CR), line breaks excluded. */
function splitLines(text: string): Line[] {
  const lines: Line[] = [];
  let start = 0;
  for (;;) {
    const newline = text.indexOf('\n', start);
    const end = newline === -1 ? text.length : newline;
    lines.push({ start, end, text: text.slice(start, end) });
    if (newline === -1) return lines;
    start = newline + 1;
  }
}

/**
 * The index of a fenced block's last line: the closing fence (same character, at least as long),
 * or — as in CommonMark, an unclosed fence runs to the end of the document — the last non-blank
 * line.
 */
function findFenceEnd(lines: readonly Line[], open: number, marker: string): number {
  let lastNonBlank = open;
  for (let j = open + 1; j < lines.length; j++) {
    const line = lines[j]?.text ?? '';
    const [, close = ''] = FENCE_CLOSE.exec(line) ?? [];
    if (close.startsWith(marker.charAt(0)) && close.length >= marker.length) return j;
    if (!BLANK.test(line)) lastNonBlank = j;
  }
  return lastNonBlank;
}

/**
 * A GFM table starts at a header row containing a pipe, followed by a delimiter row (cells of
 * dashes with optional alignment colons, at least one pipe) with the same number of cells.
 */
function isTableStart(header: string, delimiter: string): boolean {
  if (!header.includes('|') || !delimiter.includes('|')) return false;
  const delimiterCells = splitCells(delimiter);
  return (
    delimiterCells.length > 0 &&
    delimiterCells.every((cell) => DELIMITER_CELL.test(cell)) &&
    delimiterCells.length === splitCells(header).length
  );
}

/**
 * A table continues while lines are non-blank and contain a pipe. (GFM would also take a pipe-less
 * line as a one-cell row; ending the table there keeps a following paragraph out of it.)
 */
function isTableRow(line: string): boolean {
  return line.includes('|') && !BLANK.test(line);
}

/** Cells of a table row: split at unescaped pipes, one leading and one trailing pipe ignored. */
function splitCells(row: string): string[] {
  let body = row.trim();
  if (body.startsWith('|')) body = body.slice(1);
  if (body.endsWith('|') && !body.endsWith('\\|')) body = body.slice(0, -1);
  return body.split(/(?<!\\)\|/u);
}

/** A code or table block over `lines` (at least one), each line's trailing whitespace removed. */
function linesBlock<Kind extends 'code' | 'table'>(
  kind: Kind,
  text: string,
  lines: readonly Span[],
): LinesBlock<Kind> {
  const trimmed = lines.map(({ start, end }) => ({ start, end: trimEnd(text, start, end) }));
  const start = trimmed[0]?.start ?? 0;
  return { kind, start, end: trimmed.at(-1)?.end ?? start, lines: trimmed };
}

/** Fenced lines as ordinary text: paragraphs separated by blank lines. */
function pushParagraphs(blocks: Block[], text: string, lines: readonly Span[]): void {
  let first: Span | undefined;
  let last: Span | undefined;
  for (const line of lines) {
    if (BLANK.test(text.slice(line.start, line.end))) {
      if (first !== undefined && last !== undefined)
        pushTrimmed(blocks, text, 'paragraph', first.start, last.end);
      first = undefined;
      continue;
    }
    first ??= line;
    last = line;
  }
  if (first !== undefined && last !== undefined)
    pushTrimmed(blocks, text, 'paragraph', first.start, last.end);
}

function pushTrimmed(
  blocks: Block[],
  text: string,
  kind: 'paragraph' | 'heading',
  start: number,
  end: number,
  level = 0,
  title = '',
): void {
  let from = start;
  while (from < end && /\s/u.test(text.charAt(from))) from++;
  const to = trimEnd(text, from, end);
  if (from === to) return;
  blocks.push(
    kind === 'heading' ? { kind, start: from, end: to, level, title } : { kind, start: from, end: to },
  );
}

/** The end of `[start, end)` without trailing whitespace (UTF-16 units suffice: no surrogate is whitespace). */
function trimEnd(text: string, start: number, end: number): number {
  let to = end;
  while (to > start && /\s/u.test(text.charAt(to - 1))) to--;
  return to;
}
