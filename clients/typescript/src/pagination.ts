/** One page of a list: its items and the token of the next page ("" after the last). */
export interface Page<T> {
  readonly items: readonly T[];
  readonly nextPageToken: string;
}

/**
 * A paginated list: `for await (const item of list)` follows `next_page_token` to the end,
 * fetching each page when the previous one is used up; `page(token)` fetches just one page.
 */
export class Paginated<T> implements AsyncIterable<T> {
  readonly #fetchPage: (pageToken: string) => Promise<Page<T>>;

  /** `fetchPage` fetches the page after `pageToken` ("" for the first). */
  constructor(fetchPage: (pageToken: string) => Promise<Page<T>>) {
    this.#fetchPage = fetchPage;
  }

  /** The page at `pageToken` (default the first). */
  page(pageToken = ''): Promise<Page<T>> {
    return this.#fetchPage(pageToken);
  }

  /** Every page in order, from the first. */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let token = '';
    do {
      const page = await this.#fetchPage(token);
      yield page;
      token = page.nextPageToken;
    } while (token !== '');
  }

  /** Every item of every page, in the list's order. */
  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.items;
  }
}
