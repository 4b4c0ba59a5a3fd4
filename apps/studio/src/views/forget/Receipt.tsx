import { timestampMs } from '@bufbuild/protobuf/wkt';
import { createConnectQueryKey, useQuery } from '@connectrpc/connect-query';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { ErrorReason } from '@engram/contracts/common';
import { ForgetReceiptState, GovernanceService, type ForgetReceipt } from '@engram/contracts/governance';
import { ErrorNotice, KeyValues, Loading, Tag } from '../../components/ui.js';
import { enumName, formatCount, formatTime } from '../../lib/format.js';
import { defineMessages, useLang, useMessages } from '../../lib/i18n.js';
import { formatSeconds } from '../system/model.js';
import { countRows, elapsedSeconds, receiptFinished, receiptTone, type CountField } from './model.js';

const text = defineMessages({
  en: {
    name: 'Receipt',
    subject: 'Subject',
    requestedBy: 'Requested by',
    reason: 'Reason',
    state: 'State',
    created: 'Requested',
    completed: 'Completed',
    elapsed: 'Time taken',
    lastError: 'Retrying after',
    pending: 'Erasure in ingestion, context and the index is still being applied; this page follows it.',
    done: 'Everything is erased everywhere; the counts are final.',
    kind: 'What',
    by: 'Erased by',
    count: 'Count',
    caption: 'Items erased per kind',
    memories: 'Memories',
    revisionsRedacted: 'Revisions redacted',
    revisionActorsRedacted: 'Reviews by you, name redacted',
    extractionJobs: 'Extraction jobs',
    documents: 'Documents',
    chunks: 'Chunks',
    sessions: 'Sessions',
    messages: 'Messages',
    memCells: 'MemCells',
    sessionStates: 'Session states',
    vectorPoints: 'Vector points',
  },
  zh: {
    name: '回执',
    subject: '对象',
    requestedBy: '请求者',
    reason: '原因',
    state: '状态',
    created: '请求时间',
    completed: '完成时间',
    elapsed: '耗时',
    lastError: '重试原因',
    pending: '摄取、上下文与索引中的删除仍在进行；此页面会持续跟进。',
    done: '所有地方的内容都已删除；计数为最终结果。',
    kind: '内容',
    by: '删除方',
    count: '数量',
    caption: '各类已删除条目',
    memories: '记忆',
    revisionsRedacted: '已脱敏的修订',
    revisionActorsRedacted: '你做过的审核（名字已脱敏）',
    extractionJobs: '提取任务',
    documents: '文档',
    chunks: '分块',
    sessions: '会话',
    messages: '消息',
    memCells: 'MemCell',
    sessionStates: '会话状态',
    vectorPoints: '向量点',
  },
});

function ReceiptView({ receipt: r, readAt }: { readonly receipt: ForgetReceipt; readonly readAt: number }) {
  const t = useMessages(text);
  const { lang } = useLang();
  const state = enumName(ForgetReceiptState, r.state);
  const finished = receiptFinished(state);
  const elapsed = elapsedSeconds(
    r.createTime !== undefined ? timestampMs(r.createTime) : undefined,
    r.completeTime !== undefined ? timestampMs(r.completeTime) : undefined,
    readAt,
  );
  const label = (field: CountField): string => t[field];
  return (
    <div className="receipt" data-receipt={r.name} data-state={state}>
      <p className={finished ? 'notice' : 'muted'} role="status">
        {finished ? t.done : t.pending}
      </p>
      {!finished ? <progress className="progress" /> : null}
      <KeyValues
        rows={[
          [t.name, <code key="n">{r.name}</code>],
          [t.subject, r.subject],
          [t.requestedBy, r.requestedBy],
          ...(r.reason !== '' ? [[t.reason, r.reason] as const] : []),
          [
            t.state,
            <Tag key="s" tone={receiptTone(state)}>
              {state}
            </Tag>,
          ],
          [t.created, formatTime(r.createTime, lang)],
          [t.completed, formatTime(r.completeTime, lang)],
          [t.elapsed, formatSeconds(elapsed)],
          ...(r.lastError !== undefined
            ? [[t.lastError, `${enumName(ErrorReason, r.lastError.reason)}: ${r.lastError.message}`] as const]
            : []),
        ]}
      />
      <table className="receipt-counts">
        <caption className="sr-only">{t.caption}</caption>
        <thead>
          <tr>
            <th scope="col">{t.kind}</th>
            <th scope="col">{t.by}</th>
            <th scope="col">{t.count}</th>
          </tr>
        </thead>
        <tbody>
          {countRows(r.counts).map((row) => (
            <tr key={row.field} data-count={row.field}>
              <th scope="row">{label(row.field)}</th>
              <td className="muted">{row.by}</td>
              <td>{formatCount(row.count, lang)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** GetForgetReceipt, polled every second until COMPLETED. */
export function Receipt({ name }: { readonly name: string }) {
  const queryClient = useQueryClient();
  const query = useQuery(
    GovernanceService.method.getForgetReceipt,
    { name },
    {
      staleTime: 0,
      refetchInterval: (q) => {
        const state = q.state.data?.forgetReceipt?.state;
        if (q.state.error !== null) return false;
        return state !== undefined && receiptFinished(enumName(ForgetReceiptState, state)) ? false : 1_000;
      },
    },
  );
  const state = query.data?.forgetReceipt?.state;
  const finished = state !== undefined && receiptFinished(enumName(ForgetReceiptState, state));
  useEffect(() => {
    // The list below shows this receipt too: let it show the final counts.
    if (finished)
      void queryClient.invalidateQueries({
        queryKey: createConnectQueryKey({
          schema: GovernanceService.method.listForgetReceipts,
          cardinality: undefined,
        }),
      });
  }, [finished, queryClient]);
  if (query.isPending) return <Loading />;
  if (query.isError) return <ErrorNotice error={query.error} />;
  const receipt = query.data.forgetReceipt;
  return receipt !== undefined ? <ReceiptView receipt={receipt} readAt={query.dataUpdatedAt} /> : <Loading />;
}
