import { convert, type FormatCallback, type HtmlToTextOptions } from 'html-to-text';

/** A DOM node as html-to-text (htmlparser2) hands it to formatters. */
interface DomNode {
  type: string;
  name?: string;
  data?: string;
  children?: DomNode[];
}

/** The text of a node, with whitespace collapsed (for table cells). */
function textOf(node: DomNode): string {
  if (node.type === 'text') return node.data ?? '';
  if (node.name === 'br') return ' ';
  return (node.children ?? []).map(textOf).join('');
}

function rowsOf(node: DomNode): DomNode[] {
  return (node.children ?? []).flatMap((child) => {
    if (child.name === 'tr') return [child];
    if (child.name === 'thead' || child.name === 'tbody' || child.name === 'tfoot') return rowsOf(child);
    return [];
  });
}

const heading =
  (level: number): FormatCallback =>
  (elem, walk, builder) => {
    builder.openBlock({ leadingLineBreaks: 2 });
    builder.addInline(`${'#'.repeat(level)} `);
    walk(elem.children, builder);
    builder.closeBlock({ trailingLineBreaks: 2 });
  };

/** `pre` as a fenced code block, so the Markdown chunking rules keep code together. */
const fencedPre: FormatCallback = (elem, _walk, builder) => {
  const code = textOf(elem).replace(/\n$/, '');
  builder.openBlock({ leadingLineBreaks: 2 });
  builder.addLiteral(`\`\`\`\n${code}\n\`\`\``);
  builder.closeBlock({ trailingLineBreaks: 2 });
};

/** `table` as a Markdown pipe table (first row is the header). */
const pipeTable: FormatCallback = (elem, _walk, builder) => {
  const rows = rowsOf(elem as unknown as DomNode).map((row) =>
    (row.children ?? [])
      .filter((cell) => cell.name === 'td' || cell.name === 'th')
      .map((cell) => textOf(cell).replace(/\s+/g, ' ').trim().replace(/\|/g, '\\|')),
  );
  if (rows.length === 0) return;
  const width = Math.max(...rows.map((r) => r.length));
  const line = (cells: string[]) =>
    `| ${Array.from({ length: width }, (_, i) => cells[i] ?? '').join(' | ')} |`;
  const [header = [], ...body] = rows;
  const table = [
    line(header),
    `| ${Array.from({ length: width }, () => '---').join(' | ')} |`,
    ...body.map(line),
  ];
  builder.openBlock({ leadingLineBreaks: 2 });
  builder.addLiteral(table.join('\n'));
  builder.closeBlock({ trailingLineBreaks: 2 });
};

const OPTIONS: HtmlToTextOptions = {
  wordwrap: false,
  formatters: {
    ...Object.fromEntries([1, 2, 3, 4, 5, 6].map((level) => [`h${level}`, heading(level)])),
    fencedPre,
    pipeTable,
  },
  selectors: [
    ...[1, 2, 3, 4, 5, 6].map((level) => ({ selector: `h${level}`, format: `h${level}` })),
    { selector: 'a', options: { ignoreHref: true } },
    { selector: 'img', format: 'skip' },
    { selector: 'pre', format: 'fencedPre' },
    { selector: 'table', format: 'pipeTable' },
    { selector: 'template', format: 'skip' },
    { selector: 'noscript', format: 'skip' },
  ],
};

/**
 * The visible text of an HTML document, through a real HTML parser (html-to-text over
 * htmlparser2): head, script, style, template and noscript dropped; character references decoded;
 * blocks separated by blank lines, `br` as a line break; headings as Markdown `#` headings, `pre`
 * as fenced code and tables as Markdown pipe tables, so the Markdown chunking rules apply.
 */
export function htmlToText(html: string): string {
  return convert(html, OPTIONS);
}
