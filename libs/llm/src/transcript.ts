/**
 * `content` on one line (line breaks shown as ` ↵ `, so a message cannot forge a transcript line)
 * and at most `max` code points: longer ones keep their first two thirds and last third around "…".
 * Every prompt that quotes conversation text (governance's extraction transcript, context's
 * compaction transcript) renders each message through it.
 */
export function oneLine(content: string, max: number): string {
  const points = Array.from(
    content
      .trim()
      .replace(/\r\n?/gu, '\n')
      .replace(/\s*\n\s*/gu, ' ↵ '),
  );
  if (points.length <= max) return points.join('');
  const head = Math.ceil((max - 1) * (2 / 3));
  const tail = max - 1 - head;
  return `${points.slice(0, head).join('')}…${tail > 0 ? points.slice(-tail).join('') : ''}`;
}
