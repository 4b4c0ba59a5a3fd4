import { skipToken, useQuery } from '@connectrpc/connect-query';
import { RetrievalService } from '@engram/contracts/retrieval';
import { Empty, ErrorNotice, Loading } from '../components/ui.js';
import { useMessages } from '../lib/i18n.js';
import type { ViewProps } from '../lib/route.js';
import { searchText } from './search/messages.js';
import { buildSearchRequest, formFromQuery } from './search/model.js';
import { SearchFormPanel } from './search/SearchFormPanel.js';
import { SearchResults } from './search/SearchResults.js';
import './search.css';

/**
 * The Search playground (`#/search?q=…`): RetrievalService.Search with the options the user set,
 * every result with its per-signal explanation, and the search's stats. The URL holds the query
 * and options, so the search runs again from a link.
 */
export function SearchView({ route }: ViewProps) {
  const t = useMessages(searchText);
  const form = formFromQuery(route.query);
  const built = buildSearchRequest(form);
  const ready = form.query.trim() !== '' && built.problems.length === 0;
  const search = useQuery(RetrievalService.method.search, ready ? built.request : skipToken);
  return (
    <div className="search-view">
      <h1>{t.title}</h1>
      <p className="muted">{t.intro}</p>
      {/* A new URL (back, a link) starts the form from what it says. */}
      <SearchFormPanel key={route.query.toString()} initial={form} onRepeat={() => void search.refetch()} />
      {!ready ? (
        <Empty>{t.enterQuery}</Empty>
      ) : search.isPending ? (
        <Loading />
      ) : search.isError ? (
        <ErrorNotice error={search.error} />
      ) : (
        <SearchResults response={search.data} />
      )}
    </div>
  );
}
