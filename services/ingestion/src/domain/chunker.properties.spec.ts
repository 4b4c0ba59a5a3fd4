import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { chunkText, type ChunkPiece } from './chunker.js';

// Everything here is computed on code-point arrays (`Array.from`), independently of the chunker's
// UTF-16 arithmetic, and restates the contract of `Chunk` in proto/engram/ingestion/v1/document.proto.

interface Options {
  chunkSize: number;
  overlap: number;
  keepTablesWhole: boolean;
  keepCodeWhole: boolean;
  markdown: boolean;
}

const isWs = (c: string | undefined): boolean => c !== undefined && /^\s$/u.test(c);
const allWs = (cps: readonly string[]): boolean => cps.every(isWs);

/** The overlap a chunk following `previous` must carry (before the whitespace-gap rule): exactly
 * the configured length, or the whole predecessor range when that is shorter. */
function expectedOverlap(previous: ChunkPiece, overlap: number): number {
  return Math.min(overlap, previous.endOffset - previous.startOffset);
}

/** Start offsets of the source's lines, and a lookup of the line containing an offset. */
function lineIndex(cps: readonly string[]): {
  startOf: (offset: number) => number;
  endOf: (offset: number) => number;
} {
  return {
    startOf: (offset) => {
      let p = offset;
      while (p > 0 && cps[p - 1] !== '\n') p--;
      return p;
    },
    endOf: (offset) => {
      let p = offset;
      while (p < cps.length && cps[p] !== '\n') p++;
      return p;
    },
  };
}

type Must = (condition: boolean, rule: string) => void;

/**
 * Asserts every invariant of the chunk contract, throwing on the first violation. (Plain checks
 * rather than `expect` per chunk: thousands of chunks per run make `expect` the bottleneck.)
 */
function checkInvariants(text: string, options: Options, chunks: readonly ChunkPiece[]): void {
  const cps = Array.from(text);
  const covered = new Array<boolean>(cps.length).fill(false);
  let position = 0; // end of the previous chunk's source range
  chunks.forEach((chunk, index) => {
    const must: Must = (condition, rule) => {
      if (!condition) throw new Error(`chunk ${index} breaks "${rule}": ${JSON.stringify(chunk)}`);
    };
    const textCps = Array.from(chunk.text);
    const slice = cps.slice(chunk.startOffset, chunk.endOffset);
    const own = chunk.startOffset + chunk.overlapPrefixChars;

    // (6) Valid code-point offsets; text = header + source slice.
    must(chunk.ordinal === index, 'dense ordinals');
    must(Number.isInteger(chunk.startOffset) && Number.isInteger(chunk.endOffset), 'integer offsets');
    must(
      0 <= chunk.startOffset && chunk.startOffset < chunk.endOffset && chunk.endOffset <= cps.length,
      'in range',
    );
    must(textCps.slice(chunk.headerPrefixChars).join('') === slice.join(''), 'text = header + source slice');
    must(!allWs(slice), 'not whitespace only');

    // (3) Never over the size, overlap and header included.
    must(textCps.length <= options.chunkSize, 'at most chunkSize code points');

    // (2) The own ranges [start + overlap, end) are disjoint, increasing, non-empty, and only
    // whitespace lies between them: the source is g0 + own0 + g1 + own1 + … + gn with every g
    // whitespace-only.
    must(own >= position && own < chunk.endOffset, 'own ranges disjoint, increasing, non-empty');
    must(allWs(cps.slice(position, own)), 'only whitespace between own ranges');
    position = chunk.endOffset;
    for (let i = chunk.startOffset; i < chunk.endOffset; i++) covered[i] = true;

    checkOverlap(cps, options, chunk, chunks[index - 1], must);
    checkStructure(cps, options, chunks, index, must);
  });
  expect(allWs(cps.slice(position))).toBe(true);
  // (1) Every non-whitespace character lies in some chunk's range.
  expect(cps.filter((c, i) => !isWs(c) && !covered[i])).toEqual([]);
}

/**
 * (4) Overlap: only TEXT after TEXT, and equal to the predecessor's tail. Where the split fell
 * inside a paragraph — no line break between the predecessor and the new text, so both sides are
 * one paragraph — exactly the length rule 5 gives for the configured overlap. Elsewhere the overlap
 * may give way to a paragraph, but is never longer than that and still starts at a word (it is
 * what the rule gives for its own length).
 */
