import { describe, expect, it } from '@jest/globals';
import { Paginated } from './pagination.js';

/** Pages of `items`, `size` at a time, with the offset as the token; records the tokens asked for. */
function pagesOf(items: readonly number[], size: number) {
  const asked: string[] = [];
  const list = new Paginated(async (pageToken) => {
    asked.push(pageToken);
    const start = pageToken === '' ? 0 : Number(pageToken);
    const end = start + size;
    return { items: items.slice(start, end), nextPageToken: end < items.length ? String(end) : '' };
  });
  return { list, asked };
}

describe('Paginated', () => {
  it('iterates every item across pages, following next_page_token to the empty token', async () => {
    const { list, asked } = pagesOf([1, 2, 3, 4, 5, 6, 7], 3);
    const seen: number[] = [];
    for await (const item of list) seen.push(item);
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(asked).toEqual(['', '3', '6']);
  });

  it('fetches a page only when the previous one is used up', async () => {
    const { list, asked } = pagesOf([1, 2, 3, 4], 2);
    for await (const item of list) {
      expect(item).toBe(1);
      break;
    }
    expect(asked).toEqual(['']);
  });

  it('gives one page at a time with page(token)', async () => {
    const { list } = pagesOf([1, 2, 3], 2);
    const first = await list.page();
    expect(first).toEqual({ items: [1, 2], nextPageToken: '2' });
    expect(await list.page(first.nextPageToken)).toEqual({ items: [3], nextPageToken: '' });
  });

  it('yields one empty page for an empty list', async () => {
    const { list } = pagesOf([], 2);
    const pages = [];
    for await (const page of list.pages()) pages.push(page);
    expect(pages).toEqual([{ items: [], nextPageToken: '' }]);
  });
});
