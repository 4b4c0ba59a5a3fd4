import { createConnectQueryKey, skipToken, useMutation, useQuery } from '@connectrpc/connect-query';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type SyntheticEvent } from 'react';
import { ItemKind } from '@engram/contracts/common';
import { ReindexJobState, ReindexMode, RetrievalService, type ReindexJob } from '@engram/contracts/retrieval';
import { ErrorNotice, KeyValues, Tag } from '../../components/ui.js';
import { enumName, formatTime } from '../../lib/format.js';
import { defineMessages, useLang, useMessages } from '../../lib/i18n.js';
import { jobFinished, jobProgress, newRequestId } from './model.js';

const text = defineMessages({
  en: {
    hint: 'Rebuilds the tenant’s index from the source of truth. Needs the admin role; the server says so otherwise.',
    mode: 'Mode',
    missingOnly: 'Repair drift (MISSING_ONLY)',
    full: 'Full rebuild (FULL, re-embeds every row)',
    kinds: 'Kinds',
    start: 'Start reindex',
    job: 'Job',
    state: 'State',
    progress: 'Progress',
    scanned: (scanned: string, total: string) => `${scanned} of ${total} rows scanned`,
    upserted: 'Points upserted',
    deleted: 'Points deleted',
    unchanged: 'Rows unchanged',
    errors: 'Errors',
    created: 'Created',
    completed: 'Completed',
    failure: 'Why it failed',
  },
  zh: {
    hint: '从源数据重建租户的索引。需要 admin 角色，否则服务器会拒绝并说明原因。',
    mode: '模式',
    missingOnly: '修复偏差（MISSING_ONLY）',
    full: '完全重建（FULL，重新嵌入每一行）',
    kinds: '类型',
    start: '开始重建索引',
    job: '任务',
    state: '状态',
    progress: '进度',
    scanned: (scanned: string, total: string) => `已扫描 ${scanned} / ${total} 行`,
    upserted: '写入的点',
    deleted: '删除的点',
    unchanged: '未变的行',
    errors: '错误',
    created: '创建时间',
    completed: '完成时间',
    failure: '失败原因',
  },
});

const KINDS = [ItemKind.MEMORY, ItemKind.CHUNK, ItemKind.ROUND] as const;

function JobView({ job }: { readonly job: ReindexJob }) {
  const t = useMessages(text);
  const { lang } = useLang();
  const state = enumName(ReindexJobState, job.state);
  const progress = jobProgress(job.rowsScanned, job.rowsTotal, state);
  const tone = state === 'SUCCEEDED' ? 'ok' : state === 'FAILED' || state === 'CANCELLED' ? 'warn' : 'info';
  return (
    <div className="reindex-job" data-job={job.name} data-state={state}>
      <KeyValues
        rows={[
          [t.job, <code key="j">{job.name}</code>],
          [
            t.state,
            <Tag key="s" tone={tone}>
              {state}
            </Tag>,
          ],
          [
            t.progress,
            <span key="p">
              {progress !== undefined ? (
                <progress className="progress" max={1} value={progress} />
              ) : (
                <progress className="progress" />
              )}{' '}
              {t.scanned(String(job.rowsScanned), String(job.rowsTotal))}
            </span>,
          ],
          [t.upserted, String(job.pointsUpserted)],
          [t.deleted, String(job.pointsDeleted)],
          [t.unchanged, String(job.rowsUnchanged)],
          [t.errors, String(job.errorCount)],
          [t.created, formatTime(job.createTime, lang)],
          [t.completed, formatTime(job.completeTime, lang)],
          ...(job.error !== undefined ? [[t.failure, job.error.message] as const] : []),
        ]}
      />
    </div>
  );
}

/** RetrievalService.Reindex, then GetReindexJob polled until the job is finished. */
export function Reindex() {
  const t = useMessages(text);
  const queryClient = useQueryClient();
  const [mode, setMode] = useState<ReindexMode>(ReindexMode.MISSING_ONLY);
  const [kinds, setKinds] = useState<readonly ItemKind[]>(KINDS);
  const [jobName, setJobName] = useState<string | undefined>();
  const start = useMutation(RetrievalService.method.reindex, {
    onSuccess: (answer) => setJobName(answer.reindexJob?.name),
  });
  const job = useQuery(
    RetrievalService.method.getReindexJob,
    jobName === undefined ? skipToken : { name: jobName },
    {
      staleTime: 0,
      enabled: jobName !== undefined,
      refetchInterval: (q) => {
        const state = q.state.data?.reindexJob?.state;
        if (jobName === undefined || q.state.error !== null) return false;
        return state !== undefined && jobFinished(enumName(ReindexJobState, state)) ? false : 1_000;
      },
    },
  );
  const finalState = job.data?.reindexJob?.state;
  const finished = finalState !== undefined && jobFinished(enumName(ReindexJobState, finalState));
  useEffect(() => {
    // The job changed the index: show the new figures.
    if (finished)
      void queryClient.invalidateQueries({
        queryKey: createConnectQueryKey({
          schema: RetrievalService.method.getIndexStatus,
          cardinality: undefined,
        }),
      });
  }, [finished, queryClient]);
  const onSubmit = (e: SyntheticEvent) => {
    e.preventDefault();
    setJobName(undefined);
    start.mutate({ mode, kinds: [...kinds], requestId: newRequestId() });
  };
  const toggle = (kind: ItemKind, on: boolean) =>
    setKinds((current) =>
      on ? KINDS.filter((k) => k === kind || current.includes(k)) : current.filter((k) => k !== kind),
    );
  const shown = job.data?.reindexJob ?? start.data?.reindexJob;
  return (
    <form className="reindex" onSubmit={onSubmit}>
      <p className="muted">{t.hint}</p>
      <div className="row">
        <label>
          {t.mode}{' '}
          <select
            name="mode"
            value={mode}
            onChange={(e) =>
              setMode(
                e.target.value === String(ReindexMode.FULL) ? ReindexMode.FULL : ReindexMode.MISSING_ONLY,
              )
            }
          >
            <option value={ReindexMode.MISSING_ONLY}>{t.missingOnly}</option>
            <option value={ReindexMode.FULL}>{t.full}</option>
          </select>
        </label>
        <fieldset className="kinds">
          <legend>{t.kinds}</legend>
          {KINDS.map((k) => (
            <label key={k}>
              <input
                type="checkbox"
                checked={kinds.includes(k)}
                onChange={(e) => toggle(k, e.target.checked)}
              />{' '}
              {enumName(ItemKind, k)}
            </label>
          ))}
        </fieldset>
        <button type="submit" className="primary" disabled={start.isPending || kinds.length === 0}>
          {t.start}
        </button>
      </div>
      <ErrorNotice error={start.error} />
      <ErrorNotice error={job.error} />
      {shown !== undefined ? <JobView job={shown} /> : null}
    </form>
  );
}
