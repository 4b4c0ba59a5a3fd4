import { useQuery } from '@connectrpc/connect-query';
import { ItemKind } from '@engram/contracts/common';
import { IndexBackend, RetrievalService, type IndexStatus } from '@engram/contracts/retrieval';
import { ErrorNotice, KeyValues, Loading, Tag } from '../../components/ui.js';
import { enumName, formatTime } from '../../lib/format.js';
import { defineMessages, useLang, useMessages } from '../../lib/i18n.js';
import { driftTone, durationSeconds, formatDrift, formatSeconds, optionalCount } from './model.js';

const text = defineMessages({
  en: {
    verdict: 'Verdict',
    healthy: 'healthy',
    unhealthy: 'unhealthy',
    backend: 'Backend',
    collection: 'Collection',
    model: 'Embedding model',
    reachable: 'Index reachable',
    embedding: 'Embedding available',
    yes: 'yes',
    no: 'no',
    pending: 'Outbox pending',
    retrying: 'Outbox retrying',
    lag: 'Oldest pending (lag)',
    lastIndexed: 'Last indexed',
    activeJob: 'Active reindex job',
    none: 'none',
    computed: 'Computed',
    kind: 'Kind',
    sourceRows: 'Source rows',
    indexed: 'Indexed points',
    drift: 'Drift',
    densePending: 'Dense pending',
    caption: 'Source rows and index points per kind',
    driftHint:
      'Drift = indexed points − source rows: negative means rows not (yet) indexed, positive means points awaiting deletion.',
    problems: 'Problems',
  },
  zh: {
    verdict: '结论',
    healthy: '健康',
    unhealthy: '不健康',
    backend: '后端',
    collection: '集合',
    model: '嵌入模型',
    reachable: '索引可达',
    embedding: '嵌入模型可用',
    yes: '是',
    no: '否',
    pending: '待处理 outbox',
    retrying: '重试中 outbox',
    lag: '最早待处理（延迟）',
    lastIndexed: '最近索引时间',
    activeJob: '进行中的重建任务',
    none: '无',
    computed: '计算时间',
    kind: '类型',
    sourceRows: '源数据行',
    indexed: '索引点',
    drift: '偏差',
    densePending: '待生成稠密向量',
    caption: '各类型的源数据行与索引点',
    driftHint: '偏差 = 索引点 − 源数据行：负数表示尚未索引的行，正数表示等待删除的点。',
    problems: '问题',
  },
});

function Overview({ status: s }: { readonly status: IndexStatus }) {
  const t = useMessages(text);
  const { lang } = useLang();
  const yesNo = (v: boolean) => <Tag tone={v ? 'ok' : 'warn'}>{v ? t.yes : t.no}</Tag>;
  return (
    <KeyValues
      rows={[
        [
          t.verdict,
          <Tag key="v" tone={s.healthy ? 'ok' : 'warn'}>
            {s.healthy ? t.healthy : t.unhealthy}
          </Tag>,
        ],
        [t.backend, enumName(IndexBackend, s.backend)],
        [t.collection, <code key="c">{s.collection}</code>],
        [t.model, `${s.embeddingModel} (${String(s.embeddingDimensions)})`],
        [t.reachable, yesNo(s.indexReachable)],
        [t.embedding, yesNo(s.embeddingAvailable)],
        [
          t.pending,
          <span key="p" data-field="outbox-pending">
            {String(s.outboxPending)}
          </span>,
        ],
        [
          t.retrying,
          <span key="r" data-field="outbox-retrying">
            {String(s.outboxRetrying)}
          </span>,
        ],
        [
          t.lag,
          <span key="l" data-field="lag">
            {formatSeconds(durationSeconds(s.oldestPendingAge))}
          </span>,
        ],
        [t.lastIndexed, formatTime(s.lastIndexedTime, lang)],
        [t.activeJob, s.activeReindexJob !== '' ? <code key="j">{s.activeReindexJob}</code> : t.none],
        [t.computed, formatTime(s.computeTime, lang)],
      ]}
    />
  );
}

function Kinds({ status }: { readonly status: IndexStatus }) {
  const t = useMessages(text);
  return (
    <>
      <table className="index-kinds">
        <caption className="sr-only">{t.caption}</caption>
        <thead>
          <tr>
            <th scope="col">{t.kind}</th>
            <th scope="col">{t.sourceRows}</th>
            <th scope="col">{t.indexed}</th>
            <th scope="col">{t.drift}</th>
            <th scope="col">{t.densePending}</th>
          </tr>
        </thead>
        <tbody>
          {status.kinds.map((k) => (
            <tr key={k.kind} data-kind={enumName(ItemKind, k.kind)}>
              <th scope="row">{enumName(ItemKind, k.kind)}</th>
              <td data-field="source-rows">{String(k.sourceRows)}</td>
              <td data-field="indexed-points">{optionalCount(k.indexedPoints)}</td>
              <td data-field="drift">
                <Tag tone={driftTone(k.drift)}>{formatDrift(k.drift)}</Tag>
              </td>
              <td data-field="dense-pending">{optionalCount(k.densePendingPoints)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="muted">{t.driftHint}</p>
    </>
  );
}

/** RetrievalService.GetIndexStatus (admin role): the verdict, the indexer's backlog, drift per kind. */
export function IndexStatusPanel() {
  const t = useMessages(text);
  const query = useQuery(
    RetrievalService.method.getIndexStatus,
    {},
    { refetchInterval: (q) => (q.state.error !== null ? false : 15_000) },
  );
  if (query.isPending) return <Loading />;
  if (query.isError) return <ErrorNotice error={query.error} />;
  const status = query.data.indexStatus;
  if (status === undefined) return <Loading />;
  return (
    <div className="index-status" data-computed={status.computeTime?.seconds.toString()}>
      <Overview status={status} />
      {status.problems.length > 0 ? (
        <div className="error">
          <strong>{t.problems}</strong>
          <ul>
            {status.problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        </div>
      ) : null}
      <Kinds status={status} />
    </div>
  );
}
