import { useInfiniteQuery } from '@connectrpc/connect-query';
import { useMemo } from 'react';
import { GovernanceService } from '@engram/contracts/governance';
import { LoadMore } from '../../components/LoadMore.js';
import { Empty, ErrorNotice, Loading, Section } from '../../components/ui.js';
import { useMessages } from '../../lib/i18n.js';
import { PAGED } from '../../lib/paging.js';
import { FilterForm } from './FilterForm.js';
import { filtersFromQuery, filtersToQuery, listRequest } from './model.js';
import { MemoryTable } from './parts.js';
import { RememberPanel } from './RememberForm.js';
import { memoriesText } from './text.js';

/** `#/memories?…`: the Remember form, the filters and the filtered list, page by page. */
export function MemoryListPage({ query }: { readonly query: URLSearchParams }) {
  const t = useMessages(memoriesText);
  const filters = useMemo(() => filtersFromQuery(query), [query]);
  // The filter form restarts from the URL whenever the applied filters change.
  const filterKey = JSON.stringify(filtersToQuery(filters));
  const list = useInfiniteQuery(GovernanceService.method.listMemories, listRequest(filters), PAGED);
  const memories = list.data?.pages.flatMap((p) => p.memories) ?? [];
  return (
    <div className="memories-view">
      <h1>{t.title}</h1>
      <p className="muted">{t.intro}</p>
      <RememberPanel />
      <Section title={t.listTitle} id="memory-list-title">
        <FilterForm key={filterKey} filters={filters} />
        {list.isPending ? <Loading /> : null}
        <ErrorNotice error={list.error} />
        {list.isSuccess && memories.length === 0 ? <Empty>{t.noMemories}</Empty> : null}
        {memories.length > 0 ? <MemoryTable memories={memories} /> : null}
        <div className="row">
          {memories.length > 0 ? <span className="muted">{t.shown(memories.length)}</span> : null}
          <LoadMore pages={list} />
        </div>
      </Section>
    </div>
  );
}
