import { describe, expect, it } from '@jest/globals';
import { htmlToText } from './html-text.js';

describe('htmlToText', () => {
  it('keeps the visible text with Markdown headings, fenced code and pipe tables', () => {
    const html = `<!doctype html><html><head><title>ignored</title><style>p{color:red}</style></head>
      <body><h1>Rock &amp; roll</h1><p>First <b>para</b><br>line two</p><script>alert("x")</script>
      <h2>Code</h2><pre>const a = 1;
  return a;</pre><table><thead><tr><th>name</th><th>a|b</th></tr></thead>
      <tbody><tr><td>x</td><td>1</td></tr></tbody></table><template><p>hidden</p></template></body></html>`;
    expect(htmlToText(html)).toBe(
      [
        '# Rock & roll',
        '',
        'First para',
        'line two',
        '',
        '## Code',
        '',
        '```',
        'const a = 1;',
        '  return a;',
        '```',
        '',
        '| name | a\\|b |',
        '| --- | --- |',
        '| x | 1 |',
      ].join('\n'),
    );
  });

  it('decodes character references and Chinese text', () => {
    expect(htmlToText('<p>价格&nbsp;&lt;100&gt; 元 &#x1F600;</p>')).toBe('价格\u00a0<100> 元 😀');
  });
});
