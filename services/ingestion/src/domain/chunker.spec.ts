import { describe, expect, it } from '@jest/globals';
import {
  chunkText,
  DEFAULT_CHUNK_SIZE,
  DEFAULT_OVERLAP,
  resolveChunkOptions,
  sentencesOf,
  type ChunkPiece,
} from './chunker.js';

const length = (text: string): number => Array.from(text).length;
/** What each chunk adds: its source range without the overlap. */
const ownTexts = (text: string, chunks: readonly ChunkPiece[]): string[] => {
  const cps = Array.from(text);
  return chunks.map((c) =>
    cps
      .slice(c.startOffset + c.overlapPrefixChars, c.endOffset)
      .join('')
      .trim(),
  );
};

describe('sentencesOf', () => {
  it('splits Chinese text after 。！？； without needing a space', () => {
    expect(sentencesOf('今天天气很好。我们去公园吧！你来吗？来；好的')).toEqual([
      '今天天气很好。',
      '我们去公园吧！',
      '你来吗？',
      '来；',
      '好的',
    ]);
  });

  it('splits Latin text only where . ! ? ; is followed by whitespace', () => {
    expect(sentencesOf('One. Two! Three? Four; five.Six')).toEqual([
      'One.',
      'Two!',
      'Three?',
      'Four;',
      'five.Six',
    ]);
  });

  it('never splits after common abbreviations, initialisms or initials', () => {
    expect(
      sentencesOf(
        'Dr. Smith met Mr. Jones and Mrs. Lee in the U.S. at 5 p.m. today. ' +
          'They brought fruit, e.g. apples, i.e. the red ones, pears etc. and more. ' +
          'J. R. R. Tolkien wrote it. See No. 5 and Fig. 3 below. I said no. Fine.',
      ),
    ).toEqual([
      'Dr. Smith met Mr. Jones and Mrs. Lee in the U.S. at 5 p.m. today.',
      'They brought fruit, e.g. apples, i.e. the red ones, pears etc. and more.',
      'J. R. R. Tolkien wrote it.',
      'See No. 5 and Fig. 3 below.',
      'I said no.',
      'Fine.',
    ]);
  });

  it('never splits inside numbers, URLs or list numbers', () => {
    expect(
      sentencesOf(
        'Pi is 3.14 and e is 2.718. Version 1.2.3 shipped. See https://example.com/a.b?x=1;y=2 for details. ' +
          'Visit www.example.org. Steps:\n1. Open it\n2. Close it',
      ),
    ).toEqual([
      'Pi is 3.14 and e is 2.718.',
      'Version 1.2.3 shipped.',
      'See https://example.com/a.b?x=1;y=2 for details.',
      'Visit www.example.org.',
      'Steps:\n1. Open it\n2. Close it',
    ]);
  });

  it('keeps closing quotes and brackets with their sentence', () => {
    expect(sentencesOf('He said "Stop!" Then he left. (This is an aside.) Next.')).toEqual([
      'He said "Stop!"',
      'Then he left.',
      '(This is an aside.)',
      'Next.',
    ]);
    expect(sentencesOf('他说：“你好。”然后走了。「真的？」是的。')).toEqual([
      '他说：“你好。”',
      '然后走了。',
      '「真的？」',
      '是的。',
    ]);
  });

  it('keeps runs of terminators together', () => {
    expect(sentencesOf('Wait... what?! OK.')).toEqual(['Wait...', 'what?!', 'OK.']);
  });
});