function checkOverlap(
  cps: readonly string[],
  options: Options,
  chunk: ChunkPiece,
  previous: ChunkPiece | undefined,
  must: Must,
): void {
  const overlap = chunk.overlapPrefixChars;
  must(overlap >= 0 && overlap <= options.overlap, 'overlap within the option');
  if (previous === undefined || chunk.kind !== 'TEXT' || previous.kind !== 'TEXT') {
    must(overlap === 0, 'no overlap unless TEXT after TEXT');
    return;
  }
  let newText = chunk.startOffset + overlap;
  while (isWs(cps[newText])) newText++;
  const gapCps = cps.slice(previous.endOffset, newText);
  const gap = gapCps.length;
  const full = expectedOverlap(previous, options.overlap);
  const insideParagraph = !gapCps.includes('\n');
  if (overlap > 0) {
    must(chunk.startOffset + overlap === previous.endOffset, 'overlap ends where the predecessor ends');
    const tail = Array.from(previous.text).slice(-overlap).join('');
    must(Array.from(chunk.text).slice(0, overlap).join('') === tail, 'overlap = predecessor tail');
    must(gap <= options.overlap && overlap + gap < options.chunkSize, 'overlap only across a short gap');
    if (insideParagraph) must(overlap === full, 'overlap length rule inside a paragraph');
    must(overlap <= full, 'overlap never longer than the rule');
  } else if (options.overlap > 0 && insideParagraph) {
    // No overlap inside a paragraph only when the whitespace before the new text is longer than the
    // overlap or leaves no room.
    must(gap > options.overlap || full + gap >= options.chunkSize, 'overlap dropped only at a long gap');
  }
}

/** (5) Structure: TABLE and CODE chunks hold whole lines; table continuations start with the header. */
function checkStructure(
  cps: readonly string[],
  options: Options,
  chunks: readonly ChunkPiece[],
  index: number,
  must: Must,
): void {
  const chunk = chunks[index]!;
  if (chunk.kind === 'TEXT') {
    must(chunk.headerPrefixChars === 0, 'no header in TEXT');
    return;
  }
  // Rows of a split table get chunkSize − header code points (the first chunk holds the header in
  // its own range, the others a copy of it).
  const next = chunks[index + 1];
  const headerLength =
    chunk.headerPrefixChars > 0
      ? chunk.headerPrefixChars
      : next?.kind === 'TABLE' && next.headerPrefixChars > 0
        ? next.headerPrefixChars
        : 0;
  const room = options.chunkSize - headerLength;
  // Whole lines: starts at a line start and ends where only whitespace is left on the line, unless
  // the line is too long for a chunk (a hard cut).
  const lines = lineIndex(cps);
  const lineStart = lines.startOf(chunk.startOffset);
  if (lineStart !== chunk.startOffset) {
    must(lines.endOf(chunk.startOffset) - lineStart > room, 'starts at a line start unless cut');
  }
  const lineEnd = lines.endOf(chunk.endOffset - 1);
  if (!allWs(cps.slice(chunk.endOffset, lineEnd))) {
    must(lineEnd - lines.startOf(chunk.endOffset - 1) > room, 'ends at a line end unless cut');
  }
  if (chunk.headerPrefixChars > 0) {
    // The header is the table's header and delimiter rows with their line breaks, the same as at
    // the start of the table's first chunk.
    const header = Array.from(chunk.text).slice(0, chunk.headerPrefixChars).join('');
    const previous = chunks[index - 1];
    must(chunk.kind === 'TABLE', 'headers only in TABLE');
    must(/^[^\n]*\|[^\n]*\n[^\n]*\|[^\n]*\n$/u.test(header), 'header = header row + delimiter row');
    must(previous?.kind === 'TABLE' && previous.text.startsWith(header), 'same header as the table start');
  }
}

// ---------------------------------------------------------------------------------------------
// Generators

const latinWords = fc.constantFrom(
  'the',
  'memory',
  'Service',
  'retrieval',
  'chunks',
  "don't",
  'GPT-4o',
  'e.g.',
  'i.e.',
  'Dr.',
  'Mr.',
  'U.S.',
  'etc.',
  'No.',
  '3.14',
  '1,000',
  'https://example.com/a.b?x=1;y=2',
  'www.example.org.',
  'pneumonoultramicroscopicsilicovolcanoconiosis',
  'café',
  'cafe\u0301',
);
const cjkWords = fc.constantFrom(
  '记忆',
  '检索',
  '服务',
  '文档',
  '中文',
  '句子',
  '東京',
  'タワー',
  '𠀀𠀁',
  '，',
  '、',
);
const symbols = fc.constantFrom('😀', '👨‍👩‍👧', '🇫🇷', '👍🏽', '©️', '\u3000', '—', '"', '“', '(', '|');
const word = fc.oneof(
  { weight: 5, arbitrary: latinWords },
  { weight: 3, arbitrary: cjkWords },
  { weight: 1, arbitrary: symbols },
);
const terminator = fc.constantFrom('.', '!', '?', ';', '。', '！', '？', '；', '', '?!', '...', '……');
const closer = fc.constantFrom('', '', '"', '”', '」', ')', '）');
const sentence = fc
  .tuple(fc.array(word, { minLength: 1, maxLength: 14 }), fc.constantFrom(' ', ''), terminator, closer)
  .map(([words, joiner, end, close]) => words.join(joiner) + end + close);
