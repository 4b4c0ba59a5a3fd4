/** The next page token of a list response, or undefined on the last page (its token is empty). */
export function nextPageToken(page: { readonly nextPageToken: string }): string | undefined {
  return page.nextPageToken === '' ? undefined : page.nextPageToken;
}

/**
 * The options of connect-query's `useInfiniteQuery` for every Engram list RPC: the page token is
 * the request's `page_token`, the next one the response's `next_page_token`.
 */
export const PAGED = { pageParamKey: 'pageToken', getNextPageParam: nextPageToken } as const;