describe('chunkText', () => {
  it('exports the measured defaults', () => {
    expect(DEFAULT_OVERLAP).toBe(150);
    expect(resolveChunkOptions()).toEqual({
      chunkSize: DEFAULT_CHUNK_SIZE,
      overlap: DEFAULT_OVERLAP,
      keepTablesWhole: true,
      keepCodeWhole: true,
      markdown: false,
    });
  });

  it('rejects invalid options and clamps only the default overlap', () => {
    expect(() => chunkText('x', { chunkSize: 0 })).toThrow(RangeError);
    expect(() => chunkText('x', { chunkSize: 10.5 })).toThrow(RangeError);
    expect(() => chunkText('x', { chunkSize: 200, overlap: 101 })).toThrow(RangeError);
    expect(() => chunkText('x', { chunkSize: 200, overlap: -1 })).toThrow(RangeError);
    expect(resolveChunkOptions({ chunkSize: 200 }).overlap).toBe(100);
  });

  it('gives no chunks for an empty or whitespace-only text', () => {
    expect(chunkText('')).toEqual([]);
    expect(chunkText(' \n\n\t\u3000 ')).toEqual([]);
  });

  it('packs paragraphs into one chunk while they fit', () => {
    const text = 'First paragraph.\n\nSecond paragraph.\n\n\nThird.';
    expect(chunkText(text, { chunkSize: 100, overlap: 10 })).toEqual([
      {
        ordinal: 0,
        kind: 'TEXT',
        text,
        startOffset: 0,
        endOffset: length(text),
        overlapPrefixChars: 0,
        headerPrefixChars: 0,
        headingPath: [],
      },
    ]);
  });

  it('starts a paragraph that does not fit in a new chunk, after the overlap', () => {
    const first = 'Alpha beta gamma delta.';
    const second = 'Epsilon zeta eta theta.';
    const text = `${first}\n\n${second}`;
    const chunks = chunkText(text, { chunkSize: 40, overlap: 10 });
    expect(chunks.map((c) => c.text)).toEqual([first, 'mma delta.\n\nEpsilon zeta eta theta.']);
    // Exactly the last 10 code points of the predecessor.
    expect(chunks[1]).toMatchObject({ startOffset: 13, overlapPrefixChars: 10, endOffset: length(text) });
    expect(ownTexts(text, chunks)).toEqual([first, second]);
  });

  it('shortens the overlap before a paragraph that fits whole only with less of it', () => {
    const first = 'Alpha beta gamma delta epsilon.';
    const second = 'Zeta eta theta iota kappa.';
    const text = `${first}\n\n${second}`;
    // 15 code points of overlap would leave 40 − 15 − 2 = 23 < 26 for the paragraph; 12 fit.
    const chunks = chunkText(text, { chunkSize: 40, overlap: 15 });
    expect(chunks.map((c) => [c.text, c.overlapPrefixChars])).toEqual([
      [first, 0],
      [`lta epsilon.\n\n${second}`, 12],
    ]);
    // A paragraph that fills a chunk on its own gets no overlap at all, and is not split.
    const full = 'x'.repeat(40);
    expect(chunkText(`${first}\n\n${full}`, { chunkSize: 40, overlap: 15 }).map((c) => c.text)).toEqual([
      first,
      full,
    ]);
  });

  it('splits an over-long Chinese paragraph at sentence ends', () => {
    const sentences = [
      '今天的天气非常好，阳光明媚。',
      '我们一起去公园散步吧！',
      '你想和我们一起来吗？',
      '好的；',
      '那就马上出发。',
    ];
    const chunks = chunkText(sentences.join(''), { chunkSize: 16, overlap: 0 });
    // Greedy: the third and fourth sentences share a chunk (13 ≤ 16), the fifth does not fit.
    expect(chunks.map((c) => c.text)).toEqual([
      sentences[0],
      sentences[1],
      sentences[2]! + sentences[3]!,
      sentences[4],
    ]);
  });

  it('overlaps Chinese text by exactly the overlap, at the default settings', () => {
    const text = '记忆服务把文档切成块，每块都保留在原文中的位置。'.repeat(200);
    const chunks = chunkText(text);
    expect(chunks.length).toBeGreaterThan(5);
    for (const [i, chunk] of chunks.entries()) {
      expect(length(chunk.text)).toBeLessThanOrEqual(DEFAULT_CHUNK_SIZE);
      if (i > 0) {
        expect(chunk.overlapPrefixChars).toBe(DEFAULT_OVERLAP);
        expect(chunk.startOffset + DEFAULT_OVERLAP).toBe(chunks[i - 1]!.endOffset);
        expect(Array.from(chunk.text).slice(0, 150).join('')).toBe(
          Array.from(chunks[i - 1]!.text)
            .slice(-150)
            .join(''),
        );
      }
    }
  });

  it('overlaps English text by exactly the configured length inside a paragraph', () => {
    const words =
      'Engram keeps the offsets of every chunk so that a citation can point back into the source text';
    const text = Array.from({ length: 40 }, (_, i) => `${words} number ${i}.`).join(' ');
    const chunks = chunkText(text, { chunkSize: 300, overlap: 150 });
    expect(chunks.length).toBeGreaterThan(2);
    for (const [i, chunk] of chunks.slice(1).entries()) {
      expect(chunk.overlapPrefixChars).toBe(150);
      expect(chunk.startOffset + 150).toBe(chunks[i]!.endOffset);
    }
  });

  it('cuts a sentence longer than a chunk at whitespace, or at the limit when there is none', () => {
    const text = 'word '.repeat(30).trim();
    const chunks = chunkText(text, { chunkSize: 22, overlap: 0 });
    expect(chunks.map((c) => c.text)).toEqual([
      'word word word word',
      ...Array.from({ length: 6 }, () => 'word word word word'),
      'word word',
    ]);
    const solid = 'x'.repeat(25);
    expect(chunkText(solid, { chunkSize: 10, overlap: 0 }).map((c) => c.text)).toEqual([
      'x'.repeat(10),
      'x'.repeat(10),
      'xxxxx',
    ]);
  });

  it('counts offsets and sizes in code points and never splits one', () => {
    const text = '😀'.repeat(7);
    const chunks = chunkText(text, { chunkSize: 3, overlap: 1 });
    for (const chunk of chunks) {
      expect(length(chunk.text)).toBeLessThanOrEqual(3);
      expect(chunk.text).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
      expect(chunk.text).toBe(Array.from(text).slice(chunk.startOffset, chunk.endOffset).join(''));
    }
    expect(chunks.at(-1)!.endOffset).toBe(7);
  });

  it('does not separate a joined emoji or a combining mark when it can avoid it', () => {
    const family = '👨‍👩‍👧'; // 5 code points
    const chunks = chunkText(family.repeat(4), { chunkSize: 12, overlap: 0 });
    expect(chunks.map((c) => c.text)).toEqual([family + family, family + family]);
    const accents = 'e\u0301'.repeat(8); // é as e + combining acute
    for (const chunk of chunkText(accents, { chunkSize: 5, overlap: 0 })) {
      expect(chunk.text.startsWith('\u0301')).toBe(false);
    }
  });

  it('drops the overlap across a whitespace gap longer than the overlap', () => {
    const text = `${'a'.repeat(30)}\n${' '.repeat(30)}\n${'b'.repeat(30)}`;
    const chunks = chunkText(text, { chunkSize: 40, overlap: 10 });
    expect(chunks.map((c) => [c.text, c.overlapPrefixChars])).toEqual([
      ['a'.repeat(30), 0],
      ['b'.repeat(30), 0],
    ]);
  });
});