const paragraph = fc
  .tuple(fc.array(sentence, { minLength: 1, maxLength: 8 }), fc.constantFrom(' ', '', '\n', '  '))
  .map(([sentences, joiner]) => sentences.join(joiner));

/** A generated block with what the chunker must do with it. */
interface GenBlock {
  readonly kind: 'paragraph' | 'heading' | 'table' | 'code';
  readonly text: string;
  readonly level?: number;
  readonly title?: string;
}

const cell = fc
  .array(fc.oneof(latinWords, cjkWords, fc.constantFrom('😀', '42', '')), { minLength: 0, maxLength: 4 })
  .map((words) => words.join(' ').replaceAll('|', ''));
const table: fc.Arbitrary<GenBlock> = fc
  .integer({ min: 1, max: 4 })
  .chain((columns) =>
    fc.tuple(
      fc.array(cell, { minLength: columns, maxLength: columns }),
      fc.array(fc.array(cell, { minLength: columns, maxLength: columns }), { minLength: 0, maxLength: 14 }),
      fc.constantFrom('---', ':--', '--:', ':-:'),
      fc.constantFrom('', '', ' ', '   '), // indentation of the body rows
    ),
  )
  .map(([header, rows, dashes, indent]) => {
    const row = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
    const lines = [
      row(header),
      `|${header.map(() => dashes).join('|')}|`,
      ...rows.map((r) => indent + row(r)),
    ];
    return { kind: 'table', text: lines.join('\n') };
  });
const codeLine = fc.oneof(
  fc.constantFrom(
    '',
    '  ',
    '# not a heading',
    '| not | a table |',
    'return x; // done. Next!',
    '\tindented();',
  ),
  fc.array(word, { maxLength: 12 }).map((words) => '    '.slice(0, words.length % 5) + words.join(' ')),
);
const code: fc.Arbitrary<GenBlock> = fc
  .tuple(
    fc.constantFrom('```', '~~~', '````'),
    fc.constantFrom('', 'ts', 'python'),
    fc.array(codeLine, { maxLength: 16 }),
  )
  .map(([fence, info, lines]) => ({ kind: 'code', text: [fence + info, ...lines, fence].join('\n') }));
const heading: fc.Arbitrary<GenBlock> = fc
  .tuple(
    fc.integer({ min: 1, max: 6 }),
    fc.array(fc.oneof(latinWords, cjkWords), { minLength: 1, maxLength: 5 }),
  )
  .map(([level, words]) => {
    const title = words.join(' ');
    return { kind: 'heading', text: `${'#'.repeat(level)} ${title}`, level, title };
  });
const block: fc.Arbitrary<GenBlock> = fc.oneof(
  { weight: 6, arbitrary: paragraph.map((text): GenBlock => ({ kind: 'paragraph', text })) },
  { weight: 2, arbitrary: heading },
  { weight: 2, arbitrary: table },
  { weight: 2, arbitrary: code },
);
const separator = fc.oneof(
  fc.constantFrom('\n\n', '\n\n\n', '\n \n', ' \n\n'),
  fc.string({ unit: fc.constantFrom(' ', '\n', '\t', '\u3000'), maxLength: 40 }).map((ws) => `\n${ws}\n`),
);

/** A Markdown document and its blocks with their code-point offsets. */
const document = fc
  .tuple(fc.constantFrom('', '\n', '  \n\n'), fc.array(fc.tuple(block, separator), { maxLength: 10 }))
  .map(([lead, parts]) => {
    let text = lead;
    const placed: (GenBlock & { start: number; end: number })[] = [];
    for (const [generated, sep] of parts) {
      const start = Array.from(text).length;
      text += generated.text;
      placed.push({ ...generated, start, end: Array.from(text).length });
      text += sep;
    }
    return { text, blocks: placed };
  });

/** Anything: arbitrary code points mixed with the characters the rules look at. */
const anyText = fc.string({
  unit: fc.oneof(
    fc.constantFrom(
      ' ',
      ' ',
      '\n',
      '\n',
      '\t',
      '.',
      '。',
      '!',
      ';',
      '|',
      '-',
      '#',
      '`',
      '~',
      ':',
      'a',
      'B',
      '1',
    ),
    fc.constantFrom('中', '😀', '\u0301', '\u200D', '\uFE0F', '\u3000', '”', ')', '\u00A0'),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  ),
  maxLength: 600,
});

