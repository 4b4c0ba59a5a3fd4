import { describe, expect, it } from '@jest/globals';
import { parseBlocks, type Block, type BlockOptions } from './markdown-blocks.js';

const ALL: BlockOptions = { markdown: true, tables: true, code: true };

/** Blocks as [kind, text] (and the title for headings) for readable expectations. */
function shape(text: string, options: BlockOptions = ALL): (string | number)[][] {
  return parseBlocks(text, options).map((block: Block) =>
    block.kind === 'heading'
      ? [block.kind, text.slice(block.start, block.end), block.level, block.title]
      : [block.kind, text.slice(block.start, block.end)],
  );
}

describe('parseBlocks', () => {
  it('separates paragraphs at blank lines, whitespace-only lines included', () => {
    expect(shape('  one\ntwo  \n \t\nthree\n\n\n', { markdown: false, tables: false, code: false })).toEqual([
      ['paragraph', 'one\ntwo'],
      ['paragraph', 'three'],
    ]);
  });

  it('recognises ATX headings, with closing hashes removed, as blocks of their own', () => {
    expect(shape('text\n# Title ##\n#5 bolts\n####### seven\n## C#\n#')).toEqual([
      ['paragraph', 'text'],
      ['heading', '# Title ##', 1, 'Title'],
      ['paragraph', '#5 bolts\n####### seven'],
      ['heading', '## C#', 2, 'C#'],
      ['heading', '#', 1, ''],
    ]);
  });

  it('recognises setext headings but not a rule after a list', () => {
    expect(shape('Big\nTitle\n===\n\nSmall\n---\n\n- item\n---')).toEqual([
      ['heading', 'Big\nTitle\n===', 1, 'Big Title'],
      ['heading', 'Small\n---', 2, 'Small'],
      ['paragraph', '- item\n---'],
    ]);
  });

  it('finds a table even right after paragraph text, and ends it at a line without a pipe', () => {
    expect(shape('Intro line\n| a | b |\n|:--|--:|\n| 1 | 2 |\n3 | 4\nafter')).toEqual([
      ['paragraph', 'Intro line'],
      ['table', '| a | b |\n|:--|--:|\n| 1 | 2 |\n3 | 4'],
      ['paragraph', 'after'],
    ]);
  });

  it('requires a delimiter row with a pipe and the header’s number of cells', () => {
    expect(shape('| a | b |\n|---|\n\na | b\n---')).toEqual([
      ['paragraph', '| a | b |\n|---|'],
      ['heading', 'a | b\n---', 2, 'a | b'],
    ]);
    expect(shape('| a \\| b |\n|---|')).toEqual([['table', '| a \\| b |\n|---|']]);
  });

  it('keeps fenced code whole, with ``` or ~~~, and closes only on a matching fence', () => {
    expect(shape('```ts\n# no\n\n~~~\n```\nafter\n\n~~~~\ncode\n~~~')).toEqual([
      ['code', '```ts\n# no\n\n~~~\n```'],
      ['paragraph', 'after'],
      ['code', '~~~~\ncode\n~~~'],
    ]);
    expect(shape('``` not`a fence\ntext')).toEqual([['paragraph', '``` not`a fence\ntext']]);
  });

  it('runs an unclosed fence to the last non-blank line of the document', () => {
    expect(shape('```\ncode\n\nmore\n\n\n')).toEqual([['code', '```\ncode\n\nmore']]);
  });

  it('turns code into paragraphs without `code`, and tables into paragraph text without `tables`', () => {
    const text = '```\n# a\n\nb\n```\n| a |\n|---|';
    expect(shape(text, { markdown: true, tables: false, code: false })).toEqual([
      ['paragraph', '```\n# a'],
      ['paragraph', 'b\n```'],
      ['paragraph', '| a |\n|---|'],
    ]);
  });
});
