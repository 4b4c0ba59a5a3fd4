import { useInfiniteQuery, useQuery } from '@connectrpc/connect-query';
import { ChunkKind, DocumentState, IngestionService, type Document } from '@engram/contracts/ingestion';
import { LoadMore } from '../../components/LoadMore.js';
import { Empty, ErrorNotice, KeyValues, Loading, Section, Tag } from '../../components/ui.js';
import { enumName, formatBytes, formatCount, formatTime } from '../../lib/format.js';
import { defineMessages, useLang, useMessages } from '../../lib/i18n.js';
import { PAGED } from '../../lib/paging.js';
import { routeHash } from '../../lib/route.js';
import { DeleteDocument } from './DeleteDocument.js';
import { headingTrail, splitChunkText, stateTone } from './model.js';

const text = defineMessages({
  en: {
    back: '← All documents',
    metadata: 'Document',
    name: 'Name',
    mime: 'Type',
    state: 'State',
    failure: 'Failure',
    size: 'Size',
    chars: 'Characters',
    chunks: 'Chunks',
    indexed: 'Indexed chunks',
    chunking: 'Chunking',
    chunkingValue: (size: number, overlap: number) => `${String(size)} chars, overlap ${String(overlap)}`,
    source: 'Source',
    owner: 'Owner',
    hash: 'Content hash',
    created: 'Created',
    updated: 'Updated',
    chunkList: 'Chunks',
    noChunks: 'This document has no chunks.',
    noHeading: 'no heading',
    tokens: (n: number) => `${String(n)} tokens`,
    offsets: (start: string, end: string) => `chars ${start}–${end}`,
    more: 'Load more chunks',
    overlapTitle: 'Overlap: repeats the end of the previous chunk',
    headerTitle: 'Table header repeated from the previous chunk',
    legend: 'Shaded text repeats the previous chunk (overlap).',
  },
  zh: {
    back: '← 全部文档',
    metadata: '文档',
    name: '名称',
    mime: '类型',
    state: '状态',
    failure: '失败原因',
    size: '大小',
    chars: '字符数',
    chunks: '分块数',
    indexed: '已索引分块',
    chunking: '分块设置',
    chunkingValue: (size: number, overlap: number) => `${String(size)} 字符，重叠 ${String(overlap)}`,
    source: '来源',
    owner: '所有者',
    hash: '内容哈希',
    created: '创建时间',
    updated: '更新时间',
    chunkList: '分块',
    noChunks: '此文档没有分块。',
    noHeading: '无标题',
    tokens: (n: number) => `${String(n)} 个词元`,
    offsets: (start: string, end: string) => `字符 ${start}–${end}`,
    more: '加载更多分块',
    overlapTitle: '重叠：重复上一个分块的结尾',
    headerTitle: '从上一个分块重复的表头',
    legend: '带底色的文字重复上一个分块的内容（重叠）。',
  },
});

function Metadata({ document: d }: { readonly document: Document }) {
  const t = useMessages(text);
  const { lang } = useLang();
  const state = enumName(DocumentState, d.state);
  return (
    <KeyValues
      rows={[
        [t.name, <code key="n">{d.name}</code>],
        [t.mime, <code key="m">{d.mimeType}</code>],
        [
          t.state,
          <Tag key="s" tone={stateTone(state)}>
            {state}
          </Tag>,
        ],
        ...(d.failureMessage !== '' ? [[t.failure, d.failureMessage] as const] : []),
        [t.size, formatBytes(d.sizeBytes)],
        [t.chars, formatCount(d.charCount, lang)],
        [
          t.chunks,
          <span key="c" data-testid="chunk-count">
            {formatCount(d.chunkCount, lang)}
          </span>,
        ],
        [t.indexed, formatCount(d.indexedChunkCount, lang)],
        ...(d.chunking !== undefined
          ? [
              [
                t.chunking,
                t.chunkingValue(d.chunking.chunkSizeChars ?? 0, d.chunking.overlapChars ?? 0),
              ] as const,
            ]
          : []),
        ...(d.sourceUri !== '' ? [[t.source, d.sourceUri] as const] : []),
        [t.owner, d.owner],
        [t.hash, <code key="h">{d.contentHash}</code>],
        [t.created, formatTime(d.createTime, lang)],
        [t.updated, formatTime(d.updateTime, lang)],
      ]}
    />
  );
}

/** The chunk's text (as React text: escaped), its repeated header and overlap marked. */
function ChunkText({
  text: chunk,
  header,
  overlap,
}: {
  readonly text: string;
  readonly header: number;
  readonly overlap: number;
}) {
  const t = useMessages(text);
  const parts = splitChunkText(chunk, header, overlap);
  return (
    <pre className="chunk-text">
      {parts.header !== '' ? (
        <span className="chunk-header" title={t.headerTitle}>
          {parts.header}
        </span>
      ) : null}
      {parts.overlap !== '' ? (
        <span className="chunk-overlap" title={t.overlapTitle}>
          {parts.overlap}
        </span>
      ) : null}
      {parts.rest}
    </pre>
  );
}

function Chunks({ name }: { readonly name: string }) {
  const t = useMessages(text);
  const { lang } = useLang();
  const list = useInfiniteQuery(
    IngestionService.method.listChunks,
    { parent: name, pageSize: 100, pageToken: '' },
    PAGED,
  );
  const pageError = list.isFetchNextPageError ? list.error : null;
  if (list.isPending) return <Loading />;
  if (list.isError) return <ErrorNotice error={list.error} />;
  const chunks = list.data.pages.flatMap((p) => p.chunks);
  if (chunks.length === 0) return <Empty>{t.noChunks}</Empty>;
  return (
    <>
      <p className="muted">{t.legend}</p>
      <ol className="chunks">
        {chunks.map((c) => {
          const trail = headingTrail(c.headingPath);
          return (
            <li key={c.name} className="chunk" data-chunk={c.name} data-ordinal={c.ordinal}>
              <div className="chunk-head">
                <strong>#{c.ordinal}</strong> <Tag tone="info">{enumName(ChunkKind, c.kind)}</Tag>{' '}
                <span className="heading-path" data-heading-path={c.headingPath.join('\u001f')}>
                  {trail ?? <span className="muted">{t.noHeading}</span>}
                </span>{' '}
                <span className="muted">
                  {t.tokens(c.tokenCount)} ·{' '}
                  {t.offsets(formatCount(c.startOffset, lang), formatCount(c.endOffset, lang))}
                </span>
              </div>
              <ChunkText text={c.text} header={c.headerPrefixChars} overlap={c.overlapPrefixChars} />
            </li>
          );
        })}
      </ol>
      <LoadMore pages={list} label={t.more} />
      <ErrorNotice error={pageError} />
    </>
  );
}

/** `#/documents/<id>`: the document's metadata, its chunks, and delete. */
export function DocumentDetail({ id }: { readonly id: string }) {
  const t = useMessages(text);
  const name = `documents/${id}`;
  const query = useQuery(IngestionService.method.getDocument, { name });
  const document = query.data?.document;
  return (
    <>
      <p>
        <a href={routeHash('documents')}>{t.back}</a>
      </p>
      {query.isPending ? <Loading /> : null}
      <ErrorNotice error={query.error} />
      {document !== undefined ? (
        <>
          <h1>{document.displayName !== '' ? document.displayName : id}</h1>
          <Section id="document-meta" title={t.metadata} actions={<DeleteDocument document={document} />}>
            <Metadata document={document} />
          </Section>
          <Section id="document-chunks" title={t.chunkList}>
            <Chunks name={name} />
          </Section>
        </>
      ) : null}
    </>
  );
}