const options: fc.Arbitrary<Options> = fc
  .oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 41, max: 400 }))
  .chain((chunkSize) =>
    fc.record({
      chunkSize: fc.constant(chunkSize),
      overlap: fc.oneof(
        fc.constant(0),
        fc.constant(Math.floor(chunkSize / 2)),
        fc.integer({ min: 0, max: Math.floor(chunkSize / 2) }),
      ),
      keepTablesWhole: fc.boolean(),
      keepCodeWhole: fc.boolean(),
      markdown: fc.boolean(),
    }),
  );

// ---------------------------------------------------------------------------------------------

describe('chunkText properties', () => {
  it('keeps every invariant of the Chunk contract on Markdown-like documents', () => {
    fc.assert(
      fc.property(document, options, ({ text }, opts) => {
        checkInvariants(text, opts, chunkText(text, opts));
      }),
      { numRuns: 400 },
    );
  });

  it('keeps every invariant of the Chunk contract on arbitrary text', () => {
    fc.assert(
      fc.property(anyText, options, (text, opts) => {
        checkInvariants(text, opts, chunkText(text, opts));
      }),
      { numRuns: 400 },
    );
  });

  it('keeps tables and code that fit whole, as one chunk of their kind', () => {
    fc.assert(
      fc.property(document, options, ({ text, blocks }, opts) => {
        const markdown = { ...opts, markdown: true };
        const chunks = chunkText(text, markdown);
        for (const generated of blocks) {
          const whole =
            (generated.kind === 'table' && markdown.keepTablesWhole) ||
            (generated.kind === 'code' && markdown.keepCodeWhole);
          const inside = chunks.filter((c) => c.startOffset < generated.end && c.endOffset > generated.start);
          if (whole) {
            const kind = generated.kind === 'table' ? 'TABLE' : 'CODE';
            expect(inside.every((c) => c.kind === kind)).toBe(true);
            if (Array.from(generated.text).length <= markdown.chunkSize) {
              expect(inside.map((c) => c.text)).toEqual([generated.text]);
            }
            // A split table repeats its header (header and delimiter rows with their line breaks)
            // in every chunk after the first, unless the header takes over half the chunk size.
            const header = generated.text.split('\n').slice(0, 2).join('\n') + '\n';
            const headerLength = Array.from(header).length;
            if (kind === 'TABLE' && inside.length > 1 && headerLength * 2 <= markdown.chunkSize) {
              expect(inside[0]!.text.startsWith(header)).toBe(true);
              for (const continuation of inside.slice(1)) {
                expect(continuation.text.startsWith(header)).toBe(true);
                expect(continuation.headerPrefixChars).toBe(headerLength);
              }
            }
          } else {
            expect(inside.every((c) => c.kind === 'TEXT')).toBe(true);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('gives every chunk the heading trail in force where its own text begins', () => {
    fc.assert(
      fc.property(document, options, ({ text, blocks }, opts) => {
        const cps = Array.from(text);
        for (const chunk of chunkText(text, { ...opts, markdown: true })) {
          let own = chunk.startOffset + chunk.overlapPrefixChars;
          while (isWs(cps[own])) own++;
          const trail: { level: number; title: string }[] = [];
          for (const b of blocks) {
            if (b.kind !== 'heading' || b.start > own) continue;
            while ((trail.at(-1)?.level ?? 0) >= b.level!) trail.pop();
            trail.push({ level: b.level!, title: b.title! });
          }
          expect(chunk.headingPath).toEqual(trail.map((h) => h.title));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('overlaps Chinese text by exactly the configured length', () => {
    const chinese = fc
      .array(
        fc.tuple(
          fc.array(cjkWords, { minLength: 1, maxLength: 30 }),
          fc.constantFrom('。', '！', '？', '；', ''),
        ),
        {
          minLength: 1,
          maxLength: 40,
        },
      )
      .map((sentences) => sentences.map(([words, end]) => words.join('') + end).join(''));
    fc.assert(
      fc.property(chinese, fc.integer({ min: 20, max: 300 }), (text, chunkSize) => {
        const overlap = Math.floor(chunkSize / 4);
        const chunks = chunkText(text, { chunkSize, overlap });
        chunks.slice(1).forEach((chunk, i) => {
          const previous = chunks[i]!;
          expect(chunk.overlapPrefixChars).toBe(Math.min(overlap, previous.endOffset - previous.startOffset));
        });
      }),
      { numRuns: 200 },
    );
  });

  it('is deterministic', () => {
    fc.assert(
      fc.property(document, options, ({ text }, opts) => {
        expect(chunkText(text, opts)).toEqual(chunkText(text, opts));
      }),
      { numRuns: 100 },
    );
  });
});
