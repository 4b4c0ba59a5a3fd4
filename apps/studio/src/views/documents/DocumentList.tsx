import { useInfiniteQuery } from '@connectrpc/connect-query';
import { DocumentState, IngestionService } from '@engram/contracts/ingestion';
import { LoadMore } from '../../components/LoadMore.js';
import { Empty, ErrorNotice, Loading, Tag } from '../../components/ui.js';
import { enumName, formatBytes, formatCount, formatTime, shortName } from '../../lib/format.js';
import { defineMessages, useLang, useMessages } from '../../lib/i18n.js';
import { PAGED } from '../../lib/paging.js';
import { routeHash } from '../../lib/route.js';
import { stateTone } from './model.js';

const text = defineMessages({
  en: {
    title: 'Title',
    mime: 'Type',
    size: 'Size',
    state: 'State',
    chunks: 'Chunks (indexed)',
    created: 'Created',
    none: 'No documents yet: upload one above.',
    caption: 'Documents you can see, newest first',
  },
  zh: {
    title: '标题',
    mime: '类型',
    size: '大小',
    state: '状态',
    chunks: '分块（已索引）',
    created: '创建时间',
    none: '还没有文档：请在上方上传。',
    caption: '你可见的文档，最新的在前',
  },
});

/** ListDocuments, newest first, page by page. */
export function DocumentList() {
  const t = useMessages(text);
  const { lang } = useLang();
  const list = useInfiniteQuery(
    IngestionService.method.listDocuments,
    { pageSize: 50, pageToken: '' },
    PAGED,
  );
  const pageError = list.isFetchNextPageError ? list.error : null;
  if (list.isPending) return <Loading />;
  if (list.isError) return <ErrorNotice error={list.error} />;
  const documents = list.data.pages.flatMap((p) => p.documents);
  if (documents.length === 0) return <Empty>{t.none}</Empty>;
  return (
    <>
      <table className="documents-table">
        <caption className="sr-only">{t.caption}</caption>
        <thead>
          <tr>
            <th scope="col">{t.title}</th>
            <th scope="col">{t.mime}</th>
            <th scope="col">{t.size}</th>
            <th scope="col">{t.state}</th>
            <th scope="col">{t.chunks}</th>
            <th scope="col">{t.created}</th>
          </tr>
        </thead>
        <tbody>
          {documents.map((d) => {
            const state = enumName(DocumentState, d.state);
            return (
              <tr key={d.name} data-document={d.name}>
                <td>
                  <a href={routeHash('documents', [shortName(d.name)])}>
                    {d.displayName !== '' ? d.displayName : shortName(d.name)}
                  </a>
                </td>
                <td>
                  <code>{d.mimeType}</code>
                </td>
                <td>{formatBytes(d.sizeBytes)}</td>
                <td>
                  <Tag tone={stateTone(state)}>{state}</Tag>
                </td>
                <td data-chunks={d.chunkCount}>
                  {formatCount(d.chunkCount, lang)} ({formatCount(d.indexedChunkCount, lang)})
                </td>
                <td>{formatTime(d.createTime, lang)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <LoadMore pages={list} />
      <ErrorNotice error={pageError} />
    </>
  );
}
