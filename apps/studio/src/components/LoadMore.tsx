import { defineMessages, useMessages } from '../lib/i18n.js';

const text = defineMessages({
  en: { more: 'Load more', loading: 'Loading…' },
  zh: { more: '加载更多', loading: '加载中…' },
});

/** What {@link LoadMore} needs of an infinite query (connect-query's `useInfiniteQuery`). */
interface Pages {
  readonly hasNextPage: boolean;
  readonly isFetchingNextPage: boolean;
  readonly fetchNextPage: () => Promise<unknown>;
}

/** The "Load more" button of a paged list: shown while there is a next page, busy while it loads. */
export function LoadMore({ pages, label }: { readonly pages: Pages; readonly label?: string }) {
  const t = useMessages(text);
  if (!pages.hasNextPage) return null;
  return (
    <button type="button" onClick={() => void pages.fetchNextPage()} disabled={pages.isFetchingNextPage}>
      {pages.isFetchingNextPage ? t.loading : (label ?? t.more)}
    </button>
  );
}
