import { Section } from '../components/ui.js';
import { defineMessages, useMessages } from '../lib/i18n.js';
import type { ViewProps } from '../lib/route.js';
import { DocumentDetail } from './documents/DocumentDetail.js';
import { DocumentList } from './documents/DocumentList.js';
import { Upload } from './documents/Upload.js';
import './documents.css';

const text = defineMessages({
  en: {
    title: 'Documents',
    intro:
      'Reference material for retrieval: each document is split into chunks that search and context can cite.',
    upload: 'Upload a document',
    list: 'Your documents',
    deleted: (name: string, chunks: string) => `Deleted “${name}” and its ${chunks} chunks.`,
  },
  zh: {
    title: '文档',
    intro: '供检索使用的参考资料：每份文档被拆分为可被搜索和上下文引用的分块。',
    upload: '上传文档',
    list: '你的文档',
    deleted: (name: string, chunks: string) => `已删除“${name}”及其 ${chunks} 个分块。`,
  },
});

export function DocumentsView({ route }: ViewProps) {
  const t = useMessages(text);
  const id = route.rest[0];
  if (id !== undefined && id !== '') return <DocumentDetail id={id} />;
  const deleted = route.query.get('deleted');
  return (
    <>
      <h1>{t.title}</h1>
      <p className="muted">{t.intro}</p>
      {deleted !== null ? (
        <p className="notice" role="status">
          {t.deleted(deleted, route.query.get('chunks') ?? '?')}
        </p>
      ) : null}
      <Section id="documents-upload" title={t.upload}>
        <Upload />
      </Section>
      <Section id="documents-list" title={t.list}>
        <DocumentList />
      </Section>
    </>
  );
}