describe('chunkText on Markdown', () => {
  const header = '| id | name | notes |\n|---:|------|-------|\n';
  const rows = Array.from({ length: 40 }, (_, i) => `| ${i} | item ${i} | 第${i}行 😀 |`);
  const table = header + rows.join('\n');

  it('keeps a table that fits whole, as one TABLE chunk of its own', () => {
    const small = header + rows.slice(0, 3).join('\n');
    const text = `Intro.\n\n${small}\n\nOutro.`;
    const chunks = chunkText(text, { chunkSize: 500, overlap: 50, markdown: true });
    expect(chunks.map((c) => [c.kind, c.text, c.overlapPrefixChars])).toEqual([
      ['TEXT', 'Intro.', 0],
      ['TABLE', small, 0],
      ['TEXT', 'Outro.', 0],
    ]);
  });

  it('splits a big table between rows and repeats the header in every continuation chunk', () => {
    const chunks = chunkText(table, { chunkSize: 200, overlap: 50, markdown: true });
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks.every((c) => c.kind === 'TABLE' && c.overlapPrefixChars === 0)).toBe(true);
    expect(chunks[0]!.headerPrefixChars).toBe(0);
    const seen: string[] = [];
    for (const chunk of chunks) {
      expect(length(chunk.text)).toBeLessThanOrEqual(200);
      expect(chunk.text.startsWith(header)).toBe(true);
      const body = chunk.text.slice(header.length);
      if (chunk.ordinal > 0) expect(chunk.headerPrefixChars).toBe(length(header));
      seen.push(...body.split('\n'));
    }
    expect(seen).toEqual(rows); // every row whole, once, in order
  });

  it('cuts a row longer than the room after the header, and still repeats the header', () => {
    const long = `| 1 | ${'word '.repeat(40).trim()} | end |`;
    const text = `${header}| 0 | short | row |\n${long}`;
    const chunks = chunkText(text, { chunkSize: 120, overlap: 0, markdown: true });
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks) {
      expect(chunk.kind).toBe('TABLE');
      expect(chunk.text.startsWith(header)).toBe(true);
      expect(length(chunk.text)).toBeLessThanOrEqual(120);
    }
    expect(chunks[0]!.text).toBe(`${header}| 0 | short | row |`);
    expect(
      chunks
        .slice(1)
        .map((c) => c.text.slice(header.length))
        .join(' '),
    ).toBe(long);
  });

  it('splits a table whose header takes over half the chunk like code, without repeating it', () => {
    const chunks = chunkText(table, { chunkSize: 80, overlap: 0, markdown: true });
    expect(chunks[0]!.text.startsWith(header)).toBe(true);
    expect(chunks.slice(1).every((c) => c.headerPrefixChars === 0 && !c.text.startsWith('| id'))).toBe(true);
  });

  it('splits a big code block between whole lines, fences not repeated', () => {
    const lines = Array.from({ length: 60 }, (_, i) => `  const value${i} = compute(${i}); # not a heading`);
    const block = ['```ts', ...lines, '```'].join('\n');
    const chunks = chunkText(`Code:\n\n${block}\n\nDone.`, { chunkSize: 200, overlap: 50, markdown: true });
    const code = chunks.filter((c) => c.kind === 'CODE');
    expect(code.length).toBeGreaterThan(5);
    expect(code[0]!.text.startsWith('```ts\n')).toBe(true);
    expect(code.at(-1)!.text.endsWith('\n```')).toBe(true);
    expect(code.flatMap((c) => c.text.split('\n'))).toEqual(['```ts', ...lines, '```']);
    expect(code.every((c) => c.overlapPrefixChars === 0 && length(c.text) <= 200)).toBe(true);
    expect(chunks.at(-1)).toMatchObject({
      kind: 'TEXT',
      text: 'Done.',
      overlapPrefixChars: 0,
      headingPath: [],
    });
  });

  it('tracks the heading trail, ATX and setext, outside code blocks only', () => {
    const text = [
      'Preface.',
      '# Guide',
      'Welcome to the guide.',
      '## Installation ##',
      '### Linux',
      'Run the installer.',
      '```sh\n# not a heading\n```',
      '## Usage',
      'Usage text.',
      'Another Part\n============',
      'Closing text.',
    ].join('\n\n');
    const chunks = chunkText(text, { chunkSize: 30, overlap: 0, markdown: true });
    expect(chunks.map((c) => [c.kind, c.text, c.headingPath])).toEqual([
      ['TEXT', 'Preface.\n\n# Guide', []],
      ['TEXT', 'Welcome to the guide.', ['Guide']],
      ['TEXT', '## Installation ##\n\n### Linux', ['Guide', 'Installation']],
      ['TEXT', 'Run the installer.', ['Guide', 'Installation', 'Linux']],
      ['CODE', '```sh\n# not a heading\n```', ['Guide', 'Installation', 'Linux']],
      ['TEXT', '## Usage\n\nUsage text.', ['Guide', 'Usage']],
      ['TEXT', 'Another Part\n============', ['Another Part']],
      ['TEXT', 'Closing text.', ['Another Part']],
    ]);
  });

  it('takes the heading trail where the new text begins, not where the overlap begins', () => {
    const text = `# One\n\n${'alpha '.repeat(8).trim()}\n\n# Two\n\n${'beta '.repeat(8).trim()}`;
    const chunks = chunkText(text, { chunkSize: 60, overlap: 12, markdown: true });
    const second = chunks.find((c) => c.text.includes('# Two'))!;
    expect(second.overlapPrefixChars).toBeGreaterThan(0);
    expect(second.headingPath).toEqual(['Two']);
  });

  it('treats everything as text without markdown, and code as text without keepCodeWhole', () => {
    const text = `# Title\n\n${header}| 1 | a | b |\n\n\`\`\`\n# comment\n\`\`\``;
    const plain = chunkText(text, { chunkSize: 500 });
    expect(plain.map((c) => [c.kind, c.headingPath])).toEqual([['TEXT', []]]);
    const noCode = chunkText(text, {
      chunkSize: 30,
      overlap: 0,
      markdown: true,
      keepCodeWhole: false,
      keepTablesWhole: false,
    });
    expect(noCode.every((c) => c.kind === 'TEXT')).toBe(true);
    expect(noCode.at(-1)!.headingPath).toEqual(['Title']);
  });
});
